/* t-metric -- metrics on hand-computed cases */
#include <math.h>

#include "check.h"
#include "run/metric.h"

static int close_to(double a, double b) { return fabs(a - b) <= 1e-15 * fabs(b) + 1e-300; }

int main(void)
{
    /* a = (1, 2, 3), g = (1, 2, 4): |a-g| = 1, |g|^2 = 21, |a|^2 = 14, <a,g> = 17 */
    double a[3] = {1, 2, 3}, g[3] = {1, 2, 4}, m[METRIC_COUNT];
    metric_all(m, a, g, 3);
    CHECK(close_to(m[METRIC_REL_FRO], 1 / (sqrt(21.0) + 1e-10)), "rel_fro %a", m[METRIC_REL_FRO]);
    CHECK(close_to(m[METRIC_RMSE], sqrt(1.0 / 3)), "rmse %a", m[METRIC_RMSE]);
    CHECK(close_to(m[METRIC_COS_SIM], 17 / (sqrt(14.0) * sqrt(21.0))), "cos_sim %a", m[METRIC_COS_SIM]);
    CHECK(close_to(m[METRIC_COS_DIFF], 1.0 / 35), "cos_diff %a (1 - 34/35)", m[METRIC_COS_DIFF]);
    CHECK(m[METRIC_MAX_ABS] == 1 && m[METRIC_NONFINITE] == 0, "max_abs %g nonfinite %g", m[METRIC_MAX_ABS],
          m[METRIC_NONFINITE]);

    /* identical arrays: every error metric is zero, cos_sim one */
    metric_all(m, g, g, 3);
    CHECK(m[METRIC_REL_FRO] == 0 && m[METRIC_RMSE] == 0 && m[METRIC_COS_DIFF] == 0 && m[METRIC_MAX_ABS] == 0,
          "self metrics not zero");
    CHECK(close_to(m[METRIC_COS_SIM], 1.0), "self cos_sim %a", m[METRIC_COS_SIM]);

    /* zero reference: rel_fro uses the 1e-10 stabilizer, cos_diff the 1e-12 floor */
    double z[2] = {0, 0}, s[2] = {1e-7, 0};
    metric_all(m, s, z, 2);
    CHECK(close_to(m[METRIC_REL_FRO], 1e-7 / 1e-10), "rel_fro with zero reference %a", m[METRIC_REL_FRO]);
    CHECK(close_to(m[METRIC_COS_DIFF], 1.0), "cos_diff with zero reference %a", m[METRIC_COS_DIFF]);
    CHECK(m[METRIC_COS_SIM] == 0, "cos_sim of a non-zero array against zeros %a (no direction in common)",
          m[METRIC_COS_SIM]);
    /* two zero arrays (an all-empty sparse case's O = 0): identical, cos_sim 1, never 0 / 0 */
    metric_all(m, z, z, 2);
    CHECK(m[METRIC_COS_SIM] == 1 && m[METRIC_REL_FRO] == 0 && m[METRIC_RMSE] == 0, "zeros against zeros: cos_sim %a",
          m[METRIC_COS_SIM]);

    /* non-finite elements are counted and poison the sums */
    double bad[3] = {1, NAN, INFINITY};
    metric_all(m, bad, g, 3);
    CHECK(m[METRIC_NONFINITE] == 2, "nonfinite %g", m[METRIC_NONFINITE]);
    CHECK(isnan(m[METRIC_REL_FRO]) && isnan(m[METRIC_MAX_ABS]), "NaN propagates to rel_fro and max_abs");
    return check_done("t-metric");
}
