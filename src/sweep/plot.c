/* plot -- a sweep's plot of a metric against a grid option, through gnuplot (skipped, with a
 * warning, when it is not installed) */
#include "sweep/sweep_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "base/err.h"
#include "config/opts.h"
#include "run/metric.h"

/* filled circle, square, triangle up, triangle down, diamond, pentagon; then their open forms */
static const int plot_points[] = {7, 5, 9, 11, 13, 15, 6, 4, 8, 10, 12, 14};
#define PLOT_NSHAPES ((int)(sizeof plot_points / sizeof plot_points[0]) / 2) /* filled, then open */

/* Lab series are offset in x by this fraction of the axis per series, so that equal series and
 * their CI bars stay visible. */
#define PLOT_DODGE 0.006

/* A metric as the axis names it. */
static const char *plot_metric_words(int k)
{
    switch (k) {
    case METRIC_REL_FRO: return "relative Frobenius error";
    case METRIC_RMSE: return "RMSE";
    case METRIC_COS_SIM: return "cosine similarity";
    case METRIC_COS_DIFF: return "cos_diff (FlashMLA's 1 - 2<a,b>/(|a|^2 + |b|^2))";
    case METRIC_MAX_ABS: return "largest absolute error";
    default: return metric_names[k];
    }
}

/* An option as the axis names it: a few in words, the rest by the option table's help text. */
static void plot_option_words(char *buf, size_t n, const char *opt)
{
    static const char *const words[][2] = {
        {"sigma", "σ  (Q, K, V ~ N(0, σ²))"},
        {"high", "a  (Q, K, V ~ U(-a, a))"},
        {"ctx", "context length (keys per KV head)"},
        {"layer-profile", "layer profile of the MLA-like cache"},
        {"dk", "head dim of Q and K"},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(words[i][0], opt) == 0) {
            snprintf(buf, n, "%s", words[i][1]);
            return;
        }
    const opts_def_t *d = opts_find(opt);
    if (d && d->help)
        snprintf(buf, n, "%s (--%s)", d->help, opt);
    else
        snprintf(buf, n, "%s", opt);
}

/* How the grid becomes a picture: the x option's grid line gives the x axis (numbers on a line,
 * or one category per value tuple when its values repeat or are not numbers); every other grid
 * line multiplies the panels. */
typedef struct {
    int xg, xk;      /* the grid line holding the x option, and its place in the tuple */
    int categorical; /* one tick per tuple, points without lines */
    long nx, npanels;
    long *order; /* [nx]: the tuples of grid line xg by increasing x */
    long *point; /* [npanels * nx]: the grid point of (panel, tuple) */
    double *xv;  /* [nx]: each tuple's x position */
} plot_layout_t;

static int plot_layout(plot_layout_t *l, const sweep_t *x)
{
    l->xg = -1;
    for (int i = 0; i < x->ngrid; i++)
        for (int k = 0; k < x->grid[i].nopts; k++)
            if (strcmp(x->grid[i].opt[k], x->plot_x) == 0)
                l->xg = i, l->xk = k;
    if (l->xg < 0)
        return -1;
    const sweep_grid_t *gr = &x->grid[l->xg];
    l->nx = gr->nvals;
    l->npanels = x->npoints / l->nx;
    l->order = err_malloc((size_t)l->nx, sizeof *l->order);
    l->xv = err_malloc((size_t)l->nx, sizeof *l->xv);
    l->point = err_malloc((size_t)x->npoints, sizeof *l->point);
    l->categorical = 0;
    for (long t = 0; t < l->nx; t++) {
        char *end;
        const char *v = gr->val[t][l->xk];
        l->xv[t] = strtod(v, &end);
        l->categorical |= end == v || *end != 0 || !isfinite(l->xv[t]);
        for (long u = 0; u < t; u++)
            l->categorical |= l->xv[u] == l->xv[t];
        l->order[t] = t;
    }
    if (l->categorical)
        for (long t = 0; t < l->nx; t++)
            l->xv[t] = (double)t;
    else /* insertion sort by x: a line is drawn in data order */
        for (long t = 1; t < l->nx; t++)
            for (long u = t; u > 0 && l->xv[l->order[u]] < l->xv[l->order[u - 1]]; u--) {
                long tmp = l->order[u];
                l->order[u] = l->order[u - 1];
                l->order[u - 1] = tmp;
            }
    for (long g = 0; g < x->npoints; g++) {
        long vi[SWEEP_MAX_GRID], panel = 0;
        sweep_grid_index(vi, x, g);
        for (int i = 0; i < x->ngrid; i++)
            if (i != l->xg)
                panel = panel * x->grid[i].nvals + vi[i];
        l->point[panel * l->nx + vi[l->xg]] = g;
    }
    return 0;
}

