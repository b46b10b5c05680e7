# Unit tests of support/: SHA-256 (the ptxas cache's keys).
add_executable(test_sha256 ${CMAKE_CURRENT_SOURCE_DIR}/unit/sha256.c)
target_compile_options(test_sha256 PRIVATE ${ATTN_WARNINGS})
target_link_libraries(test_sha256 PRIVATE attn_support)
add_test(NAME sha256 COMMAND test_sha256)
