/* fa3fp8 -- FlashAttention-3's FP8 forward pass: e4m3 Q, K, V with per-tensor or per-block
 * scales, optional incoherent processing (Q and K times a random-sign Hadamard matrix), P in
 * e4m3 for the second product (docs/REFERENCES.md, FlashAttention-3) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/variants.h"
#include "attn/quant.h"
#include "num/acc/acc_f32.h"
#include "num/vec/vec.h"

#define FA3_BLOCK 64   /* rows of Q and tokens of K, V per scale (block quantization), KV tile */
#define FA3_HADAMARD 128 /* the largest Hadamard block used along the head dimension */

#define FA3FP8_SITES(X) \
    X(HADAMARD, "hadamard", "Q and K rotated by the random-sign Hadamard matrix, in the input format", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(Q_QUANT, "q_quant", "Q / scale -> e4m3 (per tensor or per 64 rows)", SITE_FMT_FIXED, FMT_E4M3, FMT_RNE, 0) \
    X(K_QUANT, "k_quant", "K / scale -> e4m3 (per tensor or per 64 tokens)", SITE_FMT_FIXED, FMT_E4M3, FMT_RNE, 0) \
    X(V_QUANT, "v_quant", "V / scale -> e4m3 (per tensor or per 64 tokens)", SITE_FMT_FIXED, FMT_E4M3, FMT_RNE, 0) \
    X(QK_ACC, "qk_acc", "S = q8 k8^T", SITE_ACC_QK, FMT_E4M3, FMT_RNE, 0) \
    X(S_DEQUANT, "s_dequant", "S sq sk scale in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_EXP, "p_exp", "P = exp(s - m), exp(m_old - m) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(L_SUM, "l_sum", "l = l alpha + rowsum(P) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_QUANT, "p_quant", "P -> e4m3 (no scale: P <= 1)", SITE_FMT_FIXED, FMT_E4M3, FMT_RNE, 1) \
    X(PV_ACC, "pv_acc", "P8 V8", SITE_ACC_PV, FMT_E4M3, FMT_RNE, 0) \
    X(O_RESCALE, "o_rescale", "O = O alpha + sv (P8 V8) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(O_DIV, "o_div", "O / l in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { FA3FP8_SITES(SITE_ENUM) };

const site_def_t attn_fa3fp8_sites[] = {FA3FP8_SITES(SITE_ROW) SITE_END};

/* x [rows][d] times the block-diagonal (1/sqrt(h)) H_h diag(signs), h the largest power of
 * two <= FA3_HADAMARD dividing d (Sylvester's H); an orthogonal map, so Q K^T is unchanged. */
static void fa3_rotate(double *out, const double *x, long rows, long d, const double *sign, attn_ctx_t *ctx)
{
    long h = 1;
    while (h < FA3_HADAMARD && d % (2 * h) == 0)
        h *= 2;
    double norm = 1.0 / sqrt((double)h);
    const site_t *st = &ctx->site[HADAMARD];
    int rne = !st->exact && st->mode == FMT_RNE;
    for (long r = 0; r < rows; r++) {
        double *o = out + r * d;
        for (long b = 0; b < d; b += h) /* signs, the fast Walsh-Hadamard transform (exact in fp64 for these sizes), norm */
            vec_hadamard(o + b, x + r * d + b, sign + b, h, norm);
        if (rne) /* = attn_round(ctx, HADAMARD, .) element by element, vectorized */
            fmt_round_array_rne(o, d, st->fmt, st->sat);
        else
            for (long i = 0; i < d; i++)
                o[i] = attn_round(ctx, HADAMARD, o[i]);
    }
}

/* Each row's e4m3 scale of x [rows][d]: one per tensor, or one per FA3_BLOCK rows. */
static void fa3_scales(double *scale_of_row, const double *x, long rows, long d, int block)
{
    quant_cfg_t qc = {block ? QUANT_BLOCK : QUANT_TENSOR, FA3_BLOCK, d, FMT_E4M3, 0, 0, 0, 0};
    quant_scales_t qs;
    quant_scales(&qs, x, rows, d, d, &qc);
    for (long r = 0; r < rows; r++)
        scale_of_row[r] = quant_scale_at(&qs, r, 0);
    quant_scales_free(&qs);
}

/* Rows r0 .. r0+n-1 of x quantized at `site` into out [n][d]: attn_round(site, attn_fp32(site,
 * x / scale)). K and V go through here one tile at a time, just before the tile is used. */
static void fa3_quant_rows(double *out, const double *scale_of_row, const double *x, long r0, long n, long d,
                           attn_ctx_t *ctx, int site)
{
    const site_t *st = &ctx->site[site];
    for (long i = 0; i < n; i++)
        quant_round_quotients(out + i * d, x + (r0 + i) * d, d, scale_of_row[r0 + i], 1, st->fmt, st->mode, st->sat,
                              st->exact, &ctx->rng);
}

/* K's rows j0 .. j0+nb-1 as the products take them: rotated into buf [nb][dk] where the
 * transform is on (sign), else K's own rows. */
static const double *fa3_k_tile(double *buf, const double *k, long j0, long nb, long dk, const double *sign,
                                attn_ctx_t *ctx)
{
    if (!sign)
        return k + j0 * dk;
    fa3_rotate(buf, k + j0 * dk, nb, dk, sign, ctx);
    return buf;
}

ATTN_VARIANT(attn_fa3fp8)
{
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv, B = FA3_BLOCK;
    int block = ctx->cfg->fa3_block, had = ctx->cfg->fa3_hadamard;
    const double *q = g->q; /* a rotated copy when the Hadamard transform is on */
    double *qr = NULL, *sign = NULL;
    double *kt = err_malloc((size_t)(B * dk), sizeof(double)); /* a tile of rotated K */
    if (had) {
        sign = err_malloc((size_t)dk, sizeof(double));
        for (long i = 0; i < dk; i++)
            sign[i] = (fmt_rng_next(&ctx->rng) >> 63) ? -1.0 : 1.0;
        qr = err_malloc((size_t)(R * dk), sizeof(double));
        fa3_rotate(qr, g->q, R, dk, sign, ctx);
        q = qr;
    }
    double *q8 = err_malloc((size_t)(R * dk), sizeof(double)), *k8 = err_malloc((size_t)(B * dk), sizeof(double));
    double *v8 = err_malloc((size_t)(B * dv), sizeof(double));
    double *sq = err_malloc((size_t)R, sizeof(double)), *skk = err_malloc((size_t)sk, sizeof(double)),
           *sv = err_malloc((size_t)sk, sizeof(double));
    fa3_scales(sq, q, R, dk, block);
    fa3_quant_rows(q8, sq, q, 0, R, dk, ctx, Q_QUANT);
    acc_hold_f32(q8, dk, R, dk); /* the A of every tile's Q.K^T, converted once (the same bits) */
    /* K's scales. The rotated K is made a tile at a time (never all of it in memory): with
     * block scales, each tile's scale (and V's) is taken in the loop below as the tile is made; per
     * tensor, it is the largest tile's (the scale grows with the amax it is made of). */
    if (!had && !block) {
        fa3_scales(skk, g->k, sk, dk, 0);
    } else if (!block) {
        double st = 0;
        for (long j0 = 0; j0 < sk; j0 += B) {
            long nb = sk - j0 < B ? sk - j0 : B;
            fa3_scales(skk + j0, fa3_k_tile(kt, g->k, j0, nb, dk, sign, ctx), nb, dk, 0);
            st = skk[j0] > st ? skk[j0] : st;
        }
        for (long j = 0; j < sk; j++)
            skk[j] = st;
    }
    if (!block) /* per tensor: V's whole first; block scales are each tile's, taken as it is quantized */
        fa3_scales(sv, g->v, sk, dv, 0);
    double *s = err_malloc((size_t)(R * B), sizeof(double)), *t = err_malloc((size_t)(R * dv), sizeof(double));
    double *m = err_malloc((size_t)R, sizeof(double)), *l = err_calloc((size_t)R, sizeof(double));
    double *alpha = err_malloc((size_t)R, sizeof(double));
    for (long r = 0; r < R; r++)
        m[r] = -INFINITY;
    for (long i = 0; i < R * dv; i++)
        o[i] = 0.0;
    for (long j0 = 0; j0 < sk; j0 += B) {
        long nb = sk - j0 < B ? sk - j0 : B;
        const double *kj = fa3_k_tile(kt, g->k, j0, nb, dk, sign, ctx);
        if (block) { /* this tile's scales (of its rotated rows where the transform is on): a block is a tile */
            fa3_scales(skk + j0, kj, nb, dk, 1);
            fa3_scales(sv + j0, g->v + j0 * dv, nb, dv, 1);
        }
        fa3_quant_rows(k8, skk + j0, kj, 0, nb, dk, ctx, K_QUANT);
        fa3_quant_rows(v8, sv, g->v, j0, nb, dv, ctx, V_QUANT);
        attn_gemm(ctx, QK_ACC, s, nb, q8, dk, k8, dk, 1, R, nb, dk);
        for (long r = 0; r < R; r++) {
            double *row = s + r * nb;
            long valid = g->limit[r] - j0 + 1;
            if (valid > nb)
                valid = nb;
            double tmax = -INFINITY, sqr = sq[r], sc = ctx->cfg->scale;
            const double *skt = skk + j0;
            if (attn_site_is_fp32(ctx, S_DEQUANT)) { /* the same roundings, vectorized */
#pragma omp simd reduction(max : tmax)
                for (long c = 0; c < valid; c++) {
                    double d = (double)(float)((double)(float)(row[c] * sqr) * skt[c]);
                    row[c] = (double)(float)(d * sc);
                    tmax = row[c] > tmax ? row[c] : tmax;
                }
            } else {
                for (long c = 0; c < valid; c++) {
                    double d = attn_round(ctx, S_DEQUANT, attn_round(ctx, S_DEQUANT, row[c] * sqr) * skt[c]);
                    row[c] = attn_round(ctx, S_DEQUANT, d * sc);
                    tmax = row[c] > tmax ? row[c] : tmax;
                }
            }
            if (valid <= 0) {
                alpha[r] = 1.0;
                memset(row, 0, sizeof(double) * (size_t)nb);
                continue;
            }
            alpha[r] = attn_online_row(row, nb, valid, tmax, &m[r], &l[r], ctx, P_EXP, P_EXP, L_SUM, P_QUANT);
        }
        /* the tile's V scale (one per tensor, or per block of 64 tokens = this tile) */
        attn_pv_rescale(ctx, PV_ACC, O_RESCALE, o, dv, t, dv, s, nb, v8, dv, R, dv, nb, alpha, sv[j0]);
    }
    attn_finish(o, R, dv, l, ctx, O_DIV, OUT_CAST);
    acc_release_f32();
    free(qr);
    free(sign);
    free(kt);
    free(q8);
    free(k8);
    free(v8);
    free(sq);
    free(skk);
    free(sv);
    free(s);
    free(t);
    free(m);
    free(l);
    free(alpha);
}
