/* json -- the summary as one JSON object */
#include "report/json.h"

#include <math.h>

#include "report/csv.h"
#include "run/stats.h"

void json_num(FILE *f, double x)
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
    json_num(f, c->gen.mean);
    fputs(", \"sigma\": ", f);
    json_num(f, c->gen.sigma);
    fputs(", \"low\": ", f);
    json_num(f, c->gen.low);
    fputs(", \"high\": ", f);
    json_num(f, c->gen.high);
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
            json_num(f, mean);
            fputs(", \"ci95\": ", f);
            json_num(f, ci);
            fputs("}", f);
        }
        fputs(", \"seconds_per_sample\": ", f);
        json_num(f, secs);
        fputs("}", f);
    }
    fputs("\n ]}\n", f);
}

