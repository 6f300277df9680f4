/* attn -- the variant registry, site resolution and the per-group driver */
#include "err.h"
#include "attn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_variants.h"

/* The registry: adding a variant adds its file and one line here. */
const attn_variant_t attn_variants[] = {
    {"standard", "non-flash attention as a framework runs it: S = QK^T, softmax, P.V, each result in the input format",
     attn_standard, attn_standard_sites, 0},
    {"base", "FlashAttention-2 / AMLA Algorithm 1: KV tiles, online softmax in FP32, P cast to the input format",
     attn_base, attn_base_sites, 0},
    {"amla", "AMLA Algorithm 2: power-of-two rescale as INT32 add on FP32 bits, with error compensation",
     attn_amla, attn_amla_sites, 0},
    {"amla-nocomp", "AMLA ablation: no compensation (eps = 0)", attn_amla_nocomp, attn_amla_sites, 0},
    {"amla-premul", "AMLA ablation: P pre-multiplied by (1/r)_bf16, no c correction (Appendix A item 2)",
     attn_amla_premul, attn_amla_sites, 0},
    {"amla-naive", "AMLA Eq. (3): O += exp(m_i) P_i V_i without safe softmax (overflows for m > 88)",
     attn_amla_naive, attn_amla_naive_sites, 0},
    {"snapmla", "SnapMLA: FP8 e4m3 per-token RoPE-aware KV/Q, P per 1x64 block with V-scale fusion (64-token pages)",
     attn_snapmla, attn_snapmla_sites, ATTN_KERNEL_TILE},
    {"snapmla-a", "SnapMLA Table 2 config A: per-token RoPE-unaware (RoPE quantized with the content)",
     attn_snapmla_a, attn_snapmla_sites, ATTN_KERNEL_TILE},
    {"snapmla-b", "SnapMLA Table 2 config B: per-tensor static scale 1.0, RoPE-aware", attn_snapmla_b,
     attn_snapmla_sites, ATTN_KERNEL_TILE},
    {"snapmla-c", "SnapMLA Table 2 config C: per-tensor dynamic scale, RoPE-aware", attn_snapmla_c,
     attn_snapmla_sites, ATTN_KERNEL_TILE},
    {"snapmla-d", "SnapMLA Table 2 config D: per-block (64 tokens x content) scale, RoPE-aware", attn_snapmla_d,
     attn_snapmla_sites, ATTN_KERNEL_TILE},
    {"snapmla-inverted", "SnapMLA Appendix C: pages of each pair in inverted order, bidirectional rescaling",
     attn_snapmla_inverted, attn_snapmla_sites, ATTN_KERNEL_TILE},
    {"flashmla-fp8", "FlashMLA FP8 cache: e4m3 content, pow2 scale per 1x128 tile, RoPE bf16; Base on 64-token tiles",
     attn_flashmla_fp8, attn_flashmla_fp8_sites, ATTN_KERNEL_TILE},
    {"seesaw", "FlashMLA's seesaw schedule: 64-token blocks in pairs, O split into O_L/O_R, scales in the blog's order",
     attn_seesaw, attn_seesaw_sites, ATTN_KERNEL_TILE},
    {"etap", "FlashMLA-ETAP: S^T = K Q^T, softmax along the KV axis (tree sums per 64-token tile), O^T = V^T P^T",
     attn_etap, attn_etap_sites, ATTN_KERNEL_TILE},
    {"fastattn", "FastAttention: two-level tiling (--row-block, --sub-block rows; --block KV), tiling-mask causal",
     attn_fastattn, attn_fastattn_sites, 0},
    {"fastattn-fp16acc", "FastAttention's Volta m8n8k4 path: FP16 accumulators in both products",
     attn_fastattn, attn_fastattn_fp16acc_sites, 0},
    {"fa3-fp8", "FlashAttention-3 FP8: e4m3 Q/K/V, block scales and random-sign Hadamard (--fa3-block, --fa3-hadamard)",
     attn_fa3fp8, attn_fa3fp8_sites, ATTN_KERNEL_TILE},
};
const int attn_variant_count = (int)(sizeof attn_variants / sizeof attn_variants[0]);

int attn_find(const char *name)
{
    for (int i = 0; i < attn_variant_count; i++)
        if (strcmp(name, attn_variants[i].name) == 0)
            return i;
    return -1;
}

