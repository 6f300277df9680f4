/* sdpa-efficient -- PyTorch's SDPA memory-efficient backend on an H100/H200: the xFormers CUTLASS kernel
 * PyTorch vendors (aten/src/ATen/native/transformers/cuda/mem_eff_attention/kernel_forward.h,
 * AttentionKernel<scalar_t, Sm80, aligned, kQueriesPerBlock, kKeysPerBlock, kMaxK, dropout, bias>, the
 * fmha_cutlassF_{f16,bf16}_aligned_* kernels the profiler names; built without --use_fast_math;
 * docs/REFERENCES.md, "PyTorch SDPA memory-efficient"). The kernel by head dim: up to 64
 * 64x64_rf, up to 128 64x128_rf (O kept in registers), beyond 32x128_gmem (O kept in an fp32 buffer
 * between key blocks). Per query block, key blocks of kKeysPerBlock in order (a causal block stops at
 * its last row's keys): S = Q K^T by mma.sync m16n8k8 (gemm_kernel_utils.h's
 * DefaultGemmType for 16-bit types on Sm75+; each instruction one block of 8 products) from zero; s = fl32(scale s) (the bias-capable kernel
 * scales the accumulator), masked keys -inf; t = fl32(s fl32(log2 e)); mi = max(m, max t) over the
 * block's keys; if m < mi: r = exp2f(fl32(m - mi)), s' = fl32(s' r), O = fl32(O r); p = exp2f(fl32(t -
 * mi)) (0 past the keys); each thread sums its columns (32w + 8j + 2q + c, j and c in order) from
 * zero, the quad's butterfly (xor 1, then xor 2), and s' += the warps' sums in warp order; P cast to
 * the input format; O += P V by mma.sync. At the end O = fl32(fl32(1 / s') O) (rf), or through the
 * epilogue's fma(alpha, acc, fl32(beta O_acc)) (gmem); lse = fl32(fl32(mi / fl32(log2 e)) +
 * logf(s')). CUDA's exp2f and logf, IEEE fp32 (num/sfu.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/gpu_fp.h"
#include "attn/variants/variants.h"
#include "num/vec/vec.h"

#define EFF_SITES(X)                                                                                               \
    X(QK_ACC, "qk_acc", "S = Q K^T, mma.sync m16n8k8 from zero over the head dim (tc-hopper-k8)", SITE_ACC_HOPPER_K8, \
      FMT_FP32, FMT_RNE, 0)                                                                                        \
    X(S_SCALE, "s_scale", "s = fl32(scale S), then t = fl32(s fl32(log2 e))", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_EXP, "p_exp", "p = exp2f(fl32(t - mi)) (CUDA's exp2f)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                \
    X(L_SUM, "l_sum", "per-thread column sums, the quad's butterfly, s' plus the warps' sums in order",              \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                        \
    X(P_CAST, "p_cast", "P cast to the input format for P.V", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)                    \
    X(PV_ACC, "pv_acc", "O += P V, mma.sync m16n8k8 (tc-hopper-k8)", SITE_ACC_HOPPER_K8, FMT_FP32, FMT_RNE, 0)      \
    X(O_RESCALE, "o_rescale", "r = exp2f(fl32(m - mi)); s' and O times r; the fp32 O buffer's epilogue",            \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                        \
    X(O_DIV, "o_div", "O times fl32(1 / s'); lse = fl32(fl32(mi / log2 e) + logf(s'))", SITE_FMT_FIXED, FMT_FP32,   \
      FMT_RNE, 0)                                                                                                  \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { EFF_SITES(SITE_ENUM) };

const site_def_t attn_sdpa_efficient_sites[] = {EFF_SITES(SITE_ROW) SITE_END};

#define EFF_WARP_COLS 32 /* columns of a warp's 32x32 tile of S */
#define EFF_LOG2E 0x1.715476p0f /* the kernel's constexpr float kLog2e */

/* The kernel PyTorch's dispatch picks on head dims dk, dv (kernels/cutlassF.h: the first of 64x64_rf,
 * 64x128_rf, 32x128_gmem whose kMaxK holds both): queries and keys per block, O in registers. */
static void eff_kernel(long dk, long dv, long *kq, long *kk, int *rf)
{
    long d = dk > dv ? dk : dv;
    *kq = d <= 128 ? 64 : 32;
    *kk = d <= 64 ? 64 : 128;
    *rf = d <= 128;
}

