/* opts -- the option vocabulary shared by `run`, experiment files and variant specs */
#ifndef AMLA_OPTS_H
#define AMLA_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "base/err.h"
#include "config/config.h"

/* Most threads a command takes (one sample per thread; more would only wait). */
#define OPTS_MAX_THREADS 1024
/* Most KEY=VALUE settings in one variant spec. */
#define OPTS_MAX_OVERRIDES 16

int opts_parse_long(const char *opt, const char *s, long *out, err_t *e);
int opts_parse_double(const char *opt, const char *s, double *out, err_t *e);

/* The output form: table, csv or json (run's and compare's --format). */
int opts_parse_format(const char *opt, const char *s, run_out_t *out, err_t *e);

/* One option of `run`: every place an option is given (the command line, an experiment
 * file's set and grid lines, a variant spec) and `run --help` read this table. */
typedef struct opts_def opts_def_t;
struct opts_def {
    const char *name;  /* without the dashes: "ctx" */
    const char *arg;   /* the value as --help names it ("N", "FMT"); NULL for a flag */
    const char *def;   /* the default, applied by run_cfg_default and shown by --help; or NULL */
    const char *shown; /* a default that is not a value ("1/sqrt(dk)"), shown only; or NULL */
    int where;         /* OPTS_* bits */
    int (*set)(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e);
    size_t off;        /* the field the setter writes (offset in run_cfg_t), where it takes one */
    long min, max;     /* the setter's range, where it takes one */
    const char *help;
};

enum {
    OPTS_VARIANT = 1,            /* may be set per variant (NAME:KEY=VALUE): it changes arithmetic */
    OPTS_NOT_IN_EXPERIMENTS = 2, /* not in experiment files (the sweep writes and threads itself) */
    OPTS_FLAG = 4                /* on the command line without a value; elsewhere yes|no */
};

extern const opts_def_t opts_table[]; /* ends with a NULL name */

const opts_def_t *opts_find(const char *name);

/* A flag as the command line gives it: "causal" (val "yes") or "causal=top-left" (val "top-left"); NULL
 * when arg names no flag. */
const opts_def_t *opts_find_flag(const char *arg, const char **val);

/* Set option `name` (no dashes) from text; ERR_USAGE names the option. */
int opts_set(run_cfg_t *c, const char *name, const char *val, err_t *e);

/* Whether option `name` was set by opts_set (the command line, an experiment file, a variant spec), not by
 * default. */
int opts_given(const run_cfg_t *c, const char *name);

/* The same for "--name" as given on the command line. */
int opts_run_option(run_cfg_t *c, const char *opt, const char *val, err_t *e);

/* Every option's default into c. */
void opts_defaults(run_cfg_t *c);

/* `run --help`, from the table. */
void opts_write_help(FILE *f);

/* The same table for the documentation: the man page's RUN OPTIONS, docs/USAGE.md's option table. */
typedef enum { OPTS_DOC_MAN, OPTS_DOC_MD } opts_doc_t;
void opts_write_doc(FILE *f, opts_doc_t form);

/* --variants "a,b:key=value,c": registry names, each optionally with its own settings. */
int opts_parse_variants(run_cfg_t *c, const char *s, err_t *e);

/* The variants that read per-variant setting key (a comma list, e.g. "fa3" for page-size), or NULL where every variant
 * does (vsettings.c): a setting on any other is refused. */
const char *opts_variant_readers(const char *key);

/* Resolve variant v's configuration into c->vcfg[v]: c->attn plus the settings in its spec
 * ("amla:amla-form=paper:block=128"); only OPTS_VARIANT options are allowed there, and they
 * are applied in scratch (whose attn field is overwritten). */
int opts_variant_cfg(run_cfg_t *c, int v, run_cfg_t *scratch, err_t *e);

/* The table's setters for options naming one of a few values (opts_choice.c): --amla-form cann|paper, --causal
 * yes|no|bottom-right|top-left (attn_causal_t), --flashmla-sched 9241ae3|9c5dfab. */
int opts_set_amla_form(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e);
int opts_set_causal(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e);
int opts_set_flashmla_sched(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e);
int opts_set_triton_decode(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e);
int opts_set_build(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e);

#endif
