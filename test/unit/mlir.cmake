# test/unit/mlir.cmake: the MLIR interchange and the reference executor.
# Cascades are built by hand (mlir_cases.c); results are compared with naive
# f64 C loops; the printed MLIR is fed to mlir-opt-19.
if(NOT ATTNC_MLIR)
  return()
endif()
set(ATTN_MLIR_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
add_library(attn_mlir_testutil STATIC ${ATTN_MLIR_TEST_DIR}/mlir_testutil.c
  ${ATTN_MLIR_TEST_DIR}/mlir_cases.c)
target_compile_options(attn_mlir_testutil PRIVATE ${ATTN_WARNINGS})
target_link_libraries(attn_mlir_testutil PUBLIC attn_ir m)

foreach(t mlir_attention mlir_gqa mlir_functions mlir_emit_case)
  add_executable(${t} ${ATTN_MLIR_TEST_DIR}/${t}.c)
  target_compile_options(${t} PRIVATE ${ATTN_WARNINGS})
  target_link_libraries(${t} PRIVATE attn_mlir attn_mlir_testutil)
endforeach()

add_test(NAME mlir_attention COMMAND mlir_attention)
add_test(NAME mlir_gqa COMMAND mlir_gqa)
add_test(NAME mlir_functions COMMAND mlir_functions)

# Round trip through MLIR's own parser and verifier, in both precisions.
find_program(ATTN_MLIR_OPT NAMES mlir-opt-19 mlir-opt PATHS /usr/lib/llvm-19/bin)
if(ATTN_MLIR_OPT)
  foreach(c attention gqa both)
    foreach(p f32 f64)
      add_test(NAME mlir_roundtrip_${c}_${p}
        COMMAND sh -c "$<TARGET_FILE:mlir_emit_case> ${c} ${p} > mlir_roundtrip_${c}_${p}.mlir && ${ATTN_MLIR_OPT} --verify-roundtrip mlir_roundtrip_${c}_${p}.mlir > /dev/null")
    endforeach()
  endforeach()
endif()
