/* dump -- what --dump writes (run/dump.c) */
#ifndef AMLA_RUN_DUMP_H
#define AMLA_RUN_DUMP_H

#include "config/config.h"
#include "data/problem.h"

/* Intermediate arrays a variant hands out (attn_ctx_t.extra), kept for --dump. */
#define RUN_EXTRA_MAX 4
typedef struct {
    char name[32];
    long d0, d1, n;
    double *x;
} run_extra_arr_t;

typedef struct run_extra {
    run_extra_arr_t a[RUN_EXTRA_MAX];
    int count;
} run_extra_t;

/* attn_ctx_t.extra's collector: array NAME [d0][d1][n], row (i0, i1) = x; kept in the run_extra_t arg. */
void run_extra_put(void *arg, const char *name, long d0, long d1, long i0, long i1, const double *x, long n);
void run_extra_free(run_extra_t *ex);

/* --dump into c->dump_dir: the case's q, k, v (and seqlens.npy, or cu_seqlens_q.npy and cu_seqlens_k.npy), each slot's
 * output outs[v] NAME.npy and log-sum-exp lses[v] NAME.lse.npy (none where every row is NaN), and extras[v]'s arrays
 * as NAME.ARRAY.npy, in the layout the case was read in. */
int run_dump(const run_cfg_t *c, const attn_batch_t *bt, double **outs, double **lses, const run_extra_t *extras,
             err_t *e);

#endif
