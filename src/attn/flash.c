/* flash -- the machinery the tiled (flash) variants share (see flash.h) */
#include "attn/flash.h"
#include "num/acc/acc_f32.h"
#include "num/vec/vec.h"

#include <math.h>
#include <string.h>

void attn_gemm(attn_ctx_t *ctx, int site, double *C, long ldc, const double *A, long lda,
               const double *B, long ldb, int b_trans, long M, long N, long K)
{
    const site_t *s = &ctx->site[site];
    /* operands: the site's format for FP8 products, else the input format */
    fmt_id_t f = s->def->fmt == FMT_FP32 ? ctx->cfg->in_format : s->def->fmt;
    acc_gemm_f(C, ldc, A, lda, B, ldb, b_trans, M, N, K, s->exact ? ACC_FP64 : s->acc, f, f);
}

void attn_tile_scores(double *s, long *valid, double *tmax, attn_ctx_t *ctx, int qk, int sc,
                      const attn_group_t *g, long j0, long nb, double scale)
{
    attn_tile_scores_k(s, valid, tmax, ctx, qk, sc, g, j0, nb, scale, g->k + j0 * g->dk);
}

void attn_tile_scores_k(double *s, long *valid, double *tmax, attn_ctx_t *ctx, int qk, int sc,
                        const attn_group_t *g, long j0, long nb, double scale, const double *kt)
{
    attn_gemm(ctx, qk, s, nb, g->q, g->dk, kt, g->dk, 1, g->R, nb, g->dk);
    for (long r = 0; r < g->R; r++) {
        double *row = s + r * nb;
        long v = g->limit[r] - j0 + 1; /* keys j0 .. j0+v-1 are visible */
        valid[r] = v > nb ? nb : v;
        v = valid[r] > 0 ? valid[r] : 0;
        tmax[r] = attn_scale_max(ctx, sc, row, v, scale);
        memset(row + v, 0, sizeof(double) * (size_t)(nb - v));
    }
}

int attn_v_is_k_prefix(const attn_group_t *g)
{
    if (g->v_of_k)
        return 1;
    if (g->dv > g->dk)
        return 0;
    for (long j = 0; j < g->sk; j++)
        if (memcmp(g->v + j * g->dv, g->k + j * g->dk, sizeof(double) * (size_t)g->dv) != 0)
            return 0;
    return 1;
}

double attn_row_max(const double *x, long n, double init)
{
    /* four running maxima side by side: the same value; only which of -0 and +0 comes first
     * can differ, so a zero maximum is found again in order */
    double t[4] = {init, init, init, init};
    long c = 0;
    for (; c + 4 <= n; c += 4)
        for (int j = 0; j < 4; j++)
            t[j] = x[c + j] > t[j] ? x[c + j] : t[j];
    for (; c < n; c++)
        t[0] = x[c] > t[0] ? x[c] : t[0];
    double m = t[0];
    for (int j = 1; j < 4; j++)
        m = t[j] > m ? t[j] : m;
    if (m == 0.0) {
        m = init;
        for (c = 0; c < n; c++)
            m = x[c] > m ? x[c] : m;
    }
    return m;
}

double attn_scale_max(attn_ctx_t *ctx, int site, double *row, long n, double scale)
{
    for (long c = 0; c < n; c++)
        row[c] *= scale;
    attn_round_n(ctx, site, row, n);
    return attn_row_max(row, n, -INFINITY);
}

double attn_sum_in_order(attn_ctx_t *ctx, int site, const double *x, long n, int x_fp32)
{
    if (x_fp32 && attn_site_is_fp32(ctx, site)) { /* a chain of one binary32 addition per term */
        float s = 0.0f;
        for (long i = 0; i < n; i++)
            s += (float)x[i];
        return s;
    }
    double s = 0.0;
    for (long i = 0; i < n; i++)
        s = attn_round(ctx, site, s + x[i]);
    return s;
}

void attn_exp_n(attn_ctx_t *ctx, int site, double *x, long n, int two)
{
    if (attn_site_is_fp32(ctx, site)) { /* (double)(float)exp(.): the same values, vectorized */
        vec_exp_rn32(x, n, two);
        return;
    }
    for (long i = 0; i < n; i++)
        x[i] = two ? exp2(x[i]) : exp(x[i]);
    attn_round_n(ctx, site, x, n);
}

