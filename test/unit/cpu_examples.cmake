# The C back end on every example block (test/unit/cpu_examples.c), one
# executable in three modes: against the MLIR reference executor
# (cpu_vs_reference), partitioned streams against the unsplit run
# (merge_rule), and the interpreter on the rewritten cascade against the
# original (rewrite_preserves_meaning). Generated C is compiled with the
# system C compiler into a scratch TMPDIR under the build tree.
if(TARGET attn_cemit AND TARGET attn_mlir)
  add_executable(test_cpu_examples ${CMAKE_CURRENT_SOURCE_DIR}/unit/cpu_examples.c)
  target_compile_options(test_cpu_examples PRIVATE ${ATTN_WARNINGS})
  target_link_libraries(test_cpu_examples PRIVATE attn_host attn_plan attn_cemit)
  set_target_properties(test_cpu_examples PROPERTIES LINKER_LANGUAGE CXX)
  foreach(_mode cpu_vs_reference merge_rule rewrite_preserves_meaning)
    add_test(NAME ${_mode} COMMAND test_cpu_examples ${_mode} ${PROJECT_SOURCE_DIR}/examples
             ${CMAKE_CURRENT_BINARY_DIR}/cpu-examples-scratch/${_mode})
  endforeach()
endif()
