/* attribution -- a variant's error split over its rounding sites (--attribute) */
#include "run/attribution.h"

#include <math.h>
#include <string.h>

#include "run/metric.h"

/* Norm-like metrics (rel_fro, rmse) of independent errors add in squares; cos_diff and
 * 1 - cos_sim are already squares of the error and add linearly. */
static double run_attr_weight(double x, int k)
{
    return k == METRIC_COS_DIFF || k == METRIC_COS_SIM ? fabs(x) : x * x;
}

void run_attribution(const run_cfg_t *c, int v, int k, const double *mean_of_slot, double *alone, double *removed,
                     double *share)
{
    double full = mean_of_slot[v + 1], sum2 = 0;
    for (int a = 0; a < c->nvariants; a++)
        if (c->vmode[a] == RUN_ATTR_ONLY && c->vparent[a] == v)
            sum2 += run_attr_weight(mean_of_slot[a + 1], k);
    for (int a = 0; a < c->nvariants; a++) {
        if (c->vparent[a] != v || c->vmode[a] != RUN_ATTR_ONLY)
            continue;
        alone[a] = mean_of_slot[a + 1];
        share[a] = sum2 > 0 ? run_attr_weight(alone[a], k) / sum2 : 0;
        removed[a] = NAN;
        for (int b = 0; b < c->nvariants; b++)
            if (c->vparent[b] == v && c->vmode[b] == RUN_ATTR_EXACT && strcmp(c->vsite[b], c->vsite[a]) == 0)
                removed[a] = full - mean_of_slot[b + 1];
    }
}

