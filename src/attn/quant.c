/* quant -- amax scales per group and the scaled conversion to FP8 */
#include "base/err.h"
#include "attn/quant.h"
#include "num/vec/vec.h"

#include <math.h>
#include <stdlib.h>

void quant_scales_init(quant_scales_t *s, long rows, long cols, const quant_cfg_t *cfg)
{
    s->rows = rows;
    s->cols = cols;
    switch (cfg->gran) {
    case QUANT_TENSOR:
        s->gr = rows;
        s->gc = cols;
        break;
    case QUANT_TOKEN:
        s->gr = 1;
        s->gc = cols;
        break;
    case QUANT_CHANNEL:
        s->gr = rows;
        s->gc = 1;
        break;
    case QUANT_BLOCK:
    default:
        s->gr = cfg->block_rows;
        s->gc = cfg->block_cols;
        break;
    }
    if (s->gr < 1)
        s->gr = 1;
    if (s->gc < 1)
        s->gc = 1;
    s->ngr = (rows + s->gr - 1) / s->gr;
    s->ngc = (cols + s->gc - 1) / s->gc;
    s->scale = err_calloc((size_t)(s->ngr * s->ngc), sizeof(double));
}

void quant_scales_rows(quant_scales_t *s, const double *x, long r0, long n, long ld, const quant_cfg_t *cfg)
{
    long g0 = r0 / s->gr, g1 = (r0 + n + s->gr - 1) / s->gr, r1 = g1 * s->gr < s->rows ? g1 * s->gr : s->rows;
    double fmax = fmt_table[cfg->fmt].max_finite;
    for (long i = g0 * s->ngc; i < g1 * s->ngc; i++)
        s->scale[i] = 0;
    for (long r = g0 * s->gr; r < r1; r++) /* amax first, group by group (no division per element) */
        for (long c0 = 0, gi = (r / s->gr) * s->ngc; c0 < s->cols; c0 += s->gc, gi++) {
            long c1 = c0 + s->gc < s->cols ? c0 + s->gc : s->cols;
            s->scale[gi] = vec_absmax(x + r * ld + c0, c1 - c0, s->scale[gi]);
        }
    for (long i = g0 * s->ngc; i < g1 * s->ngc; i++) {
        double amax = s->scale[i];
        if (cfg->static_scale > 0) {
            s->scale[i] = cfg->static_scale;
        } else if (cfg->pow2) {
            double t = amax / fmax > cfg->pow2_floor ? amax / fmax : cfg->pow2_floor;
            s->scale[i] = t > 0 ? ldexp(1.0, (int)ceil(log2(t))) : 1.0;
        } else {
            /* binary32 arithmetic, as the kernels compute it */
            s->scale[i] = fmt_fp32(fmt_fp32(amax > QUANT_AMAX_FLOOR ? amax : QUANT_AMAX_FLOOR) / fmax);
        }
    }
}

void quant_scales(quant_scales_t *s, const double *x, long rows, long cols, long ld, const quant_cfg_t *cfg)
{
    quant_scales_init(s, rows, cols, cfg);
    quant_scales_rows(s, x, 0, rows, ld, cfg);
}

void quant_scales_free(quant_scales_t *s)
{
    free(s->scale);
    s->scale = NULL;
}

long quant_apply(double *q, long ldq, const double *x, long ld, const quant_scales_t *s, const quant_cfg_t *cfg)
{
    long over = 0;
    for (long r = 0; r < s->rows; r++)
        for (long c0 = 0, gi = (r / s->gr) * s->ngc; c0 < s->cols; c0 += s->gc, gi++) {
            double sc = s->scale[gi];
            for (long c = c0; c < c0 + s->gc && c < s->cols; c++) {
                double y = fmt_fp32(x[r * ld + c] / sc);
                double v = fmt_round(y, cfg->fmt, FMT_RNE, 0, NULL);
                int ovf = !isfinite(v) && isfinite(y);
                over += ovf;
                q[r * ldq + c] = cfg->saturate && (ovf || !isfinite(y)) ? fmt_round(y, cfg->fmt, FMT_RNE, 1, NULL) : v;
            }
        }
    return over;
}

void quant_round_quotients(double *out, const double *x, long n, double s, int fp32, fmt_id_t f, fmt_round_t mode,
                           int sat, int exact, fmt_rng_t *rng)
{
    if (exact) {
        vec_div(out, x, n, s);
        return;
    }
    if (mode == FMT_RNE && fmt_round_quot32(out, x, n, s, fp32, f, sat))
        return; /* binary32 divisions: the same values (fmt_cast.c) */
    if (mode == FMT_RNE) {
        /* a power-of-two s (a normal one, with a normal reciprocal): x / s and x (1/s) are the
         * correctly rounded values of the same quotient, and a product is cheaper; then the
         * vectorized roundings, each equal to fmt_round element by element */
        int ex, p2 = s >= 0x1p-1021 && s <= 0x1p1021 && frexp(s, &ex) == 0.5;
        if (p2)
            vec_mul(out, x, n, 1.0 / s);
        else
            vec_div(out, x, n, s);
        if (fp32)
            fmt_round_array_rne(out, n, FMT_FP32, 0);
        fmt_round_array_rne(out, n, f, sat);
        return;
    }
    for (long j = 0; j < n; j++) {
        double y = x[j] / s;
        out[j] = fmt_round(fp32 ? fmt_fp32(y) : y, f, mode, sat, rng);
    }
}
