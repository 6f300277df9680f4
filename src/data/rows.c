/* rows -- what the case loaders share: q, k and v decoded from their codes, and an entry's rows taken out of a
 * batched or packed array */
#include "data/rows.h"

#include <math.h>

int gen_decode_inputs(io_npy_t a[3], const char *const path[], int have_v, const fmt_id_t fmt[3], err_t *e)
{
    int rc = ERR_OK;
    for (int i = 0; i < 3 && !rc; i++)
        if (i < 2 || have_v) {
            rc = io_npy_decode(&a[i], fmt[i], path[i], "--in-format", e);
            if (!rc && a[i].integer)
                rc = err_set(e, ERR_USAGE, "%s holds integers: need floating-point values or bit patterns", path[i]);
        }
    return rc;
}

int gen_take_rows(double *dst, const io_npy_t *a, long b, long row0, long s, long h, long d, long dsrc, fmt_id_t f,
                  const char *path, err_t *e)
{
    for (long j = 0; j < s; j++)
        for (long hh = 0; hh < h; hh++)
            for (long c = 0; c < d; c++) {
                double x = a->data[((row0 + j) * h + hh) * dsrc + c];
                double r = fmt_round(x, f, FMT_RNE, 0, NULL);
                const char *why = isfinite(x) ? "beyond the input format's largest value" : "not finite";
                if (!isfinite(r) && b < 0)
                    return err_set(e, ERR_USAGE, "%s: element [%ld, %ld, %ld] is %s", path, row0 + j, hh, c, why);
                if (!isfinite(r))
                    return err_set(e, ERR_USAGE, "%s: element [%ld, %ld, %ld, %ld] is %s", path, b, j, hh, c, why);
                dst[(hh * s + j) * d + c] = r;
            }
    return ERR_OK;
}

