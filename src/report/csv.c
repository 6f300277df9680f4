/* csv -- per-sample rows: the one column layout, its writer and its reader */
#include "report/csv.h"

#include "attn/kernel.h"
#include "base/version.h"

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

/* Text as one CSV field: its commas (site lists) become ';', line breaks ' ' (a loaded path is quoted instead). */
static void csv_clean(char *s)
{
    for (; *s; s++)
        *s = *s == ',' ? ';' : *s == '\n' || *s == '\r' ? ' ' : *s;
}

long run_variant_block(const run_cfg_t *c, int v)
{
    const attn_cfg_t *vc = v > 0 ? &c->vcfg[v - 1] : &c->attn;
    long fixed = v > 0 ? attn_fixed_tile(&attn_variants[c->variants[v - 1]], c->shape.dk) : 0;
    return fixed ? fixed : vc->block;
}

int run_settings(run_setting_t *out, const run_cfg_t *c, int v)
{
    const attn_shape_t *s = &c->shape;
    const gen_mla_t *mla = &c->gen.mla;
    const attn_cfg_t *vc = v > 0 ? &c->vcfg[v - 1] : &c->attn;
    int n = 0;
#define SET(NAME, NUM, ...) (out[n].name = NAME, out[n].number = NUM, snprintf(out[n].text, sizeof out[n].text, __VA_ARGS__), n++)
    SET("experiment", 0, "%s", c->experiment ? c->experiment : "");
    SET("version", 0, "%s", AMLA_VERSION);
    SET("dist", 0, "%s", run_dist_name(c));
    SET("mean", 1, "%.17g", c->gen.mean);
    SET("sigma", 1, "%.17g", c->gen.sigma);
    SET("low", 1, "%.17g", c->gen.low);
    SET("high", 1, "%.17g", c->gen.high);
    SET("rope_dims", 1, "%ld", vc->rope_dims);
    SET("rope_scale", 1, "%.17g", mla->rope_scale);
    SET("outlier_rate", 1, "%.17g", mla->outlier_rate);
    SET("outlier_scale", 1, "%.17g", mla->outlier_scale);
    SET("token_spread", 1, "%.17g", mla->token_spread);
    SET("load", 0, "%s", c->load_dir ? c->load_dir : "");
    SET("ctx", 1, "%ld", s->sk);
    SET("heads", 1, "%ld", s->hq);
    SET("kv_heads", 1, "%ld", s->hkv);
    SET("sq", 1, "%ld", s->sq);
    SET("dk", 1, "%ld", s->dk);
    SET("dv", 1, "%ld", s->dv);
    SET("causal", 0, "%s", attn_causal_name(s->causal));
    SET("block", 1, "%ld", run_variant_block(c, v));
    SET("kv", 0, "%s", c->gen.kv_separate ? "separate" : "shared");
    SET("in_format", 0, "%s", fmt_table[c->attn.in_format].name);
    SET("out_format", 0, "%s", fmt_table[vc->out_format].name);
    SET("acc_qk", 0, "%s", acc_table[v > 0 ? attn_variant_acc(c->variants[v - 1], vc, 0) : vc->acc_qk].name);
    SET("acc_pv", 0, "%s", acc_table[v > 0 ? attn_variant_acc(c->variants[v - 1], vc, 1) : vc->acc_pv].name);
    SET("scale", 1, "%.17g", vc->scale);
    SET("amla_form", 0, "%s", vc->amla_form == ATTN_AMLA_PAPER ? "paper" : "cann");
    SET("exact", 0, "%s", vc->exact ? vc->exact : "");
    SET("only", 0, "%s", vc->only ? vc->only : "");
    SET("row_block", 1, "%ld", vc->row_block);
    SET("sub_block", 1, "%ld", vc->sub_block);
    SET("fa3_block", 0, "%s", vc->fa3_block ? "yes" : "no");
    SET("fa3_hadamard", 0, "%s", vc->fa3_hadamard ? "yes" : "no");
    SET("sm_count", 1, "%ld", vc->sm_count);
    SET("sm_parts", 1, "%ld", vc->sm_parts);
    SET("fa3_varlen", 0, "%s", vc->fa3_varlen ? "yes" : "no");
    SET("page_size", 1, "%ld", vc->page_size);
    SET("flashmla_sched", 0, "%s", vc->flashmla_sched == ATTN_FMLA_SCHED_9C5DFAB ? "9c5dfab" : "9241ae3");
    SET("triton_decode", 0, "%s", attn_triton_decode_names[vc->triton_decode]);
    /* the build the variant models where it follows --build (fast-math or ieee); empty for the others (their
     * kernel's own build) and Golden */
    int follows = v > 0 && site_listed(ATTN_BUILD_VARIANTS, attn_variants[c->variants[v - 1]].name);
    SET("build", 0, "%s", !follows ? "" : vc->build == ATTN_BUILD_IEEE ? "ieee" : "fast-math");
    SET("seed", 1, "%llu", (unsigned long long)c->seed);
    /* a kernel variant outside what its real kernel runs: the row extrapolates the kernel's arithmetic */
    char why[sizeof out[0].text] = "";
    if (v > 0)
        attn_kernel_outside(c->variants[v - 1], vc, s, c->gen.kv_separate, c->input, why, sizeof why);
    SET("kernel_note", 0, "%s", why);
#undef SET
    return n;
}

