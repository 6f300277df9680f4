/* plot_gp -- what the sweep's plots share: gnuplot's strings and ticks, the colours, running it */
#include "sweep/sweep_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

/* Colours a reader tells apart on white (no yellow), then point shapes, cycled per series. */
const char *const plot_colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                          "#e377c2", "#17becf", "#7f7f7f", "#5254a3", "#aec7e8", "#ff9896",
                                          "#98df8a", "#ffbb78", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5",
                                          "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"};
const int plot_ncolors = (int)(sizeof plot_colors / sizeof plot_colors[0]);

/* Write s as a single-quoted gnuplot string for an enhanced-text terminal: the markup characters
 * are escaped, so names like rel_fro print as written. */
void plot_str(FILE *p, const char *s)
{
    fputc('\'', p);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', p);
        else if (strchr("^_@&~{}\\", *s))
            fputc('\\', p);
        fputc(*s, p);
    }
    fputc('\'', p);
}

/* Run gnuplot on script gp (drawing into tmp), then move tmp to png; the script and its data
 * file are removed; a failure is a warning (the report stands without its picture). */
void sweep_gnuplot(const char *gp, const char *dat, const char *tmp, const char *png)
{
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", gp);
    int st = system(cmd);
    if (getenv("AMLA_KEEP_PLOT_SCRIPT") == NULL) {
        unlink(dat);
        unlink(gp);
    }
    if (st != 0 || rename(tmp, png) != 0) {
        unlink(tmp);
        fprintf(stderr, "amla-lab: warning: gnuplot failed; no plot %s\n", png);
    }
}

int plot_have_gnuplot(const char *what, const char *name)
{
    if (system("command -v gnuplot >/dev/null 2>&1") == 0)
        return 1;
    fprintf(stderr, "amla-lab: warning: gnuplot not found; no %s for %s (apt-get install gnuplot-nox)\n", what, name);
    return 0;
}

/* Log-axis ticks over [lo, hi]: every decade as 10^k; 1, 2 and 5 times each decade where the
 * range spans fewer than three decades; every digit times it where it spans about one. */
void plot_log_tics(FILE *p, const char *axis, double lo, double hi)
{
    int k0 = (int)floor(log10(lo)), k1 = (int)ceil(log10(hi));
    double span = log10(hi / lo);
    int step[2][9] = {{1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}, nstep = span < 1.2 ? 9 : span < 3 ? 3 : 1;
    fprintf(p, "set %stics (", axis);
    int first = 1;
    for (int k = k0; k <= k1; k++)
        for (int i = 0; i < nstep; i++) {
            int m = step[nstep == 9][i];
            double v = m * pow(10.0, k);
            if (v < lo || v > hi)
                continue;
            if (m == 1)
                fprintf(p, "%s\"10^{%d}\" %.17g", first ? "" : ", ", k, v);
            else
                fprintf(p, "%s\"%d·10^{%d}\" %.17g", first ? "" : ", ", m, k, v);
            first = 0;
        }
    fprintf(p, ")\nset m%stics 10\n", axis);
}

/* Wrap text at spaces into lines of at most width characters; returns the number of lines. */
int plot_wrap(char lines[][160], int maxlines, const char *text, size_t width)
{
    int n = 0;
    const char *s = text;
    while (*s && n < maxlines) {
        size_t len = strlen(s);
        if (len > width) {
            len = width;
            while (len > 0 && s[len] != ' ')
                len--;
            if (len == 0)
                len = width;
        }
        if (len >= 160)
            len = 159;
        memcpy(lines[n], s, len);
        lines[n++][len] = 0;
        s += len;
        while (*s == ' ')
            s++;
    }
    return n;
}
