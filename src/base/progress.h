/* progress -- a progress line on a terminal: samples done, total and the time left */
#ifndef AMLA_PROGRESS_H
#define AMLA_PROGRESS_H

#include <stdio.h>

/* Seconds on the monotonic clock. */
double progress_now(void);

/* Draw "\rLABEL [====    ] done/total samples, ETA 1m05s" on f; eta is estimated from the
 * fresh samples finished in the elapsed seconds (the others were done before: a resumed run).
 * The line ends with a newline when done == total. */
void progress_draw(FILE *f, const char *label, long done, long total, long fresh, double elapsed);

#endif
