/* golden_mpfr -- attention entirely in MPFR, to check Golden against (tests only) */
#ifndef AMLA_GOLDEN_MPFR_H
#define AMLA_GOLDEN_MPFR_H

#include "data/problem.h"

/* Reference: everything in MPFR at prec bits (small shapes only; for tests). */
void golden_attention_mpfr(double *o, const attn_input_t *in, double scale, long prec);

#endif
