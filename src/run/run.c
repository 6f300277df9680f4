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

static double run_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A batch array in FlashMLA's layout [B, S, H, D] (rows past each entry's s left zero) from the
 * entries' [H][s][D] arrays (which = 0, 1, 2: q, k, v; 3: the outputs o, one [H][sq][dv] per
 * entry at o + b per). */
static double *run_batch_array(const attn_batch_t *bt, int which, const double *o, long shape[4])
{
    const attn_shape_t *s0 = &bt->entry[0].s;
    long S = which == 0 || which == 3 ? s0->sq : bt->smax, H = which == 1 || which == 2 ? s0->hkv : s0->hq,
         D = which == 0 || which == 1 ? s0->dk : s0->dv;
    long dims[4] = {bt->n, S, H, D};
    memcpy(shape, dims, sizeof dims);
    double *x = err_calloc((size_t)(bt->n * S * H * D), sizeof(double));
    for (long b = 0; b < bt->n; b++) {
        const attn_input_t *in = &bt->entry[b];
        const double *src = which == 0 ? in->q : which == 1 ? in->k : which == 2 ? in->v : o + b * s0->hq * s0->sq * s0->dv;
        long s = which == 1 || which == 2 ? in->s.sk : S;
        for (long h = 0; h < H; h++)
            for (long j = 0; j < s; j++)
                memcpy(x + ((b * S + j) * H + h) * D, src + (h * s + j) * D, sizeof(double) * (size_t)D);
    }
    return x;
}

/* Intermediate arrays a variant hands out (attn_ctx_t.extra), kept for --dump. */
#define RUN_EXTRA_MAX 4
typedef struct {
    char name[32];
    long d0, d1, n;
    double *x;
} run_extra_arr_t;

struct run_extra {
    run_extra_arr_t a[RUN_EXTRA_MAX];
    int count;
};

static void run_extra_put(void *arg, const char *name, long d0, long d1, long i0, long i1, const double *x, long n)
{
    run_extra_t *ex = arg;
    int k = 0;
    while (k < ex->count && strcmp(ex->a[k].name, name) != 0)
        k++;
    if (k == ex->count) {
        if (k == RUN_EXTRA_MAX || strlen(name) >= sizeof ex->a[k].name)
            return;
        run_extra_arr_t *a = &ex->a[ex->count++];
        snprintf(a->name, sizeof a->name, "%s", name);
        a->d0 = d0;
        a->d1 = d1;
        a->n = n;
        a->x = err_malloc((size_t)(d0 * d1 * n), sizeof(double));
        for (long i = 0; i < d0 * d1 * n; i++)
            a->x[i] = NAN;
    }
    run_extra_arr_t *a = &ex->a[k];
    if (a->d0 == d0 && a->d1 == d1 && a->n == n && i0 >= 0 && i0 < d0 && i1 >= 0 && i1 < d1)
        memcpy(a->x + (i0 * d1 + i1) * n, x, sizeof(double) * (size_t)n);
}

static void run_extra_free(run_extra_t *ex)
{
    for (int k = 0; k < ex->count; k++)
        free(ex->a[k].x);
    ex->count = 0;
}

/* Array which (0 q, 1 k, 2 v) of a case whose entries hold it as e4m3 codes times a scale (attn_input_t.scale): x, in
 * the dump's layout (shape: [B, S, H, D] in FlashMLA's, else [H, S, D]), written as its codes (x / scale, exact) to
 * path and the scale to DIR/NAME_scale.npy, float32 [1] where one scale serves every entry and head, else [B, Hkv],
 * so that the dump reloads as the same case. */
static int run_dump_codes(const run_cfg_t *c, const attn_batch_t *bt, int which, const double *x, const long *shape,
                          int ndim, const char *path, err_t *e)
{
    const attn_shape_t *s0 = &bt->entry[0].s;
    long H = ndim == 4 ? shape[2] : shape[0], D = shape[ndim - 1], rows = shape[1];
    long group = H / s0->hkv, n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    uint8_t *codes = err_malloc((size_t)n, 1);
    for (long i = 0; i < n; i++) {
        long b = ndim == 4 ? i / (rows * H * D) : 0, h = ndim == 4 ? i / D % H : i / (rows * D);
        codes[i] = (uint8_t)fmt_encode(x[i] / bt->entry[b].scale[which][h / group], FMT_E4M3, FMT_RNE, 0, NULL);
    }
    int rc = io_npy_write_uint(path, codes, 1, shape, ndim, e);
    free(codes);
    long nsc = bt->n * s0->hkv, one = 1;
    double *sc = err_malloc((size_t)nsc, sizeof(double));
    int same = 1;
    for (long b = 0; b < bt->n; b++)
        for (long h = 0; h < s0->hkv; h++) {
            sc[b * s0->hkv + h] = bt->entry[b].scale[which][h];
            same &= sc[b * s0->hkv + h] == sc[0];
        }
    char sp[4096];
    snprintf(sp, sizeof sp, "%s/%c_scale.npy", c->dump_dir, "qkv"[which]);
    long sshape[2] = {bt->n, s0->hkv};
    if (!rc)
        rc = io_npy_write(sp, sc, same ? &one : sshape, same ? 1 : 2, 1, e);
    free(sc);
    return rc;
}

