# The generated C of a GPU backward, NAME_bwd_launch over the kernels
# compiler/grad_split.c cuts the backward into (test/unit/gpu_iface_bwd.c):
# its text for examples/causal.attn, its build with -Wall -Wextra -Werror,
# and gpu_iface_bwd_harness.c linked with it and libattnrt, run against
# rt_fakecuda (built in rt.cmake), with this build's sanitizer flags.
add_executable(test_gpu_iface_bwd ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu_iface_bwd.c)
target_compile_options(test_gpu_iface_bwd PRIVATE ${ATTN_WARNINGS})
target_link_libraries(test_gpu_iface_bwd PRIVATE attn_ptx attn_front attn_plan attn_support)
add_dependencies(test_gpu_iface_bwd attnrt rt_fakecuda_v2)
set(_bwd_flags "")
if(ATTN_SANITIZE)
  set(_bwd_flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
endif()
if(ATTN_FUZZ)
  set(_bwd_flags "${_bwd_flags} -fsanitize=fuzzer-no-link")
endif()
add_test(NAME gpu_iface_bwd
         COMMAND test_gpu_iface_bwd ${PROJECT_SOURCE_DIR}/examples
                 ${CMAKE_CURRENT_BINARY_DIR}/gpu-iface-bwd-scratch ${CMAKE_C_COMPILER}
                 ${PROJECT_SOURCE_DIR}/runtime $<TARGET_FILE:attnrt>
                 $<TARGET_FILE:rt_fakecuda_v2>
                 ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu_iface_bwd_harness.c "${_bwd_flags}")
