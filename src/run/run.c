/* run -- samples in parallel, Golden and variants per sample, summaries and output */
#include "base/err.h"
#include "run/run.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "ref/golden.h"
#include "data/files.h"
#include "data/npy.h"
#include "config/opts.h"

/* Defaults: shared/DESIGN.md; block 512 is AMLA's KV block (seed 000, section 4). */
#define RUN_DEFAULT_BLOCK 512
#define RUN_DEFAULT_SAMPLES 10
#define RUN_DEFAULT_SEED 1

void run_cfg_default(run_cfg_t *c)
{
    memset(c, 0, sizeof *c);
    c->shape = (attn_shape_t){128, 1, 1, 8192, 576, 512, 0};
    c->gen = (gen_cfg_t){GEN_NORMAL, 0.0, 1.0, -1.0, 1.0, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}};
    gen_mla_default(&c->gen.mla);
    c->attn.in_format = FMT_BF16;
    c->attn.out_format = FMT_BF16;
    c->attn.block = RUN_DEFAULT_BLOCK;
    c->attn.fa3_block = 1;
    /* `amla` is the form the paper measured and the CANN kernel ships (shared/REFERENCES.md);
     * Algorithm 2 as printed is amla:amla-form=paper */
    c->attn.amla_form = ATTN_AMLA_CANN;
    c->attn.fa3_hadamard = 1;
    c->attn.acc_qk = ACC_FP32_FMA;
    c->attn.acc_pv = ACC_FP32_FMA;
    c->samples = RUN_DEFAULT_SAMPLES;
    c->seed = RUN_DEFAULT_SEED;
    c->threads = 0;
    c->variants[0] = attn_find("standard");
    c->variants[1] = attn_find("base");
    strcpy(c->vspec[0], "standard");
    strcpy(c->vspec[1], "base");
    c->nvariants = 2;
    c->show_golden = 1;
    c->out = RUN_OUT_TABLE;
    c->experiment = "run";
}

double run_sample_bytes(const run_cfg_t *c)
{
    const attn_shape_t *s = &c->shape;
    double rows = (double)s->hq * (double)s->sq;
    double in = rows * (double)s->dk + (double)s->hkv * (double)s->sk * (double)(s->dk + s->dv);
    double out = rows * (double)s->dv * (double)(c->nvariants + 2);
    double work = rows / (double)(s->hkv > 0 ? s->hkv : 1) * (double)s->sk * 2.0 + rows * (double)s->dv * 2.0;
    return 8.0 * (in + out + work);
}

int run_expand_attribution(run_cfg_t *c, err_t *e)
{
    if (!c->attribute || c->expanded)
        return ERR_OK;
    int n0 = c->nvariants;
    for (int v = 0; v < n0; v++) {
        for (const site_def_t *d = attn_variants[c->variants[v]].sites; d->name; d++)
            for (int mode = RUN_ATTR_ONLY; mode <= RUN_ATTR_EXACT; mode++) {
                if (c->nvariants == RUN_MAX_VARIANTS)
                    return err_set(e, ERR_USAGE, "--attribute: more than %d variant runs; select fewer variants",
                                   RUN_MAX_VARIANTS);
                int k = c->nvariants++;
                c->variants[k] = c->variants[v];
                char parent[RUN_VSPEC_LEN];
                memcpy(parent, c->vspec[v], sizeof parent);
                int n = snprintf(c->vspec[k], RUN_VSPEC_LEN, "%s:%s=%s", parent,
                                 mode == RUN_ATTR_ONLY ? "only" : "exact", d->name);
                if (n >= RUN_VSPEC_LEN)
                    return err_set(e, ERR_USAGE, "--attribute: variant spec '%s' too long", c->vspec[v]);
                c->vparent[k] = v;
                c->vmode[k] = mode;
                c->vsite[k] = d->name;
            }
    }
    c->expanded = 1;
    return ERR_OK;
}

static int run_check_size(long v, const char *opt, err_t *e)
{
    if (v <= 0)
        return err_set(e, ERR_USAGE, "%s must be positive, got %ld", opt, v);
    return ERR_OK;
}