static void plot_layout_free(plot_layout_t *l)
{
    free(l->order);
    free(l->point);
    free(l->xv);
}

/* The panel's title: the other grid lines' values at its points. */
static void plot_panel_title(char *buf, size_t n, const sweep_t *x, const plot_layout_t *l, long panel)
{
    long vi[SWEEP_MAX_GRID];
    sweep_grid_index(vi, x, l->point[panel * l->nx]);
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < x->ngrid && off < n; i++)
        for (int k = 0; i != l->xg && k < x->grid[i].nopts && off < n; k++)
            off += (size_t)snprintf(buf + off, n - off, "%s%s = %s", off ? ", " : "", x->grid[i].opt[k],
                                    x->grid[i].val[vi[i]][k]);
}

/* A tuple's tick label: the experiment's label of that point when there is one panel, else its values. */
static void plot_tick_label(char *buf, size_t n, const sweep_t *x, const plot_layout_t *l, long t)
{
    if (!l->categorical) {
        snprintf(buf, n, "%s", x->grid[l->xg].val[t][l->xk]);
        return;
    }
    if (l->npanels == 1 && x->nlabels == x->npoints) {
        snprintf(buf, n, "%s", x->label[l->point[t]]);
        return;
    }
    size_t off = 0;
    buf[0] = 0;
    for (int k = 0; k < x->grid[l->xg].nopts && off < n; k++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s=%s", off ? " " : "", x->grid[l->xg].opt[k],
                                x->grid[l->xg].val[t][k]);
}

typedef struct {
    int nv;
    const char **name; /* [nv] the plotted variants (the reference and attribution-only runs are not) */
    int *has_paper;    /* [nv] */
    double *mean, *ci, *paper; /* [npoints * nv] */
    double lo, hi;             /* the data's range (positive values only on a log axis) */
} plot_data_t;

static void plot_collect(plot_data_t *d, const sweep_state_t *s, const run_cfg_t *c0)
{
    const sweep_t *x = s->x;
    int k = x->plot_metric;
    d->name = err_malloc((size_t)c0->nvariants + 1, sizeof *d->name);
    d->has_paper = err_malloc((size_t)c0->nvariants + 1, sizeof *d->has_paper);
    d->nv = 0;
    for (int v = 0; v < c0->nvariants; v++)
        if (c0->vmode[v] == RUN_ATTR_NONE)
            d->name[d->nv++] = c0->vspec[v];
    size_t n = (size_t)x->npoints * (size_t)(d->nv + 1);
    d->mean = err_malloc(n, sizeof *d->mean);
    d->ci = err_malloc(n, sizeof *d->ci);
    d->paper = err_malloc(n, sizeof *d->paper);
    d->lo = INFINITY;
    d->hi = -INFINITY;
    for (int v = 0; v < d->nv; v++) {
        d->has_paper[v] = 0;
        for (int i = 0; i < x->npaper; i++)
            d->has_paper[v] |= x->paper[i].metric == k && strcmp(x->paper[i].variant, d->name[v]) == 0;
    }
    for (long g = 0; g < x->npoints; g++) {
        const run_cfg_t *cg = &s->cfg[g]; /* resolved once, where the sweep ran */
        for (int v = 0; v < d->nv; v++) {
            size_t j = (size_t)g * (size_t)d->nv + (size_t)v;
            double mean = NAN, ci = NAN, paper = NAN;
            sweep_cell_f(s, g, cg->samples, d->name[v], k, 1, &mean, &ci);
            for (int i = 0; i < x->npaper; i++)
                if (x->paper[i].metric == k && strcmp(x->paper[i].variant, d->name[v]) == 0)
                    paper = x->paper[i].v[g];
            ci = isnan(ci) ? 0.0 : ci;
            d->mean[j] = mean;
            d->ci[j] = ci;
            d->paper[j] = paper;
            double cand[3] = {mean - ci > 0 || !x->plot_logy ? mean - ci : mean, mean + ci, paper};
            for (int c = 0; c < 3; c++)
                if (isfinite(cand[c]) && (!x->plot_logy || cand[c] > 0)) {
                    d->lo = cand[c] < d->lo ? cand[c] : d->lo;
                    d->hi = cand[c] > d->hi ? cand[c] : d->hi;
                }
        }
    }
}

