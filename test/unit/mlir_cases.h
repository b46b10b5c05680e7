/*
** test/unit/mlir_cases.h: the cascades the MLIR tests share, built by hand
** the way the front end desugars them.
*/
#ifndef ATTN_MLIR_CASES_H
#define ATTN_MLIR_CASES_H

#include "mlir_testutil.h"

/* Causal softmax attention with a key-length filter:
** dims B, H, N, D; in Q, K, V [B, H, N, D] f32, kv_len [B] i32;
** param scale; out O [B, H, N, D], L [B, H, N]; tensors in this order. */
void case_causal_attention(TB *tb);

/* Grouped-query scores and outputs: dims B, HKV, G, N, D;
** tensors Q, K, O, V, KS in this order (an output between inputs):
** in Q [B, HKV*G, N, D], K and V [B, HKV, N, D];
** out O [B, HKV*G, N, D] = sum[j](S * V[b, h / G, j, e]) with
** S = sum[d](Q * K[b, h / G, j, d]), and KS [B, HKV*G, D] =
** sum[j](K[b, h / G, (j + 1) % N, d]) (j only in index arithmetic). */
void case_gqa(TB *tb);

#endif
