/* sweep -- experiment files: parse, run every grid point resumably, write CSV, report, plot */
#include "sweep/sweep.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "data/files.h"
#include "data/npy.h"
#include "run/metric.h"
#include "config/opts.h"
#include "sweep/par.h"
#include "run/run.h"

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

static char *sweep_strdup(sweep_t *x, const char *s, size_t n)
{
    if (x->nowned == x->capowned) {
        x->capowned = x->capowned ? 2 * x->capowned : 64;
        x->owned = realloc(x->owned, sizeof(char *) * (size_t)x->capowned);
    }
    char *d = malloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    x->owned[x->nowned++] = d;
    return d;
}

static void sweep_free(sweep_t *x)
{
    for (int i = 0; i < x->nowned; i++)
        free(x->owned[i]);
    free(x->owned);
}

/* Split a line into whitespace-separated tokens (in place). */
static int sweep_tokens(char *line, char **tok, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        tok[n++] = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (*p)
            *p++ = 0;
    }
    return n;
}

static int sweep_metric(const char *name)
{
    for (int k = 0; k < METRIC_COUNT; k++)
        if (strcmp(name, metric_names[k]) == 0)
            return k;
    return -1;
}

/* Apply option `opt` = val to c; "causal" is a yes/no flag. */
static int sweep_apply(run_cfg_t *c, const char *opt, const char *val, err_t *e)
{
    if (strcmp(opt, "attribute") == 0)
        return opts_run_option(c, "--attribute", val, e);
    if (strcmp(opt, "causal") == 0) {
        if (strcmp(val, "yes") && strcmp(val, "no"))
            return err_set(e, ERR_USAGE, "causal: expected yes or no, got '%s'", val);
        c->shape.causal = strcmp(val, "yes") == 0;
        return ERR_OK;
    }
    char o[SWEEP_MAX_TOK + 3];
    snprintf(o, sizeof o, "--%s", opt);
    return opts_run_option(c, o, val, e);
}

/* The configuration of grid point g: base, then each grid line's value tuple; the first
 * grid line varies slowest. */
static int sweep_point(run_cfg_t *c, const sweep_t *x, long g, err_t *e)
{
    *c = x->base;
    long rest = g;
    for (int i = x->ngrid - 1; i >= 0; i--) {
        const sweep_grid_t *gr = &x->grid[i];
        long vi = rest % gr->nvals;
        rest /= gr->nvals;
        for (int k = 0; k < gr->nopts; k++) {
            int rc = sweep_apply(c, gr->opt[k], gr->val[vi][k], e);
            if (rc)
                return rc;
        }
    }
    return run_validate(c, e);
}

/* Value of grid option `opt` at point g, or NULL. */
static const char *sweep_point_value(const sweep_t *x, long g, const char *opt)
{
    long rest = g;
    for (int i = x->ngrid - 1; i >= 0; i--) {
        const sweep_grid_t *gr = &x->grid[i];
        long vi = rest % gr->nvals;
        rest /= gr->nvals;
        for (int k = 0; k < gr->nopts; k++)
            if (strcmp(gr->opt[k], opt) == 0)
                return gr->val[vi][k];
    }
    return NULL;
}

static void sweep_point_label(char *buf, size_t n, const sweep_t *x, long g)
{
    if (g < x->nlabels) {
        snprintf(buf, n, "%s", x->label[g]);
        return;
    }
    size_t off = 0;
    buf[0] = 0;
    long rest = g;
    for (int i = x->ngrid - 1; i >= 0; i--) {
        const sweep_grid_t *gr = &x->grid[i];
        long vi = rest % gr->nvals;
        rest /= gr->nvals;
        for (int k = 0; k < gr->nopts && off < n; k++)
            off += (size_t)snprintf(buf + off, n - off, "%s%s=%s", off ? " " : "", gr->opt[k], gr->val[vi][k]);
    }
}

/* FNV-1a over a token and its separator. */
static void sweep_hash(uint64_t *h, const char *t, char sep)
{
    for (const char *p = t; *p; p++)
        *h = (*h ^ (unsigned char)*p) * 0x100000001b3ull;
    *h = (*h ^ (unsigned char)sep) * 0x100000001b3ull;
}

/* Options of `run` that an experiment file may not set: the sweep writes its own CSV and
 * reports, generates its inputs, and takes --threads on its command line. */
static const char *const sweep_not_settable[] = {"csv", "dump", "format", "load", "threads", NULL};

/* Did an earlier set line (kind 0) or grid line (kind 1) name option opt? Records it if not. */
static int sweep_seen(sweep_t *x, int kind, const char *opt)
{
    for (int i = 0; i < x->nseen; i++)
        if (x->seen_kind[i] == kind && strcmp(x->seen[i], opt) == 0)
            return x->seen_line[i];
    if (x->nseen < SWEEP_MAX_SEEN) {
        x->seen_kind[x->nseen] = kind;
        x->seen_line[x->nseen] = x->line;
        x->seen[x->nseen++] = sweep_strdup(x, opt, strlen(opt));
    }
    return 0;
}

static int sweep_option_ok(sweep_t *x, int kind, const char *opt, err_t *e)
{
    const char *path = x->path;
    for (int i = 0; sweep_not_settable[i]; i++)
        if (strcmp(opt, sweep_not_settable[i]) == 0)
            return err_set(e, ERR_USAGE, "%s:%d: '%s' cannot be set in an experiment file (%s)", path, x->line, opt,
                           strcmp(opt, "threads") == 0 ? "give sweep --threads N"
                           : strcmp(opt, "load") == 0  ? "experiments generate their inputs; use run --load"
                                                       : "the sweep writes NAME.csv and NAME.md itself");
    int prev = sweep_seen(x, kind, opt);
    if (prev)
        return err_set(e, ERR_USAGE, "%s:%d: '%s' is already %s on line %d", path, x->line, opt,
                       kind ? "a grid option" : "set", prev);
    return ERR_OK;
}

static int sweep_parse_text(sweep_t *x, const char *path, const char *text, size_t tlen, err_t *e);

static int sweep_parse(sweep_t *x, const char *path, err_t *e)
{
    unsigned char *buf;
    size_t len;
    memset(x, 0, sizeof *x);
    x->path = path;
    err_t le = {0};
    if (io_read_file(path, &buf, &len, &le))
        return err_set(e, le.code, "experiment file: %s", le.msg);
    int rc = sweep_parse_text(x, path, (const char *)buf, len, e);
    free(buf);
    return rc;
}

