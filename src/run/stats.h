/* stats -- means and confidence intervals over samples (one implementation for run and sweep) */
#ifndef AMLA_STATS_H
#define AMLA_STATS_H

#include <stddef.h>

#include "run/run.h"

/* Mean and 95% confidence half-width (Student t, GSL) of n values; ci is NaN for n = 1. */
void run_mean_ci(const double *x, size_t n, double *mean, double *ci);

/* Mean and 95% confidence half-width of metric k of result slot v over the samples, and the
 * mean seconds per sample. */
void run_summary(const run_result_t *r, int v, int k, double *mean, double *ci, double *secs);

#endif
