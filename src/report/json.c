/* json -- the summary as one JSON object */
#include "report/json.h"

#include <math.h>

#include "base/version.h"
#include "report/csv.h"
#include "run/stats.h"

void json_num(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, "%.17g", x);
    else
        fputs("null", f);
}

void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

void run_write_json(FILE *f, const run_cfg_t *c, const run_result_t *r)
{
    const attn_shape_t *s = &c->shape;
    fprintf(f, "{\"experiment\": \"%s\", \"version\": \"%s\", \"dist\": \"%s\", \"mean\": ", c->experiment,
            AMLA_VERSION, run_dist_name(c));
    json_num(f, c->gen.mean);
    fputs(", \"sigma\": ", f);
    json_num(f, c->gen.sigma);
    fputs(", \"low\": ", f);
    json_num(f, c->gen.low);
    fputs(", \"high\": ", f);
    json_num(f, c->gen.high);
    fprintf(f, ", \"ctx\": %ld, \"heads\": %ld, \"sq\": %ld, \"dk\": %ld, \"dv\": %ld, \"causal\": \"%s\", "
               "\"block\": %ld, \"kv\": \"%s\", \"in_format\": \"%s\", \"out_format\": \"%s\", \"seed\": %llu, "
               "\"samples\": %ld,\n \"variants\": [",
            s->sk, s->hq, s->sq, s->dk, s->dv, attn_causal_name(s->causal), c->attn.block, c->gen.kv_separate ? "separate" : "shared",
            fmt_table[c->attn.in_format].name, fmt_table[c->attn.out_format].name,
            (unsigned long long)c->seed, r->samples);
    int first = 1;
    run_setting_t set[RUN_SETTINGS_MAX];
    for (int v = c->show_golden ? 0 : 1; v < r->nvariants; v++) {
        fprintf(f, "%s\n  {\"variant\": ", first ? "" : ",");
        json_str(f, run_slot_name(c, v));
        first = 0;
        /* every setting as this variant used it (the CSV's columns) */
        fputs(", \"settings\": {", f);
        int n = run_settings(set, c, v);
        for (int k = 0; k < n; k++) {
            fprintf(f, "%s\"%s\": ", k ? ", " : "", set[k].name);
            if (set[k].number)
                fputs(set[k].text, f);
            else
                json_str(f, set[k].text);
        }
        fputs("}", f);
        double secs = 0;
        for (int k = 0; k < METRIC_COUNT; k++) {
            double mean, ci;
            run_summary(r, v, k, &mean, &ci, &secs);
            fprintf(f, ", \"%s\": {\"mean\": ", metric_names[k]);
            json_num(f, mean);
            fputs(", \"ci95\": ", f);
            json_num(f, ci);
            fputs("}", f);
        }
        double lse = 0;
        for (long i = 0; i < r->samples; i++)
            lse += r->rows[i * r->nvariants + v].lse_max_abs / (double)r->samples;
        fputs(", \"lse_max_abs\": ", f);
        json_num(f, lse);
        fputs(", \"seconds_per_sample\": ", f);
        json_num(f, secs);
        /* the per-sample rows, as the CSV has them */
        fputs(", \"rows\": [", f);
        for (long i = 0; i < r->samples; i++) {
            const run_row_t *row = &r->rows[i * r->nvariants + v];
            fprintf(f, "%s{\"sample\": %ld", i ? ", " : "", i);
            for (int k = 0; k < METRIC_COUNT; k++) {
                fprintf(f, ", \"%s\": ", metric_names[k]);
                json_num(f, row->m[k]);
            }
            fprintf(f, ", \"events\": %ld, \"lse_max_abs\": ", row->events);
            json_num(f, row->lse_max_abs);
            fputs(", \"seconds\": ", f);
            json_num(f, row->seconds);
            fputs("}", f);
        }
        fputs("]}", f);
    }
    fputs("\n ]}\n", f);
}
