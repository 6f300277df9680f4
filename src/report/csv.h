/* csv -- the CSV of per-sample rows: one column layout, used by the writer and the reader */
#ifndef AMLA_CSV_H
#define AMLA_CSV_H

#include <stdio.h>

#include "run/run.h"

/* The header line, and every row of a result or of one sample (a golden row first when
 * shown). Settings are written as each variant used them. */
void run_write_csv_header(FILE *f);
void run_write_csv_rows(FILE *f, const run_cfg_t *c, const run_result_t *r);
void run_write_csv_sample(FILE *f, const run_cfg_t *c, long sample, const run_row_t *rows);

/* Columns of the header, and so of every row. */
int run_csv_columns(void);

/* The variant (into variant, vn bytes) and the metrics (METRIC_COUNT values, then events) of
 * one row, found by the header's column names; -1 if the row is not one. */
int csv_parse_row(const char *row, char *variant, size_t vn, double m[METRIC_COUNT + 1]);

/* The dist column's text for a configuration ("normal", "mla:l4", "load"). */
const char *run_dist_name(const run_cfg_t *c);

#endif
