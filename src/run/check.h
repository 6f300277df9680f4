/* check -- a kernel's captured output against Golden and against every candidate emulation:
 * bit-identity, ulp distances in the output format, metrics, and where the differences are */
#ifndef AMLA_CHECK_H
#define AMLA_CHECK_H

#include "config/config.h"
#include "run/metric.h"

/* The axes of an output, [B][hq][sq][dv] inside the lab: batch entry, head, query token, column. */
enum { CHECK_AXIS_ENTRY, CHECK_AXIS_HEAD, CHECK_AXIS_TOKEN, CHECK_AXIS_COLUMN, CHECK_AXES };

extern const char *const check_axis_names[CHECK_AXES];

typedef struct {
    int slot;                  /* the run's variant slot (1..nvariants) */
    long identical, n;         /* elements bit-identical to the kernel's (sign of zero included) */
    double max_ulp, median_ulp; /* in the candidate's output format; inf where one is not finite */
    double m[METRIC_COUNT];    /* against Golden */
    long lse_identical, lse_n; /* lse_n 0: no lse.npy, or the candidate has no model of it */
    double lse_max_abs;        /* max |lse - Golden's|, NaN where the candidate has none */
    double seconds;
    char where[CHECK_AXES][160]; /* where it differs from the kernel, per axis ("" where it does not) */
    int finite_there;            /* finite wherever the kernel's output is not (1 when it is finite) */
    int outside;                 /* its real kernel does not run this case (attn_kernel_outside): never named as it */
    char outside_why[160];
} check_cand_t;

typedef struct {
    double m[METRIC_COUNT]; /* the kernel's output against Golden */
    double lse_max_abs;     /* the kernel's lse against Golden's; NaN without lse.npy */
    long n, nlse;
    long nan, inf;                          /* the kernel's non-finite output elements */
    long lse_nan;                           /* its log-sum-exp rows that are NaN (lse.npy given) */
    char nonfinite_where[CHECK_AXES][160];  /* where they are, per axis (as check_cand_t's where) */
    int ncand;
    check_cand_t *cand; /* best first: most elements identical, then the smaller largest ulp, more lse rows, a
                           candidate whose kernel runs the case before one whose kernel does not */
} check_result_t;

/* Every variant of c (validated, with its input c->input) against the kernel's output kout
 * [B][hq][sq][dv] and, unless NULL, its log-sum-exp klse [B][hq][sq] (natural log). Candidates
 * run in parallel on c->threads threads, one output array each at a time. */
int check_run(check_result_t *r, const run_cfg_t *c, const double *kout, const double *klse, err_t *e);
void check_free(check_result_t *r);

/* The verdict line for r (best candidate and its share of identical elements). */
void check_verdict(char *buf, size_t n, const run_cfg_t *c, const check_result_t *r);

#endif
