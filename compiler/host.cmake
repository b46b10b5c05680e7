# Host-side evaluation behind `attnc run`: the f64 interpreter, .npy I/O,
# seeded inputs, the CPU engine (generated C built with the system compiler
# and dlopen'd) and the run subcommand.
#
# attn_mlir (refexec_run) and attn_front (front_compile) come from other
# fragments and from lang/; they are linked through TARGET_EXISTS, which is
# evaluated at generate time, so the order of fragments does not matter and
# the pieces that need neither can be built and tested before they exist.
# attn_cemit (c_emit_cascade, lowering/c) is linked the same way.
add_library(attn_host STATIC interp.c npy.c inputs.c cpu_engine.c run.c)
# No FMA contraction: generated inputs must be the same bits everywhere.
target_compile_options(attn_host PRIVATE ${ATTN_WARNINGS} -ffp-contract=off)
target_link_libraries(attn_host PUBLIC attn_ir m ${CMAKE_DL_LIBS}
  $<$<TARGET_EXISTS:attn_mlir>:attn_mlir>
  $<$<TARGET_EXISTS:attn_front>:attn_front>
  $<$<TARGET_EXISTS:attn_cemit>:attn_cemit>)