/* --dump: q, k, v, each output NAME.npy and NAME.lse.npy for Golden and each variant that models
 * the kernel's log-sum-exp (lses[v] NULL or all NaN: none); one entry: [hq][sq][dk] ... and LSE
 * [hq][sq]; a batch read in FlashMLA's layout: that layout (and seqlens.npy), outputs [B, Sq, Hq,
 * Dv], LSE [B, Hq, Sq]. */
static int run_dump(const run_cfg_t *c, const attn_batch_t *bt, double **outs, double **lses, const run_extra_t *extras,
                    err_t *e)
{
    const attn_shape_t *s = &bt->entry[0].s;
    long shapes[5][4] = {{s->hq, s->sq, s->dk}, {s->hkv, s->sk, s->dk}, {s->hkv, s->sk, s->dv}, {s->hq, s->sq, s->dv},
                         {bt->n, s->hq, s->sq}};
    int ndim = bt->flashmla_layout ? 4 : 3, lse_ndim = bt->flashmla_layout ? 3 : 2;
    long nl = bt->n * s->hq * s->sq;
    if (!bt->flashmla_layout)
        memmove(shapes[4], shapes[4] + 1, 2 * sizeof(long));
    char path[4096];
    int rc = io_ensure_dir(c->dump_dir, e);
    const char *names[3] = {"q", "k", "v"};
    /* a sparse batch (kcache.npy): its inputs are the case's files; outputs [B, Sq, Hq, Dv], LSE [B, Hq, Sq] */
    long sq = bt->sparse_sq, B = sq ? bt->n / sq : 0;
    if (sq) {
        long o4[4] = {B, sq, s->hq, s->dv}, l3[3] = {B, s->hq, sq};
        memcpy(shapes[3], o4, sizeof o4);
        memcpy(shapes[4], l3, sizeof l3);
    }
    for (int i = 0; i < 3 && !rc && !sq; i++) {
        snprintf(path, sizeof path, "%s/%s.npy", c->dump_dir, names[i]);
        const attn_input_t *in = &bt->entry[0];
        double *x = bt->flashmla_layout ? run_batch_array(bt, i, NULL, shapes[i]) : NULL;
        const double *a = x ? x : i == 0 ? in->q : i == 1 ? in->k : in->v;
        if (in->scale[i]) /* FP8 codes with their scale: the same again */
            rc = run_dump_codes(c, bt, i, a, shapes[i], ndim, path, e);
        else
            rc = io_npy_write(path, a, shapes[i], ndim, 0, e);
        free(x);
    }
    if (!rc && bt->flashmla_layout && !sq) {
        int32_t *sl = err_malloc((size_t)bt->n, sizeof(int32_t));
        for (long b = 0; b < bt->n; b++)
            sl[b] = (int32_t)bt->seqlens[b];
        snprintf(path, sizeof path, "%s/seqlens.npy", c->dump_dir);
        rc = io_npy_write_i32(path, sl, &bt->n, 1, e);
        free(sl);
    }
    for (int v = 0; v <= c->nvariants && !rc; v++) {
        snprintf(path, sizeof path, "%s/%s.npy", c->dump_dir, run_slot_name(c, v));
        if (sq) { /* entry b sq + t is [hq][dv]: already [B, Sq, Hq, Dv] */
            rc = io_npy_write(path, outs[v], shapes[3], 4, 0, e);
        } else if (bt->flashmla_layout) {
            double *x = run_batch_array(bt, 3, outs[v], shapes[3]);
            rc = io_npy_write(path, x, shapes[3], 4, 0, e);
            free(x);
        } else {
            rc = io_npy_write(path, outs[v], shapes[3], ndim, 0, e);
        }
        long i = 0;
        while (i < nl && lses[v][i] != lses[v][i])
            i++;
        if (!rc && i < nl) {
            snprintf(path, sizeof path, "%s/%s.lse.npy", c->dump_dir, run_slot_name(c, v));
            double *x = lses[v];
            if (sq) { /* [B Sq][Hq] -> [B, Hq, Sq] */
                x = err_malloc((size_t)nl, sizeof(double));
                for (long b = 0; b < B; b++)
                    for (long t = 0; t < sq; t++)
                        for (long h = 0; h < s->hq; h++)
                            x[(b * s->hq + h) * sq + t] = lses[v][(b * sq + t) * s->hq + h];
            }
            rc = io_npy_write(path, x, shapes[4], lse_ndim, 0, e);
            if (x != lses[v])
                free(x);
        }
        for (int k = 0; k < extras[v].count && !rc; k++) {
            const run_extra_arr_t *a = &extras[v].a[k];
            long shape[3] = {a->d0, a->d1, a->n};
            snprintf(path, sizeof path, "%s/%s.%s.npy", c->dump_dir, run_slot_name(c, v), a->name);
            rc = io_npy_write(path, a->x, shape, a->n > 1 ? 3 : 2, 0, e);
        }
    }
    return rc;
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
static void run_no_keys(int vi, double *o, double *lse, long n, long nl)
{
    double ov, lv;
    attn_kernel_no_keys(vi, &ov, &lv);
    for (long i = 0; i < n; i++)
        o[i] = ov;
    for (long i = 0; lse && i < nl; i++)
        lse[i] = lv;
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
    const attn_shape_t *s0 = &bt->entry[0].s;
    long per = s0->hq * s0->sq * s0->dv, nlse = s0->hq * s0->sq, b = 0;
    while (first[b + 1] <= p)
        b++;
    double *o = gout + b * per, *l = glse ? glse + b * nlse : NULL;
    if (bt->entry[b].s.sk > 0)
        golden_attention_part(o, l, &bt->entry[b], c->attn.scale, p - first[b]);
    else
        run_no_keys(-1, o, l, per, nlse);
}

/* One variant (slot v) on every entry of bt, or on the (entry, KV group) units units marks. */
static int run_variant(const run_cfg_t *c, const attn_batch_t *bt, long sample, int v, double *out, double *lse,
                       run_extra_t *extras, run_row_t *row, const unsigned char *units, err_t *e)
{
    const attn_shape_t *s0 = &bt->entry[0].s;
    long per = s0->hq * s0->sq * s0->dv, nlse = s0->hq * s0->sq;
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
    int keyed = 0, keyed_lse = 0; /* entries with keys run, and whether the variant wrote an lse row for one */
    for (long b = 0; b < bt->n; b++) {
        long hkv = bt->entry[b].s.hkv, any = !units;
        for (long h = 0; h < hkv && !any; h++)
            any = units[b * hkv + h];
        if (!any)
            continue;
        ctx.groups = units ? units + b * hkv : NULL;
        ctx.batch_i = bt->sparse_sq ? b / bt->sparse_sq : b;
        ctx.lse_out = lse ? lse + b * nlse : NULL;
        if (bt->entry[b].s.sk > 0) {
            attn_run(out + b * per, c->variants[v - 1], &bt->entry[b], &ctx);
            keyed = 1;
            for (long i = 0; ctx.lse_out && i < nlse && !keyed_lse; i++)
                keyed_lse = ctx.lse_out[i] == ctx.lse_out[i];
        } else {
            run_no_keys(c->variants[v - 1], out + b * per, ctx.lse_out, per, nlse);
        }
    }
    /* a variant with no model of the log-sum-exp (its rows left NaN) has none for an entry of no key either */
    for (long b = 0; lse && keyed && !keyed_lse && b < bt->n; b++)
        for (long i = 0; bt->entry[b].s.sk == 0 && i < nlse; i++)
            lse[b * nlse + i] = NAN;
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
    long n = bt->n * s0->hq * s0->sq * s0->dv;
    int nv = c->nvariants + 1;
    double **outs = err_calloc((size_t)nv, sizeof(double *)), **lses = err_calloc((size_t)nv, sizeof(double *));
    run_extra_t *extras = err_calloc((size_t)nv, sizeof(run_extra_t));
    long nl = bt->n * s0->hq * s0->sq;
    for (int v = 0; v < nv; v++) {
        outs[v] = err_malloc((size_t)n, sizeof(double));
        lses[v] = err_malloc((size_t)nl, sizeof(double));
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

