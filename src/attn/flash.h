/* flash -- the machinery the tiled (flash) variants share: tile scores, the online-softmax
 * row update, the output rescale and finish, products at accumulation sites */
#ifndef AMLA_FLASH_H
#define AMLA_FLASH_H

#include "attn/attn.h"

/* One KV tile of a tiled variant: S = Q K[j0 : j0+nb]^T at accumulation site qk, then each
 * row's visible keys scaled by `scale` at rounding site sc (masked keys set to 0).
 * valid[r] = number of visible keys in the tile (<= 0: all masked), tmax[r] = the row's
 * largest scaled score in the tile (-inf when none). s is R x nb. */
void attn_tile_scores(double *s, long *valid, double *tmax, attn_ctx_t *ctx, int qk, int sc,
                      const attn_group_t *g, long j0, long nb, double scale);
/* The same with the tile's keys taken from kt [nb][dk] (a transformed copy of the tile). */
void attn_tile_scores_k(double *s, long *valid, double *tmax, attn_ctx_t *ctx, int qk, int sc,
                        const attn_group_t *g, long j0, long nb, double scale, const double *kt);

/* Whether V is K's first dv columns, row for row (MLA's one latent cache): the generator says so (v_of_k) or the
 * rows compare equal. A kernel that reads V from the K cache needs it so. */
int attn_v_is_k_prefix(const attn_group_t *g);

/* The loop m = init; m = x[c] > m ? x[c] : m for c < n, with four maxima side by side. */
double attn_row_max(const double *x, long n, double init);

/* row[c] = site(row[c] * scale) for c < n (vectorized where the site allows); returns their
 * largest as the loop t = row[c] > t ? row[c] : t from t = -inf gives it (-inf when n = 0). */
double attn_scale_max(attn_ctx_t *ctx, int site, double *row, long n, double scale);

/* x[i] = site(exp(x[i])) (two: exp2) for i < n, the rounding a pass over x (vec_exp_rn32 where the site is
 * binary32 RNE); for a site that does not draw from the stochastic stream. */
void attn_exp_n(attn_ctx_t *ctx, int site, double *x, long n, int two);

/* P = exp(S - m) over a row: row[c] = exp_site(exp(exp_site(row[c] - m))) for c < valid, 0 up to
 * nb; returns their sum rounded at sum_site in order. Where neither site draws from the
 * stochastic stream, each step a pass over the row (the roundings vectorized), else element by
 * element in the kernel's order: the same values. */
double attn_exp_row(attn_ctx_t *ctx, int exp_site, int sum_site, double *row, long nb, long valid, double m);

/* FlashAttention-2's update of one row by one tile, given the tile's largest score tmax:
 * m_new = max(m, tmax), alpha = exp(m - m_new) (at alpha_site), p = exp(s - m_new) for the
 * valid entries (exp_site; 0 beyond), l = l alpha + sequential sum of the uncast p (sum_site),
 * row <- p cast at cast_site. Returns alpha; updates m and l. */
double attn_online_row(double *row, long nb, long valid, double tmax, double *m, double *l, attn_ctx_t *ctx,
                       int alpha_site, int exp_site, int sum_site, int cast_site);

/* The sequential sum x[0] + x[1] + ... + x[n-1] from 0, each partial sum rounded at `site`;
 * x_fp32: the x[i] are binary32 values (then, where the site rounds to binary32 to nearest,
 * the sum runs in binary32: its addition is the binary64 sum rounded once). */
double attn_sum_in_order(attn_ctx_t *ctx, int site, const double *x, long n, int x_fp32);

/* The online-softmax update of one output row: o[c] = site(site(o[c] a) + t[c]), or with ts != 0
 * o[c] = site(site(o[c] a) + site(t[c] ts)) (a tile's scale applied to its product). */
void attn_rescale_add(double *o, const double *t, long n, double a, double ts, attn_ctx_t *ctx, int site);

/* A tile's output update: T = P V [M][N] at accumulation site pv (P with row stride ldp, V with ldv),
 * then each row r of T added into o (row stride ldo) by attn_rescale_add with a[r] and ts at site rs.
 * Where pv is an FP32 model and rs rounds to binary32 (RNE), in one pass (acc_gemm32_rescale: T's
 * values go into o as they leave the product, t untouched); else through t (row stride ldt). */
void attn_pv_rescale(attn_ctx_t *ctx, int pv, int rs, double *o, long ldo, double *t, long ldt, const double *P,
                     long ldp, const double *V, long ldv, long M, long N, long K, const double *a, double ts);

/* The last step of a flash schedule: o[r][c] = out_site(div_site(o[r][c] / l[r])). */
void attn_finish(double *o, long R, long dv, const double *l, attn_ctx_t *ctx, int div_site, int out_site);

/* A matrix product at an accumulation site: the site's model, or fp64 when exact. */
void attn_gemm(attn_ctx_t *ctx, int site, double *C, long ldc, const double *A, long lda,
               const double *B, long ldb, int b_trans, long M, long N, long K);

#endif
