/* rows -- what the case loaders (data/gen.c, data/varlen.c) share */
#ifndef AMLA_DATA_ROWS_H
#define AMLA_DATA_ROWS_H

#include "base/err.h"
#include "data/npy.h"
#include "num/fmt/fmt.h"

/* What the loaders share: the codes of q, k (and v with have_v) decoded in their formats (integer arrays refused),
 * and rows row0 .. row0 + s - 1 of a [rows, h, dsrc] array (a batched [B, S, h, dsrc] one: row0 = b S), their first
 * d columns, into dst [h][s][d] rounded to f (an element not finite there refused, named [b, j, h, c], or for b < 0
 * a packed array's [row, h, c]). */
int gen_decode_inputs(io_npy_t a[3], const char *const path[], int have_v, const fmt_id_t fmt[3], err_t *e);
int gen_take_rows(double *dst, const io_npy_t *a, long b, long row0, long s, long h, long d, long dsrc, fmt_id_t f,
                  const char *path, err_t *e);

#endif