int attn_ctx_init(attn_ctx_t *ctx, int vi, const attn_cfg_t *cfg, attn_stats_t *st, err_t *e)
{
    const attn_variant_t *v = &attn_variants[vi];
    memset(ctx, 0, sizeof *ctx);
    ctx->cfg = cfg;
    ctx->stats = st;
    fmt_rng_seed(&ctx->rng, cfg->rng_seed);
    int rc = site_check_list(cfg->exact, v->sites, v->name, "--exact", e);
    if (!rc)
        rc = site_check_list(cfg->only, v->sites, v->name, "--only", e);
    if (rc)
        return rc;
    for (const site_def_t *d = v->sites; d->name; d++) {
        site_t *s = &ctx->site[ctx->nsites++];
        s->def = d;
        s->mode = d->mode;
        s->sat = d->sat;
        s->fmt = d->src == SITE_FMT_IN ? cfg->in_format : d->src == SITE_FMT_OUT ? cfg->out_format : d->fmt;
        s->acc = d->src == SITE_ACC_QK ? cfg->acc_qk : d->src == SITE_ACC_FP16 ? ACC_FP16 : cfg->acc_pv;
        s->exact = cfg->only ? !site_listed(cfg->only, d->name) : site_listed(cfg->exact, d->name);
    }
    return ERR_OK;
}

void attn_row_limits(long *limit, const attn_shape_t *s)
{
    long rows = s->hq / s->hkv * s->sq;
    for (long r = 0; r < rows; r++)
        limit[r] = s->causal ? r % s->sq + (s->sk - s->sq) : s->sk - 1;
}

void attn_for_groups(double *o, const attn_input_t *in,
                     void (*fn)(double *, const attn_group_t *, void *), void *arg)
{
    const attn_shape_t *s = &in->s;
    long rows = s->hq / s->hkv * s->sq;
    long *limit = err_malloc((size_t)rows, sizeof(long));
    attn_row_limits(limit, s);
    for (long h = 0; h < s->hkv; h++) {
        attn_group_t g = {rows, s->sk, s->dk, s->dv, in->q + h * rows * s->dk,
                          in->k + h * s->sk * s->dk, in->v + h * s->sk * s->dv, limit};
        fn(o + h * rows * s->dv, &g, arg);
    }
    free(limit);
}

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
        tmax[r] = -INFINITY;
        for (long c = 0; c < nb; c++) {
            if (c < valid[r]) {
                row[c] = attn_round(ctx, sc, row[c] * scale);
                tmax[r] = row[c] > tmax[r] ? row[c] : tmax[r];
            } else {
                row[c] = 0.0;
            }
        }
    }
}

double attn_online_row(double *row, long nb, long valid, double tmax, double *m, double *l, attn_ctx_t *ctx,
                       int alpha_site, int exp_site, int sum_site, int cast_site)
{
    double mnew = tmax > *m ? tmax : *m;
    double alpha = attn_round(ctx, alpha_site, exp(attn_round(ctx, alpha_site, *m - mnew)));
    double sum = 0.0;
    for (long c = 0; c < nb; c++) {
        double p = c < valid ? attn_round(ctx, exp_site, exp(attn_round(ctx, exp_site, row[c] - mnew))) : 0.0;
        sum = attn_round(ctx, sum_site, sum + p);
        row[c] = attn_round(ctx, cast_site, p);
    }
    *l = attn_round(ctx, sum_site, attn_round(ctx, sum_site, *l * alpha) + sum);
    *m = mnew;
    return alpha;
}

typedef struct {
    int vi;
    attn_ctx_t *ctx;
} attn_run_arg_t;

static void attn_run_cb(double *o, const attn_group_t *g, void *varg)
{
    attn_run_arg_t *a = varg;
    attn_variants[a->vi].fn(o, g, a->ctx);
}

void attn_run(double *o, int vi, const attn_input_t *in, attn_ctx_t *ctx)
{
    attn_run_arg_t a = {vi, ctx};
    attn_for_groups(o, in, attn_run_cb, &a);
}

void attn_rescale_add(double *o, const double *t, long n, double a, double ts, attn_ctx_t *ctx, int site)
{
    if (attn_site_is_fp32(ctx, site)) { /* the same roundings, in loops the compiler vectorizes */
        if (ts == 0)
            for (long c = 0; c < n; c++)
                o[c] = (double)(float)((double)(float)(o[c] * a) + t[c]);
        else
            for (long c = 0; c < n; c++)
                o[c] = (double)(float)((double)(float)(o[c] * a) + (double)(float)(t[c] * ts));
        return;
    }
    for (long c = 0; c < n; c++)
        o[c] = attn_round(ctx, site, attn_round(ctx, site, o[c] * a) + (ts == 0 ? t[c] : attn_round(ctx, site, t[c] * ts)));
}

void attn_finish(double *o, long R, long dv, const double *l, attn_ctx_t *ctx, int div_site, int out_site)
{
    for (long r = 0; r < R; r++)
        for (long c = 0; c < dv; c++)
            o[r * dv + c] = attn_round(ctx, out_site, attn_round(ctx, div_site, o[r * dv + c] / l[r]));
}
