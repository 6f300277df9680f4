/* plot -- a sweep's plots through gnuplot (skipped when it is not installed) */
#include "sweep/sweep_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "run/metric.h"

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
int sweep_write_png(const sweep_state_t *s, const run_cfg_t *c0, const char *outdir, err_t *e)
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

void sweep_write_attr_png(const sweep_state_t *s, const run_cfg_t *c0, const char *outdir)
{
    const sweep_t *x = s->x;
    if (!c0->attribute)
        return;
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr, "amla-lab: warning: gnuplot not found; no attribution plot for %s (apt-get install gnuplot-nox)\n",
                s->x->name);
        return;
    }
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

