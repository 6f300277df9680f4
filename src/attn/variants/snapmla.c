/* snapmla -- SnapMLA FP8 decoding (RoPE-aware per-token KV quantization, P block
 * quantization with V-scale fusion, implicit dequantization), Table 2's configs A-D and
 * Appendix C's inverted page order; rules in docs/REFERENCES.md, SnapMLA */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/variants.h"
#include "attn/quant.h"
#include "num/acc/acc_f32.h"
#include "num/vec/vec.h"

/* The PV tile: P is quantized per 1 head row x SNAP_PAGE tokens (the kernel's fixed tile;
 * --block does not apply to these variants). */
#define SNAP_PAGE 64
#define SNAP_LOG2E 0x1.71547652b82fep0
#define SNAP_BLOCK_TOKENS 64 /* config D: one scale per 64 tokens x all content channels */

#define SNAPMLA_SITES(X) \
    X(Q_QUANT, "q_quant", "Q content / per-token scale -> e4m3 (fp32 scale)", SITE_FMT_FIXED, FMT_E4M3, FMT_RNE, 0) \
    X(KV_QUANT, "kv_quant", "K content (= V) / its scale -> e4m3", SITE_FMT_FIXED, FMT_E4M3, FMT_RNE, 0) \
    X(ROPE_CAST, "rope_cast", "RoPE / content scale kept in bf16 (RoPE-aware)", SITE_FMT_FIXED, FMT_BF16, FMT_RNE, 0) \
    X(QK_ACC, "qk_acc", "S = q8.k8 + q_rope'.k_rope' (one accumulation)", SITE_ACC_QK, FMT_FP32, FMT_RNE, 0) \
    X(S_DEQUANT, "s_dequant", "x = S sq sk (scale log2e) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_EXP, "p_exp", "e = exp2(x - m_j) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_SCALE, "p_scale", "f = e sv (V scale fused into P), sigma_j in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_QUANT, "p_quant", "P^ = e4m3_satfinite(f / sigma_j), 1 x 64 blocks", SITE_FMT_FIXED, FMT_E4M3, FMT_RNE, 1) \
    X(L_SUM, "l_sum", "l_j = beta l + sum(e) / sigma_j in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(PV_ACC, "pv_acc", "P^ V8 (FP8 products)", SITE_ACC_PV, FMT_E4M3, FMT_RNE, 0) \
    X(O_RESCALE, "o_rescale", "beta = 2^(m_{j-1} - m_j) sigma_{j-1}/sigma_j; Acc = beta Acc + P^V8", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(O_DIV, "o_div", "O = Acc / l in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { SNAPMLA_SITES(SITE_ENUM) };

const site_def_t attn_snapmla_sites[] = {SNAPMLA_SITES(SITE_ROW) SITE_END};

typedef struct {
    quant_gran_t gran;  /* KV content granularity */
    double static_scale;
    int rope_aware;     /* RoPE kept in bf16 (pre-scaled) instead of quantized with the content */
    int inverted;       /* Appendix C: pages of each pair in inverted order, bidirectional rescale */
} snap_cfg_t;

/* Each row's content scale of x [rows][d] (content = first dc columns) under the config's
 * granularity (the groups here never split a row): the groups (snap_scales_init), then the scales
 * of rows r0 .. r0 + n - 1 into scale[r0 ..] (snap_scales_rows: every row of their groups read).
 * A page's rows are whole groups but for a per-tensor scale (snap_paged), so the cache's scales
 * are taken page by page, each as the page is quantized, while it is in cache. */
typedef struct {
    quant_cfg_t qc;
    quant_scales_t qs;
} snap_scaler_t;

static void snap_scales_init(snap_scaler_t *z, long rows, long d, long dc, const snap_cfg_t *sc)
{
    z->qc = (quant_cfg_t){sc->gran, SNAP_BLOCK_TOKENS, sc->rope_aware ? dc : d, FMT_E4M3, 0, sc->static_scale, 0, 0};
    quant_scales_init(&z->qs, rows, sc->rope_aware ? dc : d, &z->qc);
}

static void snap_scales_rows(snap_scaler_t *z, double *scale, const double *x, long r0, long n, long d)
{
    quant_scales_rows(&z->qs, x, r0, n, d, &z->qc);
    for (long r = r0; r < r0 + n; r++)
        scale[r] = quant_scale_at(&z->qs, r, 0);
}

static int snap_paged(const snap_cfg_t *sc)
{
    return sc->gran == QUANT_TOKEN || (sc->gran == QUANT_BLOCK && SNAP_PAGE % SNAP_BLOCK_TOKENS == 0);
}

static void snap_scales(double *scale, const double *x, long rows, long d, long dc, const snap_cfg_t *sc)
{
    snap_scaler_t z;
    snap_scales_init(&z, rows, d, dc, sc);
    snap_scales_rows(&z, scale, x, 0, rows, d);
    quant_scales_free(&z.qs);
}

/* Rows r0 .. r0+n-1 of x quantized with their scales into out [n][d]: content to e4m3, RoPE
 * either pre-scaled into bf16 (RoPE-aware) or quantized with the content. The KV cache goes
 * through here one page at a time, just before the page is used. */
static void snap_quant_rows(double *out, const double *scale, const double *x, long r0, long n, long d, long dc,
                            const snap_cfg_t *sc, attn_ctx_t *ctx, int site)
{
    long dq = sc->rope_aware ? dc : d; /* quantized columns */
    int exact = ctx->site[site].exact;
    for (long i = 0; i < n; i++) {
        const double *xr = x + (r0 + i) * d;
        double s = scale[r0 + i], *o = out + i * d;
        quant_round_quotients(o, xr, dq, s, 1, FMT_E4M3, FMT_RNE, 0, exact, NULL);
        for (long j = dq; j < d; j++)
            o[j] = attn_round(ctx, ROPE_CAST, attn_fp32(ctx, ROPE_CAST, xr[j] / s));
    }
}

/* Is V the first dv columns of K, row for row (MLA's one latent cache)? */

/* Per row state of the online softmax with implicit dequantization. */
typedef struct {
    double m, l, sigma;
} snap_row_t;

/* One page for one row: e, f, sigma_j, P^ into p (nb entries); returns sum(e). Where no site
 * here rounds stochastically, each rounding goes over the page at once (vectorized, the same
 * bits); else element by element, the draws in the kernel's order. */
static double snap_page_p(double *p, double *sigma_out, const double *x, const double *sv, long nb, long valid,
                          double mnew, attn_ctx_t *ctx)
{
    double amax = 0.0, esum = 0.0;
    if (!attn_site_draws(ctx, P_EXP) && !attn_site_draws(ctx, L_SUM) && !attn_site_draws(ctx, P_SCALE)) {
        double e[SNAP_PAGE];
        for (long c = 0; c < nb; c++)
            e[c] = c < valid ? x[c] - mnew : 0.0;
        attn_round_n(ctx, P_EXP, e, valid);
        attn_exp_n(ctx, P_EXP, e, valid, 1);
        esum = attn_sum_in_order(ctx, L_SUM, e, nb, attn_site_is_fp32(ctx, P_EXP));
        for (long c = 0; c < nb; c++)
            p[c] = e[c] * sv[c];
        attn_round_n(ctx, P_SCALE, p, nb);
        amax = vec_absmax(p, nb, amax);
    } else
        for (long c = 0; c < nb; c++) {
            double e = c < valid ? attn_round(ctx, P_EXP, exp2(attn_round(ctx, P_EXP, x[c] - mnew))) : 0.0;
            esum = attn_round(ctx, L_SUM, esum + e);
            p[c] = attn_round(ctx, P_SCALE, e * sv[c]);
            amax = fabs(p[c]) > amax ? fabs(p[c]) : amax;
        }
    double fmax = fmt_table[FMT_E4M3].max_finite;
    double sigma = amax > 0 ? attn_round(ctx, P_SCALE, (amax > 1e-26 ? amax : 1e-26) / fmax) : 1.0;
    vec_div(p, p, nb, sigma);
    for (long c = 0; c < nb; c++)
        p[c] = attn_fp32(ctx, P_QUANT, p[c]);
    attn_round_n(ctx, P_QUANT, p, nb);
    *sigma_out = sigma;
    return esum;
}

static void snap_core(double *o, const attn_group_t *g, attn_ctx_t *ctx, const snap_cfg_t *sc)
{
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv;
    long rope = ctx->cfg->rope_dims;
    long dc = dk - rope;
    double *q8 = err_malloc((size_t)(R * dk), sizeof(double)), *sq = err_malloc((size_t)R, sizeof(double));
    double *k8 = err_malloc((size_t)(SNAP_PAGE * dk), sizeof(double)), *sk8 = err_malloc((size_t)sk, sizeof(double));
    double *v8 = err_malloc((size_t)(SNAP_PAGE * dv), sizeof(double)), *sv = err_malloc((size_t)sk, sizeof(double));
    /* Q per token always (Fused-Q-Quant); K per the config. MLA has one cache: V is its first
     * dv columns, so V is read from the quantized cache with the cache's scales (config A's
     * scales span RoPE too). A V that is not K's prefix (--kv separate) is a cache of its own,
     * quantized with the config's granularity over its dv columns. The scales come first (a
     * per-tensor one needs the whole cache); the cache is then quantized page by page. */
    snap_cfg_t qcfg = *sc;
    qcfg.gran = QUANT_TOKEN;
    qcfg.static_scale = 0;
    snap_scales(sq, g->q, R, dk, dc, &qcfg);
    snap_quant_rows(q8, sq, g->q, 0, R, dk, dc, &qcfg, ctx, Q_QUANT);
    acc_hold_f32(q8, dk, R, dk); /* the A of every page's Q.K^T, converted once (the same bits) */
    int v_in_cache = attn_v_is_k_prefix(g), paged = snap_paged(sc);
    snap_cfg_t vcfg = *sc;
    vcfg.rope_aware = 1;
    snap_scaler_t kz, vz;
    snap_scales_init(&kz, sk, dk, dc, sc);
    snap_scales_init(&vz, sk, dv, dv, &vcfg);
    if (!paged) { /* a per-tensor scale: every row first */
        snap_scales_rows(&kz, sk8, g->k, 0, sk, dk);
        if (!v_in_cache)
            snap_scales_rows(&vz, sv, g->v, 0, sk, dv);
    }

    double c = attn_round(ctx, S_DEQUANT, ctx->cfg->scale * SNAP_LOG2E);
    double *x = err_malloc((size_t)(R * SNAP_PAGE), sizeof(double));
    double *p = err_malloc((size_t)(R * SNAP_PAGE), sizeof(double));
    double *t = err_malloc((size_t)(R * dv), sizeof(double));
    snap_row_t *st = err_calloc((size_t)R, sizeof *st);
    for (long r = 0; r < R; r++) {
        st[r].m = -INFINITY;
        st[r].sigma = 1.0;
    }
    for (long i = 0; i < R * dv; i++)
        o[i] = 0.0;
    long npages = (sk + SNAP_PAGE - 1) / SNAP_PAGE;
    for (long pi = 0; pi < npages; pi++) {
        /* inverted: pages 2i+1 then 2i; the second of each pair is added by rolling the
         * accumulator back to its scale and forward again */
        long page = pi, rollback = 0;
        if (sc->inverted && (pi ^ 1) < npages) {
            page = pi ^ 1;
            rollback = (pi & 1) && page < pi;
        }
        long j0 = page * SNAP_PAGE;
        long nb = sk - j0 < SNAP_PAGE ? sk - j0 : SNAP_PAGE;
        if (paged) {
            snap_scales_rows(&kz, sk8, g->k, j0, nb, dk);
            if (!v_in_cache)
                snap_scales_rows(&vz, sv, g->v, j0, nb, dv);
        }
        if (v_in_cache) /* V is the cache's first dv columns, with its scales */
            memcpy(sv + j0, sk8 + j0, sizeof(double) * (size_t)nb);
        snap_quant_rows(k8, sk8, g->k, j0, nb, dk, dc, sc, ctx, KV_QUANT);
        if (!v_in_cache) /* else V is k8's first dv columns */
            snap_quant_rows(v8, sv, g->v, j0, nb, dv, dv, &vcfg, ctx, KV_QUANT);
        attn_gemm(ctx, QK_ACC, x, nb, q8, dk, k8, dk, 1, R, nb, dk);
        double *beta = err_malloc((size_t)R, sizeof(double)), *undo = err_malloc((size_t)R, sizeof(double));
        for (long r = 0; r < R; r++) {
            double *row = x + r * nb;
            long valid = g->limit[r] - j0 + 1;
            if (valid > nb)
                valid = nb;
            double mnew = st[r].m;
            /* the roundings, then the maximum: two loops keep the maximum's chain in a register
             * (binary32 RNE, the default, inline where the compiler vectorizes it) */
            if (attn_site_is_fp32(ctx, S_DEQUANT))
                for (long cc = 0; cc < valid; cc++)
                    row[cc] = (double)(float)((double)(float)((double)(float)(row[cc] * sq[r]) * sk8[j0 + cc]) * c);
            else
                for (long cc = 0; cc < valid; cc++)
                    row[cc] = attn_round(ctx, S_DEQUANT,
                                         attn_round(ctx, S_DEQUANT, attn_round(ctx, S_DEQUANT, row[cc] * sq[r]) * sk8[j0 + cc]) * c);
            mnew = attn_row_max(row, valid > 0 ? valid : 0, mnew);
            undo[r] = 1.0;
            if (valid <= 0) {
                beta[r] = 1.0;
                for (long cc = 0; cc < nb; cc++)
                    p[r * nb + cc] = 0.0;
                continue;
            }
            double sigma;
            double esum = snap_page_p(p + r * nb, &sigma, row, sv + j0, nb, valid, mnew, ctx);
            double shift = attn_round(ctx, O_RESCALE, exp2(attn_round(ctx, O_RESCALE, st[r].m - mnew)));
            beta[r] = attn_round(ctx, O_RESCALE, shift * attn_round(ctx, O_RESCALE, st[r].sigma / sigma));
            if (rollback)
                undo[r] = attn_round(ctx, O_RESCALE, sigma / st[r].sigma);
            st[r].l = attn_round(ctx, L_SUM, attn_round(ctx, L_SUM, beta[r] * st[r].l) +
                                                 attn_round(ctx, L_SUM, esum / sigma));
            st[r].m = mnew;
            if (!rollback)
                st[r].sigma = sigma;
        }
        /* O = beta O + P^ V8 for every row, then the rolled-back rows' undo; row by row where the rescale draws
         * (its draws in the kernel's order) */
        const int draws = attn_site_draws(ctx, O_RESCALE);
        if (draws)
            attn_gemm(ctx, PV_ACC, t, dv, p, nb, v_in_cache ? k8 : v8, v_in_cache ? dk : dv, 0, R, dv, nb);
        else
            attn_pv_rescale(ctx, PV_ACC, O_RESCALE, o, dv, t, dv, p, nb, v_in_cache ? k8 : v8, v_in_cache ? dk : dv, R,
                            dv, nb, beta, 0);
        for (long r = 0; r < R; r++) {
            double *a = o + r * dv;
            if (draws)
                attn_rescale_add(a, t + r * dv, dv, beta[r], 0, ctx, O_RESCALE);
            if (undo[r] != 1.0) { /* a[cc] = attn_round(a[cc] undo), over the row at once */
                vec_mul(a, a, dv, undo[r]);
                attn_round_n(ctx, O_RESCALE, a, dv);
                st[r].l = attn_round(ctx, L_SUM, st[r].l * undo[r]);
            }
        }
        free(beta);
        free(undo);
    }
    double *l = err_malloc((size_t)R, sizeof(double));
    for (long r = 0; r < R; r++)
        l[r] = st[r].l;
    attn_finish(o, R, dv, l, ctx, O_DIV, OUT_CAST);
    free(l);
    acc_release_f32();
    quant_scales_free(&kz.qs);
    quant_scales_free(&vz.qs);
    free(q8);
    free(sq);
    free(k8);
    free(sk8);
    free(v8);
    free(sv);
    free(x);
    free(p);
    free(t);
    free(st);
}

static const snap_cfg_t SNAP_MAIN = {QUANT_TOKEN, 0, 1, 0};

ATTN_VARIANT(attn_snapmla) { snap_core(o, g, ctx, &SNAP_MAIN); }

ATTN_VARIANT(attn_snapmla_a)
{
    static const snap_cfg_t a = {QUANT_TOKEN, 0, 0, 0};
    snap_core(o, g, ctx, &a);
}

ATTN_VARIANT(attn_snapmla_b)
{
    static const snap_cfg_t b = {QUANT_TENSOR, 1.0, 1, 0};
    snap_core(o, g, ctx, &b);
}

ATTN_VARIANT(attn_snapmla_c)
{
    static const snap_cfg_t cc = {QUANT_TENSOR, 0, 1, 0};
    snap_core(o, g, ctx, &cc);
}

ATTN_VARIANT(attn_snapmla_d)
{
    static const snap_cfg_t d = {QUANT_BLOCK, 0, 1, 0};
    snap_core(o, g, ctx, &d);
}

ATTN_VARIANT(attn_snapmla_inverted)
{
    static const snap_cfg_t inv = {QUANT_TOKEN, 0, 1, 1};
    snap_core(o, g, ctx, &inv);
}