static int sweep_parse_text(sweep_t *x, const char *path, const char *text, size_t tlen, err_t *e)
{
    memset(x, 0, sizeof *x);
    x->path = path;
    run_cfg_default(&x->base);
    x->base.show_golden = 1;
    x->plot_metric = -1;
    if (memchr(text, 0, tlen))
        return err_set(e, ERR_USAGE, "%s: holds a NUL byte: not a text file", path);
    char line[4096];
    int ln = 0, rc = ERR_OK;
    x->hash = 0xcbf29ce484222325ull;
    const char *tp = text, *tend = text + tlen;
    while (!rc && tp < tend) {
        const char *nl = memchr(tp, '\n', (size_t)(tend - tp));
        size_t len = nl ? (size_t)(nl - tp) + 1 : (size_t)(tend - tp);
        x->line = ++ln;
        if (len >= sizeof line) {
            rc = err_set(e, ERR_USAGE, "%s:%d: line too long", path, ln);
            break;
        }
        memcpy(line, tp, len);
        line[len] = 0;
        tp += len;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char copy[4096];
        strcpy(copy, line);
        char *tok[SWEEP_MAX_VALS + 4];
        int nt = sweep_tokens(line, tok, SWEEP_MAX_VALS + 4);
        if (nt == 0)
            continue;
        err_t le = {0};
        const char *key = tok[0];
        /* the sample store belongs to the lines that decide what is computed (name, set,
         * grid), as tokens: comments, spacing, notes and paper values may change freely */
        if (!strcmp(key, "name") || !strcmp(key, "set") || !strcmp(key, "grid"))
            for (int i = 0; i < nt; i++)
                sweep_hash(&x->hash, tok[i], i + 1 < nt ? ' ' : '\n');
        /* the text after the keyword, for title and note */
        char *rest = copy + (tok[0] - line) + strlen(tok[0]);
        while (isspace((unsigned char)*rest))
            rest++;
        size_t rl = strlen(rest);
        while (rl && isspace((unsigned char)rest[rl - 1]))
            rest[--rl] = 0;
        if (strcmp(key, "name") == 0) {
            if (nt != 2)
                rc = err_set(e, ERR_USAGE, "%s:%d: name takes one word", path, ln);
            else if (x->name)
                rc = err_set(e, ERR_USAGE, "%s:%d: a second 'name' line", path, ln);
            else if (!isalnum((unsigned char)tok[1][0]))
                rc = err_set(e, ERR_USAGE, "%s:%d: name '%s' must start with a letter or digit", path, ln, tok[1]);
            else {
                for (const char *p = tok[1]; *p && !rc; p++)
                    if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
                        rc = err_set(e, ERR_USAGE, "%s:%d: name '%s' may hold only letters, digits, '-', '_', '.'", path, ln, tok[1]);
                x->name = sweep_strdup(x, tok[1], strlen(tok[1]));
            }
        } else if (strcmp(key, "title") == 0) {
            if (x->title)
                rc = err_set(e, ERR_USAGE, "%s:%d: a second 'title' line", path, ln);
            x->title = sweep_strdup(x, rest, rl);
        } else if (strcmp(key, "note") == 0) {
            if (x->nnotes == SWEEP_MAX_NOTES)
                rc = err_set(e, ERR_USAGE, "%s:%d: more than %d notes", path, ln, SWEEP_MAX_NOTES);
            else
                x->note[x->nnotes++] = sweep_strdup(x, rest, rl);
        } else if (strcmp(key, "set") == 0) {
            if (nt != 3)
                rc = err_set(e, ERR_USAGE, "%s:%d: expected 'set OPTION VALUE'", path, ln);
            else if (sweep_option_ok(x, 0, tok[1], e))
                rc = ERR_USAGE;
            else if (sweep_apply(&x->base, tok[1], sweep_strdup(x, tok[2], strlen(tok[2])), &le))
                rc = err_set(e, ERR_USAGE, "%s:%d: %s", path, ln, le.msg);
        } else if (strcmp(key, "grid") == 0) {
            if (nt < 3)
                rc = err_set(e, ERR_USAGE, "%s:%d: expected 'grid OPTION[,OPTION] VALUE[,VALUE] ...'", path, ln);
            else if (x->ngrid == SWEEP_MAX_GRID)
                rc = err_set(e, ERR_USAGE, "%s:%d: more than %d grid lines", path, ln, SWEEP_MAX_GRID);
            else {
                sweep_grid_t *gr = &x->grid[x->ngrid++];
                char *o = tok[1];
                for (char *t = strtok(o, ","); t; t = strtok(NULL, ",")) {
                    if (gr->nopts == SWEEP_MAX_OPTS) {
                        rc = err_set(e, ERR_USAGE, "%s:%d: more than %d options in one grid line", path, ln, SWEEP_MAX_OPTS);
                        break;
                    }
                    if (sweep_option_ok(x, 1, t, e)) {
                        rc = ERR_USAGE;
                        break;
                    }
                    gr->opt[gr->nopts++] = sweep_strdup(x, t, strlen(t));
                }
                for (int i = 2; i < nt && !rc; i++) {
                    int k = 0;
                    char *v = tok[i], *save = NULL;
                    for (char *t = strtok_r(v, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        if (k == gr->nopts)
                            break;
                        gr->val[gr->nvals][k++] = sweep_strdup(x, t, strlen(t));
                    }
                    if (k != gr->nopts) {
                        rc = err_set(e, ERR_USAGE, "%s:%d: value %d does not give %d comma-separated values", path, ln, i - 1, gr->nopts);
                        break;
                    }
                    /* each value must be a valid option value on its own */
                    run_cfg_t *tmp = malloc(sizeof *tmp);
                    *tmp = x->base;
                    for (k = 0; k < gr->nopts && !rc; k++)
                        if (sweep_apply(tmp, gr->opt[k], gr->val[gr->nvals][k], &le))
                            rc = err_set(e, ERR_USAGE, "%s:%d: %s", path, ln, le.msg);
                    free(tmp);
                    gr->nvals++;
                }
            }
        } else if (strcmp(key, "paper") == 0) {
            if (nt < 4 || x->npaper == SWEEP_MAX_PAPER)
                rc = err_set(e, ERR_USAGE, "%s:%d: expected 'paper VARIANT METRIC VALUE ...'", path, ln);
            else {
                sweep_paper_t *pp = &x->paper[x->npaper++];
                pp->variant = sweep_strdup(x, tok[1], strlen(tok[1]));
                pp->metric = sweep_metric(tok[2]);
                if (pp->metric < 0)
                    rc = err_set(e, ERR_USAGE, "%s:%d: unknown metric '%s'", path, ln, tok[2]);
                for (int i = 0; i < SWEEP_MAX_VALS; i++)
                    pp->v[i] = NAN;
                for (int i = 3; i < nt && !rc; i++) {
                    if (strcmp(tok[i], "-") == 0)
                        continue;
                    char *end;
                    pp->v[i - 3] = strtod(tok[i], &end);
                    if (*end || !isfinite(pp->v[i - 3]))
                        rc = err_set(e, ERR_USAGE, "%s:%d: '%s' is not a number", path, ln, tok[i]);
                }
                pp->v[SWEEP_MAX_VALS - 1] = nt - 3; /* count, checked below */
            }
        } else if (strcmp(key, "plot") == 0) {
            if (x->plot_x)
                rc = err_set(e, ERR_USAGE, "%s:%d: a second 'plot' line", path, ln);
            else if (nt < 3 || (x->plot_metric = sweep_metric(tok[1])) < 0)
                rc = err_set(e, ERR_USAGE, "%s:%d: expected 'plot METRIC X-OPTION [logx] [logy]'", path, ln);
            else {
                x->plot_x = sweep_strdup(x, tok[2], strlen(tok[2]));
                for (int i = 3; i < nt && !rc; i++) {
                    if (strcmp(tok[i], "logx") == 0)
                        x->plot_logx = 1;
                    else if (strcmp(tok[i], "logy") == 0)
                        x->plot_logy = 1;
                    else
                        rc = err_set(e, ERR_USAGE, "%s:%d: unknown plot flag '%s'", path, ln, tok[i]);
                }
            }
        } else if (strcmp(key, "label") == 0) {
            for (int i = 1; i < nt && x->nlabels < SWEEP_MAX_VALS; i++)
                x->label[x->nlabels++] = sweep_strdup(x, tok[i], strlen(tok[i]));
        } else {
            rc = err_set(e, ERR_USAGE, "%s:%d: unknown keyword '%s' (name, title, set, grid, paper, label, plot, note)", path, ln, key);
        }
    }
    if (rc)
        return rc;
    if (!x->name)
        return err_set(e, ERR_USAGE, "%s: no 'name' line", path);
    if (!x->title)
        x->title = x->name;
    x->base.experiment = x->name;
    x->npoints = 1;
    for (int i = 0; i < x->ngrid; i++)
        x->npoints *= x->grid[i].nvals;
    if (x->npoints > SWEEP_MAX_VALS)
        return err_set(e, ERR_USAGE, "%s: %ld grid points, more than %d", path, x->npoints, SWEEP_MAX_VALS);
    if (x->nlabels && x->nlabels != x->npoints)
        return err_set(e, ERR_USAGE, "%s: %d labels for %ld grid points", path, x->nlabels, x->npoints);
    for (int i = 0; i < x->npaper; i++) {
        int n = (int)x->paper[i].v[SWEEP_MAX_VALS - 1];
        x->paper[i].v[SWEEP_MAX_VALS - 1] = NAN;
        if (n != x->npoints)
            return err_set(e, ERR_USAGE, "%s: paper %s %s gives %d values for %ld grid points", path,
                           x->paper[i].variant, metric_names[x->paper[i].metric], n, x->npoints);
    }
    if (x->plot_x) {
        int found = 0;
        for (int i = 0; i < x->ngrid; i++)
            for (int k = 0; k < x->grid[i].nopts; k++)
                found |= strcmp(x->grid[i].opt[k], x->plot_x) == 0;
        if (!found)
            return err_set(e, ERR_USAGE, "%s: plot axis '%s' is not a grid option", path, x->plot_x);
    }
    /* every grid point must be a valid configuration, and every paper variant selected */
    run_cfg_t *c = malloc(sizeof *c);
    for (long g = 0; g < x->npoints && !rc; g++) {
        err_t le = {0};
        if (sweep_point(c, x, g, &le))
            rc = err_set(e, ERR_USAGE, "%s: grid point %ld: %s", path, g, le.msg);
        for (int i = 0; i < x->npaper && !rc && g == 0; i++) {
            int found = 0;
            for (int v = 0; v < c->nvariants; v++)
                found |= strcmp(c->vspec[v], x->paper[i].variant) == 0;
            if (!found)
                rc = err_set(e, ERR_USAGE, "%s: paper values for '%s', which is not in the variants", path,
                             x->paper[i].variant);
        }
    }
    free(c);
    return rc;
}

int sweep_check_text(const char *path, const char *text, size_t len, err_t *e)
{
    sweep_t *x = err_malloc(1, sizeof *x);
    int rc = sweep_parse_text(x, path, text, len, e);
    sweep_free(x);
    free(x);
    return rc;
}

int sweep_check(const char *path, err_t *e)
{
    sweep_t *x = malloc(sizeof *x);
    int rc = sweep_parse(x, path, e);
    sweep_free(x);
    free(x);
    return rc;
}

/* ---- the resumable run ---- */

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
    long done, total, fresh, kill_after;
    double secs; /* compute time of the stored samples (one thread each, every variant) */
    double t0;
    int progress;
} sweep_state_t;

