/* table -- the summary table and the attribution tables */
#include "report/table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/kernel.h"
#include "base/err.h"
#include "report/csv.h"
#include "run/attribution.h"
#include "run/stats.h"

void run_write_table(FILE *f, const run_cfg_t *c, const run_result_t *r)
{
    const attn_shape_t *s = &c->shape;
    fprintf(f, "# %s", run_dist_name(c));
    if (!c->load_dir && c->gen.dist == GEN_NORMAL)
        fprintf(f, " mean %g sigma %g", c->gen.mean, c->gen.sigma);
    else if (!c->load_dir && c->gen.dist == GEN_UNIFORM)
        fprintf(f, " low %g high %g", c->gen.low, c->gen.high);
    if (c->input && c->input->flashmla_layout) {
        fprintf(f, " %s, batch of %ld, seqlens", c->load_dir, c->input->n);
        for (long b = 0; b < c->input->n && b < 8; b++)
            fprintf(f, "%s%ld", b ? "," : " ", c->input->seqlens[b]);
        fprintf(f, "%s", c->input->n > 8 ? ",..." : "");
    }
    fprintf(f, "; heads %ld sq %ld ctx %ld dk %ld dv %ld block %ld; %s in, %s out; %ld samples, seed %llu\n",
            s->hq, s->sq, s->sk, s->dk, s->dv, c->attn.block, fmt_table[c->attn.in_format].name,
            fmt_table[c->attn.out_format].name, r->samples, (unsigned long long)c->seed);
    fprintf(f, "# mean and 95%% confidence half-width over samples, against golden\n");
    /* the variant column fits the longest name (variant:key=value specs included); Golden, the
     * reference, has no row of zeros, only its time below; lse_max_abs where a variant has one */
    int w = 7, has_lse = 0;
    for (int v = 1; v < r->nvariants; v++) {
        int len = (int)strlen(run_slot_name(c, v));
        w = len > w && c->vmode[v - 1] == RUN_ATTR_NONE ? len : w;
        for (long i = 0; i < r->samples; i++)
            has_lse |= r->rows[i * r->nvariants + v].lse_max_abs == r->rows[i * r->nvariants + v].lse_max_abs;
    }
    fprintf(f, "%-*s %-22s %-22s %-22s %-22s %-10s %-9s %-8s%s\n", w, "variant", "rel_fro", "rmse", "1-cos_sim",
            "cos_diff", "max_abs", "nonfinite", "s/sample", has_lse ? " lse_max_abs" : "");
    for (int v = 1; v < r->nvariants; v++) {
        if (c->vmode[v - 1] != RUN_ATTR_NONE)
            continue;
        fprintf(f, "%-*s", w, run_slot_name(c, v));
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
        fprintf(f, " %-8.3f", secs);
        double lse = 0;
        for (long i = 0; i < r->samples; i++)
            lse = fmax(lse, r->rows[i * r->nvariants + v].lse_max_abs);
        if (has_lse && lse == lse && r->rows[v].lse_max_abs == r->rows[v].lse_max_abs)
            fprintf(f, " %.3e", lse);
        else if (has_lse)
            fprintf(f, " -");
        fputc('\n', f);
    }
    double gmean, gci, gsecs = 0;
    run_summary(r, 0, METRIC_REL_FRO, &gmean, &gci, &gsecs);
    fprintf(f, "# golden (the reference, MPFR-bounded): %.3f s/sample\n", gsecs);
    for (int v = 1; v <= c->nvariants; v++) { /* kernel variants run where their kernel does not */
        char why[256];
        if (attn_kernel_outside(c->variants[v - 1], &c->vcfg[v - 1], &c->shape, c->gen.kv_separate, c->input, why, sizeof why))
            fprintf(f, "# %s: not a case the real kernel runs: %s; the row extrapolates its arithmetic\n",
                    run_slot_name(c, v), why);
    }
    if (c->attribute)
        run_write_attribution(f, c, r);
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

