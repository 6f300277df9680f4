/* ozaki -- exact products through FP64 GEMMs of Ozaki slices */
#ifndef AMLA_OZAKI_H
#define AMLA_OZAKI_H

#include "data/problem.h"

#define OZAKI_CHUNK 1024     /* keys per slice buffer: bounds the working set */
#define OZAKI_MIN_P_BITS 20  /* bits of P kept exact in P V; the rest goes through plain FP64 */

/* Once per process: OpenBLAS single-threaded inside the lab's own threads. */
void ozaki_init(void);

/* S = Q K^T exactly, as unevaluated pairs (h + l), when the plan allows; returns 0 if not.
 * Tries ozaki_scores_one, then as many slice products as the rows need (at most 4). */
int ozaki_scores(double *h, double *l, const attn_group_t *g);

/* N = P V with P = ph + pl (rows scaled so that max P = 1): P's first OZAKI_MIN_P_BITS+ bits
 * times V's exact slices through exact GEMMs, the rest of P times V in plain FP64. Returns
 * N as pairs (nh + nl); 0 if V needs more than 3 slices. Tries ozaki_pv_one first. */
int ozaki_pv(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g);

/* The same products through one GEMM of a single slice per operand and a sparse list of the
 * remainders below it (ozaki_one.c); 0 (h, l, nh, nl then unspecified) when the inputs'
 * remainders are not sparse. */
int ozaki_scores_one(double *h, double *l, const attn_group_t *g);
int ozaki_pv_one(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g);

/* Products done by the two above, and the remainder terms they summed, since the process
 * started (for tests and the bench). */
void ozaki_one_stats(long *products, long *terms);

/* Seconds ozaki_pv_one spent in its FP64 GEMMs, summed over threads, since the process started (golden_times). */
double ozaki_pv_fp64_seconds(void);

/* Bits of the largest k-term sum's growth: the least b with 2^b >= k. */
static inline int ozaki_ceil_log2(long k)
{
    int b = 0;
    while ((1L << b) < k)
        b++;
    return b;
}

#endif
