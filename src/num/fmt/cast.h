/* cast -- rounding numbers read as text: `amla-lab cast`'s stream of tokens */
#ifndef AMLA_CAST_H
#define AMLA_CAST_H

#include <stdio.h>

#include "base/err.h"
#include "num/fmt/fmt.h"

/* Longest token accepted (a longer one is refused, never cut and parsed). */
#define CAST_MAX_TOKEN 255

/* Read whitespace-separated tokens from in: decimal or hex-float numbers, nan, inf (or with
 * bits, binary32 patterns 0xHHHHHHHH); each is taken as a binary32 value, rounded to `to`
 * under mode (saturating if sat) and written to out as "0xCODE VALUE". ERR_USAGE names the
 * first token that is not one, shown with its non-printable bytes escaped. */
int cast_stream(FILE *in, FILE *out, fmt_id_t to, fmt_round_t mode, int sat, int bits, fmt_rng_t *rng, err_t *e);

#endif