int run_validate(run_cfg_t *c, err_t *e)
{
    attn_shape_t *s = &c->shape;
    int rc = run_check_size(s->hq, "--heads", e);
    if (!rc) rc = run_check_size(s->sq, "--sq", e);
    if (!rc) rc = run_check_size(s->sk, "--ctx", e);
    if (!rc) rc = run_check_size(s->dk, "--dk", e);
    if (!rc) rc = run_check_size(s->dv, "--dv", e);
    if (!rc) rc = run_check_size(c->attn.block, "--block", e);
    if (!rc) rc = run_check_size(c->samples, "--samples", e);
    if (rc)
        return rc;
    if (c->threads < 0)
        return err_set(e, ERR_USAGE, "--threads must be positive, got %d", c->threads);
    if (c->attn.exact && c->attn.only)
        return err_set(e, ERR_USAGE, "--exact and --only cannot be combined (with --only every site not listed is "
                                     "already exact)");
    if (s->hkv <= 0 || s->hq % s->hkv != 0)
        return err_set(e, ERR_USAGE, "%ld query heads is not a multiple of %ld KV heads", s->hq, s->hkv);
    if (!c->load_dir && !c->gen.kv_separate && s->dv > s->dk)
        return err_set(e, ERR_USAGE, "--dv %ld exceeds --dk %ld with --kv shared (V = K[:, :dv])", s->dv, s->dk);
    if (s->causal && s->sq > s->sk)
        return err_set(e, ERR_USAGE, "--causal needs --sq (%ld) <= --ctx (%ld)", s->sq, s->sk);
    if (c->gen.dist == GEN_UNIFORM && !(c->gen.low < c->gen.high))
        return err_set(e, ERR_USAGE, "--low (%g) must be below --high (%g)", c->gen.low, c->gen.high);
    if ((c->gen.dist == GEN_NORMAL || c->gen.dist == GEN_MLA) && !(c->gen.sigma > 0))
        return err_set(e, ERR_USAGE, "--sigma must be positive, got %g", c->gen.sigma);
    /* sizes: every product below must stay far from overflow and within memory */
    double elems[] = {(double)s->hq * s->sq * s->dk, (double)s->hkv * s->sk * s->dk,
                      (double)s->hkv * s->sk * s->dv, (double)s->hq * s->sq * s->dv,
                      (double)s->hq / s->hkv * s->sq * s->sk};
    for (size_t i = 0; i < sizeof elems / sizeof elems[0]; i++)
        if (elems[i] > 0x1p40)
            return err_set(e, ERR_USAGE, "shape too large: an array of %.3g elements", elems[i]);
    /* --attribute multiplies the variant runs, and every run's output is held at once */
    int rc3 = run_expand_attribution(c, e);
    if (rc3)
        return rc3;
    double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    int threads = c->threads;
#ifdef _OPENMP
    if (threads == 0)
        threads = omp_get_max_threads();
#endif
    if (threads <= 0)
        threads = 1;
    if (threads > c->samples)
        threads = (int)c->samples;
    double need = run_sample_bytes(c) * threads;
    if (mem > 0 && need > mem)
        return err_set(e, ERR_USAGE, "shape needs %.3g GiB for %d thread(s), more than the %.3g GiB of memory",
                       need / 0x1p30, threads, mem / 0x1p30);
    if (c->attn.scale == 0)
        c->attn.scale = 1.0 / sqrt((double)s->dk);
    if (c->gen.dist == GEN_MLA && !c->load_dir && c->gen.mla.rope_dims >= s->dk)
        return err_set(e, ERR_USAGE, "--rope-dims %ld must be below --dk %ld", c->gen.mla.rope_dims, s->dk);
    /* FP8 variants keep the last rope_dims of Dk apart; a head too small for it has none */
    c->attn.rope_dims = c->gen.mla.rope_dims < s->dk ? c->gen.mla.rope_dims : 0;
    /* each variant's own configuration, and its --exact sites checked before any work */
    for (int v = 0; v < c->nvariants; v++) {
        int rc2 = opts_variant_cfg(c, v, e);
        if (rc2)
            return rc2;
        attn_stats_t st;
        attn_ctx_t ctx;
        rc2 = attn_ctx_init(&ctx, c->variants[v], &c->vcfg[v], &st, e);
        if (rc2)
            return rc2;
    }
    return ERR_OK;
}

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

const char *run_slot_name(const run_cfg_t *c, int v)
{
    return v == 0 ? "golden" : c->vspec[v - 1];
}

