/* table -- the human-readable summary: per variant the mean and CI of each metric, and the
 * attribution tables */
#ifndef AMLA_TABLE_H
#define AMLA_TABLE_H

#include <stdio.h>

#include "run/run.h"

void run_write_table(FILE *f, const run_cfg_t *c, const run_result_t *r);
void run_write_attribution(FILE *f, const run_cfg_t *c, const run_result_t *r);

#endif
