/* check_int -- what check.c and screen.c share: the screening's plan and steps */
#ifndef AMLA_CHECK_INT_H
#define AMLA_CHECK_INT_H

#include "run/check.h"

/* The screening: every candidate on a part of the case, whole (entry, KV group) units spread over it, so that a
 * split-KV or split-K schedule is the one the whole case gets; the candidates clearly behind the leaders there
 * (more than twice the fewest elements that differ from the kernel's, plus CHECK_SCREEN_SLACK of the part) are
 * not run in full and are listed in r->screened. Nothing is screened where the case has fewer than two units, or
 * where no more than CHECK_LEADERS candidates would run anyway. */
typedef struct {
    long units, part_n, k; /* k of the units marked in mask (k 0: no screening), their part_n elements of O */
    unsigned char *mask;
    long *diff; /* [nvariants]: elements of the part that differ from the kernel's (LONG_MAX: not run) */
} check_screen_t;

/* The part to screen on (none where screen is 0, the case has fewer than two units, or few candidates). */
void check_screen_plan(check_screen_t *p, const run_cfg_t *c, int screen);
/* Candidate slot v on the part: how many of its elements differ from the kernel's (into p->diff). */
int check_screen_one(check_screen_t *p, const run_cfg_t *c, const double *kout, int v, err_t *e);
/* The leaders: full[v - 1] = 0 for the others, which go to r->screened. */
void check_screen_decide(check_result_t *r, const check_screen_t *p, const run_cfg_t *c, unsigned char *full);

#endif
