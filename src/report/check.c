/* check -- `amla-lab check`'s report: the kernel's error, the candidates ranked, the verdict, and
 * where the best candidate departs from the kernel */
#include "report/check.h"

#include <math.h>
#include <string.h>

#include "report/json.h"

static void check_metric_cells(FILE *f, const double m[METRIC_COUNT])
{
    for (int k = 0; k < METRIC_COUNT; k++)
        fprintf(f, k == METRIC_NONFINITE ? " %s %.0f" : " %s %.4e", k == METRIC_COS_SIM ? "1-cos_sim" : metric_names[k],
                k == METRIC_COS_SIM ? 1 - m[k] : m[k]);
}

void check_write_table(FILE *f, const run_cfg_t *c, const check_result_t *r, const char *what,
                       const check_skip_t *skip, int nskip)
{
    fprintf(f, "# check %s\n", what);
    fputs("kernel against golden:", f);
    check_metric_cells(f, r->m);
    if (r->lse_max_abs == r->lse_max_abs)
        fprintf(f, " lse_max_abs %.4e", r->lse_max_abs);
    fputs("\n", f);
    if (r->nan + r->inf) { /* a kernel that turned finite inputs into NaN or infinity: where, and who does not */
        fprintf(f, "kernel output: %ld non-finite of %ld (NaN %ld, infinite %ld)\n", r->nan + r->inf, r->n, r->nan, r->inf);
        for (int a = 0; a < CHECK_AXES; a++)
            if (r->nonfinite_where[a][0])
                fprintf(f, "  %-13s %s\n", check_axis_names[a], r->nonfinite_where[a]);
        int k = 0;
        fputs("  finite there:", f);
        for (int i = 0; i < r->ncand; i++)
            if (r->cand[i].finite_there)
                fprintf(f, "%s %s", k++ ? "," : "", run_slot_name(c, r->cand[i].slot));
        fprintf(f, "%s (%d of %d candidates)\n", k ? "" : " none", k, r->ncand);
    }
    if (r->lse_nan)
        fprintf(f, "kernel log-sum-exp: %ld of %ld rows NaN\n", r->lse_nan, r->nlse);
    fputs("\n", f);
    int w = 9;
    for (int i = 0; i < r->ncand; i++) {
        int len = (int)strlen(run_slot_name(c, r->cand[i].slot));
        w = len > w ? len : w;
    }
    for (int i = 0; i < nskip; i++) {
        int len = (int)strlen(skip[i].variant);
        w = len > w ? len : w;
    }
    fprintf(f, "%-*s %-22s %7s %10s %-12s %-12s %-14s %s\n", w, "candidate", "bit-identical", "max_ulp",
            "median_ulp", "rel_fro", "max_abs", "lse identical", "s");
    for (int i = 0; i < r->ncand; i++) {
        const check_cand_t *k = &r->cand[i];
        char ident[40], lse[32];
        snprintf(ident, sizeof ident, "%.2f%% (%ld)", floor(10000.0 * (double)k->identical / (double)k->n) / 100,
                 k->identical);
        if (k->lse_n)
            snprintf(lse, sizeof lse, "%ld of %ld", k->lse_identical, k->lse_n);
        else
            snprintf(lse, sizeof lse, "%s", k->lse_max_abs == k->lse_max_abs ? "(no lse.npy)" : "-");
        fprintf(f, "%-*s %-22s %7.0f %10.1f %-12.4e %-12.4e %-14s %.3f\n", w, run_slot_name(c, k->slot), ident,
                k->max_ulp, k->median_ulp, k->m[METRIC_REL_FRO], k->m[METRIC_MAX_ABS], lse, k->seconds);
    }
    for (int i = 0; i < r->ncand; i++) /* named by the user: run, but not taken for a kernel that cannot run the case */
        if (r->cand[i].outside)
            fprintf(f, "%-*s not its kernel here: %s\n", w, run_slot_name(c, r->cand[i].slot), r->cand[i].outside_why);
    for (int i = 0; i < nskip; i++)
        fprintf(f, "%-*s not applicable: %s\n", w, skip[i].variant, skip[i].reason);
    if (r->nscreened) {
        const check_screened_t *q = &r->screened[0];
        fprintf(f, "(%d more candidate%s screened out on %ld of the case's %ld parts (batch entries x KV heads): each "
                   "differed there from the kernel in more than twice the leader's elements; the closest, %s, matched "
                   "%.2f%%. --exhaustive runs and lists every one)\n",
                r->nscreened, r->nscreened == 1 ? "" : "s", r->screen_units, r->units, run_slot_name(c, q->slot),
                floor(10000.0 * (double)q->identical / (double)q->n) / 100);
    }
    char verdict[512];
    check_verdict(verdict, sizeof verdict, c, r);
    fprintf(f, "\nverdict: %s\n", verdict);
    if (r->ncand && r->cand[0].identical < r->cand[0].n) {
        const check_cand_t *b = &r->cand[0];
        fprintf(f, "where the kernel departs from %s (%ld elements differ):\n", run_slot_name(c, b->slot),
                b->n - b->identical);
        for (int a = 0; a < CHECK_AXES; a++)
            if (b->where[a][0])
                fprintf(f, "  %-13s %s\n", check_axis_names[a], b->where[a]);
    }
}

