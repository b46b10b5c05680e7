/*
** test/unit/mlir_cases.c: shared hand-built cascades (see mlir_cases.h).
*/
#include "mlir_cases.h"

/* Shorthands over the local Dim pointers B, H, N, D, HKV, G of each case:
** a fresh expression per use, as the front end makes them. */
#define DB            tb_d(tb, B)
#define DH            tb_d(tb, H)
#define DN            tb_d(tb, N)
#define DD            tb_d(tb, D)
#define I(k)          tb_i(tb, k)
#define DHQ           tb_bin(tb, OP_MUL, tb_d(tb, HKV), tb_d(tb, G))
#define DHK           tb_d(tb, HKV)
#define HG(k)         tb_bin(tb, OP_DIV, I(k), tb_d(tb, G))
#define AT(...)       tb_at(tb, __VA_ARGS__)
#define MUL(a, b)     tb_bin(tb, OP_MUL, a, b)
#define MASK(b, i, j) causal_mask(tb, kvl, b, i, j)

/* (j <= i) && (j < kv_len[b]) for the given variable numbers. */
static Expr *causal_mask(TB *tb, Tensor *kvl, int b, int i, int j)
{
	Expr *le = tb_bin(tb, OP_LE, tb_i(tb, j), tb_i(tb, i));
	Expr *lt = tb_bin(tb, OP_LT, tb_i(tb, j), tb_at(tb, kvl, tb_i(tb, b)));
	return expr_and(&tb->a, le, lt);
}

/* The desugared form of
**   S[b,h,i,j] = scale * sum[d](Q[b,h,i,d] * K[b,h,j,d]) where j <= i && j < kv_len[b];
**   O[b,h,i,e] = sum[j](softmax[j](S[b,h,i,j]) * V[b,h,j,e]);
**   L[b,h,i]   = logsumexp[j](S[b,h,i,j]);
** every consumer of S inheriting its domain into its filter. */
void case_causal_attention(TB *tb)
{
	tb_init(tb, "causal_attention");
	Dim *B = tb_dim(tb, "B"), *H = tb_dim(tb, "H"), *N = tb_dim(tb, "N"), *D = tb_dim(tb, "D");
	Tensor *Q = tb_tensor(tb, "Q", TK_IN, DT_F32, 4, DB, DH, DN, DD);
	Tensor *K = tb_tensor(tb, "K", TK_IN, DT_F32, 4, DB, DH, DN, DD);
	Tensor *V = tb_tensor(tb, "V", TK_IN, DT_F32, 4, DB, DH, DN, DD);
	Tensor *kvl = tb_tensor(tb, "kv_len", TK_IN, DT_I32, 1, DB);
	Tensor *O = tb_tensor(tb, "O", TK_OUT, DT_F32, 4, DB, DH, DN, DD);
	Tensor *L = tb_tensor(tb, "L", TK_OUT, DT_F32, 3, DB, DH, DN);
	Param *scale = tb_param(tb, "scale", VT_FLOAT);
	Tensor *Sd = tb_tensor(tb, "S.dot", TK_TEMP, DT_F32, 4, DB, DH, DN, DN);
	Tensor *S = tb_tensor(tb, "S", TK_TEMP, DT_F32, 4, DB, DH, DN, DN);
	Tensor *Pm = tb_tensor(tb, "P.max", TK_TEMP, DT_F32, 3, DB, DH, DN);
	Tensor *Pe = tb_tensor(tb, "P.exp", TK_TEMP, DT_F32, 4, DB, DH, DN, DN);
	Tensor *Ps = tb_tensor(tb, "P.sum", TK_TEMP, DT_F32, 3, DB, DH, DN);
	Tensor *P = tb_tensor(tb, "P", TK_TEMP, DT_F32, 4, DB, DH, DN, DN);
	Sd->domain = S->domain = Pe->domain = P->domain = MASK(0, 2, 3);

	/* vars b h i j | d */
	Expr *qk = MUL(AT(Q, I(0), I(1), I(2), I(4)), AT(K, I(0), I(1), I(3), I(4)));
	tb_node(tb, Sd, RED_SUM, 4, 1, qk, MASK(0, 2, 3), DB, DH, DN, DN, DD);
	Expr *s = MUL(tb_p(tb, scale), AT(Sd, I(0), I(1), I(2), I(3)));
	tb_node(tb, S, RED_NONE, 4, 0, s, MASK(0, 2, 3), DB, DH, DN, DN);
	/* vars b h i | j */
	Expr *sij = AT(S, I(0), I(1), I(2), I(3));
	tb_node(tb, Pm, RED_MAX, 3, 1, sij, MASK(0, 2, 3), DB, DH, DN, DN);
	Expr *x = tb_bin(tb, OP_SUB, AT(S, I(0), I(1), I(2), I(3)), AT(Pm, I(0), I(1), I(2)));
	tb_node(tb, Pe, RED_NONE, 4, 0, tb_call(tb, FN_EXP, x), MASK(0, 2, 3), DB, DH, DN, DN);
	Expr *pe = AT(Pe, I(0), I(1), I(2), I(3));
	tb_node(tb, Ps, RED_SUM, 3, 1, pe, MASK(0, 2, 3), DB, DH, DN, DN);
	Expr *p = tb_bin(tb, OP_DIV, AT(Pe, I(0), I(1), I(2), I(3)), AT(Ps, I(0), I(1), I(2)));
	tb_node(tb, P, RED_NONE, 4, 0, p, MASK(0, 2, 3), DB, DH, DN, DN);
	/* vars b h i e | j */
	Expr *pv = MUL(AT(P, I(0), I(1), I(2), I(4)), AT(V, I(0), I(1), I(4), I(3)));
	tb_node(tb, O, RED_SUM, 4, 1, pv, MASK(0, 2, 4), DB, DH, DN, DD, DN);
	/* vars b h i */
	Expr *lse = tb_bin(tb, OP_ADD, AT(Pm, I(0), I(1), I(2)),
			   tb_call(tb, FN_LOG, AT(Ps, I(0), I(1), I(2))));
	tb_node(tb, L, RED_NONE, 3, 0, lse, NULL, DB, DH, DN);
}

