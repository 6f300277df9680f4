/* metric -- error metrics of an output against Golden (definitions: README, Output) */
#ifndef AMLA_METRIC_H
#define AMLA_METRIC_H

enum { METRIC_REL_FRO, METRIC_RMSE, METRIC_COS_SIM, METRIC_COS_DIFF, METRIC_MAX_ABS,
       METRIC_NONFINITE, METRIC_COUNT };

extern const char *const metric_names[METRIC_COUNT];

/* The stabilizers of the definitions (AMLA's epsilon; FlashMLA's cal_diff floor). */
#define METRIC_REL_FRO_EPS 1e-10
#define METRIC_COS_DIFF_FLOOR 1e-12

/* m[METRIC_*] of a against reference g (n elements). Sums in long double; non-finite
 * elements of a are counted and make the norm-based metrics NaN/Inf as they would be. */
void metric_all(double m[METRIC_COUNT], const double *a, const double *g, long n);

#endif
