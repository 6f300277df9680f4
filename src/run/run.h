/* run -- one configuration: N samples, Golden and every selected variant, metrics per sample */
#ifndef AMLA_RUN_H
#define AMLA_RUN_H

#include "config/config.h"
#include "run/dump.h"
#include "run/metric.h"

/* Per (sample, variant) result; variant index -1 is golden. */
typedef struct {
    double m[METRIC_COUNT];
    double seconds;
    long events;
    double lse_max_abs; /* max |lse - Golden's| over the rows; NaN where the variant has no lse */
} run_row_t;

typedef struct {
    long samples;
    int nvariants;   /* cfg->nvariants + 1: slot 0 is golden */
    run_row_t *rows; /* [samples][nvariants] */
} run_result_t;

int run_execute(run_result_t *res, const run_cfg_t *c, err_t *e);

/* max |lse - glse| over n rows; NaN when lse has none (lse[0] NaN: the variant has no model). */
double run_lse_max_abs(const double *lse, const double *glse, long n);

/* Golden (slot 0) and every variant of c on every entry of bt: outs[v] [B][hq][sq][dv], lses[v]
 * [B][hq][sq] (lses[v] NULL: not asked; NaN where a variant has no model of it), extras[v]
 * (extras NULL: not kept); seconds and events into rows[v] (metrics are the caller's). Golden
 * is not computed when outs[0] is NULL. On `threads` threads: Golden's parts (golden_attention_part) and the
 * variants spread over them, the same bits for any count. */
int run_outputs(const run_cfg_t *c, const attn_batch_t *bt, long sample, double **outs, double **lses,
                run_extra_t *extras, run_row_t *rows, int threads, err_t *e);

/* A batch with max_logits (attn_batch_row_planes 2) has its per-row arrays ([B][hq][sq], lses) in two planes, the
 * log-sum-exp's and then max_logits': entry b's rows of the second plane (NULL: the batch has one plane, or lse is
 * NULL). */
double *run_mlog_rows(const attn_batch_t *bt, double *lse, long b);

/* Golden in parts that run on their own (golden_attention_part, per entry; an entry with no keys is one part,
 * O = 0 and LSE = +inf): how many for the batch, first[b] the first of entry b's (first [B + 1]); and part p of
 * them into gout [B][hq][sq][dv] and glse [B][hq][sq] (glse NULL: not asked). */
long run_golden_parts(const attn_batch_t *bt, long *first);
void run_golden_part(const run_cfg_t *c, const attn_batch_t *bt, const long *first, long p, double *gout,
                     double *glse);

/* Variant slot v of c (sample 0) on the (entry, KV group) units of bt that units marks (units[b * hkv + h] != 0),
 * into out [B][hq][sq][dv] and, unless NULL, lse [B][hq][sq]: the rows of the other units are left as they were.
 * The scheduler of a split-KV kernel still sees the whole batch and shape, so each unit's rows are the ones the
 * whole run gives (check's screening, and one candidate's run spread over threads); its seconds into *seconds. */
int run_outputs_units(const run_cfg_t *c, const attn_batch_t *bt, int v, double *out, double *lse,
                      const unsigned char *units, double *seconds, err_t *e);

/* What a caller adds to a run (a sweep, run's progress line): samples to skip (already done), and a callback after each
 * finished sample (called one at a time; a non-zero return stops the run). */
typedef struct {
    const char *skip; /* [samples], or NULL */
    int (*on_sample)(void *arg, long sample, const run_row_t *rows, err_t *e);
    void *arg;
} run_hooks_t;

/* In a parallel loop: keep the first failure (lrc, le) in *rc and *e; later ones are dropped. */
void run_keep_first_error(int *rc, err_t *e, int lrc, const err_t *le);

/* In a parallel loop: whether another iteration has failed already (*rc set by run_keep_first_error), read
 * atomically; the loop's later iterations then do nothing. */
static inline int run_stopped(const int *rc)
{
    int failed;
#ifdef _OPENMP
#pragma omp atomic read
#endif
    failed = *rc;
    return failed != 0;
}

int run_execute_hooked(run_result_t *res, const run_cfg_t *c, const run_hooks_t *h, err_t *e);
void run_result_free(run_result_t *res);

/* Name of result slot v (0: golden). */
const char *run_slot_name(const run_cfg_t *c, int v);

#endif