static void plot_data_free(plot_data_t *d)
{
    free(d->name);
    free(d->has_paper);
    free(d->mean);
    free(d->ci);
    free(d->paper);
}

/* Series v's x position at xv: offset by PLOT_DODGE of the axis per series step. */
static double plot_dodge(const sweep_t *x, const plot_layout_t *l, double xv, int v, int nv)
{
    double step = PLOT_DODGE * (v - (nv - 1) / 2.0), x0 = l->xv[l->order[0]], x1 = l->xv[l->order[l->nx - 1]];
    if (l->categorical)
        return xv + step * (double)l->nx;
    if (x->plot_logx && x0 > 0)
        return xv * pow(x1 / x0, step);
    return xv + step * (x1 - x0);
}

/* The data file: one block per panel (gnuplot's index), a row per x tuple: x, then per variant
 * its offset x, mean, CI half-width and the paper's value. */
static int plot_write_data(const char *dat, const sweep_t *x, const plot_layout_t *l, const plot_data_t *d, err_t *e)
{
    FILE *f = fopen(dat, "w");
    if (!f)
        return err_set(e, ERR_USAGE, "cannot write %s: %s", dat, strerror(errno));
    for (long pn = 0; pn < l->npanels; pn++) {
        for (long i = 0; i < l->nx; i++) {
            long t = l->order[i], g = l->point[pn * l->nx + t];
            fprintf(f, "%.10g", l->xv[t]);
            for (int v = 0; v < d->nv; v++) {
                size_t j = (size_t)g * (size_t)d->nv + (size_t)v;
                fprintf(f, " %.10g %.10g %.10g %.10g", plot_dodge(x, l, l->xv[t], v, d->nv), d->mean[j], d->ci[j],
                        d->paper[j]);
            }
            fputc('\n', f);
        }
        fprintf(f, "\n\n");
    }
    fclose(f);
    return ERR_OK;
}

/* Metric against the x option: per panel, each variant's lab mean with its 95% CI (filled
 * markers, offset a little in x) and the paper's values (open markers, dashed, drawn on top);
 * a variant with no clean sample at a point gets an x at the top and a line under the plot. */
