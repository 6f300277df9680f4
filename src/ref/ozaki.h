/* ozaki -- exact products through FP64 GEMMs of Ozaki slices */
#ifndef AMLA_OZAKI_H
#define AMLA_OZAKI_H

#include "data/problem.h"

/* Once per process: OpenBLAS single-threaded inside the lab's own threads. */
void ozaki_init(void);

/* S = Q K^T exactly, as unevaluated pairs (h + l), when the plan allows; returns 0 if not.
 * Tries ozaki_scores_one, then as many slice products as the rows need (at most 4). */
int ozaki_scores(double *h, double *l, const attn_group_t *g);

/* N = P V with P = ph + pl (rows scaled so that max P = 1): P's first OZAKI_MIN_P_BITS+ bits
 * times V's exact slices through exact GEMMs, the rest of P times V in plain FP64. Returns
 * N as pairs (nh + nl); 0 if V needs more than 3 slices. Tries ozaki_pv_one first. */
int ozaki_pv(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g);

#endif
