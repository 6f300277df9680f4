/* csv -- per-sample rows: the one column layout, its writer and its reader */
#include "report/csv.h"

#include <stdlib.h>
#include <string.h>

const char *run_dist_name(const run_cfg_t *c)
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


/* Index of column `name` in the header, or -1. */
static int csv_column(const char *name)
{
    size_t n = strlen(name);
    int col = 0;
    for (const char *p = RUN_CSV_HEADER; *p; col++) {
        size_t len = strcspn(p, ",\n");
        if (len == n && strncmp(p, name, n) == 0)
            return col;
        p += len + (p[len] != 0);
    }
    return -1;
}

int csv_parse_row(const char *row, char *variant, size_t vn, double m[METRIC_COUNT + 1])
{
    int cvar = csv_column("variant"), cfirst = csv_column(metric_names[0]); /* metrics in order, then events */
    const char *p = row;
    for (int col = 0; col < cvar; col++) {
        p = strchr(p, ',');
        if (!p)
            return -1;
        p++;
    }
    const char *end = strchr(p, ',');
    if (!end || (size_t)(end - p) >= vn)
        return -1;
    memcpy(variant, p, (size_t)(end - p));
    variant[end - p] = 0;
    for (int col = cvar; col < cfirst; col++) {
        p = strchr(p, ',');
        if (!p)
            return -1;
        p++;
    }
    for (int k = 0; k <= METRIC_COUNT; k++) {
        char *q;
        m[k] = strtod(p, &q);
        p = q + (*q == ',');
    }
    return 0;
}
