/* attn -- resolving a variant's sites and running it group by group */
#include "base/err.h"
#include "attn/attn.h"
#include "num/acc/acc_f32.h"
#include "num/acc/acc_tc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const attn_triton_decode_names[ATTN_TRITON_COUNT] = {"vllm", "vllm-mla", "vllm-e46a1de", "sglang"};

int attn_find(const char *name)
{
    for (int i = 0; i < attn_variant_count; i++)
        if (strcmp(name, attn_variants[i].name) == 0)
            return i;
    return -1;
}

acc_model_t attn_site_acc(const site_def_t *d, const attn_cfg_t *cfg)
{
    switch (d->src) {
    case SITE_ACC_QK:
        return cfg->acc_qk;
    case SITE_ACC_FP16:
        return ACC_FP16;
    case SITE_ACC_HOPPER:
        return ACC_TC_HOPPER;
    case SITE_ACC_HOPPER_K8:
        return ACC_TC_HOPPER_K8;
    case SITE_ACC_HOPPER_FP8:
        return ACC_TC_HOPPER_FP8_FAST;
    case SITE_ACC_FFMA:
        return ACC_FP32_FMA;
    default:
        return cfg->acc_pv;
    }
}

int attn_ctx_init(attn_ctx_t *ctx, int vi, const attn_cfg_t *cfg, attn_stats_t *st, err_t *e)
{
    const attn_variant_t *v = &attn_variants[vi];
    memset(ctx, 0, sizeof *ctx);
    ctx->cfg = cfg;
    ctx->stats = st;
    ctx->ieee = cfg->build == ATTN_BUILD_IEEE && site_listed(ATTN_BUILD_VARIANTS, v->name);
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
        s->acc = attn_site_acc(d, cfg);
        s->exact = cfg->only ? !site_listed(cfg->only, d->name) : site_listed(cfg->exact, d->name);
    }
    return ERR_OK;
}

acc_model_t attn_variant_acc(int vi, const attn_cfg_t *cfg, int pv)
{
    for (const site_def_t *d = attn_variants[vi].sites; d->name; d++)
        if (d->src == (pv ? SITE_ACC_PV : SITE_ACC_QK) ||
            (site_is_acc(d) && d->src != SITE_ACC_QK && d->src != SITE_ACC_PV &&
             strcmp(d->name, pv ? "pv_acc" : "qk_acc") == 0))
            return attn_site_acc(d, cfg);
    return pv ? cfg->acc_pv : cfg->acc_qk;
}

typedef struct {
    int vi;
    attn_ctx_t *ctx;
    const double *o0;
    long dv;
} attn_run_arg_t;

static void attn_run_cb(double *o, const attn_group_t *g, void *varg)
{
    attn_run_arg_t *a = varg;
    a->ctx->row0 = (o - a->o0) / a->dv;
    if (a->ctx->groups && !a->ctx->groups[a->ctx->row0 / g->R])
        return;
    if (a->ctx->lse_out) { /* the group's rows: O's rows [R][dv] are the LSE's [R]; NaN unless the variant models it */
        a->ctx->lse = a->ctx->lse_out + a->ctx->row0;
        for (long r = 0; r < g->R; r++)
            a->ctx->lse[r] = NAN;
    }
    if (a->ctx->mlog_out) {
        a->ctx->mlog = a->ctx->mlog_out + a->ctx->row0;
        for (long r = 0; r < g->R; r++)
            a->ctx->mlog[r] = NAN;
    }
    /* Q is the A of the group's Q.K^T products, tile after tile of keys: where a site runs a
     * tensor-core model on operands of the input format, or a binary32 model, Q's are
     * converted once for them all (the same bits) */
    int tc = 0, f32 = 0;
    for (int i = 0; i < a->ctx->nsites; i++) {
        const site_t *s = &a->ctx->site[i];
        tc |= site_is_acc(s->def) && !s->exact && s->acc >= ACC_TC_VOLTA && s->def->fmt == FMT_FP32;
        f32 |= site_is_acc(s->def) && !s->exact && (s->acc == ACC_FP32_FMA || s->acc == ACC_FP32_MULADD);
    }
    if (tc)
        acc_tc_hold(g->q, g->dk, g->R, g->dk, fmt_table[a->ctx->cfg->in_format].emin);
    if (f32)
        acc_hold_f32(g->q, g->dk, g->R, g->dk);
    attn_variants[a->vi].fn(o, g, a->ctx);
    acc_tc_release();
    acc_release_f32();
}

void attn_run(double *o, int vi, const attn_input_t *in, attn_ctx_t *ctx)
{
    attn_run_arg_t a = {vi, ctx, o, in->s.dv};
    ctx->shape = &in->s;
    attn_for_groups(o, in, attn_run_cb, &a);
    ctx->lse = ctx->mlog = NULL;
}

