# Unit test of the CPU engine (cli/cpu_engine.c, in attn_host): hand-
# written C sources compiled with the system C compiler, loaded and run;
# its TMPDIR is a scratch directory under the build tree.
add_executable(test_cpu_engine ${CMAKE_CURRENT_SOURCE_DIR}/unit/cpu_engine.c)
target_compile_options(test_cpu_engine PRIVATE ${ATTN_WARNINGS})
target_link_libraries(test_cpu_engine PRIVATE attn_host)
add_test(NAME cpu_engine COMMAND test_cpu_engine ${CMAKE_CURRENT_BINARY_DIR}/cpu-scratch)