int sweep_write_png(const sweep_state_t *s, const run_cfg_t *c0, const char *outdir, err_t *e)
{
    const sweep_t *x = s->x;
    if (!x->plot_x || x->plot_metric < 0 || !plot_have_gnuplot("plot", x->name))
        return ERR_OK;
    plot_layout_t l;
    if (plot_layout(&l, x))
        return ERR_OK;
    plot_data_t d;
    plot_collect(&d, s, c0);
    char dat[4096], gp[4096], png[4096], tmp[4096];
    snprintf(dat, sizeof dat, "%s/.%s.plot.dat", outdir, x->name);
    snprintf(gp, sizeof gp, "%s/.%s.plot.gp", outdir, x->name);
    snprintf(png, sizeof png, "%s/%s.png", outdir, x->name);
    snprintf(tmp, sizeof tmp, "%s/.%s.png.tmp", outdir, x->name);
    int rc = plot_write_data(dat, x, &l, &d, e);
    FILE *p = rc ? NULL : fopen(gp, "w");
    if (!rc && !p)
        rc = err_set(e, ERR_USAGE, "cannot write %s: %s", gp, strerror(errno));
    if (rc) {
        plot_layout_free(&l);
        plot_data_free(&d);
        return rc;
    }

    /* geometry in pixels: the title on top, the x label, the notes and the key below */
    int nentries = d.nv;
    for (int v = 0; v < d.nv; v++)
        nentries += d.has_paper[v];
    int np = (int)l.npanels, W = np == 1 ? 1000 : (np * 520 + 140 > 2000 ? 2000 : np * 520 + 140);
    size_t longest = 0;
    for (int v = 0; v < d.nv; v++)
        longest = strlen(d.name[v]) + (d.has_paper[v] ? 8 : 0) > longest ? strlen(d.name[v]) + (d.has_paper[v] ? 8 : 0)
                                                                         : longest;
    int keycols = (W - 40) / (int)(7 * longest + 70), keyrows;
    keycols = keycols < 1 ? 1 : keycols > nentries ? nentries : keycols;
    keyrows = (nentries + keycols - 1) / keycols;
    char title[8][160], missing[4096] = "";
    int ntitle = plot_wrap(title, 6, x->title, (size_t)(W / 9));
    size_t moff = 0;
    char xwords[256], buf[512];
    if (l.categorical) { /* the x grid line's options, as its tuples set them */
        size_t off = (size_t)snprintf(xwords, sizeof xwords, "grid point (");
        for (int k = 0; k < x->grid[l.xg].nopts && off < sizeof xwords; k++)
            off += (size_t)snprintf(xwords + off, sizeof xwords - off, "%s%s", k ? ", " : "", x->grid[l.xg].opt[k]);
        if (off < sizeof xwords)
            snprintf(xwords + off, sizeof xwords - off, ")");
    } else
        plot_option_words(xwords, sizeof xwords, x->plot_x);
    for (int v = 0; v < d.nv; v++) {
        int first = 1;
        for (long pn = 0; pn < l.npanels; pn++)
            for (long i = 0; i < l.nx; i++) {
                long t = l.order[i], g = l.point[pn * l.nx + t];
                if (!isnan(d.mean[(size_t)g * (size_t)d.nv + (size_t)v]) || moff >= sizeof missing - 200)
                    continue;
                sweep_point_label(buf, sizeof buf, x, g);
                if (first)
                    moff += (size_t)snprintf(missing + moff, sizeof missing - moff, "%s%s at %s", moff ? "; " : "",
                                             d.name[v], buf);
                else
                    moff += (size_t)snprintf(missing + moff, sizeof missing - moff, ", %s", buf);
                first = 0;
            }
    }
    int nmissing = moff ? 1 : 0;
    int top = 24 * ntitle + 30 + (np > 1 ? 30 : 8), bottom = 70 + 20 * nmissing + 19 * keyrows;
    int H = 560 + bottom;
    double left = 95.0 / W, right = 1 - 25.0 / W, gap = 55.0 / W, pw = (right - left - gap * (np - 1)) / np;
    double ytop = 1 - (double)top / H, ybot = (double)bottom / H;

    fprintf(p, "set encoding utf8\nset terminal pngcairo size %d,%d enhanced font ',11'\nset output '%s'\n", W, H, tmp);
    fprintf(p, "set datafile missing 'nan'\nset grid xtics ytics mytics lc rgb '#dddddd'\nset border lc rgb '#444444'\n");
    fprintf(p, "set multiplot\n");
    for (int i = 0; i < ntitle; i++) {
        fprintf(p, "set label %d ", 100 + i);
        plot_str(p, title[i]);
        fprintf(p, " at screen 0.5, screen %.4f center font ',13'\n", 1 - (24.0 * i + 20) / H);
    }
    fprintf(p, "set label 110 'lab: filled markers, mean and 95%% CI of the samples without NaN/Inf or numeric events "
               "(offset a little in x)%s' at screen 0.5, screen %.4f center font ',10' tc rgb '#444444'\n",
            nentries > d.nv ? "; paper: open markers" : "", 1 - (24.0 * ntitle + 18) / H);
    if (nmissing) {
        static const char lead[] = "x at the top: no sample without NaN/Inf or numeric events (not drawn): ";
        char note[sizeof lead + sizeof missing];
        memcpy(note, lead, sizeof lead - 1);
        memcpy(note + sizeof lead - 1, missing, strlen(missing) + 1);
        fprintf(p, "set label 111 ");
        plot_str(p, note);
        fprintf(p, " at screen 0.5, screen %.4f center font ',10'\n", (19.0 * keyrows + 22) / H);
    }
    fprintf(p, "set key at screen 0.5, screen %.4f center top vertical maxrows %d reverse Left width 2 samplen 2.5 "
               "font ',10'\n",
            (19.0 * keyrows + 8) / H, keyrows);
    fprintf(p, "set xlabel ");
    plot_str(p, xwords);
    fprintf(p, "\nset ylabel ");
    snprintf(buf, sizeof buf, "%s against Golden", plot_metric_words(x->plot_metric));
    plot_str(p, buf);
    fprintf(p, "\nset tmargin at screen %.4f\nset bmargin at screen %.4f\n", ytop, ybot);

    /* axes shared by every panel */
    if (x->plot_logy && d.lo <= d.hi) {
        double lo = d.lo / 1.3, hi = d.hi * 1.3;
        fprintf(p, "set logscale y\nset yrange [%.6g:%.6g]\n", lo, hi);
        plot_log_tics(p, "y", lo, hi);
    } else if (x->plot_logy)
        fprintf(p, "set logscale y\n");
    double x0 = l.xv[l.order[0]], x1 = l.xv[l.order[l.nx - 1]];
    if (l.categorical)
        fprintf(p, "set xrange [-0.5:%.6g]\n", l.nx - 0.5);
    else if (x->plot_logx && x0 > 0)
        fprintf(p, "set logscale x\nset xrange [%.6g:%.6g]\n", x0 / pow(x1 / x0, 0.06), x1 * pow(x1 / x0, 0.06));
    else
        fprintf(p, "set xrange [%.6g:%.6g]\n", x0 - 0.06 * (x1 - x0 + 1), x1 + 0.06 * (x1 - x0 + 1));
    fprintf(p, "set xtics (");
    for (long t = 0; t < l.nx; t++) {
        plot_tick_label(buf, sizeof buf, x, &l, t);
        fprintf(p, "%s", t ? ", " : "");
        plot_str(p, buf);
        fprintf(p, " %.10g", l.xv[t]);
    }
    fprintf(p, ")%s\nunset mxtics\n", l.categorical && l.nx > 4 ? " rotate by -20" : "");

    for (long pn = 0; pn < l.npanels; pn++) {
        double x_l = left + (double)pn * (pw + gap);
        fprintf(p, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n", x_l, x_l + pw);
        if (np > 1) {
            plot_panel_title(buf, sizeof buf, x, &l, pn);
            fprintf(p, "set title ");
            plot_str(p, buf);
            fprintf(p, " font ',11'\n");
        }
        for (int v = 0; v < d.nv; v++)
            for (long i = 0; i < l.nx; i++) {
                long t = l.order[i];
                if (isnan(d.mean[(size_t)l.point[pn * l.nx + t] * (size_t)d.nv + (size_t)v]))
                    fprintf(p, "set label %ld '×' at first %.10g, graph 0.97 center tc rgb '%s' font ',14'\n",
                            1 + (long)v * l.nx + i, plot_dodge(x, &l, l.xv[t], v, d.nv),
                            plot_colors[v % plot_ncolors]);
            }
        fprintf(p, "plot ");
        for (int v = 0; v < d.nv; v++) {
            int col = 2 + 4 * v;
            fprintf(p, "%s'%s' index %ld using %d:%d:%d with %s lc rgb '%s' pt %d ps 1.1 lw 1.5 title %s", v ? ", \\\n  " : "",
                    dat, pn, col, col + 1, col + 2, l.categorical ? "yerrorbars" : "yerrorlines",
                    plot_colors[v % plot_ncolors], plot_points[v % PLOT_NSHAPES], pn ? "''" : "");
            if (!pn)
                plot_str(p, d.name[v]);
        }
        for (int v = 0; v < d.nv; v++) {
            if (!d.has_paper[v])
                continue;
            fprintf(p, ", \\\n  '%s' index %ld using 1:%d with %s dt 2 lc rgb '%s' pt %d ps 1.9 lw 1.5 title ", dat, pn,
                    5 + 4 * v, l.categorical ? "points" : "linespoints", plot_colors[v % plot_ncolors],
                    plot_points[PLOT_NSHAPES + v % PLOT_NSHAPES]);
            if (pn)
                fprintf(p, "''");
            else {
                snprintf(buf, sizeof buf, "%s (paper)", d.name[v]);
                plot_str(p, buf);
            }
        }
        fprintf(p, "\n");
        if (pn == 0)
            fprintf(p, "unset label\nunset key\n");
        else
            fprintf(p, "unset label\n");
        fprintf(p, "unset ylabel\n");
    }
    fprintf(p, "unset multiplot\n");
    fclose(p);
    sweep_gnuplot(gp, dat, tmp, png);
    plot_layout_free(&l);
    plot_data_free(&d);
    return ERR_OK;
}
