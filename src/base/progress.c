/* progress -- a progress line on a terminal: samples done, total and the time left */
#include "base/progress.h"

#include <time.h>

double progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void progress_draw(FILE *f, const char *label, long done, long total, long fresh, double elapsed)
{
    double eta = fresh > 0 ? elapsed / (double)fresh * (double)(total - done) : 0;
    int w = 30, filled = (int)((double)w * (double)done / (double)(total ? total : 1));
    fprintf(f, "\r%s [", label);
    for (int i = 0; i < w; i++)
        fputc(i < filled ? '=' : ' ', f);
    fprintf(f, "] %ld/%ld samples, ETA %dm%02ds ", done, total, (int)(eta / 60), (int)eta % 60);
    if (done == total)
        fputc('\n', f);
    fflush(f);
}
