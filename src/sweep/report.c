/* report -- a sweep's markdown report: the paper's layout with the lab's mean, CI and ratio
 * per cell, every metric, events and the attribution tables */
#include "sweep/sweep_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/files.h"
#include "report/csv.h"
#include "run/attribution.h"
#include "run/metric.h"
#include "run/stats.h"

/* Call fn with the metrics (METRIC_COUNT values, then events) of every stored row of variant
 * `v` at point g, sample by sample. */
static void sweep_for_rows(const sweep_state_t *s, long g, long samples, const char *v,
                           void (*fn)(const double *m, void *), void *arg)
{
    for (long i = 0; i < samples; i++) {
        const char *t = s->text[g * s->maxs + i];
        while (t && *t) {
            char name[RUN_VSPEC_LEN];
            double m[METRIC_COUNT + 1];
            if (csv_parse_row(t, name, sizeof name, m) == 0 && strcmp(name, v) == 0)
                fn(m, arg);
            t = strchr(t, '\n');
            t = t ? t + 1 : NULL;
        }
    }
}

/* A sample with NaN/Inf outputs or numeric events. */
static int sweep_row_eventful(const double *m) { return m[METRIC_NONFINITE] > 0 || m[METRIC_COUNT] > 0; }

typedef struct {
    double *x;
    size_t n;
    int k, clean;
} sweep_collect_t;

static void sweep_collect(const double *m, void *arg)
{
    sweep_collect_t *c = arg;
    if (!(c->clean && sweep_row_eventful(m)))
        c->x[c->n++] = m[c->k];
}

/* Mean and CI of metric k (METRIC_COUNT: events) of variant `v` at point g over its samples
 * (clean: only those without non-finite outputs or numeric events). */
int sweep_cell_f(const sweep_state_t *s, long g, long samples, const char *v, int k, int clean, double *mean,
                        double *ci)
{
    sweep_collect_t c = {err_malloc((size_t)samples, sizeof(double)), 0, k, clean};
    sweep_for_rows(s, g, samples, v, sweep_collect, &c);
    if (c.n)
        run_mean_ci(c.x, c.n, mean, ci);
    free(c.x);
    return c.n ? 0 : -1;
}

/* Call fn for every grid point and every selected variant (not the attribution runs). */
static void sweep_for_selected(const sweep_state_t *s,
                               void (*fn)(const sweep_state_t *, const char *, const run_cfg_t *, long, int, void *),
                               void *arg)
{
    const sweep_t *x = s->x;
    char label[256];
    for (long g = 0; g < x->npoints; g++) {
        const run_cfg_t *cg = &s->cfg[g];
        sweep_point_label(label, sizeof label, x, g);
        for (int v = 0; v < cg->nvariants; v++)
            if (cg->vmode[v] == RUN_ATTR_NONE)
                fn(s, label, cg, g, v, arg);
    }
}

static int sweep_cell(const sweep_state_t *s, long g, long samples, const char *v, int k, double *mean, double *ci)
{
    return sweep_cell_f(s, g, samples, v, k, 0, mean, ci);
}

static void sweep_fmt_cell(char *buf, size_t n, double mean, double ci)
{
    if (isnan(ci))
        snprintf(buf, n, "%.4g", mean);
    else
        snprintf(buf, n, "%.4g ± %.1g", mean, ci);
}

/* Means of metric k for every result slot of point g (slot v + 1 = variant v). */
static void sweep_slot_means(const sweep_state_t *s, const run_cfg_t *cg, long g, int k, double *mean)
{
    mean[0] = 0;
    for (int v = 0; v < cg->nvariants; v++) {
        double ci;
        if (sweep_cell(s, g, cg->samples, cg->vspec[v], k, &mean[v + 1], &ci))
            mean[v + 1] = NAN;
    }
}

/* The attribution of one selected variant at one grid point (rel_fro), for a report writer. */

/* Call fn for every (grid point, selected variant) of an attributed sweep, in order. */
void sweep_for_attr(const sweep_state_t *s, void (*fn)(const sweep_attr_t *, void *), void *arg)
{
    const sweep_t *x = s->x;
    char label[256];
    double *mean = err_malloc(RUN_MAX_VARIANTS + 1, sizeof(double));
    double *alone = err_malloc(RUN_MAX_VARIANTS, sizeof(double)), *removed = err_malloc(RUN_MAX_VARIANTS, sizeof(double)),
           *share = err_malloc(RUN_MAX_VARIANTS, sizeof(double));
    for (long g = 0; g < x->npoints; g++) {
        const run_cfg_t *cg = &s->cfg[g];
        sweep_point_label(label, sizeof label, x, g);
        sweep_slot_means(s, cg, g, METRIC_REL_FRO, mean);
        for (int v = 0; v < cg->nvariants; v++) {
            if (cg->vmode[v] != RUN_ATTR_NONE)
                continue;
            run_attribution(cg, v, METRIC_REL_FRO, mean, alone, removed, share);
            sweep_attr_t at = {label, cg, v, mean, alone, removed, share};
            fn(&at, arg);
        }
    }
    free(mean);
    free(alone);
    free(removed);
    free(share);
}

