# compiler/mlir.cmake: the MLIR interchange (--emit=mlir) and the reference
# executor. The MLIR C API exists only as static libMLIRCAPI*.a archives on
# Debian; they are linked against the shared libMLIR.so and libLLVM-19.so,
# which hold all of MLIR's C++ (never the static libMLIRIR.a and friends:
# two copies of MLIR's globals break at run time). find_package(MLIR) is not
# used because its imported targets drag in those static C++ libraries.
set(ATTN_LLVM_ROOT /usr/lib/llvm-19 CACHE PATH "LLVM/MLIR 19 installation root")
file(GLOB ATTN_MLIR_CAPI_ARCHIVES ${ATTN_LLVM_ROOT}/lib/libMLIRCAPI*.a)
if(NOT ATTN_MLIR_CAPI_ARCHIVES)
  message(FATAL_ERROR "no libMLIRCAPI*.a under ${ATTN_LLVM_ROOT}/lib (install libmlir-19-dev)")
endif()

add_library(attn_mlir STATIC mlir_emit.c mlir_expr.c mlir_ops.c refexec.c)
target_compile_options(attn_mlir PRIVATE ${ATTN_WARNINGS})
target_include_directories(attn_mlir SYSTEM PRIVATE ${ATTN_LLVM_ROOT}/include)
# The archives reference one another, hence the link group.
target_link_libraries(attn_mlir PUBLIC attn_ir
  "$<LINK_GROUP:RESCAN,${ATTN_MLIR_CAPI_ARCHIVES}>"
  ${ATTN_LLVM_ROOT}/lib/libMLIR.so ${ATTN_LLVM_ROOT}/lib/libLLVM-19.so stdc++ m)