double attn_exp_row(attn_ctx_t *ctx, int exp_site, int sum_site, double *row, long nb, long valid, double m)
{
    if (attn_site_draws(ctx, exp_site) || attn_site_draws(ctx, sum_site)) { /* the draws in the kernel's order */
        double sum = 0.0;
        for (long c = 0; c < nb; c++) {
            row[c] = c < valid ? attn_round(ctx, exp_site, exp(attn_round(ctx, exp_site, row[c] - m))) : 0.0;
            sum = attn_round(ctx, sum_site, sum + row[c]);
        }
        return sum;
    }
    long nv = valid < 0 ? 0 : valid < nb ? valid : nb;
    for (long c = 0; c < nv; c++)
        row[c] = row[c] - m;
    attn_round_n(ctx, exp_site, row, nv);
    attn_exp_n(ctx, exp_site, row, nv, 0);
    for (long c = nv; c < nb; c++)
        row[c] = 0.0;
    return attn_sum_in_order(ctx, sum_site, row, nb, attn_site_is_fp32(ctx, exp_site));
}

double attn_online_row(double *row, long nb, long valid, double tmax, double *m, double *l, attn_ctx_t *ctx,
                       int alpha_site, int exp_site, int sum_site, int cast_site)
{
    double mnew = tmax > *m ? tmax : *m;
    double alpha = attn_round(ctx, alpha_site, exp(attn_round(ctx, alpha_site, *m - mnew)));
    double sum = 0.0;
    /* a cast in RNE (no random bits drawn) is done after the loop, vectorized: the same values */
    const int defer = ctx->site[cast_site].exact || ctx->site[cast_site].mode == FMT_RNE;
    if (defer && !attn_site_draws(ctx, exp_site) && !attn_site_draws(ctx, sum_site))
        sum = attn_exp_row(ctx, exp_site, sum_site, row, nb, valid, mnew); /* no draws to keep in order */
    else
        for (long c = 0; c < nb; c++) {
            double p = c < valid ? attn_round(ctx, exp_site, exp(attn_round(ctx, exp_site, row[c] - mnew))) : 0.0;
            sum = attn_round(ctx, sum_site, sum + p);
            row[c] = defer ? p : attn_round(ctx, cast_site, p);
        }
    if (defer)
        attn_round_n(ctx, cast_site, row, nb);
    *l = attn_round(ctx, sum_site, attn_round(ctx, sum_site, *l * alpha) + sum);
    *m = mnew;
    return alpha;
}

void attn_rescale_add(double *o, const double *t, long n, double a, double ts, attn_ctx_t *ctx, int site)
{
    if (attn_site_is_fp32(ctx, site)) { /* the same roundings, vectorized */
        vec_rescale_add32(o, t, n, a, ts);
        return;
    }
    for (long c = 0; c < n; c++)
        o[c] = attn_round(ctx, site, attn_round(ctx, site, o[c] * a) + (ts == 0 ? t[c] : attn_round(ctx, site, t[c] * ts)));
}

void attn_pv_rescale(attn_ctx_t *ctx, int pv, int rs, double *o, long ldo, double *t, long ldt, const double *P,
                     long ldp, const double *V, long ldv, long M, long N, long K, const double *a, double ts)
{
    const site_t *s = &ctx->site[pv];
    if (!s->exact && (s->acc == ACC_FP32_FMA || s->acc == ACC_FP32_MULADD) && attn_site_is_fp32(ctx, rs)) {
        acc_gemm32_rescale(o, ldo, P, ldp, V, ldv, 0, M, N, K, s->acc == ACC_FP32_FMA, a, ts);
        return;
    }
    attn_gemm(ctx, pv, t, ldt, P, ldp, V, ldv, 0, M, N, K);
    for (long r = 0; r < M; r++)
        attn_rescale_add(o + r * ldo, t + r * ldt, N, a[r], ts, ctx, rs);
}

void attn_finish(double *o, long R, long dv, const double *l, attn_ctx_t *ctx, int div_site, int out_site)
{
    for (long r = 0; r < R; r++)
        for (long c = 0; c < dv; c++)
            o[r * dv + c] = attn_round(ctx, out_site, attn_round(ctx, div_site, o[r * dv + c] / l[r]));
}
