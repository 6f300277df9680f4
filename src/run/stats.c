/* stats -- means and 95% confidence intervals (Student t, GSL) over samples */
#include "run/stats.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>

#include "base/err.h"

void run_mean_ci(const double *x, size_t n, double *mean, double *ci)
{
    *mean = gsl_stats_mean(x, 1, n);
    *ci = n > 1 ? gsl_cdf_tdist_Pinv(0.975, (double)(n - 1)) * gsl_stats_sd(x, 1, n) / sqrt((double)n) : NAN;
}

/* Mean and 95% confidence half-width of metric k of slot v; mean seconds per sample. */
void run_summary(const run_result_t *r, int v, int k, double *mean, double *ci, double *secs)
{
    double *x = err_malloc((size_t)r->samples, sizeof(double));
    double st = 0;
    for (long i = 0; i < r->samples; i++) {
        x[i] = r->rows[i * r->nvariants + v].m[k];
        st += r->rows[i * r->nvariants + v].seconds;
    }
    run_mean_ci(x, (size_t)r->samples, mean, ci);
    *secs = st / (double)r->samples;
    free(x);
}

