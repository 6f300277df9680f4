/* sdpa-cudnn -- PyTorch SDPA's cuDNN backend on an H100/H200 (cuDNN 9.19's
 * cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64xNx{D}_4x1x1 kernels). cuDNN is closed
 * source: this arithmetic was established from captures with designed inputs (scripts/device/capture_sdpa_probe.py:
 * key counts on either side of 64 and 128, q = 0, scores rising or falling along the keys) by testing one
 * choice at a time against every capture (docs/REFERENCES.md, "PyTorch SDPA cuDNN"). Per row: key blocks of 128
 * in order (64 gives 80-92%, reverse order 54-95%); S = Q K^T by WGMMA from zero (tc-hopper); the block's
 * maximum m; a later block rescales by r = ex2(fl32(fl32(m_old sl2) - fl32(m sl2))) and O = fl32(O r);
 * p = exp2f(fl32(fl32(s sl2) - fl32(m sl2))) with sl2 = fl32(scale log2 e); each of the four threads of a
 * row sums its columns 8j + 2t + e of the block in order and adds that to its running sum as fma(l, r,
 * block sum) (scripts/device/probe_cudnn_stats.py: rows whose p are 1 and one value just above half an ulp of 1, so
 * that each order gives its own sum); P cast to the input format; O += P V by WGMMA; at the end the quad's
 * L = (l0 + l1) + (l2 + l3) (xor 1, then xor 2: FlashAttention's order is the other), O = fl32(O rcp.approx(L)),
 * and the stats (natural log) fma(fl32(m sl2), fl32(ln 2), __logf(L)). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/gpu_fp.h"
#include "attn/variants/variants.h"

#define CUDNN_SITES(X)                                                                                             \
    X(QK_ACC, "qk_acc", "S = Q K^T, WGMMA from zero over the head dim (tc-hopper)", SITE_ACC_HOPPER, FMT_FP32,      \
      FMT_RNE, 0)                                                                                                  \
    X(P_EXP, "p_exp", "p = exp2f(fl32(fl32(s sl2) - fl32(m sl2)))", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)          \
    X(L_SUM, "l_sum", "each thread's block sum of its columns, fma(l, r, block), the quad's (l0 + l1) + (l2 + l3)", \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                        \
    X(P_CAST, "p_cast", "P cast to the input format for P.V", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)                    \
    X(PV_ACC, "pv_acc", "O += P V, WGMMA (tc-hopper)", SITE_ACC_HOPPER, FMT_FP32, FMT_RNE, 0)                       \
    X(O_RESCALE, "o_rescale", "r = ex2(fl32(fl32(m_old sl2) - fl32(m sl2))); O times r", SITE_FMT_FIXED, FMT_FP32,  \
      FMT_RNE, 0)                                                                                                  \
    X(O_DIV, "o_div", "O fl32(O rcp.approx(L)); stats fma(fl32(m sl2), fl32(ln 2), __logf(L))", SITE_FMT_FIXED,     \
      FMT_FP32, FMT_RNE, 0)                                                                                        \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { CUDNN_SITES(SITE_ENUM) };

const site_def_t attn_sdpa_cudnn_sites[] = {CUDNN_SITES(SITE_ROW) SITE_END};

#define CUDNN_BLOCK 128                /* keys per block (the kernel names' N) */
#define CUDNN_QUAD 4                   /* threads sharing a row of the WGMMA accumulator */
#define CUDNN_LOG2E 0x1.71547652b82fep0
#define CUDNN_LN2 0x1.62e43p-1 /* fl32(ln 2) */

long attn_sdpa_cudnn_tile(long dk)
{
    (void)dk;
    return CUDNN_BLOCK;
}

