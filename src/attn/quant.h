/* quant -- scaled quantization to FP8 at every granularity (tensor, token, channel, block) */
#ifndef AMLA_QUANT_H
#define AMLA_QUANT_H

#include "num/fmt/fmt.h"

/* Granularity as a group shape: one scale per group of `rows` x `cols` elements
 * (per-tensor: all x all; per-token: 1 x all; per-channel: all x 1; per-block: bt x bc). */
typedef enum { QUANT_TENSOR, QUANT_TOKEN, QUANT_CHANNEL, QUANT_BLOCK } quant_gran_t;

/* Smallest amax a dynamic scale uses (SnapMLA / SGLang: max(amax, 1e-26) / fmt_max). */
#define QUANT_AMAX_FLOOR 1e-26

typedef struct {
    quant_gran_t gran;
    long block_rows, block_cols; /* QUANT_BLOCK */
    fmt_id_t fmt;                /* e4m3 or e5m2 */
    int pow2;                    /* scales rounded up to a power of two (UE8M0) */
    double static_scale;         /* > 0: this scale for every group (per-tensor static) */
    double pow2_floor;           /* pow2 scales: scale = 2^ceil(log2(max(amax/max, floor))) */
    int saturate;                /* satfinite conversion (values stay within +-max by construction) */
} quant_cfg_t;

typedef struct {
    long rows, cols;   /* the tensor */
    long gr, gc;       /* group shape */
    long ngr, ngc;     /* groups per column / row */
    double *scale;     /* [ngr][ngc], binary32 values */
} quant_scales_t;

/* Scales of x [rows][cols] (row stride ld) under cfg: max(amax, floor) / fmt_max in binary32,
 * or the power of two at or above it, or the static scale. */
void quant_scales(quant_scales_t *s, const double *x, long rows, long cols, long ld, const quant_cfg_t *cfg);
/* The same in two steps, for a tensor whose groups are met a few rows at a time: the groups' shape
 * (scales not yet set), then the scales of the groups rows r0 .. r0 + n - 1 fall in (every row of
 * those groups read: x is the whole tensor), each as quant_scales sets it. */
void quant_scales_init(quant_scales_t *s, long rows, long cols, const quant_cfg_t *cfg);
void quant_scales_rows(quant_scales_t *s, const double *x, long r0, long n, long ld, const quant_cfg_t *cfg);
void quant_scales_free(quant_scales_t *s);

static inline double quant_scale_at(const quant_scales_t *s, long r, long c)
{
    return s->scale[(r / s->gr) * s->ngc + c / s->gc];
}

/* q = fmt(x / scale) elementwise (binary32 division, then the format's RNE); q [rows][cols]
 * with stride ldq. Returns the number of elements whose conversion overflows (NaN or
 * infinity without satfinite; clamped to +-max with it). */
long quant_apply(double *q, long ldq, const double *x, long ld, const quant_scales_t *s, const quant_cfg_t *cfg);

/* out[j] = x[j] / s rounded to f (mode, sat): through binary32 first when fp32 (as a kernel
 * that divides in fp32 and then converts), unrounded when exact. Vectorized for RNE to e4m3,
 * e5m2 and bf16 from binary32 quotients; every element equals the scalar fmt_round. */
void quant_round_quotients(double *out, const double *x, long n, double s, int fp32, fmt_id_t f, fmt_round_t mode,
                           int sat, int exact, fmt_rng_t *rng);

#endif
