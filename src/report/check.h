/* check -- `amla-lab check`'s report, as a table or one JSON object */
#ifndef AMLA_REPORT_CHECK_H
#define AMLA_REPORT_CHECK_H

#include <stdio.h>

#include "run/check.h"

/* what: one line naming the case (directory, shapes, formats). */
void check_write_table(FILE *f, const run_cfg_t *c, const check_result_t *r, const char *what,
                       const check_skip_t *skip, int nskip);
void check_write_json(FILE *f, const run_cfg_t *c, const check_result_t *r, const char *what,
                      const check_skip_t *skip, int nskip);

#endif