static int run_dump(const run_cfg_t *c, const attn_input_t *in, double **outs, err_t *e)
{
    const attn_shape_t *s = &in->s;
    long qshape[3] = {s->hq, s->sq, s->dk}, kshape[3] = {s->hkv, s->sk, s->dk},
         vshape[3] = {s->hkv, s->sk, s->dv}, oshape[3] = {s->hq, s->sq, s->dv};
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
    double **outs = err_calloc((size_t)nv, sizeof(double *));
    for (int v = 0; v < nv; v++)
        outs[v] = err_malloc((size_t)n, sizeof(double));
    double t0 = run_now();
    golden_attention(outs[0], &in, c->attn.scale);
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
        t0 = run_now();
        attn_run(outs[v], c->variants[v - 1], &in, &ctx);
        rows[v].seconds = run_now() - t0;
        rows[v].events = st.events;
        metric_all(rows[v].m, outs[v], outs[0], n);
    }
    if (!rc && dump)
        rc = run_dump(c, &in, outs, e);
    for (int v = 0; v < nv; v++)
        free(outs[v]);
    free(outs);
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

/* ---- output ---- */

static const char *run_dist_name(const run_cfg_t *c)
{
    static const char *const profiles[GEN_MLA_PROFILES + 1] = {"mla", "mla:l1", "mla:l2", "mla:l3", "mla:l4",
                                                               "mla:l5", "mla:l6", "mla:l7", "mla:l8"};
    if (c->load_dir)
        return "load";
    if (c->gen.dist == GEN_MLA)
        return profiles[c->gen.mla.profile];
    return gen_table[c->gen.dist].name;
}

static const char RUN_CSV_HEADER[] = "experiment,dist,mean,sigma,low,high,ctx,heads,sq,dk,dv,block,kv,in_format,"
                                     "out_format,seed,sample,variant,rel_fro,rmse,cos_sim,cos_diff,max_abs,"
                                     "nonfinite,events\n";

void run_write_csv_header(FILE *f)
{
    fputs(RUN_CSV_HEADER, f);
}

int run_csv_columns(void)
{
    int n = 1;
    for (const char *p = RUN_CSV_HEADER; *p; p++)
        n += *p == ',';
    return n;
}

void run_write_csv_rows(FILE *f, const run_cfg_t *c, const run_result_t *r)
{
    for (long i = 0; i < r->samples; i++)
        run_write_csv_sample(f, c, i, r->rows + i * r->nvariants);
}

void run_write_csv_sample(FILE *f, const run_cfg_t *c, long i, const run_row_t *rows)
{
    const attn_shape_t *s = &c->shape;
    for (int v = c->show_golden ? 0 : 1; v <= c->nvariants; v++) {
        const run_row_t *row = &rows[v];
        /* per-variant settings as the variant used them: its own block and output format,
         * and a kernel's fixed tile where --block does not apply */
        const attn_cfg_t *vc = v > 0 ? &c->vcfg[v - 1] : &c->attn;
        long block = v > 0 && attn_variants[c->variants[v - 1]].fixed_block ? attn_variants[c->variants[v - 1]].fixed_block
                                                                           : vc->block;
        fprintf(f, "%s,%s,%.17g,%.17g,%.17g,%.17g,%ld,%ld,%ld,%ld,%ld,%ld,%s,%s,%s,%llu,%ld,%s",
                c->experiment, run_dist_name(c), c->gen.mean, c->gen.sigma, c->gen.low,
                c->gen.high, s->sk, s->hq, s->sq, s->dk, s->dv, block,
                c->gen.kv_separate ? "separate" : "shared", fmt_table[c->attn.in_format].name,
                fmt_table[vc->out_format].name, (unsigned long long)c->seed, i,
                run_slot_name(c, v));
        for (int k = 0; k < METRIC_COUNT; k++)
            fprintf(f, k == METRIC_NONFINITE ? ",%.0f" : ",%.17g", row->m[k]);
        fprintf(f, ",%ld\n", row->events);
    }
}

void run_mean_ci(const double *x, size_t n, double *mean, double *ci)
{
    *mean = gsl_stats_mean(x, 1, n);
    *ci = n > 1 ? gsl_cdf_tdist_Pinv(0.975, (double)(n - 1)) * gsl_stats_sd(x, 1, n) / sqrt((double)n) : NAN;
}

