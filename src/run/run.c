/* run -- samples in parallel: inputs, Golden and every variant per sample, metrics */
#include "run/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attn/kernel.h"
#include "config/opts.h"
#include "data/files.h"
#include "data/npy.h"
#include "ref/golden.h"
#include "run/dump.h"

static double run_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double run_lse_max_abs(const double *lse, const double *glse, long n)
{
    if (n < 1 || lse[0] != lse[0]) /* NaN: the variant has no model of it */
        return NAN;
    double m = 0;
    for (long i = 0; i < n; i++) {
        /* two infinities (an entry with no key: +inf or -inf by the kernel's convention) agree */
        double d = lse[i] == glse[i] || (isinf(lse[i]) && isinf(glse[i])) ? 0 : fabs(lse[i] - glse[i]);
        m = d > m || d != d ? d : m;
    }
    return m;
}

/* An entry with no key to attend (seqlens 0, or a sparse entry whose indices are all invalid): what variant vi
 * (-1: Golden) returns for it, its kernel's convention (attn_kernel_no_keys: Golden's is FlashMLA's O = 0, LSE = +inf) */
static void run_no_keys(int vi, double *o, double *lse, double *mlog, long n, long nl)
{
    double ov, lv;
    attn_kernel_no_keys(vi, &ov, &lv);
    for (long i = 0; i < n; i++)
        o[i] = ov;
    for (long i = 0; lse && i < nl; i++)
        lse[i] = lv;
    for (long i = 0; mlog && i < nl; i++) /* max_logits of no key: -inf (FlashMLA's) */
        mlog[i] = -INFINITY;
}

double *run_mlog_rows(const attn_batch_t *bt, double *lse, long b)
{
    if (!lse || attn_batch_row_planes(bt) < 2)
        return NULL;
    long hq = bt->entry[0].s.hq;
    return lse + attn_batch_row(bt, bt->n) * hq + attn_batch_row(bt, b) * hq;
}

long run_golden_parts(const attn_batch_t *bt, long *first)
{
    long n = 0;
    for (long b = 0; b < bt->n; b++) {
        first[b] = n;
        n += bt->entry[b].s.sk > 0 ? golden_parts(&bt->entry[b]) : 1;
    }
    first[bt->n] = n;
    return n;
}

void run_golden_part(const run_cfg_t *c, const attn_batch_t *bt, const long *first, long p, double *gout,
                     double *glse)
{
    long b = 0;
    while (first[b + 1] <= p)
        b++;
    const attn_shape_t *s = &bt->entry[b].s;
    long per = s->hq * s->sq * s->dv, nlse = s->hq * s->sq, r = attn_batch_row(bt, b);
    double *o = gout + r * s->hq * s->dv, *l = glse ? glse + r * s->hq : NULL, *ml = run_mlog_rows(bt, glse, b);
    if (bt->entry[b].s.sk > 0)
        golden_attention_part(o, l, ml, &bt->entry[b], c->attn.scale, p - first[b]);
    else
        run_no_keys(-1, o, l, ml, per, nlse);
}

