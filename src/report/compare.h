/* compare -- the metrics of one array against a reference, as a table, CSV or JSON */
#ifndef AMLA_COMPARE_H
#define AMLA_COMPARE_H

#include <stdio.h>

#include "config/config.h"
#include "run/metric.h"

/* m: metric_all of A against B; ident: elements bit-identical (sign of zero included). */
void report_compare(FILE *f, run_out_t out, const char *const paths[2], long n, const double m[METRIC_COUNT],
                    long ident);

#endif