void check_write_json(FILE *f, const run_cfg_t *c, const check_result_t *r, const char *what,
                      const check_skip_t *skip, int nskip)
{
    fputs("{\"case\": ", f);
    json_str(f, what);
    fprintf(f, ", \"causal\": \"%s\"", attn_causal_name(c->shape.causal));
    fputs(",\n \"kernel\": {", f);
    for (int k = 0; k < METRIC_COUNT; k++) {
        fprintf(f, "%s\"%s\": ", k ? ", " : "", metric_names[k]);
        json_num(f, r->m[k]);
    }
    fputs(", \"lse_max_abs\": ", f);
    json_num(f, r->lse_max_abs);
    fprintf(f, ", \"elements\": %ld, \"nan\": %ld, \"inf\": %ld, \"lse_nan\": %ld, \"nonfinite_where\": {", r->n, r->nan,
            r->inf, r->lse_nan);
    for (int a = 0, first = 1; a < CHECK_AXES; a++)
        if (r->nonfinite_where[a][0]) {
            fprintf(f, "%s\"%s\": ", first ? "" : ", ", check_axis_names[a]);
            json_str(f, r->nonfinite_where[a]);
            first = 0;
        }
    fputs("}},\n \"ranking\": [", f);
    for (int i = 0; i < r->ncand; i++) {
        const check_cand_t *k = &r->cand[i];
        fprintf(f, "%s\n  {\"variant\": ", i ? "," : "");
        json_str(f, run_slot_name(c, k->slot));
        fputs(", \"bit_identical\": ", f);
        json_num(f, (double)k->identical / (double)k->n);
        fprintf(f, ", \"identical\": %ld, \"elements\": %ld, \"max_ulp\": ", k->identical, k->n);
        json_num(f, k->max_ulp);
        fputs(", \"median_ulp\": ", f);
        json_num(f, k->median_ulp);
        for (int m = 0; m < METRIC_COUNT; m++) {
            fprintf(f, ", \"%s\": ", metric_names[m]);
            json_num(f, k->m[m]);
        }
        fputs(", \"lse_bit_identical\": ", f);
        json_num(f, k->lse_n ? (double)k->lse_identical / (double)k->lse_n : NAN);
        fputs(", \"lse_max_abs\": ", f);
        json_num(f, k->lse_max_abs);
        fputs(", \"max_logits_bit_identical\": ", f); /* the sparse prefill's third output (NaN: none given) */
        json_num(f, k->mlog_n ? (double)k->mlog_identical / (double)k->mlog_n : NAN);
        fputs(", \"seconds\": ", f);
        json_num(f, k->seconds);
        fprintf(f, ", \"finite_where_kernel_is_not\": %s, \"kernel_note\": ", k->finite_there ? "true" : "false");
        json_str(f, k->outside ? k->outside_why : "");
        fputs(", \"where\": {", f);
        int first = 1;
        for (int a = 0; a < CHECK_AXES; a++)
            if (k->where[a][0]) {
                fprintf(f, "%s\"%s\": ", first ? "" : ", ", check_axis_names[a]);
                json_str(f, k->where[a]);
                first = 0;
            }
        fputs("}}", f);
    }
    fputs("\n ],\n \"not_applicable\": [", f);
    for (int i = 0; i < nskip; i++) {
        fprintf(f, "%s{\"variant\": ", i ? ", " : "");
        json_str(f, skip[i].variant);
        fputs(", \"reason\": ", f);
        json_str(f, skip[i].reason);
        fputs("}", f);
    }
    char verdict[512];
    check_verdict(verdict, sizeof verdict, c, r);
    fprintf(f, "],\n \"screening\": {\"parts\": %ld, \"of\": %ld, \"screened_out\": [", r->screen_units, r->units);
    for (int i = 0; i < r->nscreened; i++) {
        fprintf(f, "%s{\"variant\": ", i ? ", " : "");
        json_str(f, run_slot_name(c, r->screened[i].slot));
        fprintf(f, ", \"identical\": %ld, \"elements\": %ld}", r->screened[i].identical, r->screened[i].n);
    }
    fputs("]},\n \"verdict\": ", f);
    json_str(f, verdict);
    fputs("}\n", f);
}
