/* attribution -- how much of a variant's error each rounding site causes */
#ifndef AMLA_ATTRIBUTION_H
#define AMLA_ATTRIBUTION_H

#include "config/config.h"

/* For selected variant v, given the mean of metric k per result slot (slot = index + 1,
 * 0 golden), for each of v's ONLY runs a (one site S rounded): alone[a] = its error,
 * removed[a] = v's error minus the error with every site but S rounded, and share[a] =
 * alone^2 / sum of alone^2 over v's sites for rel_fro and rmse (independent errors add in
 * squares), alone / sum of alone for cos_diff (already a square). */
void run_attribution(const run_cfg_t *c, int v, int k, const double *mean_of_slot, double *alone,
                     double *removed, double *share);

#endif
