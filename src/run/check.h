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
    long mlog_identical, mlog_n; /* max_logits rows the same (mlog_n 0: no max_logits.npy, or no model of it) */
    double seconds;
    char where[CHECK_AXES][160]; /* where it differs from the kernel, per axis ("" where it does not) */
    int finite_there;            /* finite wherever the kernel's output is not (1 when it is finite) */
    int outside;                 /* its real kernel does not run this case (attn_kernel_outside): never named as it */
    char outside_why[160];
} check_cand_t;

/* A candidate screened out: its elements bit-identical to the kernel's on the screened part of the case. */
typedef struct {
    int slot;
    long identical, n;
} check_screened_t;

/* check_run's screening: the units (entry, KV group) of the case one part in CHECK_SCREEN_PART is screened on,
 * the candidates always kept (the best CHECK_LEADERS there), and the margin beyond twice the leader's
 * differences, as a share of the part's elements. */
#define CHECK_SCREEN_PART 32
#define CHECK_LEADERS 1
#define CHECK_SCREEN_SLACK 1e-3

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
    int nscreened;              /* candidates not run in full, best first on the screened part */
    check_screened_t *screened;
    long screen_units, units;   /* the part screened on: screen_units of the case's units (0: no screening) */
} check_result_t;

/* Every variant of c (validated, with its input c->input) against the kernel's output kout
 * [B][hq][sq][dv] and, unless NULL, its log-sum-exp klse [B][hq][sq] (natural log; for a batch with max_logits,
 * attn_batch_row_planes 2, the kernel's max_logits follow as a second plane, NaN where it gave none). Golden runs
 * on every one of c->threads threads, then the candidates in parallel, one output array each at a
 * time. With screen, every candidate runs first on a part of the case and only the leaders there run
 * in full (check_screen); the others are listed in r->screened. */
int check_run(check_result_t *r, const run_cfg_t *c, const double *kout, const double *klse, int screen, err_t *e);
void check_free(check_result_t *r);

/* A candidate that does not apply to the case, and why. */
typedef struct {
    char variant[RUN_VSPEC_LEN];
    char reason[512];
} check_skip_t;

/* Most candidates one check runs (--candidates all: every registered variant). */
#define CHECK_MAX_CAND 64

/* check's candidates for the case in c (c->input read, c's options set) into c's variants: list's
 * ("a,b:key=value"; "all": every registered variant), or by default every variant and accumulation model that
 * applies to the case's shape and formats (candidates.c). A default candidate whose real kernel cannot run the case,
 * or any candidate of "all" that does not apply, goes to skip[*nskip] (at most CHECK_MAX_CAND) with the reason; a
 * named one that does not apply is an error. */
int check_candidates(run_cfg_t *c, const char *list, check_skip_t *skip, int *nskip, err_t *e);

/* The verdict line for r (best candidate and its share of identical elements). */
void check_verdict(char *buf, size_t n, const run_cfg_t *c, const check_result_t *r);

#endif