/* One variant (slot v) on every entry of bt, or on the (entry, KV group) units units marks. */
static int run_variant(const run_cfg_t *c, const attn_batch_t *bt, long sample, int v, double *out, double *lse,
                       run_extra_t *extras, run_row_t *row, const unsigned char *units, err_t *e)
{
    attn_cfg_t acfg = c->vcfg[v - 1];
    acfg.rng_seed = gen_stream_seed(c->seed ^ 0x5A5A5A5Aull, sample) + (uint64_t)v;
    attn_stats_t st = {0};
    attn_ctx_t ctx;
    int rc = attn_ctx_init(&ctx, c->variants[v - 1], &acfg, &st, e);
    if (rc)
        return rc;
    ctx.batch_seqlens = bt->sparse_sq ? bt->sched_sk : bt->seqlens;
    ctx.batch_n = bt->sparse_sq ? bt->n / bt->sparse_sq : bt->n;
    ctx.batch_sq = bt->sparse_sq;
    if (extras) {
        ctx.extra = run_extra_put;
        ctx.extra_arg = extras;
    }
    double t0 = run_now();
    int keyed = 0, keyed_lse = 0, keyed_mlog = 0; /* entries with keys run; whether the variant wrote lse (max_logits)
                                                      rows for one */
    for (long b = 0; b < bt->n; b++) {
        long hkv = bt->entry[b].s.hkv, any = !units;
        for (long h = 0; h < hkv && !any; h++)
            any = units[b * hkv + h];
        if (!any)
            continue;
        const attn_shape_t *s = &bt->entry[b].s;
        long per = s->hq * s->sq * s->dv, nlse = s->hq * s->sq, r = attn_batch_row(bt, b);
        ctx.groups = units ? units + b * hkv : NULL;
        ctx.batch_i = bt->sparse_sq ? b / bt->sparse_sq : b;
        ctx.lse_out = lse ? lse + r * s->hq : NULL;
        ctx.mlog_out = run_mlog_rows(bt, lse, b);
        if (bt->entry[b].s.sk > 0) {
            attn_run(out + r * s->hq * s->dv, c->variants[v - 1], &bt->entry[b], &ctx);
            keyed = 1;
            for (long i = 0; ctx.lse_out && i < nlse && !keyed_lse; i++)
                keyed_lse = ctx.lse_out[i] == ctx.lse_out[i];
            for (long i = 0; ctx.mlog_out && i < nlse && !keyed_mlog; i++)
                keyed_mlog = ctx.mlog_out[i] == ctx.mlog_out[i];
        } else {
            run_no_keys(c->variants[v - 1], out + r * s->hq * s->dv, ctx.lse_out, ctx.mlog_out, per, nlse);
        }
    }
    /* a variant with no model of the log-sum-exp or max_logits (its rows left NaN) has none for an entry of no key
     * either */
    for (long b = 0; lse && keyed && b < bt->n; b++) {
        double *ml = run_mlog_rows(bt, lse, b);
        for (long i = 0; bt->entry[b].s.sk == 0 && i < bt->entry[b].s.hq * bt->entry[b].s.sq; i++) {
            if (!keyed_lse)
                lse[attn_batch_row(bt, b) * bt->entry[b].s.hq + i] = NAN;
            if (ml && !keyed_mlog)
                ml[i] = NAN;
        }
    }
    row->seconds = run_now() - t0;
    row->events = st.events;
    return ERR_OK;
}

int run_outputs(const run_cfg_t *c, const attn_batch_t *bt, long sample, double **outs, double **lses,
                run_extra_t *extras, run_row_t *rows, int threads, err_t *e)
{
    int rc = ERR_OK;
    threads = threads < 1 ? 1 : threads;
    double t0 = run_now();
    if (outs[0]) {
        /* Golden in parts (an entry's KV groups, in chunks of rows), spread over the threads: each part's rows are
         * its own, so the bits do not depend on the threads */
        long *first = err_malloc((size_t)bt->n + 1, sizeof(long)), nparts = run_golden_parts(bt, first);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && nparts > 1)
#endif
        for (long p = 0; p < nparts; p++)
            run_golden_part(c, bt, first, p, outs[0], lses[0]);
        free(first);
    }
    rows[0].seconds = run_now() - t0;
    /* the variants side by side (each its own arrays and context) */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && c->nvariants > 1)
#endif
    for (int v = 1; v <= c->nvariants; v++) {
        if (run_stopped(&rc))
            continue;
        err_t le = {0};
        int lrc = run_variant(c, bt, sample, v, outs[v], lses[v], extras ? &extras[v] : NULL, &rows[v], NULL, &le);
        if (lrc)
            run_keep_first_error(&rc, e, lrc, &le);
    }
    return rc;
}

int run_outputs_units(const run_cfg_t *c, const attn_batch_t *bt, int v, double *out, double *lse,
                      const unsigned char *units, double *seconds, err_t *e)
{
    run_row_t row = {{0}, 0, 0, 0};
    int rc = run_variant(c, bt, 0, v, out, lse, NULL, &row, units, e);
    if (seconds)
        *seconds = row.seconds;
    return rc;
}

/* One sample: inputs (a batch of entries, or one), Golden and each variant on every entry,
 * metrics over the whole batch into rows[0..nvariants]. */