static void sweep_attr_md_table(const sweep_attr_t *at, void *arg)
{
    FILE *f = arg;
    const run_cfg_t *cg = at->cg;
    fprintf(f, "\n### %s, %s: rel_fro %.4g with every site rounded\n\n| site | alone | removed | share |\n|---|---|---|---|\n",
            at->label, cg->vspec[at->v], at->mean[at->v + 1]);
    int best = -1;
    for (int a = 0; a < cg->nvariants; a++)
        if (cg->vparent[a] == at->v && cg->vmode[a] == RUN_ATTR_ONLY) {
            fprintf(f, "| %s | %.3e | %.3e | %.1f%% |\n", cg->vsite[a], at->alone[a], at->removed[a], 100 * at->share[a]);
            best = best < 0 || at->share[a] > at->share[best] ? a : best;
        }
    if (best >= 0)
        fprintf(f, "\nDominant site: `%s` (%.0f%% of the squared error; alone %.3g of %.3g).\n", cg->vsite[best],
                100 * at->share[best], at->alone[best], at->mean[at->v + 1]);
}

static void sweep_write_attr_md(FILE *f, const sweep_state_t *s)
{
    fprintf(f, "\n## Attribution of rel_fro to rounding sites\n\n"
               "alone: the error with only this site rounded (every other site exact, FP64); removed: the full "
               "error minus the error with only this site exact; share: alone² / Σ alone² (independent errors add "
               "in squares). `amla-lab list --sites VARIANT` says what each site rounds.\n");
    sweep_for_attr(s, sweep_attr_md_table, f);
}

/* The "Samples with numeric events" table, a row for each variant that had some. */
typedef struct {
    FILE *f;
    int any;
} sweep_events_t;

typedef struct {
    long bad, ok;
    double sum, worst;
} sweep_evcount_t;

static void sweep_evcount(const double *m, void *arg)
{
    sweep_evcount_t *c = arg;
    if (sweep_row_eventful(m)) {
        c->bad++;
        c->worst = !(m[METRIC_REL_FRO] <= c->worst) ? m[METRIC_REL_FRO] : c->worst;
    } else {
        c->ok++;
        c->sum += m[METRIC_REL_FRO];
    }
}

static void sweep_events_row(const sweep_state_t *s, const char *label, const run_cfg_t *cg, long g, int v, void *arg)
{
    sweep_events_t *ev = arg;
    sweep_evcount_t c = {0, 0, 0, 0};
    sweep_for_rows(s, g, cg->samples, cg->vspec[v], sweep_evcount, &c);
    if (!c.bad)
        return;
    if (!ev->any)
        fprintf(ev->f, "## Samples with numeric events\n\nSamples whose output has NaN/Inf elements or whose "
                       "variant reported events (see the `events` column): how many, the worst rel_fro among them, "
                       "and the mean rel_fro of the other samples.\n\n| point | variant | samples with events | "
                       "worst rel_fro | mean rel_fro without them |\n|---|---|---|---|---|\n");
    ev->any = 1;
    fprintf(ev->f, "| %s | %s | %ld of %ld | %.4g | ", label, cg->vspec[v], c.bad, c.bad + c.ok, c.worst);
    if (c.ok)
        fprintf(ev->f, "%.4g |\n", c.sum / (double)c.ok);
    else
        fprintf(ev->f, "- |\n");
}

/* One row of the all-metrics table. */
static void sweep_metrics_row(const sweep_state_t *s, const char *label, const run_cfg_t *cg, long g, int v, void *arg)
{
    FILE *f = arg;
    char cell[128];
    fprintf(f, "| %s | %s |", label, cg->vspec[v]);
    for (int k = 0; k <= METRIC_COUNT; k++) {
        double mean, ci;
        if (sweep_cell(s, g, cg->samples, cg->vspec[v], k, &mean, &ci))
            fprintf(f, " - |");
        else {
            if (k == METRIC_COS_SIM)
                mean = 1.0 - mean;
            sweep_fmt_cell(cell, sizeof cell, mean, ci);
            fprintf(f, " %s |", cell);
        }
    }
    fputc('\n', f);
}

