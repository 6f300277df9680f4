/* run -- samples in parallel: inputs, Golden and every variant per sample, metrics */
#include "run/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "data/files.h"
#include "data/npy.h"
#include "ref/golden.h"

int run_load_input(run_cfg_t *c, attn_input_t *in, err_t *e)
{
    *in = (attn_input_t){c->shape, NULL, NULL, NULL};
    int rc = gen_load(in, c->load_dir, c->attn.in_format, c->shape.dv, e);
    if (rc)
        return rc;
    int causal = c->shape.causal;
    c->shape = in->s;
    c->shape.causal = causal;
    in->s.causal = causal;
    c->input = in;
    return ERR_OK;
}

static double run_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* --dump: q, k, v, each output NAME.npy [hq][sq][dv], and NAME.lse.npy [hq][sq] for Golden and
 * each variant that models the kernel's log-sum-exp (lses[v] NULL or all NaN: none). */
static int run_dump(const run_cfg_t *c, const attn_input_t *in, double **outs, double **lses, err_t *e)
{
    const attn_shape_t *s = &in->s;
    long qshape[3] = {s->hq, s->sq, s->dk}, kshape[3] = {s->hkv, s->sk, s->dk},
         vshape[3] = {s->hkv, s->sk, s->dv}, oshape[3] = {s->hq, s->sq, s->dv}, lshape[2] = {s->hq, s->sq};
    char path[4096];
    int rc = io_ensure_dir(c->dump_dir, e);
    const double *arrs[3] = {in->q, in->k, in->v};
    const long *shapes[3] = {qshape, kshape, vshape};
    const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3 && !rc; i++) {
        snprintf(path, sizeof path, "%s/%s.npy", c->dump_dir, names[i]);
        rc = io_npy_write(path, arrs[i], shapes[i], 3, 0, e);
    }
    for (int v = 0; v <= c->nvariants && !rc; v++) {
        snprintf(path, sizeof path, "%s/%s.npy", c->dump_dir, run_slot_name(c, v));
        rc = io_npy_write(path, outs[v], oshape, 3, 0, e);
        long i = 0;
        while (i < s->hq * s->sq && lses[v][i] != lses[v][i])
            i++;
        if (!rc && i < s->hq * s->sq) {
            snprintf(path, sizeof path, "%s/%s.lse.npy", c->dump_dir, run_slot_name(c, v));
            rc = io_npy_write(path, lses[v], lshape, 2, 0, e);
        }
    }
    return rc;
}

/* One sample: inputs, Golden, each variant, metrics into rows[0..nvariants]. */
static int run_sample(run_row_t *rows, const run_cfg_t *c, long sample, int dump, err_t *e)
{
    attn_input_t gen = {c->shape, NULL, NULL, NULL};
    int rc = ERR_OK;
    if (c->input) /* --load: the case read once, shared read-only by every sample */
        gen = *c->input;
    else if (c->load_dir)
        rc = err_set(e, ERR_USAGE, "--load %s: the case was not read (run_load_input)", c->load_dir);
    else
        rc = gen_sample(&gen, &c->gen, c->seed, sample, e);
    if (rc)
        return rc;
    const attn_input_t in = gen;
    long n = in.s.hq * in.s.sq * in.s.dv;
    int nv = c->nvariants + 1;
    double **outs = err_calloc((size_t)nv, sizeof(double *)), **lses = err_calloc((size_t)nv, sizeof(double *));
    for (int v = 0; v < nv; v++) {
        outs[v] = err_malloc((size_t)n, sizeof(double));
        if (dump)
            lses[v] = err_malloc((size_t)(in.s.hq * in.s.sq), sizeof(double));
    }
    double t0 = run_now();
    golden_attention_lse(outs[0], lses[0], &in, c->attn.scale);
    rows[0].seconds = run_now() - t0;
    metric_all(rows[0].m, outs[0], outs[0], n);
    for (int v = 1; v < nv && !rc; v++) {
        attn_cfg_t acfg = c->vcfg[v - 1];
        acfg.rng_seed = gen_stream_seed(c->seed ^ 0x5A5A5A5Aull, sample) + (uint64_t)v;
        attn_stats_t st = {0};
        attn_ctx_t ctx;
        rc = attn_ctx_init(&ctx, c->variants[v - 1], &acfg, &st, e);
        if (rc)
            break;
        ctx.lse_out = lses[v];
        t0 = run_now();
        attn_run(outs[v], c->variants[v - 1], &in, &ctx);
        rows[v].seconds = run_now() - t0;
        rows[v].events = st.events;
        metric_all(rows[v].m, outs[v], outs[0], n);
    }
    if (!rc && dump)
        rc = run_dump(c, &in, outs, lses, e);
    for (int v = 0; v < nv; v++) {
        free(outs[v]);
        free(lses[v]);
    }
    free(outs);
    free(lses);
    if (!c->input)
        gen_free(&gen);
    return rc;
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
    /* one sample per thread: more threads than samples would only be started to wait */
    if (threads > c->samples)
        threads = (int)c->samples;
    if (threads < 1)
        threads = 1;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (long s = 0; s < c->samples; s++) {
        int failed;
#ifdef _OPENMP
#pragma omp atomic read
#endif
        failed = rc;
        if (failed || (h && h->skip && h->skip[s]))
            continue;
        err_t le = {0};
        int lrc = run_sample(res->rows + s * res->nvariants, c, s, c->dump_dir && s == 0, &le);
        if (!lrc && h && h->on_sample) {
#ifdef _OPENMP
#pragma omp critical(run_hook)
#endif
            lrc = h->on_sample(h->arg, s, res->rows + s * res->nvariants, &le);
        }
        if (lrc) {
#ifdef _OPENMP
#pragma omp critical(run_err)
#endif
            {
                if (!rc) {
                    rc = lrc;
                    *e = le;
                }
            }
        }
    }
    return rc;
}

void run_result_free(run_result_t *res)
{
    free(res->rows);
    res->rows = NULL;
}