static int run_sample(run_row_t *rows, const run_cfg_t *c, long sample, int dump, int threads, err_t *e)
{
    attn_input_t gen = {.s = c->shape};
    long sk = c->shape.sk;
    attn_batch_t one = {.n = 1, .entry = &gen, .seqlens = &sk, .smax = sk};
    const attn_batch_t *bt = c->input ? c->input : &one; /* --load: read once, shared read-only */
    int rc = ERR_OK;
    if (!c->input && c->load_dir)
        rc = err_set(e, ERR_USAGE, "--load %s: the case was not read (run_load_input)", c->load_dir);
    else if (!c->input)
        rc = gen_sample(&gen, &c->gen, c->seed, sample, e);
    if (rc)
        return rc;
    const attn_shape_t *s0 = &bt->entry[0].s;
    long nl = attn_batch_row(bt, bt->n) * s0->hq, n = nl * s0->dv;
    int nv = c->nvariants + 1;
    double **outs = err_calloc((size_t)nv, sizeof(double *)), **lses = err_calloc((size_t)nv, sizeof(double *));
    run_extra_t *extras = err_calloc((size_t)nv, sizeof(run_extra_t));
    for (int v = 0; v < nv; v++) {
        outs[v] = err_malloc((size_t)n, sizeof(double));
        lses[v] = err_malloc((size_t)(nl * attn_batch_row_planes(bt)), sizeof(double));
    }
    rc = run_outputs(c, bt, sample, outs, lses, dump ? extras : NULL, rows, threads, e);
    for (int v = 0; v < nv && !rc; v++) {
        metric_all(rows[v].m, outs[v], outs[0], n);
        rows[v].lse_max_abs = run_lse_max_abs(lses[v], lses[0], nl);
    }
    if (!rc && dump)
        rc = run_dump(c, bt, outs, lses, extras, e);
    for (int v = 0; v < nv; v++) {
        free(outs[v]);
        free(lses[v]);
        run_extra_free(&extras[v]);
    }
    free(outs);
    free(lses);
    free(extras);
    if (!c->input)
        attn_input_free(&gen);
    return rc;
}

void run_keep_first_error(int *rc, err_t *e, int lrc, const err_t *le)
{
#ifdef _OPENMP
#pragma omp critical(run_err)
#endif
    {
        if (!*rc) {
            *rc = lrc;
            *e = *le;
        }
    }
}

int run_execute(run_result_t *res, const run_cfg_t *c, err_t *e)
{
    return run_execute_hooked(res, c, NULL, e);
}

int run_execute_hooked(run_result_t *res, const run_cfg_t *c, const run_hooks_t *h, err_t *e)
{
    res->samples = c->samples;
    res->nvariants = c->nvariants + 1;
    res->rows = err_calloc((size_t)(c->samples * res->nvariants), sizeof(run_row_t));
    if (!res->rows)
        return err_set(e, ERR_USAGE, "too many samples: %ld", c->samples);
    int rc = ERR_OK;
    int threads = c->threads;
#ifdef _OPENMP
    if (threads == 0)
        threads = omp_get_max_threads();
#endif
    /* one sample per thread; where there are more threads than samples, each sample's Golden parts and variants
     * share out the rest (one sample: every thread on it) */
    int inner = threads > c->samples ? (int)(threads / c->samples) : 1;
    if (threads > c->samples)
        threads = (int)c->samples;
    if (threads < 1)
        threads = 1;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (long s = 0; s < c->samples; s++) {
        if (run_stopped(&rc) || (h && h->skip && h->skip[s]))
            continue;
        err_t le = {0};
        int lrc = run_sample(res->rows + s * res->nvariants, c, s, c->dump_dir && s == 0, inner, &le);
        if (!lrc && h && h->on_sample) {
#ifdef _OPENMP
#pragma omp critical(run_hook)
#endif
            lrc = h->on_sample(h->arg, s, res->rows + s * res->nvariants, &le);
        }
        if (lrc)
            run_keep_first_error(&rc, e, lrc, &le);
    }
    return rc;
}

void run_result_free(run_result_t *res)
{
    free(res->rows);
    res->rows = NULL;
}