int sweep_write_md(const sweep_state_t *s, const run_cfg_t *c0, const char *path, double secs, err_t *e)
{
    const sweep_t *x = s->x;
    io_atomic_t a;
    int rc = io_atomic_open(&a, path, e);
    if (rc)
        return rc;
    FILE *f = a.f;
    const attn_shape_t *sh = &c0->shape;
    fprintf(f, "# %s\n\n", x->title);
    fprintf(f, "Produced by `amla-lab sweep %s` (`make results`). Setting: ctx %ld, heads %ld, sq %ld, "
               "Dk %ld, Dv %ld, KV block %ld, %s in, %s out, %s accumulation, %ld samples per cell, seed %llu. "
               "Compute time: ",
            x->path, sh->sk, sh->hq, sh->sq, sh->dk, sh->dv, c0->attn.block, fmt_table[c0->attn.in_format].name,
            fmt_table[c0->attn.out_format].name, acc_table[c0->attn.acc_qk].name, c0->samples,
            (unsigned long long)c0->seed);
    (void)secs;
    if (s->secs > 0)
        fprintf(f, "%.0f s of single-thread time for Golden and every variant over %ld samples (%.2f s a sample; "
                   "samples run in parallel, one per core).\n\n",
                s->secs, s->total, s->secs / (double)(s->total ? s->total : 1));
    else
        fprintf(f, "not recorded (the sample store predates its timing).\n\n");
    char label[256], cell[128];
    /* the paper-layout table for each metric that has paper values */
    for (int k = 0; k < METRIC_COUNT; k++) {
        int any = 0;
        for (int i = 0; i < x->npaper; i++)
            any |= x->paper[i].metric == k;
        if (!any)
            continue;
        fprintf(f, "## %s against Golden: lab mean ± 95%% CI / paper / lab ÷ paper\n\n| variant |", metric_names[k]);
        for (long g = 0; g < x->npoints; g++) {
            sweep_point_label(label, sizeof label, x, g);
            fprintf(f, " %s |", label);
        }
        fprintf(f, "\n|---|");
        for (long g = 0; g < x->npoints; g++)
            fprintf(f, "---|");
        fputc('\n', f);
        for (int v = 0; v < c0->nvariants; v++) {
            if (c0->vmode[v] != RUN_ATTR_NONE)
                continue;
            fprintf(f, "| %s |", c0->vspec[v]);
            for (long g = 0; g < x->npoints; g++) {
                double mean, ci;
                if (sweep_cell(s, g, s->cfg[g].samples, c0->vspec[v], k, &mean, &ci)) {
                    fprintf(f, " - |");
                    continue;
                }
                sweep_fmt_cell(cell, sizeof cell, mean, ci);
                fprintf(f, " %s", cell);
                for (int i = 0; i < x->npaper; i++)
                    if (x->paper[i].metric == k && strcmp(x->paper[i].variant, c0->vspec[v]) == 0 &&
                        !isnan(x->paper[i].v[g])) {
                        double ratio = mean / x->paper[i].v[g];
                        fprintf(f, " / %.3g / ×%.3f %s", x->paper[i].v[g], ratio,
                                fabs(ratio - 1) <= 0.05 ? "✓" : "✗");
                    }
                fprintf(f, " |");
            }
            fputc('\n', f);
        }
        fprintf(f, "\n✓: within ±5%% of the paper; ✗: outside (see the notes).\n\n");
    }
    /* samples with numeric events: how many, and the mean without them */
    sweep_events_t ev = {f, 0};
    sweep_for_selected(s, sweep_events_row, &ev);
    if (ev.any)
        fputc('\n', f);
    /* every metric, every variant, every point */
    fprintf(f, "## All metrics (mean ± 95%% CI over samples)\n\n| point | variant |");
    for (int k = 0; k <= METRIC_COUNT; k++)
        fprintf(f, " %s |", k == METRIC_COS_SIM ? "1-cos_sim" : k < METRIC_COUNT ? metric_names[k] : "events");
    fprintf(f, "\n|---|---|");
    for (int k = 0; k <= METRIC_COUNT; k++)
        fprintf(f, "---|");
    fputc('\n', f);
    sweep_for_selected(s, sweep_metrics_row, f);
    if (c0->attribute)
        sweep_write_attr_md(f, s);
    if (x->nnotes) {
        fprintf(f, "\n## Notes\n\n");
        for (int i = 0; i < x->nnotes; i++)
            fprintf(f, "%s\n", x->note[i]);
    }
    return io_atomic_commit(&a, e);
}