void case_gqa(TB *tb)
{
	tb_init(tb, "gqa");
	Dim *B = tb_dim(tb, "B"), *HKV = tb_dim(tb, "HKV"), *G = tb_dim(tb, "G");
	Dim *N = tb_dim(tb, "N"), *D = tb_dim(tb, "D");
	/* an output declared between inputs: argument order must not care */
	Tensor *Q = tb_tensor(tb, "Q", TK_IN, DT_F32, 4, DB, DHQ, DN, DD);
	Tensor *K = tb_tensor(tb, "K", TK_IN, DT_F32, 4, DB, DHK, DN, DD);
	Tensor *O = tb_tensor(tb, "O", TK_OUT, DT_F32, 4, DB, DHQ, DN, DD);
	Tensor *V = tb_tensor(tb, "V", TK_IN, DT_F32, 4, DB, DHK, DN, DD);
	Tensor *KS = tb_tensor(tb, "KS", TK_OUT, DT_F32, 3, DB, DHQ, DD);
	Tensor *S = tb_tensor(tb, "S", TK_TEMP, DT_F32, 4, DB, DHQ, DN, DN);
	/* vars b h i j | d */
	Expr *qk = MUL(AT(Q, I(0), I(1), I(2), I(4)), AT(K, I(0), HG(1), I(3), I(4)));
	tb_node(tb, S, RED_SUM, 4, 1, qk, NULL, DB, DHQ, DN, DN, DD);
	/* vars b h i e | j */
	Expr *sv = MUL(AT(S, I(0), I(1), I(2), I(4)), AT(V, I(0), HG(1), I(4), I(3)));
	tb_node(tb, O, RED_SUM, 4, 1, sv, NULL, DB, DHQ, DN, DD, DN);
	/* vars b h d | j */
	Expr *jn = tb_bin(tb, OP_MOD, tb_bin(tb, OP_ADD, I(3), tb_n(tb, 1)), DN);
	tb_node(tb, KS, RED_SUM, 3, 1, AT(K, I(0), HG(1), jn, I(2)), NULL, DB, DHQ, DD, DN);
}
