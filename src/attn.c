/* attn -- the variant registry, site resolution and the per-group driver */
#include "attn.h"

#include <stdlib.h>
#include <string.h>

#include "attn_variants.h"

/* The registry: adding a variant adds its file and one line here. */
const attn_variant_t attn_variants[] = {
    {"standard", "non-flash attention as a framework runs it: S = QK^T, softmax, P.V, each result in the input format",
     attn_standard, attn_standard_sites},
    {"base", "FlashAttention-2 / AMLA Algorithm 1: KV tiles, online softmax in FP32, P cast to the input format",
     attn_base, attn_base_sites},
    {"amla", "AMLA Algorithm 2: power-of-two rescale as INT32 add on FP32 bits, with error compensation",
     attn_amla, attn_amla_sites},
    {"amla-nocomp", "AMLA ablation: no compensation (eps = 0)", attn_amla_nocomp, attn_amla_sites},
    {"amla-premul", "AMLA ablation: P pre-multiplied by (1/r)_bf16, no c correction (Appendix A item 2)",
     attn_amla_premul, attn_amla_sites},
    {"amla-naive", "AMLA Eq. (3): O += exp(m_i) P_i V_i without safe softmax (overflows for m > 88)",
     attn_amla_naive, attn_amla_naive_sites},
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
    int rc = site_check_list(cfg->exact, v->sites, v->name, e);
    if (rc)
        return rc;
    for (const site_def_t *d = v->sites; d->name; d++) {
        site_t *s = &ctx->site[ctx->nsites++];
        s->def = d;
        s->mode = d->mode;
        s->sat = d->sat;
        s->fmt = d->src == SITE_FMT_IN ? cfg->in_format : d->src == SITE_FMT_OUT ? cfg->out_format : d->fmt;
        s->acc = d->src == SITE_ACC_QK ? cfg->acc_qk : cfg->acc_pv;
        s->exact = site_listed(cfg->exact, d->name);
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
    long *limit = malloc(sizeof(long) * (size_t)rows);
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
    acc_gemm(C, ldc, A, lda, B, ldb, b_trans, M, N, K, s->exact ? ACC_FP64 : s->acc);
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
