# The generated C interface of a kernel with TMA tensor maps
# (test/unit/gpu_iface.c): its text, its build with -Wall -Wextra -Werror,
# and gpu_iface_harness.c linked with it and libattnrt, run against
# rt_fakecuda (built in rt.cmake), with this build's sanitizer flags.
add_executable(test_gpu_iface ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu_iface.c)
target_compile_options(test_gpu_iface PRIVATE ${ATTN_WARNINGS})
target_link_libraries(test_gpu_iface PRIVATE attn_ptx attn_front attn_plan attn_support)
add_dependencies(test_gpu_iface attnrt rt_fakecuda_v2)
set(_iface_flags "")
if(ATTN_SANITIZE)
  set(_iface_flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
endif()
if(ATTN_FUZZ)
  set(_iface_flags "${_iface_flags} -fsanitize=fuzzer-no-link")
endif()
add_test(NAME gpu_iface
         COMMAND test_gpu_iface ${PROJECT_SOURCE_DIR}/examples
                 ${CMAKE_CURRENT_BINARY_DIR}/gpu-iface-scratch ${CMAKE_C_COMPILER}
                 ${PROJECT_SOURCE_DIR}/runtime $<TARGET_FILE:attnrt>
                 $<TARGET_FILE:rt_fakecuda_v2> ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu_iface_harness.c
                 "${_iface_flags}")
