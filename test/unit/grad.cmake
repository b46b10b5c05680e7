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
