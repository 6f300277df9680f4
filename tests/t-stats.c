/* t-stats -- means and 95% confidence intervals against hand calculations */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "run/stats.h"

int main(void)
{
    /* {1, 2, 3, 4}: mean 2.5, sample sd sqrt(5/3); Student t(0.975, 3 dof) = 3.182446305
     * (published tables give 3.182), so ci = 3.182446305 * sqrt(5/3) / 2 = 2.054302... */
    double x[4] = {1, 2, 3, 4}, mean, ci;
    run_mean_ci(x, 4, &mean, &ci);
    CHECK(mean == 2.5, "mean %g", mean);
    CHECK(fabs(ci - 3.182446305284263 * sqrt(5.0 / 3.0) / 2.0) < 1e-9 && fabs(ci - 2.0543) < 1e-4, "ci %.10g", ci);
    /* one sample: no interval */
    run_mean_ci(x, 1, &mean, &ci);
    CHECK(mean == 1 && isnan(ci), "n = 1: %g %g", mean, ci);
    /* equal values: zero width */
    double y[3] = {0.25, 0.25, 0.25};
    run_mean_ci(y, 3, &mean, &ci);
    CHECK(mean == 0.25 && ci == 0, "constant: %g %g", mean, ci);
    /* run_summary reads one slot's metric across samples, and the mean seconds */
    run_row_t rows[3 * 2] = {{{0}, 0, 0, 0}};
    for (int s = 0; s < 3; s++) {
        rows[s * 2 + 1].m[METRIC_REL_FRO] = s + 1; /* 1, 2, 3 */
        rows[s * 2 + 1].seconds = 0.5 * (s + 1);
    }
    run_result_t r = {3, 2, rows};
    double secs;
    run_summary(&r, 1, METRIC_REL_FRO, &mean, &ci, &secs);
    /* sd 1, t(0.975, 2) = 4.302652730: ci = 4.302652730 / sqrt(3) */
    CHECK(mean == 2 && fabs(ci - 4.302652729749464 / sqrt(3.0)) < 1e-9 && secs == 1.0, "summary %g %g %g", mean, ci,
          secs);
    return check_done("t-stats");
}
