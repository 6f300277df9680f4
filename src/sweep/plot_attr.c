/* plot_attr -- a sweep's attribution plot: each rounding site's share of the error and the
 * errors themselves, through gnuplot */
#include "sweep/sweep_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A share below this fraction in every bar leaves its site out of the attribution plot's key. */
#define PLOT_MIN_SHARE 0.001
/* The error axis spans at most this factor below the largest error (smaller ones sit on the axis). */
#define PLOT_ATTR_RANGE 1e-6

/* The attribution plot's data: a row per (point, variant), its full error, then per drawn site
 * its share (%) and its error alone. */
typedef struct {
    FILE *d;
    const char *const *sites;
    int ns, n;
    double lo, hi;      /* range of the errors */
    char nofull[1024];  /* [bar]: no sample without NaN/Inf or numeric events, so no error */
} sweep_bars_t;

static double plot_site_value(const sweep_attr_t *at, const char *site, const double *what)
{
    const run_cfg_t *cg = at->cg;
    for (int a = 0; a < cg->nvariants; a++)
        if (cg->vparent[a] == at->v && cg->vmode[a] == RUN_ATTR_ONLY && strcmp(cg->vsite[a], site) == 0)
            return what[a];
    return NAN;
}

static void plot_range(sweep_bars_t *b, double v)
{
    if (isfinite(v) && v > 0) {
        b->lo = v < b->lo ? v : b->lo;
        b->hi = v > b->hi ? v : b->hi;
    }
}

static void sweep_attr_bar(const sweep_attr_t *at, void *arg)
{
    sweep_bars_t *b = arg;
    double full = at->mean[at->v + 1];
    fprintf(b->d, "\"%s %s\" %.6g", at->label, at->cg->vspec[at->v], full);
    plot_range(b, full);
    if (b->n < (int)sizeof b->nofull)
        b->nofull[b->n] = isnan(full);
    for (int i = 0; i < b->ns; i++) {
        double sh = plot_site_value(at, b->sites[i], at->share), alone = plot_site_value(at, b->sites[i], at->alone);
        fprintf(b->d, " %.6g %.6g", isnan(sh) ? 0.0 : 100 * sh, alone);
        plot_range(b, alone);
    }
    fputc('\n', b->d);
    b->n++;
}

/* Sites whose share reaches PLOT_MIN_SHARE in some bar, in order of first appearance. */
typedef struct {
    const char *sites[64];
    int ns;
} sweep_used_t;

static void sweep_attr_used(const sweep_attr_t *at, void *arg)
{
    sweep_used_t *u = arg;
    const run_cfg_t *cg = at->cg;
    for (int a = 0; a < cg->nvariants; a++) {
        if (cg->vparent[a] != at->v || cg->vmode[a] != RUN_ATTR_ONLY || !(at->share[a] >= PLOT_MIN_SHARE))
            continue;
        int found = 0;
        for (int i = 0; i < u->ns; i++)
            found |= strcmp(u->sites[i], cg->vsite[a]) == 0;
        if (!found && u->ns < 64)
            u->sites[u->ns++] = cg->vsite[a];
    }
}

/* Two panels over the same bars (a grid point and variant each): each site's share of rel_fro²,
 * stacked, and below it on a log axis the full error and each site's error alone, so that a 100%
 * share of 1e-6 and one of 3e-2 look different. */
