/* sweep -- experiment files: a grid of `run` configurations, resumable, with a report */
#ifndef AMLA_SWEEP_H
#define AMLA_SWEEP_H

#include <stddef.h>

#include "base/err.h"

/* A quick try of an experiment: --samples N and --set OPTION=VALUE replace the file's own
 * `set` lines (a grid option cannot be set); the report says so in a note. */
#define SWEEP_MAX_SETS 32
typedef struct {
    long samples; /* 0: the file's */
    int nsets;
    const char *sets[SWEEP_MAX_SETS]; /* "OPTION=VALUE" */
} sweep_overrides_t;

typedef struct {
    const char *outdir; /* where NAME.csv, NAME.md, NAME.png go (default "results", with
                           overrides "results/quick") */
    int threads;        /* 0: all cores */
    int progress;       /* -1: when stderr is a terminal, 0: never, 1: always */
    int no_plot;
    sweep_overrides_t ov;
} sweep_opts_t;

/* Run the experiment in `path`: every grid point, every sample not already in
 * OUTDIR/.NAME.samples (the store of finished samples, kept so that an interrupted sweep
 * resumes and a finished one only rewrites its reports; it starts over when the experiment
 * file changes); then write NAME.csv (identical to an uninterrupted run), NAME.md (the
 * paper-layout table) and NAME.png (through gnuplot, when installed). */
int sweep_run(const char *path, const sweep_opts_t *o, err_t *e);

/* Parse only (for `sweep --check`; with overrides ov, or NULL): ERR_USAGE with "FILE:LINE:
 * ..." on a malformed file; prints what a run would do. */
int sweep_check(const char *path, const sweep_overrides_t *ov, err_t *e);

/* The same on a file's text (the fuzz harness's entry). */
int sweep_check_text(const char *path, const char *text, size_t len, err_t *e);

/* A sample store's records read as a resume of one experiment would (for tests and the fuzz
 * harness): sweep_store_read takes the records (without the header line), returns how many are
 * valid, their byte length in *valid, and sets *damaged when bytes remain after them. */
typedef struct sweep_store_reader sweep_store_reader_t;
sweep_store_reader_t *sweep_store_reader(const char *exp_text, size_t exp_len, err_t *e);
long sweep_store_read(sweep_store_reader_t *r, const char *store, size_t len, long *valid, int *damaged);
void sweep_store_reader_free(sweep_store_reader_t *r);

#endif
