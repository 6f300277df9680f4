/* metric -- rel_fro, rmse, cos_sim, cos_diff, max_abs, nonfinite */
#include "run/metric.h"

#include <math.h>

const char *const metric_names[METRIC_COUNT] = {"rel_fro", "rmse", "cos_sim", "cos_diff",
                                                "max_abs", "nonfinite"};

void metric_all(double m[METRIC_COUNT], const double *a, const double *g, long n)
{
    long double dd = 0, gg = 0, aa = 0, ag = 0;
    double maxabs = 0.0;
    long nonfinite = 0;
    for (long i = 0; i < n; i++) {
        long double d = (long double)a[i] - g[i];
        dd += d * d;
        gg += (long double)g[i] * g[i];
        aa += (long double)a[i] * a[i];
        ag += (long double)a[i] * g[i];
        if (!isfinite(a[i]))
            nonfinite++;
        double ad = fabs(a[i] - g[i]);
        if (ad > maxabs || isnan(ad))
            maxabs = isnan(maxabs) ? maxabs : ad;
    }
    m[METRIC_REL_FRO] = (double)(sqrtl(dd) / (sqrtl(gg) + METRIC_REL_FRO_EPS));
    m[METRIC_RMSE] = n > 0 ? (double)sqrtl(dd / n) : 0.0;
    /* two zero arrays point the same way (1); a zero array and another share no direction (0) */
    m[METRIC_COS_SIM] = aa == 0 || gg == 0 ? (aa == gg ? 1.0 : 0.0) : (double)(ag / (sqrtl(aa) * sqrtl(gg)));
    long double den = aa + gg;
    if (den < METRIC_COS_DIFF_FLOOR)
        den = METRIC_COS_DIFF_FLOOR;
    m[METRIC_COS_DIFF] = (double)(1.0L - 2.0L * ag / den);
    m[METRIC_MAX_ABS] = maxabs;
    m[METRIC_NONFINITE] = (double)nonfinite;
}
