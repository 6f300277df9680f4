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

/* One setting of a row (CSV column, JSON key): its name and its value as text. */
#define RUN_SETTINGS_MAX 48
typedef struct {
    const char *name;
    char text[256];
    int number; /* the text is a number (JSON writes it unquoted) */
} run_setting_t;

/* Every setting that changes a number, as variant slot v (0: golden) used it, in the CSV's
 * column order; returns how many (at most RUN_SETTINGS_MAX). */
int run_settings(run_setting_t *out, const run_cfg_t *c, int v);

/* The KV tile variant slot v used: a kernel's fixed tile, else its --block. */
long run_variant_block(const run_cfg_t *c, int v);

/* The dist column's text for a configuration ("normal", "mla:l4", "load"). */
const char *run_dist_name(const run_cfg_t *c);

#endif
