/* exp -- experiment files: parsing (every grid point validated), grid points, labels */
#include "sweep/sweep_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/opts.h"
#include "data/files.h"
#include "run/metric.h"

static char *sweep_strdup(sweep_t *x, const char *s, size_t n)
{
    if (x->nowned == x->capowned) {
        x->capowned = x->capowned ? 2 * x->capowned : 64;
        x->owned = err_realloc(x->owned, (size_t)x->capowned, sizeof(char *));
    }
    char *d = err_malloc(n + 1, 1);
    memcpy(d, s, n);
    d[n] = 0;
    x->owned[x->nowned++] = d;
    return d;
}

void sweep_free(sweep_t *x)
{
    for (int i = 0; i < x->nowned; i++)
        free(x->owned[i]);
    free(x->owned);
}

/* Split a line into whitespace-separated tokens (in place); max + 1 when the line has more
 * than max tokens. */
static int sweep_tokens(char *line, char **tok, int max)
{
    int n = 0;
    char *p = line;
    while (*p) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        if (n == max)
            return max + 1;
        tok[n++] = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (*p)
            *p++ = 0;
    }
    return n;
}

int sweep_metric(const char *name)
{
    for (int k = 0; k < METRIC_COUNT; k++)
        if (strcmp(name, metric_names[k]) == 0)
            return k;
    return -1;
}

/* Apply option `opt` = val to c; "causal" is a yes/no flag. */
static int sweep_apply(run_cfg_t *c, const char *opt, const char *val, err_t *e)
{
    return opts_set(c, opt, val, e);
}

/* The value index of each grid line at point g: the first grid line varies slowest. */
void sweep_grid_index(long vi[], const sweep_t *x, long g)
{
    for (int i = x->ngrid - 1; i >= 0; i--) {
        vi[i] = g % x->grid[i].nvals;
        g /= x->grid[i].nvals;
    }
}

/* The configuration of grid point g: base, then each grid line's value tuple. */
int sweep_point(run_cfg_t *c, const sweep_t *x, long g, err_t *e)
{
    long vi[SWEEP_MAX_GRID];
    sweep_grid_index(vi, x, g);
    *c = x->base;
    for (int i = 0; i < x->ngrid; i++)
        for (int k = 0; k < x->grid[i].nopts; k++) {
            int rc = sweep_apply(c, x->grid[i].opt[k], x->grid[i].val[vi[i]][k], e);
            if (rc)
                return rc;
        }
    return run_validate(c, e);
}

/* Value of grid option `opt` at point g, or NULL. */
const char *sweep_point_value(const sweep_t *x, long g, const char *opt)
{
    long vi[SWEEP_MAX_GRID];
    sweep_grid_index(vi, x, g);
    for (int i = 0; i < x->ngrid; i++)
        for (int k = 0; k < x->grid[i].nopts; k++)
            if (strcmp(x->grid[i].opt[k], opt) == 0)
                return x->grid[i].val[vi[i]][k];
    return NULL;
}

/* The point's label: the experiment's own, else "opt=value ..." */
void sweep_point_label(char *buf, size_t n, const sweep_t *x, long g)
{
    if (g < x->nlabels) {
        snprintf(buf, n, "%s", x->label[g]);
        return;
    }
    long vi[SWEEP_MAX_GRID];
    sweep_grid_index(vi, x, g);
    size_t off = 0;
    buf[0] = 0;
    for (int i = x->ngrid - 1; i >= 0; i--)
        for (int k = 0; k < x->grid[i].nopts && off < n; k++)
            off += (size_t)snprintf(buf + off, n - off, "%s%s=%s", off ? " " : "", x->grid[i].opt[k],
                                    x->grid[i].val[vi[i]][k]);
}

/* FNV-1a over a token and its separator. */
static void sweep_hash(uint64_t *h, const char *t, char sep)
{
    for (const char *p = t; *p; p++)
        *h = (*h ^ (unsigned char)*p) * 0x100000001b3ull;
    *h = (*h ^ (unsigned char)sep) * 0x100000001b3ull;
}

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
    const opts_def_t *d = opts_find(opt);
    if (d && (d->where & OPTS_NOT_IN_EXPERIMENTS))
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

int sweep_parse(sweep_t *x, const char *path, const sweep_overrides_t *ov, err_t *e)
{
    unsigned char *buf;
    size_t len;
    memset(x, 0, sizeof *x);
    x->path = path;
    err_t le = {0};
    if (io_read_file(path, &buf, &len, &le))
        return err_set(e, le.code, "experiment file: %s", le.msg);
    char *text = (char *)buf;
    if (ov && (ov->samples > 0 || ov->nsets > 0)) {
        text = sweep_override_text((const char *)buf, len, ov, &len, e);
        free(buf);
        if (!text)
            return ERR_USAGE;
        buf = (unsigned char *)text;
    }
    int rc = sweep_parse_text(x, path, text, len, e);
    free(buf);
    return rc;
}

int sweep_parse_text(sweep_t *x, const char *path, const char *text, size_t tlen, err_t *e)
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
        if (nt > SWEEP_MAX_VALS + 3) {
            rc = err_set(e, ERR_USAGE, "%s:%d: more than %d values on one line", path, ln, SWEEP_MAX_VALS);
            break;
        }
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
                if (nt - 2 > SWEEP_MAX_VALS)
                    rc = err_set(e, ERR_USAGE, "%s:%d: more than %d grid values", path, ln, SWEEP_MAX_VALS);
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
                    run_cfg_t *tmp = err_malloc(1, sizeof *tmp);
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
                pp->nv = nt - 3; /* checked against the grid below */
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
            for (int i = 1; i < nt && !rc; i++)
                if (x->nlabels == SWEEP_MAX_VALS)
                    rc = err_set(e, ERR_USAGE, "%s:%d: more than %d labels", path, ln, SWEEP_MAX_VALS);
                else
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
        int n = x->paper[i].nv;
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
    run_cfg_t *c = err_malloc(1, sizeof *c);
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

int sweep_check(const char *path, const sweep_overrides_t *ov, err_t *e)
{
    sweep_t *x = err_malloc(1, sizeof *x);
    int rc = sweep_parse(x, path, ov, e);
    if (!rc) /* what a run would do: the file is valid, its grid and its outputs */
        printf("%s: ok, experiment %s: %ld grid points (%d grid line%s); writes %s.csv, %s.md and %s.png\n", path,
               x->name, x->npoints, x->ngrid, x->ngrid == 1 ? "" : "s", x->name, x->name, x->name);
    sweep_free(x);
    free(x);
    return rc;
}
