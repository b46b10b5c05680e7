# The generated C around NAME_fwd_part, the kernel of partial states
# (test/unit/gpu_iface_parts.c): its text for examples/causal.attn and
# examples/decode.attn, its build with -Wall -Wextra -Werror, and
# gpu_iface_parts_harness.c linked with it and libattnrt, run against
# rt_fakecuda and, for the ring of two ranks, rt_fakecuda_nccl (both built
# in rt.cmake), with this build's sanitizer flags.
add_executable(test_gpu_iface_parts ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu_iface_parts.c)
target_compile_options(test_gpu_iface_parts PRIVATE ${ATTN_WARNINGS})
target_link_libraries(test_gpu_iface_parts PRIVATE attn_ptx attn_front attn_plan attn_support)
add_dependencies(test_gpu_iface_parts attnrt rt_fakecuda_v2 rt_fakecuda_nccl)
set(_parts_flags "")
if(ATTN_SANITIZE)
  set(_parts_flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
endif()
if(ATTN_FUZZ)
  set(_parts_flags "${_parts_flags} -fsanitize=fuzzer-no-link")
endif()
add_test(NAME gpu_iface_parts
         COMMAND test_gpu_iface_parts ${PROJECT_SOURCE_DIR}/examples
                 ${CMAKE_CURRENT_BINARY_DIR}/gpu-iface-parts-scratch ${CMAKE_C_COMPILER}
                 ${PROJECT_SOURCE_DIR}/runtime $<TARGET_FILE:attnrt>
                 $<TARGET_FILE:rt_fakecuda_v2> $<TARGET_FILE:rt_fakecuda_nccl>
                 ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu_iface_parts_harness.c "${_parts_flags}")