/* The columns after the settings: the sample, the variant, the metrics, events, lse_max_abs. */
static const char RUN_CSV_TAIL[] = "sample,variant,rel_fro,rmse,cos_sim,cos_diff,max_abs,nonfinite,events,lse_max_abs";

/* The header: every setting that changes a number (per variant as it used it), then the tail. */
static const char *run_csv_header(void)
{
    static char header[2048];
    static int made;
#ifdef _OPENMP
#pragma omp critical(csv_header)
#endif
    if (!made) {
        run_cfg_t *c = err_calloc(1, sizeof *c);
        run_setting_t set[RUN_SETTINGS_MAX];
        int n = run_settings(set, c, 0), off = 0;
        for (int i = 0; i < n; i++)
            off += snprintf(header + off, sizeof header - (size_t)off, "%s,", set[i].name);
        snprintf(header + off, sizeof header - (size_t)off, "%s\n", RUN_CSV_TAIL);
        free(c);
        made = 1;
    }
    return header;
}

void run_write_csv_header(FILE *f)
{
    fputs(run_csv_header(), f);
}

int run_csv_columns(void)
{
    int n = 1;
    for (const char *p = run_csv_header(); *p; p++)
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
    run_setting_t set[RUN_SETTINGS_MAX];
    for (int v = c->show_golden ? 0 : 1; v <= c->nvariants; v++) {
        const run_row_t *row = &rows[v];
        int n = run_settings(set, c, v);
        for (int k = 0; k < n; k++) {
            if (strcmp(set[k].name, "load") == 0 && strpbrk(set[k].text, ",\"\n\r")) {
                /* a path is the user's text: quoted as RFC 4180 does ("" for a quote), never rewritten (sweeps,
                 * whose rows csv_parse_row reads, load nothing) */
                fputc('"', f);
                for (const char *t = set[k].text; *t; t++)
                    fputs(*t == '"' ? "\"\"" : (char[2]){*t, 0}, f);
                fputs("\",", f);
                continue;
            }
            csv_clean(set[k].text);
            fprintf(f, "%s,", set[k].text);
        }
        fprintf(f, "%ld,%s", i, run_slot_name(c, v));
        for (int k = 0; k < METRIC_COUNT; k++)
            fprintf(f, k == METRIC_NONFINITE ? ",%.0f" : ",%.17g", row->m[k]);
        fprintf(f, ",%ld,", row->events);
        if (row->lse_max_abs == row->lse_max_abs)
            fprintf(f, "%.17g", row->lse_max_abs);
        fputc('\n', f);
    }
}

/* Index of column `name` in the header, or -1. */
static int csv_column(const char *name)
{
    size_t n = strlen(name);
    int col = 0;
    for (const char *p = run_csv_header(); *p; col++) {
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
