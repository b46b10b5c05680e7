# Every example block against a naive f64 implementation of its textbook
# formula (test/unit/naive_examples.c). Needs front_compile (attn_front) and
# refexec_run (attn_mlir), both reached through attn_host.
if(ATTNC_MLIR)
  add_executable(test_naive_examples ${CMAKE_CURRENT_SOURCE_DIR}/unit/naive_examples.c)
  target_compile_options(test_naive_examples PRIVATE ${ATTN_WARNINGS})
  target_link_libraries(test_naive_examples PRIVATE attn_host)
  set_target_properties(test_naive_examples PROPERTIES LINKER_LANGUAGE CXX)
  add_test(NAME naive_examples COMMAND test_naive_examples ${PROJECT_SOURCE_DIR}/examples)
endif()