/* FNV-1a 64 of a record's rows: a record whose rows do not hash to its header's checksum was
 * torn (a kill during the write) or damaged, and is never copied into the CSV. */
static uint64_t sweep_checksum(const char *t, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)t[i]) * 0x100000001b3ull;
    return h;
}

static void sweep_progress(sweep_state_t *s)
{
    if (!s->progress)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    double eta = s->fresh > 0 ? (now - s->t0) / (double)s->fresh * (double)(s->total - s->done) : 0;
    int w = 30, filled = (int)((double)w * (double)s->done / (double)(s->total ? s->total : 1));
    fprintf(stderr, "\r%s [", s->x->name);
    for (int i = 0; i < w; i++)
        fputc(i < filled ? '=' : ' ', stderr);
    fprintf(stderr, "] %ld/%ld samples, ETA %dm%02ds ", s->done, s->total, (int)(eta / 60), (int)eta % 60);
    if (s->done == s->total)
        fputc('\n', stderr);
    fflush(stderr);
}

static int sweep_on_sample(void *arg, long sample, const run_row_t *rows, err_t *e)
{
    sweep_state_t *s = arg;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    run_write_csv_sample(m, s->c, sample, rows);
    fclose(m);
    int nrows = 0;
    for (size_t i = 0; i < len; i++)
        nrows += buf[i] == '\n';
    double secs = 0;
    for (int v = 0; v <= s->c->nvariants; v++)
        secs += rows[v].seconds;
    FILE *out = s->store ? s->store : s->outbox;
    fprintf(out, "@ %ld %ld %d %.3f %016llx\n%s", s->g, sample, nrows, secs,
            (unsigned long long)sweep_checksum(buf, len), buf);
    if (fflush(out) != 0 || ferror(out)) {
        free(buf);
        return err_set(e, ERR_IO, "cannot write the partial results of %s: %s", s->x->name, strerror(errno));
    }
    s->text[s->g * s->maxs + sample] = buf;
    s->secs += secs;
    s->done++;
    s->fresh++;
    sweep_progress(s);
    if (s->kill_after > 0 && s->fresh >= s->kill_after)
        raise(SIGKILL); /* test hook: AMLA_SWEEP_KILL_AFTER simulates kill -9 */
    return ERR_OK;
}

/* Columns of a CSV row, counted as commas + 1 (no field holds a comma). */
static int sweep_columns(const char *row, size_t n)
{
    int c = 1;
    for (size_t i = 0; i < n; i++)
        c += row[i] == ',';
    return c;
}

/* Read complete, valid "@ g s n secs checksum" records (each followed by its n CSV rows) from
 * f into s->text: g and s in range, n the rows point g writes per sample, every row with the
 * CSV's columns, the checksum right. Stops at the first record that is not; returns the byte
 * length of the valid records, counts them in *blocks, and sets *damaged when bytes remain
 * after them. */
