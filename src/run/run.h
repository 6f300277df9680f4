/* run -- one configuration: N samples, Golden and every selected variant, metrics per sample */
#ifndef AMLA_RUN_H
#define AMLA_RUN_H

#include "config/config.h"
#include "run/metric.h"

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

#endif
