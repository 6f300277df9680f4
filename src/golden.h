/* golden -- the high-precision reference attention */
#ifndef AMLA_GOLDEN_H
#define AMLA_GOLDEN_H

#include "attn.h"

/* O = softmax(Q K^T * scale) V of the (already rounded) inputs, per row, in near-exact
 * arithmetic, returned rounded to binary64. scale <= 0 means 1/sqrt(dk) exactly.
 *
 * Error bound per output element (README "Golden"): with W = sum_j p_j |v_j| / sum_j p_j
 * (the mean |V| the row's weights see) and A = scale * max_j sum_k |q_k k_jk|,
 *     |O~ - O| <= 2^-53 (1 + 2^-50) |O| + (g(sk) + 2 (g(dk) + 2^-100) A + 2^-97) W,
 *     g(n) = (n u / (1 - n u))^2, u = 2^-53,
 * where g(sk) bounds Dot2's error on the P.V sums (Ogita, Rump, Oishi 2005, Thm 5.3, kept
 * as an unrounded pair), g(dk) A the effect of Q.K^T's Dot2 error on exp's argument (twice:
 * numerator and denominator), 2^-100 the double-double exp, and 2^-97 the double-double
 * steps and the final division. The first term is the final rounding to binary64. */
void golden_attention(double *o, const attn_input_t *in, double scale);

/* The bound above for one element, given |O|, W, A and the sizes. */
double golden_bound(double o_abs, double w, double a, long sk, long dk);

/* Reference: everything in MPFR at prec bits (small shapes only; for tests). */
void golden_attention_mpfr(double *o, const attn_input_t *in, double scale, long prec);

#endif