static long sweep_read_blocks(sweep_state_t *s, FILE *f, long *blocks, int *damaged)
{
    char *line = NULL;
    size_t cap = 0;
    long valid = 0;
    *damaged = 0;
    for (;;) {
        long g, smp;
        int nrows, used = 0;
        unsigned long long sum;
        double secs = 0;
        ssize_t n = getline(&line, &cap, f);
        if (n <= 0)
            break;
        *damaged = 1;
        if (line[n - 1] != '\n' || (size_t)n != strlen(line) ||
            sscanf(line, "@ %ld %ld %d %lf %16llx%n", &g, &smp, &nrows, &secs, &sum, &used) != 5 ||
            used != n - 1 || g < 0 || g >= s->x->npoints || smp < 0 || smp >= s->samples_at[g] ||
            nrows != s->rows_at[g] || !isfinite(secs) || secs < 0)
            break;
        long blen = (long)n;
        char *buf = NULL;
        size_t blen_text = 0;
        FILE *m = open_memstream(&buf, &blen_text);
        int ok = 1;
        for (int i = 0; i < nrows && ok; i++) {
            n = getline(&line, &cap, f);
            ok = n > 0 && line[n - 1] == '\n' && (size_t)n == strlen(line) &&
                 sweep_columns(line, (size_t)n) == run_csv_columns();
            if (ok) {
                fputs(line, m);
                blen += (long)n;
            }
        }
        fclose(m);
        if (!ok || sweep_checksum(buf, blen_text) != sum) {
            free(buf);
            break;
        }
        *damaged = 0;
        free(s->text[g * s->maxs + smp]);
        s->text[g * s->maxs + smp] = buf;
        s->secs += secs;
        valid += blen;
        ++*blocks;
    }
    free(line);
    return valid;
}

/* Read OUTDIR/.NAME.samples: valid records only; returns the byte length of the valid prefix
 * (the file is cut there so appends continue cleanly), or -1 when the file is missing or
 * belongs to another version of the experiment file. A damaged tail is dropped with a
 * warning (its samples are computed again). */
static long sweep_read_store(sweep_state_t *s, const char *path, const char *header)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    long valid = -1, blocks = 0;
    int damaged = 0;
    if (n > 0 && strcmp(line, header) == 0)
        valid = (long)n + sweep_read_blocks(s, f, &blocks, &damaged);
    free(line);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    if (damaged && par_rank() == 0)
        fprintf(stderr, "amla-lab: warning: %s: dropped a damaged or torn record at byte %ld and the %ld bytes "
                        "after it; those samples are computed again\n",
                path, valid, size - valid);
    return valid;
}

/* MPI: ranks > 0 send this grid point's finished samples to rank 0, which appends them to
 * the store (so that an interrupted sweep keeps them) and to its table of rows. */
static int sweep_gather(sweep_state_t *s, char **outbox, size_t *outlen, err_t *e)
{
    if (par_rank() > 0) {
        fflush(s->outbox);
        par_send(*outbox, *outlen);
        fclose(s->outbox);
        free(*outbox);
        *outbox = NULL;
        s->outbox = open_memstream(outbox, outlen);
        return ERR_OK;
    }
    int rc = ERR_OK;
    for (int r = 1; r < par_size(); r++) {
        size_t len;
        char *blob = par_recv(r, &len);
        long blocks = 0;
        if (len > 0) {
            FILE *m = fmemopen(blob, len, "r");
            int damaged;
            len = (size_t)sweep_read_blocks(s, m, &blocks, &damaged);
            fclose(m);
            if (!rc && damaged)
                rc = err_set(e, ERR_IO, "rank %d sent damaged results", r);
            if (!rc && (fwrite(blob, 1, len, s->store) != len || fflush(s->store) != 0))
                rc = err_set(e, ERR_IO, "cannot write the partial results of %s: %s", s->x->name, strerror(errno));
        }
        s->done += blocks;
        s->fresh += blocks;
        free(blob);
    }
    sweep_progress(s);
    return rc;
}

/* Parse the numbers of one CSV row: variant (column 18) and metrics (19..25). */
static int sweep_parse_row(const char *row, char *variant, size_t vn, double m[METRIC_COUNT + 1])
{
    const char *p = row;
    for (int col = 0; col < 17; col++) {
        p = strchr(p, ',');
        if (!p)
            return -1;
        p++;
    }
    const char *end = strchr(p, ',');
    if (!end || (size_t)(end - p) >= vn)
        return -1;
    memcpy(variant, p, (size_t)(end - p));
    variant[end - p] = 0;
    p = end + 1;
    for (int k = 0; k <= METRIC_COUNT; k++) {
        char *q;
        m[k] = strtod(p, &q);
        p = q + (*q == ',');
    }
    return 0;
}

/* Call fn with the metrics (METRIC_COUNT values, then events) of every stored row of variant
 * `v` at point g, sample by sample. */
static void sweep_for_rows(const sweep_state_t *s, long g, long samples, const char *v,
                           void (*fn)(const double *m, void *), void *arg)
{
    for (long i = 0; i < samples; i++) {
        const char *t = s->text[g * s->maxs + i];
        while (t && *t) {
            char name[RUN_VSPEC_LEN];
            double m[METRIC_COUNT + 1];
            if (sweep_parse_row(t, name, sizeof name, m) == 0 && strcmp(name, v) == 0)
                fn(m, arg);
            t = strchr(t, '\n');
            t = t ? t + 1 : NULL;
        }
    }
}

/* A sample with NaN/Inf outputs or numeric events. */
static int sweep_row_eventful(const double *m) { return m[METRIC_NONFINITE] > 0 || m[METRIC_COUNT] > 0; }

typedef struct {
    double *x;
    size_t n;
    int k, clean;
} sweep_collect_t;

static void sweep_collect(const double *m, void *arg)
{
    sweep_collect_t *c = arg;
    if (!(c->clean && sweep_row_eventful(m)))
        c->x[c->n++] = m[c->k];
}

/* Mean and CI of metric k (METRIC_COUNT: events) of variant `v` at point g over its samples
 * (clean: only those without non-finite outputs or numeric events). */
static int sweep_cell_f(const sweep_state_t *s, long g, long samples, const char *v, int k, int clean, double *mean,
                        double *ci)
{
    sweep_collect_t c = {malloc(sizeof(double) * (size_t)samples), 0, k, clean};
    sweep_for_rows(s, g, samples, v, sweep_collect, &c);
    if (c.n)
        run_mean_ci(c.x, c.n, mean, ci);
    free(c.x);
    return c.n ? 0 : -1;
}

/* Call fn for every grid point and every selected variant (not the attribution runs). */
static void sweep_for_selected(const sweep_state_t *s,
                               void (*fn)(const sweep_state_t *, const char *, const run_cfg_t *, long, int, void *),
                               void *arg)
{
    const sweep_t *x = s->x;
    char label[256];
    run_cfg_t *cg = malloc(sizeof *cg);
    for (long g = 0; g < x->npoints; g++) {
        err_t le = {0};
        sweep_point(cg, x, g, &le);
        sweep_point_label(label, sizeof label, x, g);
        for (int v = 0; v < cg->nvariants; v++)
            if (cg->vmode[v] == RUN_ATTR_NONE)
                fn(s, label, cg, g, v, arg);
    }
    free(cg);
}

