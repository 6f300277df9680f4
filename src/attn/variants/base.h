/* base -- Base's rounding sites, shared with variants that run Base on transformed inputs */
#ifndef AMLA_ATTN_BASE_H
#define AMLA_ATTN_BASE_H

/* Base's sites in the order the kernel meets them (AMLA Algorithm 1, lines 4-11), as a site
 * list (attn/site.h). A variant that calls attn_base() lists these first, then its own. */
#define BASE_SITES(X)                                                                                            \
    X(QK_ACC, "qk_acc", "S_i = Q K_i^T (line 4, matrix unit)", SITE_ACC_QK, FMT_FP32, FMT_RNE, 0)                 \
    X(S_SCALE, "s_scale", "S_i / sqrt(Dk): fp32 scale, fp32 product", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)      \
    X(P_EXP, "p_exp", "P_i = exp(s - m_i): fp32 difference, fp32 exp", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)     \
    X(L_SUM, "l_sum", "l_i = l_{i-1} alpha + rowsum(P_i), fp32 in order", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)  \
    X(P_CAST, "p_cast", "P_i cast for P.V (ell sums the uncast P)", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)            \
    X(PV_ACC, "pv_acc", "T_i = P_i V_i (line 8, matrix unit)", SITE_ACC_PV, FMT_FP32, FMT_RNE, 0)                 \
    X(O_RESCALE, "o_rescale", "alpha = exp(m_{i-1} - m_i); O = O alpha + T", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(O_DIV, "o_div", "O_N / l_N (line 11)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                               \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)


#include "attn/attn.h"
#include "attn/flash.h"

/* A tile's keys and values in place of g->k, g->v rows j0 .. j0+nb-1 (a variant that
 * transforms the cache, e.g. FP8, hands them to Base one tile at a time). */
typedef void (*attn_base_tile_fn)(void *arg, long j0, long nb, const double **kt, const double **vt);

/* Base (AMLA Algorithm 1) with every tile's K and V taken from load (NULL: g's own rows). */
void attn_base_tiles(double *o, const attn_group_t *g, attn_ctx_t *ctx, attn_base_tile_fn load, void *arg);

#endif
