# The derived backward (compiler/grad.h) against central finite differences
# in f64, and its C against the interpreter (test/unit/grad_check.c), on
# every example and the lit inputs of the derivation (test/lit/grad/Inputs).
add_executable(test_grad_check ${CMAKE_CURRENT_SOURCE_DIR}/unit/grad_check.c)
target_compile_options(test_grad_check PRIVATE ${ATTN_WARNINGS})
target_link_libraries(test_grad_check PRIVATE attn_host attn_plan attn_cemit)
if(ATTNC_MLIR)
  set_target_properties(test_grad_check PROPERTIES LINKER_LANGUAGE CXX)
endif()
add_test(NAME grad_check COMMAND test_grad_check ${CMAKE_CURRENT_BINARY_DIR}/grad-scratch
         ${PROJECT_SOURCE_DIR}/examples ${PROJECT_SOURCE_DIR}/test/lit/grad/Inputs)

# The backward's GPU cut (compiler/grad_split.c) run piece by piece in the
# interpreter against the whole backward (test/unit/grad_cut_check.c).
add_executable(test_grad_cut_check ${CMAKE_CURRENT_SOURCE_DIR}/unit/grad_cut_check.c)
target_compile_options(test_grad_cut_check PRIVATE ${ATTN_WARNINGS})
target_link_libraries(test_grad_cut_check PRIVATE attn_host attn_plan attn_cemit)
if(ATTNC_MLIR)
  set_target_properties(test_grad_cut_check PROPERTIES LINKER_LANGUAGE CXX)
endif()
add_test(NAME grad_cut_check COMMAND test_grad_cut_check ${PROJECT_SOURCE_DIR}/examples
         ${PROJECT_SOURCE_DIR}/test/lit/grad/Inputs ${PROJECT_SOURCE_DIR}/bench/attn)