static int sweep_cell(const sweep_state_t *s, long g, long samples, const char *v, int k, double *mean, double *ci)
{
    return sweep_cell_f(s, g, samples, v, k, 0, mean, ci);
}

static void sweep_fmt_cell(char *buf, size_t n, double mean, double ci)
{
    if (isnan(ci))
        snprintf(buf, n, "%.4g", mean);
    else
        snprintf(buf, n, "%.4g ± %.1g", mean, ci);
}

/* Means of metric k for every result slot of point g (slot v + 1 = variant v). */
static void sweep_slot_means(const sweep_state_t *s, const run_cfg_t *cg, long g, int k, double *mean)
{
    mean[0] = 0;
    for (int v = 0; v < cg->nvariants; v++) {
        double ci;
        if (sweep_cell(s, g, cg->samples, cg->vspec[v], k, &mean[v + 1], &ci))
            mean[v + 1] = NAN;
    }
}

/* The attribution of one selected variant at one grid point (rel_fro), for a report writer. */
typedef struct {
    const char *label;
    const run_cfg_t *cg;
    int v;
    const double *mean, *alone, *removed, *share;
} sweep_attr_t;

/* Call fn for every (grid point, selected variant) of an attributed sweep, in order. */
static void sweep_for_attr(const sweep_state_t *s, void (*fn)(const sweep_attr_t *, void *), void *arg)
{
    const sweep_t *x = s->x;
    char label[256];
    run_cfg_t *cg = malloc(sizeof *cg);
    double *mean = malloc(sizeof(double) * (RUN_MAX_VARIANTS + 1));
    double *alone = malloc(sizeof(double) * RUN_MAX_VARIANTS), *removed = malloc(sizeof(double) * RUN_MAX_VARIANTS),
           *share = malloc(sizeof(double) * RUN_MAX_VARIANTS);
    for (long g = 0; g < x->npoints; g++) {
        err_t le = {0};
        sweep_point(cg, x, g, &le);
        sweep_point_label(label, sizeof label, x, g);
        sweep_slot_means(s, cg, g, METRIC_REL_FRO, mean);
        for (int v = 0; v < cg->nvariants; v++) {
            if (cg->vmode[v] != RUN_ATTR_NONE)
                continue;
            run_attribution(cg, v, METRIC_REL_FRO, mean, alone, removed, share);
            sweep_attr_t at = {label, cg, v, mean, alone, removed, share};
            fn(&at, arg);
        }
    }
    free(cg);
    free(mean);
    free(alone);
    free(removed);
    free(share);
}

static void sweep_attr_md_table(const sweep_attr_t *at, void *arg)
{
    FILE *f = arg;
    const run_cfg_t *cg = at->cg;
    fprintf(f, "\n### %s, %s: rel_fro %.4g with every site rounded\n\n| site | alone | removed | share |\n|---|---|---|---|\n",
            at->label, cg->vspec[at->v], at->mean[at->v + 1]);
    int best = -1;
    for (int a = 0; a < cg->nvariants; a++)
        if (cg->vparent[a] == at->v && cg->vmode[a] == RUN_ATTR_ONLY) {
            fprintf(f, "| %s | %.3e | %.3e | %.1f%% |\n", cg->vsite[a], at->alone[a], at->removed[a], 100 * at->share[a]);
            best = best < 0 || at->share[a] > at->share[best] ? a : best;
        }
    if (best >= 0)
        fprintf(f, "\nDominant site: `%s` (%.0f%% of the squared error; alone %.3g of %.3g).\n", cg->vsite[best],
                100 * at->share[best], at->alone[best], at->mean[at->v + 1]);
}

static void sweep_write_attr_md(FILE *f, const sweep_state_t *s)
{
    fprintf(f, "\n## Attribution of rel_fro to rounding sites\n\n"
               "alone: the error with only this site rounded (every other site exact, FP64); removed: the full "
               "error minus the error with only this site exact; share: alone² / Σ alone² (independent errors add "
               "in squares). `amla-lab list --sites VARIANT` says what each site rounds.\n");
    sweep_for_attr(s, sweep_attr_md_table, f);
}

/* The "Samples with numeric events" table, a row for each variant that had some. */
typedef struct {
    FILE *f;
    int any;
} sweep_events_t;

typedef struct {
    long bad, ok;
    double sum, worst;
} sweep_evcount_t;

static void sweep_evcount(const double *m, void *arg)
{
    sweep_evcount_t *c = arg;
    if (sweep_row_eventful(m)) {
        c->bad++;
        c->worst = !(m[METRIC_REL_FRO] <= c->worst) ? m[METRIC_REL_FRO] : c->worst;
    } else {
        c->ok++;
        c->sum += m[METRIC_REL_FRO];
    }
}

static void sweep_events_row(const sweep_state_t *s, const char *label, const run_cfg_t *cg, long g, int v, void *arg)
{
    sweep_events_t *ev = arg;
    sweep_evcount_t c = {0, 0, 0, 0};
    sweep_for_rows(s, g, cg->samples, cg->vspec[v], sweep_evcount, &c);
    if (!c.bad)
        return;
    if (!ev->any)
        fprintf(ev->f, "## Samples with numeric events\n\nSamples whose output has NaN/Inf elements or whose "
                       "variant reported events (see the `events` column): how many, the worst rel_fro among them, "
                       "and the mean rel_fro of the other samples.\n\n| point | variant | samples with events | "
                       "worst rel_fro | mean rel_fro without them |\n|---|---|---|---|---|\n");
    ev->any = 1;
    fprintf(ev->f, "| %s | %s | %ld of %ld | %.4g | ", label, cg->vspec[v], c.bad, c.bad + c.ok, c.worst);
    if (c.ok)
        fprintf(ev->f, "%.4g |\n", c.sum / (double)c.ok);
    else
        fprintf(ev->f, "- |\n");
}

/* One row of the all-metrics table. */
static void sweep_metrics_row(const sweep_state_t *s, const char *label, const run_cfg_t *cg, long g, int v, void *arg)
{
    FILE *f = arg;
    char cell[128];
    fprintf(f, "| %s | %s |", label, cg->vspec[v]);
    for (int k = 0; k <= METRIC_COUNT; k++) {
        double mean, ci;
        if (sweep_cell(s, g, cg->samples, cg->vspec[v], k, &mean, &ci))
            fprintf(f, " - |");
        else {
            if (k == METRIC_COS_SIM)
                mean = 1.0 - mean;
            sweep_fmt_cell(cell, sizeof cell, mean, ci);
            fprintf(f, " %s |", cell);
        }
    }
    fputc('\n', f);
}