ATTN_VARIANT(attn_sdpa_cudnn)
{
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv, bn = CUDNN_BLOCK, nblocks = (sk + bn - 1) / bn;
    double scale = ctx->site[P_EXP].exact ? ctx->cfg->scale : (double)(float)ctx->cfg->scale;
    volatile float sl2_32 = (float)(scale * CUDNN_LOG2E); /* volatile: kept in binary32 (see fa2.c) */
    double sl2 = ctx->site[P_EXP].exact ? scale * CUDNN_LOG2E : (double)sl2_32;
    double *s = err_malloc((size_t)(R * bn), sizeof(double)), *pb = err_malloc((size_t)(R * bn), sizeof(double));
    double *l = err_calloc((size_t)(R * CUDNN_QUAD), sizeof(double)), *m = err_malloc((size_t)R, sizeof(double));
    for (long r = 0; r < R; r++)
        m[r] = -INFINITY;
    memset(o, 0, sizeof(double) * (size_t)(R * dv));
    for (long b = 0; b < nblocks; b++) {
        long j0 = b * bn, nb = sk - j0 < bn ? sk - j0 : bn;
        memset(s, 0, sizeof(double) * (size_t)(R * bn));
        gpu_gemm(ctx, QK_ACC, 0, s, bn, g->q, dk, g->k + j0 * dk, dk, 1, R, nb, dk);
        for (long r = 0; r < R; r++) {
            double *sr = s + r * bn, *lr = l + r * CUDNN_QUAD, mb = -INFINITY, a = 1;
            for (long c = 0; c < bn; c++) {
                sr[c] = c >= nb || j0 + c > g->limit[r] ? -INFINITY : sr[c];
                mb = sr[c] > mb ? sr[c] : mb;
            }
            double mnew = m[r] > mb ? m[r] : mb;
            int rescale = b > 0 && m[r] != -INFINITY; /* a row masked so far has O and sums 0: nothing to scale */
            if (rescale) {
                a = gpu_ex2(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, m[r] * sl2) -
                                                                        gpu_r32(ctx, O_RESCALE, mnew * sl2)));
                gpu_r32_scale(ctx, O_RESCALE, o + r * dv, dv, a);
            }
            m[r] = mnew;
            double ms = mnew == -INFINITY ? 0 : gpu_r32(ctx, P_EXP, mnew * sl2);
            /* the exp2f of each score, eight at a time; a -infinity one (masked) is 0, as written (its
             * column of P, written below, marks it meanwhile) */
            double *masked = pb + r * bn;
            for (long c = 0; c < bn; c++)
                masked[c] = sr[c] == -INFINITY;
            gpu_r32_scale_sub(ctx, P_EXP, sr, bn, sl2, ms);
            for (long c = 0; c < bn; c++)
                sr[c] = masked[c] != 0 ? 0 : sr[c];
            gpu_exp2f_n(ctx, P_EXP, sr, bn);
            for (long c = 0; c < bn; c++)
                sr[c] = masked[c] != 0 ? 0 : sr[c];
            /* each thread's sum of this block's columns, then added to its running sum: fma(l, r, block) */
            for (int t = 0; t < CUDNN_QUAD; t++) {
                double bs = sr[2 * t];
                for (long j = 0; j < bn / 8; j++)
                    for (int e = j ? 0 : 1; e < 2; e++)
                        bs = gpu_r32(ctx, L_SUM, bs + sr[8 * j + 2 * t + e]);
                lr[t] = b == 0 ? bs : gpu_fmaf(ctx, L_SUM, lr[t], a, bs);
            }
            memcpy(pb + r * bn, sr, sizeof(double) * (size_t)bn);
            attn_round_n(ctx, P_CAST, pb + r * bn, bn);
        }
        gpu_gemm(ctx, PV_ACC, 1, o, dv, pb, bn, g->v + j0 * dv, dv, 0, R, dv, nb);
    }
    for (long r = 0; r < R; r++) {
        const double *lr = l + r * CUDNN_QUAD;
        /* the quad's reduction: (l0 + l1) + (l2 + l3) (xor 1 first, then xor 2) */
        double L = gpu_r32(ctx, L_SUM, gpu_r32(ctx, L_SUM, lr[0] + lr[1]) + gpu_r32(ctx, L_SUM, lr[2] + lr[3]));
        int bad = L == 0 || L != L;
        double inv = bad ? 1 : gpu_rcp(ctx, O_DIV, L); /* MUFU.RCP alone: the IEEE reciprocal gave 99.97-100% */
        for (long c = 0; c < dv; c++) {
            double x = ctx->site[O_DIV].exact && !bad ? o[r * dv + c] / L : gpu_r32(ctx, O_DIV, o[r * dv + c] * inv);
            o[r * dv + c] = attn_round(ctx, OUT_CAST, x);
        }
        if (ctx->lse)
            ctx->lse[r] = bad ? INFINITY
                              : gpu_fmaf(ctx, O_DIV, gpu_r32(ctx, O_DIV, m[r] * sl2), CUDNN_LN2,
                                         gpu_fast_logf(ctx, O_DIV, L));
    }
    free(s);
    free(pb);
    free(l);
    free(m);
}