/* Mean and 95% confidence half-width of metric k of slot v; mean seconds per sample. */
static void run_summary(const run_result_t *r, int v, int k, double *mean, double *ci, double *secs)
{
    double *x = err_malloc((size_t)r->samples, sizeof(double));
    double st = 0;
    for (long i = 0; i < r->samples; i++) {
        x[i] = r->rows[i * r->nvariants + v].m[k];
        st += r->rows[i * r->nvariants + v].seconds;
    }
    run_mean_ci(x, (size_t)r->samples, mean, ci);
    *secs = st / (double)r->samples;
    free(x);
}

void run_write_table(FILE *f, const run_cfg_t *c, const run_result_t *r)
{
    const attn_shape_t *s = &c->shape;
    fprintf(f, "# %s", run_dist_name(c));
    if (!c->load_dir && c->gen.dist == GEN_NORMAL)
        fprintf(f, " mean %g sigma %g", c->gen.mean, c->gen.sigma);
    else if (!c->load_dir && c->gen.dist == GEN_UNIFORM)
        fprintf(f, " low %g high %g", c->gen.low, c->gen.high);
    fprintf(f, "; heads %ld sq %ld ctx %ld dk %ld dv %ld block %ld; %s in, %s out; %ld samples, seed %llu\n",
            s->hq, s->sq, s->sk, s->dk, s->dv, c->attn.block, fmt_table[c->attn.in_format].name,
            fmt_table[c->attn.out_format].name, r->samples, (unsigned long long)c->seed);
    fprintf(f, "# mean and 95%% confidence half-width over samples, against golden\n");
    fprintf(f, "%-10s %-22s %-22s %-22s %-22s %-10s %-9s %s\n", "variant", "rel_fro", "rmse",
            "1-cos_sim", "cos_diff", "max_abs", "nonfinite", "s/sample");
    for (int v = c->show_golden ? 0 : 1; v < r->nvariants; v++) {
        if (v > 0 && c->vmode[v - 1] != RUN_ATTR_NONE)
            continue;
        fprintf(f, "%-10s", run_slot_name(c, v));
        double secs = 0;
        for (int k = 0; k < METRIC_COUNT; k++) {
            double mean, ci;
            run_summary(r, v, k, &mean, &ci, &secs);
            if (k == METRIC_COS_SIM)
                mean = 1.0 - mean;
            char buf[64];
            if (k == METRIC_MAX_ABS)
                snprintf(buf, sizeof buf, "%.3e", mean);
            else if (k == METRIC_NONFINITE)
                snprintf(buf, sizeof buf, "%.0f", mean * (double)r->samples);
            else if (isnan(ci))
                snprintf(buf, sizeof buf, "%.4e", mean);
            else
                snprintf(buf, sizeof buf, "%.4e ± %.1e", mean, ci);
            fprintf(f, " %-*s", k == METRIC_MAX_ABS ? 10 : k == METRIC_NONFINITE ? 9 : 22, buf);
        }
        fprintf(f, " %.3f\n", secs);
    }
    if (c->attribute)
        run_write_attribution(f, c, r);
}

/* Norm-like metrics (rel_fro, rmse) of independent errors add in squares; cos_diff and
 * 1 - cos_sim are already squares of the error and add linearly. */
static double run_attr_weight(double x, int k)
{
    return k == METRIC_COS_DIFF || k == METRIC_COS_SIM ? fabs(x) : x * x;
}

void run_attribution(const run_cfg_t *c, int v, int k, const double *mean_of_slot, double *alone, double *removed,
                     double *share)
{
    double full = mean_of_slot[v + 1], sum2 = 0;
    for (int a = 0; a < c->nvariants; a++)
        if (c->vmode[a] == RUN_ATTR_ONLY && c->vparent[a] == v)
            sum2 += run_attr_weight(mean_of_slot[a + 1], k);
    for (int a = 0; a < c->nvariants; a++) {
        if (c->vparent[a] != v || c->vmode[a] != RUN_ATTR_ONLY)
            continue;
        alone[a] = mean_of_slot[a + 1];
        share[a] = sum2 > 0 ? run_attr_weight(alone[a], k) / sum2 : 0;
        removed[a] = NAN;
        for (int b = 0; b < c->nvariants; b++)
            if (c->vparent[b] == v && c->vmode[b] == RUN_ATTR_EXACT && strcmp(c->vsite[b], c->vsite[a]) == 0)
                removed[a] = full - mean_of_slot[b + 1];
    }
}

