/* sweep_int -- what the sweep module's files share: the parsed experiment, the state of a
 * resumable run, and the functions one file gives another (not for use outside src/sweep/) */
#ifndef AMLA_SWEEP_INT_H
#define AMLA_SWEEP_INT_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "config/config.h"
#include "run/run.h"
#include "sweep/sweep.h"

#define SWEEP_MAX_GRID 4
#define SWEEP_MAX_OPTS 8
#define SWEEP_MAX_VALS 64
#define SWEEP_MAX_PAPER 64
#define SWEEP_MAX_NOTES 64
#define SWEEP_MAX_TOK 80
#define SWEEP_MAX_SEEN 256

typedef struct {
    int nopts, nvals;
    char *opt[SWEEP_MAX_OPTS];
    char *val[SWEEP_MAX_VALS][SWEEP_MAX_OPTS];
} sweep_grid_t;

typedef struct {
    char *variant;
    int metric;
    int nv;                   /* values given on the line */
    double v[SWEEP_MAX_VALS]; /* per grid point; NaN where the paper has none */
} sweep_paper_t;

typedef struct {
    const char *path;
    char *name, *title;
    run_cfg_t base;
    sweep_grid_t grid[SWEEP_MAX_GRID];
    int ngrid;
    long npoints;
    sweep_paper_t paper[SWEEP_MAX_PAPER];
    int npaper;
    int plot_metric, plot_logx, plot_logy;
    char *plot_x;
    char *label[SWEEP_MAX_VALS];
    int nlabels;
    char *note[SWEEP_MAX_NOTES];
    int nnotes;
    char **owned; /* every string above, freed at the end */
    int nowned, capowned;
    uint64_t hash;
    int line; /* the line being parsed */
    char *seen[SWEEP_MAX_SEEN]; /* options of set (kind 0) and grid (kind 1) lines so far */
    int seen_kind[SWEEP_MAX_SEEN], seen_line[SWEEP_MAX_SEEN], nseen;
} sweep_t;

/* ---- the experiment file (exp.c) ---- */
int sweep_parse(sweep_t *x, const char *path, const sweep_overrides_t *ov, err_t *e);
int sweep_parse_text(sweep_t *x, const char *path, const char *text, size_t tlen, err_t *e);
void sweep_free(sweep_t *x);
int sweep_metric(const char *name);
void sweep_grid_index(long vi[], const sweep_t *x, long g);
int sweep_point(run_cfg_t *c, const sweep_t *x, long g, err_t *e);
const char *sweep_point_value(const sweep_t *x, long g, const char *opt);
void sweep_point_label(char *buf, size_t n, const sweep_t *x, long g);

/* ---- the resumable run (store.c, sweep.c) ---- */
typedef struct {
    sweep_t *x;
    const run_cfg_t *c;
    long g;
    char **text; /* [npoints * max samples]: the CSV rows of each finished sample */
    long maxs;
    FILE *store;  /* rank 0: the sample store; other ranks: NULL, rows go to the outbox */
    FILE *outbox; /* ranks > 0: this grid point's finished samples, in the store's format */
    long *samples_at; /* [npoints]: samples of each grid point */
    int *rows_at;     /* [npoints]: CSV rows one sample of each grid point writes */
    run_cfg_t *cfg;   /* [npoints]: each grid point's configuration, resolved once (the reports and plots read it) */
    long done, total, fresh, kill_after;
    double secs; /* compute time of the stored samples (one thread each, every variant) */
    double t0;
    int progress;
} sweep_state_t;

int sweep_state_init(sweep_state_t *s, sweep_t *x, run_cfg_t *c, err_t *e);
void sweep_state_free(sweep_state_t *s);
uint64_t sweep_checksum(const char *t, size_t n);
int sweep_on_sample(void *arg, long sample, const run_row_t *rows, err_t *e);
long sweep_read_blocks(sweep_state_t *s, FILE *f, long *blocks, int *damaged);
long sweep_read_store(sweep_state_t *s, const char *path, const char *header);
int sweep_gather(sweep_state_t *s, char **outbox, size_t *outlen, err_t *e);
int sweep_lock(int *fd, const char *lock, const char *name, const char *outdir, err_t *e);
void sweep_progress(sweep_state_t *s);

/* ---- the report and the plots (report.c, plot.c) ---- */
typedef struct {
    const char *label;
    const run_cfg_t *cg;
    int v;
    const double *mean, *alone, *removed, *share;
} sweep_attr_t;
int sweep_cell_f(const sweep_state_t *s, long g, long samples, const char *v, int k, int clean, double *mean,
                        double *ci);
void sweep_for_attr(const sweep_state_t *s, void (*fn)(const sweep_attr_t *, void *), void *arg);
int sweep_write_md(const sweep_state_t *s, const run_cfg_t *c0, const char *path, double secs, err_t *e);
int sweep_write_png(const sweep_state_t *s, const run_cfg_t *c0, const char *outdir, err_t *e);
void sweep_write_attr_png(const sweep_state_t *s, const run_cfg_t *c0, const char *outdir);

/* ---- what the plots share (plot_gp.c) ---- */
extern const char *const plot_colors[]; /* told apart on white, no yellow */
extern const int plot_ncolors;
/* s as a single-quoted string of gnuplot's enhanced text, its markup characters escaped */
void plot_str(FILE *p, const char *s);
/* gnuplot on script gp drawing into tmp, then tmp moved to png; gp and dat removed (unless
 * AMLA_KEEP_PLOT_SCRIPT is set); a failure is a warning */
void sweep_gnuplot(const char *gp, const char *dat, const char *tmp, const char *png);
/* whether gnuplot runs here; if not, a warning naming the plot not drawn */
int plot_have_gnuplot(const char *what, const char *name);
/* log-axis ticks over [lo, hi] for axis "x" or "y" */
void plot_log_tics(FILE *p, const char *axis, double lo, double hi);
/* text wrapped at spaces into lines of at most width characters; returns the line count */
int plot_wrap(char lines[][160], int maxlines, const char *text, size_t width);

/* The experiment file's text with ov's overrides applied: the `set` lines of an overridden option dropped, a `set`
 * line per override and a note appended (malloc'd; NULL with e set on a bad override). */
char *sweep_override_text(const char *text, size_t len, const sweep_overrides_t *ov, size_t *out_len, err_t *e);

#endif
