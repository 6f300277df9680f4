/* config -- the configuration of a run: shape, inputs, arithmetic, variants and their own
 * settings, output; its defaults and its validation */
#ifndef AMLA_CONFIG_H
#define AMLA_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "attn/attn.h"
#include "base/err.h"
#include "data/gen.h"

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
    attn_cfg_t vcfg[RUN_MAX_VARIANTS];            /* resolved by run_resolve */
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
    const attn_batch_t *input; /* --load: the case (one entry or a batch), read once by run_load_input */
    run_out_t out;
    const char *experiment; /* the CSV's experiment column */
    uint64_t given;         /* the options set by the user (bit i: opts_table[i]; opts_given), not by default */
} run_cfg_t;

/* Default configuration: every option's default from the option table (config/opts.c; defined in
 * config/resolve.c, as are run_resolve and run_validate). */
void run_cfg_default(run_cfg_t *c);

/* --load: read the case in c->load_dir once into *in (owned by the caller; attn_batch_free),
 * take its shape into c->shape (sk: the longest entry's keys) and point c->input at it. */
int run_load_input(run_cfg_t *c, attn_batch_t *in, err_t *e);

/* Check the user's configuration (sizes, consistency, memory; ERR_USAGE naming the option)
 * and resolve it into out: the attribution runs expanded, the scale and RoPE dims derived,
 * each variant's own configuration (vcfg) with its sites checked. user is not changed
 * (out may be user). */
int run_resolve(run_cfg_t *out, const run_cfg_t *user, err_t *e);

/* run_resolve in place. */
int run_validate(run_cfg_t *c, err_t *e);

/* The sizes and their consistency, before anything is derived (ERR_USAGE naming the option). */
int run_cfg_check(const run_cfg_t *c, err_t *e);

/* Bytes one sample needs (inputs, outputs and log-sum-exps of every entry of a loaded batch,
 * Golden's and the variants' work arrays). */
double run_sample_bytes(const run_cfg_t *c);

/* Expand --attribute into the per-site variant runs (once); called by run_validate. */
int run_expand_attribution(run_cfg_t *c, err_t *e);

/* Name of result slot v (0: golden). */
const char *run_slot_name(const run_cfg_t *c, int v);

#endif