static int sweep_write_md(const sweep_state_t *s, const run_cfg_t *c0, const char *path, double secs, err_t *e)
{
    const sweep_t *x = s->x;
    io_atomic_t a;
    int rc = io_atomic_open(&a, path, e);
    if (rc)
        return rc;
    FILE *f = a.f;
    const attn_shape_t *sh = &c0->shape;
    fprintf(f, "# %s\n\n", x->title);
    fprintf(f, "Produced by `amla-lab sweep %s` (`make results`). Setting: ctx %ld, heads %ld, sq %ld, "
               "Dk %ld, Dv %ld, KV block %ld, %s in, %s out, %s accumulation, %ld samples per cell, seed %llu. "
               "Compute time: ",
            x->path, sh->sk, sh->hq, sh->sq, sh->dk, sh->dv, c0->attn.block, fmt_table[c0->attn.in_format].name,
            fmt_table[c0->attn.out_format].name, acc_table[c0->attn.acc_qk].name, c0->samples,
            (unsigned long long)c0->seed);
    (void)secs;
    if (s->secs > 0)
        fprintf(f, "%.0f s of single-thread time for Golden and every variant over %ld samples (%.2f s a sample; "
                   "samples run in parallel, one per core).\n\n",
                s->secs, s->total, s->secs / (double)(s->total ? s->total : 1));
    else
        fprintf(f, "not recorded (the sample store predates its timing).\n\n");
    char label[256], cell[128];
    /* the paper-layout table for each metric that has paper values */
    for (int k = 0; k < METRIC_COUNT; k++) {
        int any = 0;
        for (int i = 0; i < x->npaper; i++)
            any |= x->paper[i].metric == k;
        if (!any)
            continue;
        fprintf(f, "## %s against Golden: lab mean ± 95%% CI / paper / lab ÷ paper\n\n| variant |", metric_names[k]);
        for (long g = 0; g < x->npoints; g++) {
            sweep_point_label(label, sizeof label, x, g);
            fprintf(f, " %s |", label);
        }
        fprintf(f, "\n|---|");
        for (long g = 0; g < x->npoints; g++)
            fprintf(f, "---|");
        fputc('\n', f);
        for (int v = 0; v < c0->nvariants; v++) {
            if (c0->vmode[v] != RUN_ATTR_NONE)
                continue;
            fprintf(f, "| %s |", c0->vspec[v]);
            for (long g = 0; g < x->npoints; g++) {
                double mean, ci;
                run_cfg_t cg;
                err_t le = {0};
                sweep_point(&cg, x, g, &le);
                if (sweep_cell(s, g, cg.samples, c0->vspec[v], k, &mean, &ci)) {
                    fprintf(f, " - |");
                    continue;
                }
                sweep_fmt_cell(cell, sizeof cell, mean, ci);
                fprintf(f, " %s", cell);
                for (int i = 0; i < x->npaper; i++)
                    if (x->paper[i].metric == k && strcmp(x->paper[i].variant, c0->vspec[v]) == 0 &&
                        !isnan(x->paper[i].v[g])) {
                        double ratio = mean / x->paper[i].v[g];
                        fprintf(f, " / %.3g / ×%.3f %s", x->paper[i].v[g], ratio,
                                fabs(ratio - 1) <= 0.05 ? "✓" : "✗");
                    }
                fprintf(f, " |");
            }
            fputc('\n', f);
        }
        fprintf(f, "\n✓: within ±5%% of the paper; ✗: outside (see the notes).\n\n");
    }
    /* samples with numeric events: how many, and the mean without them */
    sweep_events_t ev = {f, 0};
    sweep_for_selected(s, sweep_events_row, &ev);
    if (ev.any)
        fputc('\n', f);
    /* every metric, every variant, every point */
    fprintf(f, "## All metrics (mean ± 95%% CI over samples)\n\n| point | variant |");
    for (int k = 0; k <= METRIC_COUNT; k++)
        fprintf(f, " %s |", k == METRIC_COS_SIM ? "1-cos_sim" : k < METRIC_COUNT ? metric_names[k] : "events");
    fprintf(f, "\n|---|---|");
    for (int k = 0; k <= METRIC_COUNT; k++)
        fprintf(f, "---|");
    fputc('\n', f);
    sweep_for_selected(s, sweep_metrics_row, f);
    if (c0->attribute)
        sweep_write_attr_md(f, s);
    if (x->nnotes) {
        fprintf(f, "\n## Notes\n\n");
        for (int i = 0; i < x->nnotes; i++)
            fprintf(f, "%s\n", x->note[i]);
    }
    return io_atomic_commit(&a, e);
}

/* Run gnuplot on script gp (drawing into tmp), then move tmp to png; the script and its data
 * file are removed; a failure is a warning (the report stands without its picture). */
static void sweep_gnuplot(const char *gp, const char *dat, const char *tmp, const char *png)
{
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", gp);
    int st = system(cmd);
    unlink(dat);
    unlink(gp);
    if (st != 0 || rename(tmp, png) != 0) {
        unlink(tmp);
        fprintf(stderr, "amla-lab: warning: gnuplot failed; no plot %s\n", png);
    }
}

/* Plot metric vs the x option, lab (with CI bars) and paper, one colour per variant. */
static int sweep_write_png(const sweep_state_t *s, const run_cfg_t *c0, const char *outdir, err_t *e)
{
    const sweep_t *x = s->x;
    if (!x->plot_x || x->plot_metric < 0)
        return ERR_OK;
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr, "amla-lab: warning: gnuplot not found; no plot for %s (apt-get install gnuplot-nox)\n", x->name);
        return ERR_OK;
    }
    char dat[4096], gp[4096], png[4096], tmp[4096];
    snprintf(dat, sizeof dat, "%s/.%s.plot.dat", outdir, x->name);
    snprintf(gp, sizeof gp, "%s/.%s.plot.gp", outdir, x->name);
    snprintf(png, sizeof png, "%s/%s.png", outdir, x->name);
    snprintf(tmp, sizeof tmp, "%s/.%s.png.tmp", outdir, x->name);
    FILE *d = fopen(dat, "w");
    if (!d)
        return err_set(e, ERR_USAGE, "cannot write %s: %s", dat, strerror(errno));
    int k = x->plot_metric;
    for (long g = 0; g < x->npoints; g++) {
        run_cfg_t cg;
        err_t le = {0};
        sweep_point(&cg, x, g, &le);
        fprintf(d, "%s", sweep_point_value(x, g, x->plot_x));
        for (int v = 0; v < c0->nvariants; v++) {
            double mean = NAN, ci = NAN, paper = NAN;
            sweep_cell_f(s, g, cg.samples, c0->vspec[v], k, 1, &mean, &ci);
            for (int i = 0; i < x->npaper; i++)
                if (x->paper[i].metric == k && strcmp(x->paper[i].variant, c0->vspec[v]) == 0)
                    paper = x->paper[i].v[g];
            fprintf(d, " %.10g %.10g %.10g", mean, isnan(ci) ? 0.0 : ci, paper);
        }
        fputc('\n', d);
    }
    fclose(d);
    FILE *p = fopen(gp, "w");
    if (!p)
        return err_set(e, ERR_USAGE, "cannot write %s: %s", gp, strerror(errno));
    fprintf(p, "set terminal pngcairo size 1000,620 noenhanced\nset output '%s'\n", tmp);
    fprintf(p, "set title \"%s\\n(lab: mean and 95%% CI over the samples without NaN/Inf or numeric events)\"\n"
               "set xlabel '%s'\nset ylabel '%s against Golden'\nset key outside right\nset grid\n",
            x->title, x->plot_x, metric_names[k]);
    fprintf(p, "set datafile missing 'nan'\n");
    if (x->plot_logx)
        fprintf(p, "set logscale x\n");
    if (x->plot_logy)
        fprintf(p, "set logscale y\n");
    fprintf(p, "plot ");
    for (int v = 0; v < c0->nvariants; v++) {
        int col = 2 + 3 * v;
        fprintf(p, "%s'%s' using 1:%d:%d with yerrorlines lc %d pt 7 title '%s (lab)'", v ? ", \\\n  " : "", dat,
                col, col + 1, v + 1, c0->vspec[v]);
        int has_paper = 0;
        for (int i = 0; i < x->npaper; i++)
            has_paper |= x->paper[i].metric == k && strcmp(x->paper[i].variant, c0->vspec[v]) == 0;
        if (has_paper)
            fprintf(p, ", \\\n  '%s' using 1:%d with linespoints dt 2 lc %d pt 4 ps 1.5 title '%s (paper)'", dat,
                    col + 2, v + 1, c0->vspec[v]);
    }
    fprintf(p, "\n");
    fclose(p);
    sweep_gnuplot(gp, dat, tmp, png);
    return ERR_OK;
}

