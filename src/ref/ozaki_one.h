/* ozaki_one -- exact products through one GEMM of a single slice per operand (ozaki_one.c, ozaki_one_pv.c), which
 * ozaki.c tries first */
#ifndef AMLA_OZAKI_ONE_H
#define AMLA_OZAKI_ONE_H

#include "data/problem.h"

/* ozaki_scores' and ozaki_pv's products (ozaki.h) through one GEMM of a single slice per operand and a sparse list
 * of the remainders below it (ozaki_one.c, ozaki_one_pv.c); 0 (h, l, nh, nl then unspecified) when the inputs'
 * remainders are not sparse. */
int ozaki_scores_one(double *h, double *l, const attn_group_t *g);
int ozaki_pv_one(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g);

/* Products done by the two above, and the remainder terms they summed, since the process
 * started (for tests and the bench). */
void ozaki_one_stats(long *products, long *terms);

/* Seconds ozaki_pv_one spent in its FP64 GEMMs, summed over threads, since the process started (golden_times). */
double ozaki_pv_fp64_seconds(void);

#endif