void run_write_attribution(FILE *f, const run_cfg_t *c, const run_result_t *r)
{
    static const int metrics[] = {METRIC_REL_FRO, METRIC_COS_DIFF};
    double *mean = err_malloc((size_t)r->nvariants, sizeof(double));
    double *alone = err_calloc((size_t)c->nvariants, sizeof(double));
    double *removed = err_calloc((size_t)c->nvariants, sizeof(double));
    double *share = err_calloc((size_t)c->nvariants, sizeof(double));
    for (size_t mi = 0; mi < sizeof metrics / sizeof metrics[0]; mi++) {
        int k = metrics[mi];
        for (int s = 0; s < r->nvariants; s++) {
            double ci, secs;
            run_summary(r, s, k, &mean[s], &ci, &secs);
        }
        for (int v = 0; v < c->nvariants; v++) {
            if (c->vmode[v] != RUN_ATTR_NONE)
                continue;
            run_attribution(c, v, k, mean, alone, removed, share);
            fprintf(f, "\n# attribution of %s's %s (%.4e with every site rounded)\n", c->vspec[v], metric_names[k],
                    mean[v + 1]);
            fprintf(f, "# alone: only this site rounds; removed: drop when only this site is exact; share: %s\n",
                    k == METRIC_COS_DIFF ? "alone / sum alone" : "alone^2 / sum alone^2");
            fprintf(f, "%-14s %-12s %-12s %s\n", "site", "alone", "removed", "share");
            for (int a = 0; a < c->nvariants; a++)
                if (c->vparent[a] == v && c->vmode[a] == RUN_ATTR_ONLY)
                    fprintf(f, "%-14s %-12.4e %-12.4e %5.1f%%\n", c->vsite[a], alone[a], removed[a], 100 * share[a]);
        }
    }
    free(mean);
    free(alone);
    free(removed);
    free(share);
}

static void run_json_num(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, "%.17g", x);
    else
        fputs("null", f);
}

void run_write_json(FILE *f, const run_cfg_t *c, const run_result_t *r)
{
    const attn_shape_t *s = &c->shape;
    fprintf(f, "{\"experiment\": \"%s\", \"dist\": \"%s\", \"mean\": ", c->experiment, run_dist_name(c));
    run_json_num(f, c->gen.mean);
    fputs(", \"sigma\": ", f);
    run_json_num(f, c->gen.sigma);
    fputs(", \"low\": ", f);
    run_json_num(f, c->gen.low);
    fputs(", \"high\": ", f);
    run_json_num(f, c->gen.high);
    fprintf(f, ", \"ctx\": %ld, \"heads\": %ld, \"sq\": %ld, \"dk\": %ld, \"dv\": %ld, \"block\": %ld, "
               "\"kv\": \"%s\", \"in_format\": \"%s\", \"out_format\": \"%s\", \"seed\": %llu, "
               "\"samples\": %ld,\n \"variants\": [",
            s->sk, s->hq, s->sq, s->dk, s->dv, c->attn.block, c->gen.kv_separate ? "separate" : "shared",
            fmt_table[c->attn.in_format].name, fmt_table[c->attn.out_format].name,
            (unsigned long long)c->seed, r->samples);
    int first = 1;
    for (int v = c->show_golden ? 0 : 1; v < r->nvariants; v++) {
        fprintf(f, "%s\n  {\"variant\": \"%s\"", first ? "" : ",", run_slot_name(c, v));
        first = 0;
        double secs = 0;
        for (int k = 0; k < METRIC_COUNT; k++) {
            double mean, ci;
            run_summary(r, v, k, &mean, &ci, &secs);
            fprintf(f, ", \"%s\": {\"mean\": ", metric_names[k]);
            run_json_num(f, mean);
            fputs(", \"ci95\": ", f);
            run_json_num(f, ci);
            fputs("}", f);
        }
        fputs(", \"seconds_per_sample\": ", f);
        run_json_num(f, secs);
        fputs("}", f);
    }
    fputs("\n ]}\n", f);
}