/* A stacked bar per (point, variant): each site's share of rel_fro^2. */
/* One stacked bar: each site's share, in the order of the sites[] union. */
typedef struct {
    FILE *d;
    const char *const *sites;
    int ns, n;
} sweep_bars_t;

static void sweep_attr_bar(const sweep_attr_t *at, void *arg)
{
    sweep_bars_t *b = arg;
    const run_cfg_t *cg = at->cg;
    fprintf(b->d, "\"%s %s\"", at->label, cg->vspec[at->v]);
    for (int i = 0; i < b->ns; i++) {
        double sh = 0;
        for (int a = 0; a < cg->nvariants; a++)
            if (cg->vparent[a] == at->v && cg->vmode[a] == RUN_ATTR_ONLY && strcmp(cg->vsite[a], b->sites[i]) == 0)
                sh = 100 * at->share[a];
        fprintf(b->d, " %.6g", sh);
    }
    fputc('\n', b->d);
    b->n++;
}

static void sweep_write_attr_png(const sweep_state_t *s, const run_cfg_t *c0, const char *outdir)
{
    const sweep_t *x = s->x;
    if (!c0->attribute || system("command -v gnuplot >/dev/null 2>&1") != 0)
        return;
    char dat[4096], gp[4096], png[4096], tmp[4096];
    snprintf(dat, sizeof dat, "%s/.%s.attr.dat", outdir, x->name);
    snprintf(gp, sizeof gp, "%s/.%s.attr.gp", outdir, x->name);
    snprintf(png, sizeof png, "%s/%s-attribution.png", outdir, x->name);
    snprintf(tmp, sizeof tmp, "%s/.%s-attribution.png.tmp", outdir, x->name);
    /* the union of site names, in order of first appearance */
    const char *sites[64];
    int ns = 0;
    for (int a = 0; a < c0->nvariants; a++) {
        if (c0->vmode[a] != RUN_ATTR_ONLY)
            continue;
        int found = 0;
        for (int i = 0; i < ns; i++)
            found |= strcmp(sites[i], c0->vsite[a]) == 0;
        if (!found && ns < 64)
            sites[ns++] = c0->vsite[a];
    }
    FILE *d = fopen(dat, "w");
    if (!d)
        return;
    sweep_bars_t bars = {d, sites, ns, 0};
    sweep_for_attr(s, sweep_attr_bar, &bars);
    fclose(d);
    int nbars = bars.n;
    FILE *p = fopen(gp, "w");
    if (!p)
        return;
    fprintf(p, "set terminal pngcairo size %d,640 noenhanced\nset output '%s'\n", 400 + 70 * nbars, tmp);
    fprintf(p, "set title '%s: share of rel_fro^2 per rounding site'\nset ylabel 'share (%%)'\nset yrange [0:100]\n", x->title);
    fprintf(p, "set style data histograms\nset style histogram rowstacked\nset style fill solid border -1\n"
               "set boxwidth 0.75\nset key outside right\nset xtics rotate by -35 scale 0\n");
    static const char *const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                         "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#ffdd00",
                                         "#00ff7f", "#800000", "#000080", "#ff00ff", "#808000", "#00ffff"};
    const int ncolors = (int)(sizeof colors / sizeof colors[0]);
    fprintf(p, "plot ");
    for (int i = 0; i < ns; i++)
        fprintf(p, "%s'%s' using %d%s lc rgb '%s' title '%s'", i ? ", " : "", dat, i + 2, i ? "" : ":xtic(1)",
                colors[i % ncolors], sites[i]);
    fprintf(p, "\n");
    fclose(p);
    sweep_gnuplot(gp, dat, tmp, png);
}

/* The per-point sizes a store record is checked against, and the empty table of rows. */
static int sweep_state_init(sweep_state_t *s, sweep_t *x, run_cfg_t *c, err_t *e)
{
    int rc = ERR_OK;
    s->x = x;
    s->maxs = 1;
    s->samples_at = err_calloc((size_t)x->npoints, sizeof(long));
    s->rows_at = err_calloc((size_t)x->npoints, sizeof(int));
    for (long g = 0; g < x->npoints && !rc; g++) {
        rc = sweep_point(c, x, g, e);
        s->maxs = c->samples > s->maxs ? c->samples : s->maxs;
        s->total += c->samples;
        s->samples_at[g] = c->samples;
        s->rows_at[g] = c->nvariants + (c->show_golden != 0);
    }
    s->text = err_calloc((size_t)(x->npoints * s->maxs), sizeof(char *));
    return rc;
}

static void sweep_state_free(sweep_state_t *s)
{
    for (long i = 0; s->text && i < s->x->npoints * s->maxs; i++)
        free(s->text[i]);
    free(s->text);
    free(s->samples_at);
    free(s->rows_at);
    s->text = NULL;
    s->samples_at = NULL;
    s->rows_at = NULL;
}

struct sweep_store_reader {
    sweep_t x;
    run_cfg_t c;
    sweep_state_t s;
};

sweep_store_reader_t *sweep_store_reader(const char *exp_text, size_t exp_len, err_t *e)
{
    sweep_store_reader_t *r = err_calloc(1, sizeof *r);
    int rc = sweep_parse_text(&r->x, "experiment", exp_text, exp_len, e);
    if (!rc)
        rc = sweep_state_init(&r->s, &r->x, &r->c, e);
    if (rc) {
        sweep_store_reader_free(r);
        return NULL;
    }
    return r;
}

long sweep_store_read(sweep_store_reader_t *r, const char *store, size_t len, long *valid, int *damaged)
{
    long blocks = 0;
    *valid = 0;
    *damaged = 0;
    for (long i = 0; i < r->x.npoints * r->s.maxs; i++) {
        free(r->s.text[i]);
        r->s.text[i] = NULL;
    }
    if (len == 0)
        return 0;
    FILE *m = fmemopen((void *)store, len, "r");
    if (!m)
        return 0;
    *valid = sweep_read_blocks(&r->s, m, &blocks, damaged);
    fclose(m);
    return blocks;
}

