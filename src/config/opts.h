/* opts -- the option vocabulary shared by `run`, experiment files and variant specs */
#ifndef AMLA_OPTS_H
#define AMLA_OPTS_H

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

/* Apply one value option of `run` ("--ctx", "8192") to c; ERR_USAGE names the option. */
int opts_run_option(run_cfg_t *c, const char *opt, const char *val, err_t *e);

/* Resolve variant v's configuration into c->vcfg[v]: c->attn plus the overrides in its spec
 * ("amla:amla-form=cann:block=128"); only options that change the arithmetic of a variant
 * are allowed there (amla-form, block, acc, acc-qk, acc-pv, exact, only, out-format, scale). */
int opts_variant_cfg(run_cfg_t *c, int v, err_t *e);

#endif