long attn_sdpa_efficient_tile(long dk)
{
    long kq, kk;
    int rf;
    eff_kernel(dk, dk, &kq, &kk, &rf);
    return kk;
}

/* The row's sum of this block's p[0..kk) as iterative_softmax forms it: the warps' partials. */
static double eff_block_sum(attn_ctx_t *ctx, const double *p, long kk, double sp)
{
    for (long w = 0; w < kk / EFF_WARP_COLS; w++) {
        double v[4];
        for (int q = 0; q < 4; q++) {
            v[q] = 0;
            for (int j = 0; j < EFF_WARP_COLS / 8; j++)
                for (int c = 0; c < 2; c++)
                    v[q] = gpu_r32(ctx, L_SUM, v[q] + p[w * EFF_WARP_COLS + 8 * j + 2 * q + c]);
        }
        /* reduceSameRow: x + shfl_xor(x, 1), then + shfl_xor(x, 2) */
        double a = gpu_r32(ctx, L_SUM, gpu_r32(ctx, L_SUM, v[0] + v[1]) + gpu_r32(ctx, L_SUM, v[2] + v[3]));
        sp = gpu_r32(ctx, L_SUM, sp + a);
    }
    return sp;
}

#define EFF_ROWS 512 /* rows per pass (bounds the work arrays; rows are independent) */

