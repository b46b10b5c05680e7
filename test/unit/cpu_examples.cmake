# The C back end on every example block (test/unit/cpu_examples.c), one
# executable in three modes: against the MLIR reference executor
# (cpu_vs_reference), partitioned streams against the unsplit run
# (merge_rule), and the interpreter on the rewritten cascade against the
# original (rewrite_preserves_meaning). Generated C is compiled with the
# system C compiler into a scratch TMPDIR under the build tree.
# Without MLIR (-DATTNC_MLIR=OFF) the reference executor is absent, so only
# the two modes that need no oracle run.
add_executable(test_cpu_examples ${CMAKE_CURRENT_SOURCE_DIR}/unit/cpu_examples.c)
target_compile_options(test_cpu_examples PRIVATE ${ATTN_WARNINGS})
target_link_libraries(test_cpu_examples PRIVATE attn_host attn_plan attn_cemit)
set(_cpu_modes merge_rule rewrite_preserves_meaning)
if(ATTNC_MLIR)
  set_target_properties(test_cpu_examples PROPERTIES LINKER_LANGUAGE CXX)
  list(PREPEND _cpu_modes cpu_vs_reference)
endif()
foreach(_mode ${_cpu_modes})
  add_test(NAME ${_mode} COMMAND test_cpu_examples ${_mode} ${PROJECT_SOURCE_DIR}/examples
           ${CMAKE_CURRENT_BINARY_DIR}/cpu-examples-scratch/${_mode})
endforeach()
