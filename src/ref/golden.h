/* golden -- the high-precision reference attention */
#ifndef AMLA_GOLDEN_H
#define AMLA_GOLDEN_H

#include "data/problem.h"

/* O = softmax(Q K^T * scale) V of the (already rounded) inputs, per row, in near-exact
 * arithmetic, returned rounded to binary64. scale <= 0 means 1/sqrt(dk) exactly.
 *
 * Method: Q K^T exactly through FP64 GEMMs of Ozaki slices: one slice per row and its sparse
 * remainders summed term by term (ozaki_one.c; BF16, FP16, FP8 inputs), else as many slice
 * products as the rows need, at most 4 (usually FP32 inputs), else with Dot2; double-double
 * softmax; P V with P's leading 20+ bits times V's exact slices through exact GEMMs and the rest
 * of P in plain FP64 (else Dot2 with a double-double P); one final division and rounding.
 *
 * Error bound per output element (README "Golden"): with W = sum_j p_j |v_j| / sum_j p_j
 * (the mean |V| the row's weights see), Z = sum_j |v_j| / sum_j p_j (the same without the
 * weights) and A = scale * max_j sum_k |q_k k_jk|,
 *     |O~ - O| <= 2^-53 (1 + 2^-50) |O| + (g(sk) + 2 (g(dk) + 2^-100) A + 2^-97) W
 *                 + (g1(sk) + 2^-52) 2^-19 Z,
 *     g1(n) = n u / (1 - n u), g(n) = g1(n)^2, u = 2^-53,
 * where g(sk) bounds Dot2's error on the P.V sums (Ogita, Rump, Oishi 2005, Thm 5.3, kept
 * as an unrounded pair), g(dk) A the effect of Q.K^T's Dot2 error on exp's argument (twice:
 * numerator and denominator; 0 on the exact Ozaki path), 2^-100 the double-double exp, 2^-97
 * the double-double steps and the final division, and the Z term the plain FP64 product of
 * P's remainder (at most 2^-20 of P's row maximum) with V. The first term is the final
 * rounding to binary64. Every path's terms are in the sum, so the bound holds for both. */
/* One line for `amla-lab list`. */
#define GOLDEN_SUMMARY \
    "reference: exact Q.K^T (Ozaki slices in FP64 GEMM, or Dot2), double-double softmax (MPFR-checked bound)"

void golden_attention(double *o, const attn_input_t *in, double scale);

/* The same, and the log-sum-exp of each row's scaled scores, ln sum_j exp(scale q.k_j), in
 * natural log, [hq][sq] like O's rows (-inf for a row that sees no key). */
void golden_attention_lse(double *o, double *lse, const attn_input_t *in, double scale);

/* Golden in parts that run on their own (on any thread, in any order, the same bits): a part is one KV-head
 * group's rows, golden_chunk_rows of them at a time, so that a part's scores (two binary64 arrays of rows x keys)
 * hold at most about GOLDEN_CHUNK_SCORES of each whatever the grouping. golden_attention_lse runs every part in
 * turn; golden_attention_part(..., p) writes part p's rows of O, lse and (mlog unless NULL) each row's largest
 * scaled score, FlashMLA's max_logits (-inf for a row of no key). An input's sink (attn_input_t.sink) joins O's
 * denominators, not the log-sum-exp. */
#define GOLDEN_CHUNK_SCORES (1L << 23)
#define GOLDEN_CHUNK_MIN_ROWS 64
/* The largest |m.lo scale| Golden's softmax leaves in its exp arguments (golden_group): any size far from exp's
 * range (about +-709) would do; 1 keeps every argument of a row's largest term within (-1, 1]. */
#define GOLDEN_SHIFT_LO_MAX 1.0
long golden_chunk_rows(long sk);
long golden_parts(const attn_input_t *in);
void golden_attention_part(double *o, double *lse, double *mlog, const attn_input_t *in, double scale, long part);

/* The bound above for one element, given |O|, W, Z, A and the sizes. */
double golden_bound(double o_abs, double w, double z, double a, long sk, long dk);

/* How many products (Q K^T or P V, per head group) took the Ozaki path and how many Dot2,
 * since the process started (for tests and the bench). */
void golden_paths(long *ozaki, long *dot2);

/* Seconds spent in each of Golden's phases since the process started, summed over threads (for the bench):
 * Q K^T, the softmax, P V, of which P V's FP64 GEMMs (on the one-slice path with AMX: the plain product of P's
 * remainder only), and the final division. */
typedef enum { GOLDEN_T_SCORES, GOLDEN_T_SOFTMAX, GOLDEN_T_PV, GOLDEN_T_PV_FP64, GOLDEN_T_DIVIDE, GOLDEN_T_N } golden_phase_t;
void golden_times(double t[GOLDEN_T_N]);

#endif
