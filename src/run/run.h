/* run -- one configuration: N samples, Golden and every selected variant, metrics per sample */
#ifndef AMLA_RUN_H
#define AMLA_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "attn/attn.h"
#include "base/err.h"
#include "data/gen.h"
#include "run/metric.h"

#define RUN_MAX_VARIANTS 256
#define RUN_VSPEC_LEN 96

typedef enum { RUN_OUT_TABLE, RUN_OUT_CSV, RUN_OUT_JSON } run_out_t;

enum { RUN_ATTR_NONE, RUN_ATTR_ONLY, RUN_ATTR_EXACT };

typedef struct {
    attn_shape_t shape;
    gen_cfg_t gen;
    attn_cfg_t attn;
    long samples;
    uint64_t seed;
    int threads;
    int variants[RUN_MAX_VARIANTS]; /* registry indices; golden is always computed */
    char vspec[RUN_MAX_VARIANTS][RUN_VSPEC_LEN]; /* as given: "amla:amla-form=cann" */
    attn_cfg_t vcfg[RUN_MAX_VARIANTS];            /* resolved by run_validate */
    char vexact[RUN_MAX_VARIANTS][RUN_VSPEC_LEN];
    char vonly[RUN_MAX_VARIANTS][RUN_VSPEC_LEN];
    /* --attribute: every selected variant V gains, per site S, "V:only=S" (only S rounds)
     * and "V:exact=S" (every site but S rounds); vparent/vsite/vmode describe them */
    int attribute, expanded;
    int vparent[RUN_MAX_VARIANTS]; /* -1: a selected variant; else the index it attributes */
    int vmode[RUN_MAX_VARIANTS];   /* RUN_ATTR_ONLY or RUN_ATTR_EXACT */
    const char *vsite[RUN_MAX_VARIANTS];
    int nvariants;
    int show_golden; /* print a golden row (its metrics against itself are zero) */
    const char *load_dir, *dump_dir, *csv_path;
    const attn_input_t *input; /* --load: the case, read once by run_load_input */
    run_out_t out;
    const char *experiment; /* the CSV's experiment column */
} run_cfg_t;

/* Per (sample, variant) result; variant index -1 is golden. */
typedef struct {
    double m[METRIC_COUNT];
    double seconds;
    long events;
} run_row_t;

typedef struct {
    long samples;
    int nvariants;   /* cfg->nvariants + 1: slot 0 is golden */
    run_row_t *rows; /* [samples][nvariants] */
} run_result_t;

/* Default configuration (shared/DESIGN.md's defaults). */
void run_cfg_default(run_cfg_t *c);

/* --load: read the case in c->load_dir once into *in (owned by the caller; gen_free), take
 * its shape into c->shape and point c->input at it. */
int run_load_input(run_cfg_t *c, attn_input_t *in, err_t *e);

/* Check sizes, memory and consistency; ERR_USAGE with a message naming the option. */
int run_validate(run_cfg_t *c, err_t *e);

/* Bytes one sample needs (inputs, outputs, Golden's and the variants' work arrays). */
double run_sample_bytes(const run_cfg_t *c);

int run_execute(run_result_t *res, const run_cfg_t *c, err_t *e);

/* What a sweep adds to a run: samples to skip (already done), and a callback after each
 * finished sample (called one at a time; a non-zero return stops the run). */
typedef struct {
    const char *skip; /* [samples], or NULL */
    int (*on_sample)(void *arg, long sample, const run_row_t *rows, err_t *e);
    void *arg;
} run_hooks_t;

int run_execute_hooked(run_result_t *res, const run_cfg_t *c, const run_hooks_t *h, err_t *e);
void run_result_free(run_result_t *res);

/* Name of result slot v (0: golden). */
const char *run_slot_name(const run_cfg_t *c, int v);

/* Expand --attribute into the per-site variant runs (once); called by run_validate. */
int run_expand_attribution(run_cfg_t *c, err_t *e);

/* For selected variant v, given the mean of metric k per result slot (slot = index + 1,
 * 0 golden), for each of v's ONLY runs a (one site S rounded): alone[a] = its error,
 * removed[a] = v's error minus the error with every site but S rounded, and share[a] =
 * alone^2 / sum of alone^2 over v's sites for rel_fro and rmse (independent errors add in
 * squares), alone / sum of alone for cos_diff (already a square). */
void run_attribution(const run_cfg_t *c, int v, int k, const double *mean_of_slot, double *alone,
                     double *removed, double *share);
void run_write_attribution(FILE *f, const run_cfg_t *c, const run_result_t *r);

/* Mean and 95% confidence half-width (Student t, GSL) of n values; ci is NaN for n = 1. */
void run_mean_ci(const double *x, size_t n, double *mean, double *ci);

/* Output: CSV rows (header first), the summary table, JSON. */
void run_write_csv_header(FILE *f);
int run_csv_columns(void); /* columns of the header, and so of every row */
void run_write_csv_rows(FILE *f, const run_cfg_t *c, const run_result_t *r);
void run_write_csv_sample(FILE *f, const run_cfg_t *c, long sample, const run_row_t *rows);
void run_write_table(FILE *f, const run_cfg_t *c, const run_result_t *r);
void run_write_json(FILE *f, const run_cfg_t *c, const run_result_t *r);

#endif