void sweep_write_attr_png(const sweep_state_t *s, const run_cfg_t *c0, const char *outdir)
{
    const sweep_t *x = s->x;
    if (!c0->attribute || !plot_have_gnuplot("attribution plot", x->name))
        return;
    char dat[4096], gp[4096], png[4096], tmp[4096];
    snprintf(dat, sizeof dat, "%s/.%s.attr.dat", outdir, x->name);
    snprintf(gp, sizeof gp, "%s/.%s.attr.gp", outdir, x->name);
    snprintf(png, sizeof png, "%s/%s-attribution.png", outdir, x->name);
    snprintf(tmp, sizeof tmp, "%s/.%s-attribution.png.tmp", outdir, x->name);
    sweep_used_t used = {{0}, 0};
    sweep_for_attr(s, sweep_attr_used, &used);
    FILE *d = fopen(dat, "w");
    if (!d)
        return;
    sweep_bars_t bars = {d, used.sites, used.ns, 0, INFINITY, -INFINITY, {0}};
    sweep_for_attr(s, sweep_attr_bar, &bars);
    fclose(d);
    FILE *p = fopen(gp, "w");
    if (!p)
        return;
    int nbars = bars.n, W = 360 + 62 * nbars, H = 920;
    double left = 80.0 / W, right = 1 - 200.0 / W;
    char title[4][160];
    int ntitle = plot_wrap(title, 3, x->title, (size_t)(W / 9));
    fprintf(p, "set encoding utf8\nset terminal pngcairo size %d,%d enhanced font ',11'\nset output '%s'\n", W, H, tmp);
    fprintf(p, "set datafile missing 'nan'\nset multiplot\nset lmargin at screen %.4f\nset rmargin at screen %.4f\n",
            left, right);
    for (int i = 0; i < ntitle; i++) {
        fprintf(p, "set label %d ", 100 + i);
        plot_str(p, title[i]);
        fprintf(p, " at screen 0.5, screen %.4f center font ',13'\n", 1 - (24.0 * i + 20) / H);
    }
    double t1 = 1 - (24.0 * ntitle + 40) / H;
    fprintf(p, "set tmargin at screen %.4f\nset bmargin at screen %.4f\nset xrange [-0.5:%g]\n", t1, 0.58, nbars - 0.5);
    fprintf(p, "set title 'each site''s share of rel\\_fro² (its error alone, squared, over the sum of squares)' "
               "font ',11'\nset ylabel 'share (%%)'\nset yrange [0:100]\nset grid ytics lc rgb '#dddddd'\n"
               "set style data histograms\nset style histogram rowstacked\nset style fill solid border -1\n"
               "set boxwidth 0.75\nset key at screen %.4f, screen %.4f left top font ',10' title 'rounding site'\n"
               "set format x ''\nset xtics scale 0\n",
            right + 12.0 / W, t1);
    for (int i = 0; i < nbars && i < (int)sizeof bars.nofull; i++)
        if (bars.nofull[i])
            fprintf(p, "set label %d 'no sample without NaN/Inf or numeric events' at first %d, first 50 center rotate "
                       "by 90 font ',10'\n",
                    200 + i, i);
    fprintf(p, "plot ");
    for (int i = 0; i < used.ns; i++) {
        fprintf(p, "%s'%s' using %d lc rgb '%s' title ", i ? ", " : "", dat, 3 + 2 * i, plot_colors[i % plot_ncolors]);
        plot_str(p, used.sites[i]);
    }
    if (!used.ns)
        fprintf(p, "'%s' using (0) notitle", dat);
    fprintf(p, "\nunset label\nunset key\nunset style\nset style fill solid border -1\n");
    fprintf(p, "set tmargin at screen 0.53\nset bmargin at screen 0.26\nset title 'the errors themselves: every site "
               "rounded (black bar), and each site alone (its colour)' font ',11'\n"
               "set ylabel 'relative Frobenius error'\nset logscale y\nset format x '%%g'\n");
    if (bars.lo <= bars.hi) {
        double hi = bars.hi * 2, lo = bars.lo / 2 > hi * PLOT_ATTR_RANGE ? bars.lo / 2 : hi * PLOT_ATTR_RANGE;
        fprintf(p, "set yrange [%.6g:%.6g]\n", lo, hi);
        plot_log_tics(p, "y", lo, hi);
    } else
        fprintf(p, "set autoscale y\n");
    fprintf(p, "set grid xtics ytics lc rgb '#dddddd'\nset xtics (");
    for (int i = 0; i < nbars; i++)
        fprintf(p, "%s'' %d", i ? ", " : "", i);
    fprintf(p, ") rotate by -35 scale 0\n");
    fprintf(p, "plot '%s' using 0:2:(0.32):xtic(1) with xerrorbars lc rgb '#000000' pt 0 lw 3 notitle", dat);
    for (int i = 0; i < used.ns; i++)
        fprintf(p, ", '%s' using ($0 + %.3f):%d with points lc rgb '%s' pt 7 ps 1.2 notitle", dat,
                0.5 * (i - (used.ns - 1) / 2.0) / (used.ns > 1 ? used.ns : 1), 4 + 2 * i,
                plot_colors[i % plot_ncolors]);
    fprintf(p, "\nunset multiplot\n");
    fclose(p);
    sweep_gnuplot(gp, dat, tmp, png);
}
