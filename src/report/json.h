/* json -- the summary as one JSON object */
#ifndef AMLA_JSON_H
#define AMLA_JSON_H

#include <stdio.h>

#include "run/run.h"

void run_write_json(FILE *f, const run_cfg_t *c, const run_result_t *r);

/* x as a JSON number, null when not finite. */
void json_num(FILE *f, double x);

/* s as a JSON string (quotes, backslashes and control characters escaped). */
void json_str(FILE *f, const char *s);

#endif