ATTN_VARIANT(attn_sdpa_efficient)
{
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv, kq, kk;
    int rf;
    eff_kernel(dk, dv, &kq, &kk, &rf);
    long sq = ctx->shape ? ctx->shape->sq : R;
    double scale = ctx->site[S_SCALE].exact ? ctx->cfg->scale : (double)(float)ctx->cfg->scale;
    double log2e = ctx->site[S_SCALE].exact ? 0x1.71547652b82fep0 : (double)EFF_LOG2E;
    long rb = R < EFF_ROWS ? R : EFF_ROWS;
    double *s = err_malloc((size_t)(rb * kk), sizeof(double)), *pb = err_malloc((size_t)(rb * kk), sizeof(double));
    double *acc = err_malloc((size_t)(rb * dv), sizeof(double)), *oacc = err_malloc((size_t)(rb * dv), sizeof(double));
    double *m = err_malloc((size_t)rb, sizeof(double)), *sp = err_malloc((size_t)rb, sizeof(double));
    double *resc = err_malloc((size_t)rb, sizeof(double));
    long *neff = err_malloc((size_t)rb, sizeof(long));
    /* Rows are independent; what a row's query block (kq rows of one head, rows being [head][sq]) decides
     * is its keys: the block stops at its last row's (num_keys = min(query_start + kq, keys) when causal), and
     * the gmem epilogue normalizes on that block's last key block. So the rows go rb at a time, each with its
     * own query block's key count, and a row whose blocks are done is left alone. */
    for (long r0 = 0; r0 < R; r0 += rb) {
        long nr = R - r0 < rb ? R - r0 : rb, nmax = 0;
        for (long r = 0; r < nr; r++) {
            long row = r0 + r, q0 = row / sq * sq + (row % sq) / kq * kq, q1 = q0 + kq < (row / sq + 1) * sq ? q0 + kq : (row / sq + 1) * sq;
            neff[r] = 0;
            for (long i = q0; i < q1; i++)
                neff[r] = g->limit[i] + 1 > neff[r] ? g->limit[i] + 1 : neff[r];
            neff[r] = neff[r] < sk ? neff[r] : sk;
            nmax = neff[r] > nmax ? neff[r] : nmax;
            m[r] = -INFINITY, sp[r] = 0;
        }
        memset(acc, 0, sizeof(double) * (size_t)(nr * dv));
        for (long b = 0, nblocks = (nmax + kk - 1) / kk; b < nblocks; b++) {
            long j0 = b * kk, ncols = sk - j0 < kk ? sk - j0 : kk;
            gpu_gemm(ctx, QK_ACC, 0, s, kk, g->q + r0 * dk, dk, g->k + j0 * dk, dk, 1, nr, ncols, dk);
            for (long r = 0; r < nr; r++) {
                double *sr = s + r * kk, *pr = pb + r * kk, mb = -INFINITY;
                long nb = neff[r] - j0 < kk ? neff[r] - j0 : kk; /* max_col: this row's block's keys here */
                if (nb <= 0) { /* the row's query block has no more keys: P = 0, nothing else changes */
                    memset(pr, 0, sizeof(double) * (size_t)kk);
                    continue;
                }
                for (long c = 0; c < kk; c++) {
                    if (c >= nb) {
                        sr[c] = 0;
                        continue;
                    }
                    double x = j0 + c > g->limit[r0 + r] ? -INFINITY : gpu_r32(ctx, S_SCALE, scale * sr[c]);
                    sr[c] = gpu_r32(ctx, S_SCALE, x * log2e);
                    mb = sr[c] > mb ? sr[c] : mb;
                }
                double mi = m[r] > mb ? m[r] : mb, mu = mi;
                resc[r] = 1;
                if (m[r] < mi) {
                    resc[r] = gpu_exp2f(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, m[r] - mi));
                    sp[r] = gpu_r32(ctx, O_RESCALE, sp[r] * resc[r]);
                } else if (mi == -INFINITY) {
                    mu = 0; /* every key so far masked: exp2f(-inf - 0), mi stays -inf */
                }
                if (rf && b > 0)
                    gpu_r32_scale(ctx, O_RESCALE, acc + r * dv, dv, resc[r]);
                if (ctx->site[P_EXP].exact)
                    for (long c = 0; c < nb; c++)
                        sr[c] -= mu;
                else /* gpu_r32(s - mu), a vector loop */
#pragma omp simd
                    for (long c = 0; c < nb; c++)
                        sr[c] = (double)(float)(sr[c] - mu);
                for (long c = nb; c < kk; c++)
                    sr[c] = 0;
                gpu_exp2f_n(ctx, P_EXP, sr, nb); /* the exp2f of each, eight at a time */
                sp[r] = eff_block_sum(ctx, sr, kk, sp[r]);
                m[r] = mi;
                memcpy(pr, sr, sizeof(double) * (size_t)kk);
                attn_round_n(ctx, P_CAST, pr, kk);
            }
            if (rf) { /* a finished row's zero P leaves its accumulator as it is */
                gpu_gemm(ctx, PV_ACC, 1, acc, dv, pb, kk, g->v + j0 * dv, dv, 0, nr, dv, ncols);
                continue;
            }
            /* 32x128_gmem: this block's P V from zero, then MemoryEfficientAttentionNormalize into the
             * fp32 buffer: alpha = last ? fl32(1 / s') : 1, beta = fl32(alpha r), fma(alpha, acc, fl32(beta O)) */
            memset(acc, 0, sizeof(double) * (size_t)(nr * dv));
            gpu_gemm(ctx, PV_ACC, 1, acc, dv, pb, kk, g->v + j0 * dv, dv, 0, nr, dv, ncols);
            for (long r = 0; r < nr; r++) {
                if (neff[r] <= j0)
                    continue;
                int first = b == 0, last = b == (neff[r] + kk - 1) / kk - 1;
                double alpha = last ? gpu_div1(ctx, O_DIV, sp[r]) : 1;
                double beta = gpu_r32(ctx, O_RESCALE, alpha * resc[r]);
                double *oc = oacc + r * dv;
                if (ctx->site[O_RESCALE].exact)
                    for (long c = 0; c < dv; c++)
                        oc[c] = first ? alpha * acc[r * dv + c] : alpha * acc[r * dv + c] + beta * oc[c];
                else if (first) /* the same roundings, vectorized */
                    vec_mul32(oc, acc + r * dv, dv, alpha);
                else
                    vec_fma32_scaled(oc, acc + r * dv, dv, alpha, beta);
            }
        }
        for (long r = 0; r < nr; r++) {
            double *orow = o + (r0 + r) * dv;
            if (rf) {
                double alpha = gpu_div1(ctx, O_DIV, sp[r]);
                if (ctx->site[O_DIV].exact)
                    for (long c = 0; c < dv; c++)
                        orow[c] = alpha * acc[r * dv + c];
                else
                    vec_mul32(orow, acc + r * dv, dv, alpha);
            } else {
                memcpy(orow, oacc + r * dv, sizeof(double) * (size_t)dv);
            }
            for (long c = 0; c < dv; c++)
                orow[c] = attn_round(ctx, OUT_CAST, orow[c]);
            if (ctx->lse)
                ctx->lse[r0 + r] = gpu_r32(ctx, O_DIV, gpu_r32(ctx, O_DIV, m[r] / log2e) + gpu_logf(ctx, O_DIV, sp[r]));
        }
    }
    free(s);
    free(pb);
    free(acc);
    free(oacc);
    free(m);
    free(sp);
    free(resc);
    free(neff);
}