void sweep_store_reader_free(sweep_store_reader_t *r)
{
    if (!r)
        return;
    if (r->s.x)
        sweep_state_free(&r->s);
    sweep_free(&r->x);
    free(r);
}

/* Take OUTDIR/.NAME.lock (flock, exclusive, not waiting): a second sweep of the same
 * experiment into the same directory exits 2 naming the lock instead of interleaving its
 * records with the first's. */
static int sweep_lock(int *fd, const char *lock, const char *name, const char *outdir, err_t *e)
{
    *fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
        return err_set(e, ERR_USAGE, "cannot write %s: %s", lock, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int busy = errno == EWOULDBLOCK;
        int saved = errno;
        close(*fd);
        *fd = -1;
        if (busy)
            return err_set(e, ERR_USAGE, "another sweep of %s is writing to %s (it holds %s); wait for it or use --out",
                           name, outdir, lock);
        return err_set(e, ERR_IO, "cannot lock %s: %s", lock, strerror(saved));
    }
    return ERR_OK;
}

int sweep_run(const char *path, const sweep_opts_t *o, err_t *e)
{
    sweep_t *x = calloc(1, sizeof *x);
    int rc = sweep_parse(x, path, e);
    if (rc) {
        sweep_free(x);
        free(x);
        return rc;
    }
    const char *outdir = o->outdir ? o->outdir : "results";
    rc = io_ensure_dir(outdir, e);
    run_cfg_t *c = err_malloc(1, sizeof *c), *c0 = err_malloc(1, sizeof *c0);
    sweep_state_t s = {0};
    if (!rc)
        rc = sweep_state_init(&s, x, c, e);
    char store[4096], csv[4096], md[4096], header[128], lock[4096];
    snprintf(store, sizeof store, "%s/.%s.samples", outdir, x->name);
    snprintf(lock, sizeof lock, "%s/.%s.lock", outdir, x->name);
    snprintf(csv, sizeof csv, "%s/%s.csv", outdir, x->name);
    snprintf(md, sizeof md, "%s/%s.md", outdir, x->name);
    snprintf(header, sizeof header, "# amla-lab sweep store 2 %s %016llx\n", x->name, (unsigned long long)x->hash);
    int rank = par_rank(), ranks = par_size();
    /* one writer per experiment and directory: rank 0 holds an exclusive lock until the
     * reports are written (released by the kernel however the process ends) */
    int lockfd = -1;
    if (!rc && rank == 0)
        rc = sweep_lock(&lockfd, lock, x->name, outdir, e);
    char *outbox = NULL;
    size_t outlen = 0;
    if (!rc) {
        if (rank == 0) {
            long valid = sweep_read_store(&s, store, header);
            if (valid < 0) {
                s.store = fopen(store, "w");
                if (s.store)
                    fputs(header, s.store);
            } else {
                if (truncate(store, valid) != 0)
                    rc = err_set(e, ERR_IO, "cannot truncate %s: %s", store, strerror(errno));
                s.store = fopen(store, "a");
            }
            if (!s.store && !rc)
                rc = err_set(e, ERR_USAGE, "cannot write %s: %s", store, strerror(errno));
        } else {
            s.outbox = open_memstream(&outbox, &outlen);
        }
    }
    /* Under MPI every rank learns from rank 0 which samples are stored, then takes every
     * ranks-th of the missing ones (counted across grid points). */
    int any = par_max(rc);
    if (any && !rc)
        rc = err_set(e, any, "%s", ""); /* the failing rank says why */
    long nslots = x->npoints * s.maxs;
    char *done = calloc((size_t)(nslots > 0 ? nslots : 1), 1);
    for (long i = 0; i < nslots && s.text; i++)
        done[i] = s.text[i] != NULL;
    if (!rc)
        par_bcast(done, (size_t)nslots);
    for (long i = 0; i < nslots; i++)
        s.done += done[i];
    const char *ka = getenv("AMLA_SWEEP_KILL_AFTER");
    s.kill_after = ka ? atol(ka) : 0;
    s.progress = rank > 0 ? 0 : o->progress < 0 ? isatty(2) : o->progress;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s.t0 = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (!rc && s.done > 0 && s.progress)
        fprintf(stderr, "%s: resuming, %ld of %ld samples already done\n", x->name, s.done, s.total);
    long turn = 0;
    for (long g = 0; g < x->npoints && !rc; g++) {
        rc = sweep_point(c, x, g, e);
        if (rc)
            break;
        if (g == 0)
            *c0 = *c;
        c->threads = o->threads;
        if (ranks > 1 && c->threads == 0) { /* share this machine's cores among its ranks */
#ifdef _OPENMP
            c->threads = omp_get_num_procs() / par_local_size();
#else
            c->threads = 1;
#endif
            c->threads = c->threads > 0 ? c->threads : 1;
        }
        char *skip = calloc((size_t)c->samples, 1);
        long todo = 0;
        for (long i = 0; i < c->samples; i++) {
            skip[i] = done[g * s.maxs + i] || turn++ % ranks != rank;
            todo += !skip[i];
        }
        if (todo) {
            s.c = c;
            s.g = g;
            run_hooks_t h = {skip, sweep_on_sample, &s};
            run_result_t r;
            rc = run_execute_hooked(&r, c, &h, e);
            run_result_free(&r);
        }
        free(skip);
        if (ranks > 1) {
            int all = par_max(rc);
            if (all && !rc)
                rc = err_set(e, all, "%s", ""); /* the failing rank says why */
            if (!rc)
                rc = sweep_gather(&s, &outbox, &outlen, e);
            rc = par_max(rc) ? (rc ? rc : err_set(e, ERR_IO, "%s", "")) : rc; /* rank 0 says why */
        }
    }
    free(done);
    if (s.outbox)
        fclose(s.outbox);
    free(outbox);
    if (s.store)
        fclose(s.store);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double secs = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec - s.t0;
    if (!rc && rank == 0) {
        io_atomic_t a;
        rc = io_atomic_open(&a, csv, e);
        if (!rc) {
            run_write_csv_header(a.f);
            for (long g = 0; g < x->npoints; g++)
                for (long i = 0; i < s.maxs; i++)
                    if (s.text[g * s.maxs + i])
                        fputs(s.text[g * s.maxs + i], a.f);
            rc = io_atomic_commit(&a, e);
        }
    }
    if (!rc && rank == 0)
        rc = sweep_write_md(&s, c0, md, secs, e);
    if (!rc && rank == 0 && !o->no_plot) {
        rc = sweep_write_png(&s, c0, outdir, e);
        sweep_write_attr_png(&s, c0, outdir);
    }
    if (s.x)
        sweep_state_free(&s);
    if (lockfd >= 0)
        close(lockfd);
    free(c);
    free(c0);
    sweep_free(x);
    free(x);
    return rc;
}
