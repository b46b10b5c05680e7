# Unit test of the PTX builder (lowering/ptx) on sm_90a instructions: the
# printed text always; its assembly by ptxas -arch=sm_90a where ptxas was
# found (PTXAS_EXECUTABLE, test/CMakeLists.txt), else reported as skipped.
add_executable(test_ptx_builder ${CMAKE_CURRENT_SOURCE_DIR}/unit/ptx_builder.c)
target_compile_options(test_ptx_builder PRIVATE ${ATTN_WARNINGS})
target_link_libraries(test_ptx_builder PRIVATE attn_ptx)
add_test(NAME ptx_builder COMMAND test_ptx_builder text)
if(PTXAS_EXECUTABLE)
  set(_ptx_ptxas ${PTXAS_EXECUTABLE})
else()
  set(_ptx_ptxas -)
endif()
add_test(NAME ptx_builder_ptxas COMMAND test_ptx_builder ptxas
         ${CMAKE_CURRENT_BINARY_DIR}/ptx-scratch ${_ptx_ptxas})
set_tests_properties(ptx_builder_ptxas PROPERTIES SKIP_RETURN_CODE 77)
