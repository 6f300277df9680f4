/* kvfp8 -- FlashMLA's FP8 sparse-decode KV cache: quantization as tests/quant.py writes it, and
 * dequantization as the sm90 kernel's producer warpgroup reads it (docs/REFERENCES.md, FlashMLA) */
#include "data/kvfp8.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "num/vec/cpu.h"
#include "num/fmt/fmt.h"

const kvfp8_info_t kvfp8_table[KVFP8_COUNT] = {
    {"none", 0, 0, 0, 0, 0},
    {"V32", 576, 512, 128, 4, 656},
    {"MODEL1", 512, 448, 64, 7, 584},
};

#define KVFP8_E4M3_MAX 448.0
#define KVFP8_MODEL1_ROW 576 /* MODEL1: a token's codes and RoPE bytes (448 + 128) */
#define KVFP8_MODEL1_SCALES 8 /* MODEL1: bytes of scales a token (7 e8m0 and a pad byte) */

kvfp8_layout_t kvfp8_layout_of_bytes(long bytes)
{
    for (int l = KVFP8_V32; l < KVFP8_COUNT; l++)
        if (kvfp8_table[l].bytes == bytes)
            return (kvfp8_layout_t)l;
    return KVFP8_NONE;
}

kvfp8_layout_t kvfp8_layout_of_dim(long d)
{
    for (int l = KVFP8_V32; l < KVFP8_COUNT; l++)
        if (kvfp8_table[l].d == d)
            return (kvfp8_layout_t)l;
    return KVFP8_NONE;
}

/* Where token `row`'s codes, scales and RoPE start within its page block. */
static void kvfp8_offsets(long off[3], long page, long row, kvfp8_layout_t l)
{
    const kvfp8_info_t *t = &kvfp8_table[l];
    if (l == KVFP8_V32) {
        off[0] = row * t->bytes;
        off[1] = off[0] + t->d_nope;
        off[2] = off[1] + 4 * t->ntiles;
    } else {
        off[0] = row * KVFP8_MODEL1_ROW;
        off[2] = off[0] + t->d_nope;
        off[1] = page * KVFP8_MODEL1_ROW + row * KVFP8_MODEL1_SCALES;
    }
}

static void kvfp8_put_bf16(unsigned char *p, double x)
{
    uint16_t c = (uint16_t)fmt_encode(x, FMT_BF16, FMT_RNE, 0, NULL);
    p[0] = (unsigned char)(c & 0xff);
    p[1] = (unsigned char)(c >> 8);
}

/* The tile's scale from its largest magnitude: fl32(amax / 448), floored at fl32(1e-4), to the next power of two
 * up (exact: the ceiling of log2 of a binary32 value is an integer, found here without rounding) */
static double kvfp8_scale_of(double amax)
{
    double sinv = fmax(fmt_fp32(amax / KVFP8_E4M3_MAX), fmt_fp32(KVFP8_SCALE_FLOOR));
    int e;
    double fr = frexp(sinv, &e); /* sinv = fr 2^e, fr in [0.5, 1) */
    return ldexp(1.0, fr == 0.5 ? e - 1 : e);
}

double kvfp8_tile_scale(const double *x, long n)
{
    double amax = 0;
    for (long j = 0; j < n; j++) { /* a comparison, not fmax: the loop vectorizes (the values are finite) */
        double a = fabs(x[j]);
        amax = a > amax ? a : amax;
    }
    return kvfp8_scale_of(amax);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* One tile of kvfp8_roundtrip in AVX2, four values at a time (n a multiple of 4): its scale s from the largest
 * magnitude as kvfp8_tile_scale finds it; y = x / s exactly (times the power of two 1 / s); y rounded to nearest
 * even on e4m3's grid 2^(max(e, -6) - 3) (3 fraction bits; binade e, subnormals below 2^-6) by adding and
 * subtracting M = 1.5 2^(max(e, -6) + 49), whose sum y + M has that grid as its last bit (|y| < 2^(e+1)), the
 * sign put back (a value that rounds to zero keeps it, as fmt_round's); times s (exact). Returns 0 where it is
 * not that rounding's case (a magnitude infinite or NaN, or some |y| past 448, e4m3's largest: fmt_round's
 * overflow): out is then the caller's to write. */
__attribute__((target("avx2,fma"))) static int kvfp8_tile_avx2(double *out, const double *x, long n)
{
    const __m256d sign = _mm256_set1_pd(-0.0), expo = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7ff0000000000000LL));
    __m256d m = _mm256_setzero_pd();
    for (long j = 0; j < n; j += 4) /* a NaN's magnitude is not taken (max_pd returns its second operand) */
        m = _mm256_max_pd(_mm256_andnot_pd(sign, _mm256_loadu_pd(x + j)), m);
    double mv[4];
    _mm256_storeu_pd(mv, m);
    double amax = fmax(fmax(mv[0], mv[1]), fmax(mv[2], mv[3]));
    if (!(amax <= 0x1.fffffffffffffp1023))
        return 0;
    double s = kvfp8_scale_of(amax);
    const __m256d vs = _mm256_set1_pd(s), inv = _mm256_set1_pd(1 / s), lim = _mm256_set1_pd(KVFP8_E4M3_MAX);
    const __m256d sub = _mm256_set1_pd(0x1p-6), big = _mm256_set1_pd(0x1.8p49);
    __m256d fits = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    for (long j = 0; j < n; j += 4) {
        __m256d y = _mm256_mul_pd(_mm256_loadu_pd(x + j), inv);
        fits = _mm256_and_pd(fits, _mm256_cmp_pd(_mm256_andnot_pd(sign, y), lim, _CMP_LE_OQ));
        __m256d M = _mm256_mul_pd(_mm256_max_pd(_mm256_and_pd(y, expo), sub), big);
        __m256d r = _mm256_or_pd(_mm256_sub_pd(_mm256_add_pd(y, M), M), _mm256_and_pd(y, sign));
        _mm256_storeu_pd(out + j, _mm256_mul_pd(r, vs));
    }
    return _mm256_movemask_pd(fits) == 0xf;
}
#endif

/* One tile: x / s rounded to e4m3 (fmt_round's), times s. */
static void kvfp8_tile(double *out, const double *x, long n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (fmt_simd && n % 4 == 0 && cpu_has_avx2_fma() && kvfp8_tile_avx2(out, x, n))
        return;
#endif
    double s = kvfp8_tile_scale(x, n), inv = 1 / s;
    for (long j = 0; j < n; j++) /* x / s, exactly: s and 1 / s are powers of two (binary64) */
        out[j] = x[j] * inv;
    fmt_round_array_rne(out, n, FMT_E4M3, 0);
    for (long j = 0; j < n; j++) /* code x s: exact in bf16 (s in [2^-13, 2^127]) */
        out[j] *= s;
}

void kvfp8_roundtrip(double *out, const double *k, long rows, kvfp8_layout_t l)
{
    const kvfp8_info_t *t = &kvfp8_table[l];
    for (long r = 0; r < rows; r++) {
        const double *x = k + r * t->d;
        double *o = out + r * t->d;
        for (long i = 0; i < t->ntiles; i++)
            kvfp8_tile(o + i * t->tile, x + i * t->tile, t->tile);
        memcpy(o + t->d_nope, x + t->d_nope, sizeof(double) * (size_t)(t->d - t->d_nope));
        fmt_round_array_rne(o + t->d_nope, t->d - t->d_nope, FMT_BF16, 0); /* fmt_round's, element by element */
    }
}

void kvfp8_quantize_block(unsigned char *blk, const double *k, long page, kvfp8_layout_t l)
{
    const kvfp8_info_t *t = &kvfp8_table[l];
    memset(blk, 0, (size_t)(page * t->bytes));
    for (long r = 0; r < page; r++) {
        const double *x = k + r * t->d;
        long off[3];
        kvfp8_offsets(off, page, r, l);
        for (long i = 0; i < t->ntiles; i++) {
            double s = kvfp8_tile_scale(x + i * t->tile, t->tile);
            for (long j = 0; j < t->tile; j++) /* x / s is exact: s is a power of two */
                blk[off[0] + i * t->tile + j] =
                    (unsigned char)fmt_encode(x[i * t->tile + j] / s, FMT_E4M3, FMT_RNE, 0, NULL);
            if (l == KVFP8_V32) {
                float sf = (float)s;
                memcpy(blk + off[1] + 4 * i, &sf, 4); /* little-endian, as the GPU stores it */
            } else {
                blk[off[1] + i] = (unsigned char)(ilogb(s) + 127);
            }
        }
        for (long j = t->d_nope; j < t->d; j++)
            kvfp8_put_bf16(blk + off[2] + 2 * (j - t->d_nope), x[j]);
    }
}

int kvfp8_dequant_token(double *out, const unsigned char *blk, long page, long row, kvfp8_layout_t l, char *why,
                        size_t n)
{
    const kvfp8_info_t *t = &kvfp8_table[l];
    const double *e4m3 = fmt_decode_table8(FMT_E4M3);
    long off[3];
    kvfp8_offsets(off, page, row, l);
    for (long i = 0; i < t->ntiles; i++) {
        double s;
        if (l == KVFP8_V32) {
            float sf;
            memcpy(&sf, blk + off[1] + 4 * i, 4);
            int ex;
            if (!(sf > 0) || !isfinite(sf) || frexpf(sf, &ex) != 0.5f)
                return snprintf(why, n, "scale %ld is %.9g: not a positive finite power of two", i, (double)sf), 1;
            s = fmt_round(sf, FMT_BF16, FMT_RNE, 0, NULL); /* (bf16)scales_float[i] */
        } else {
            unsigned e = blk[off[1] + i];
            if (e == 0xff)
                return snprintf(why, n, "scale %ld is the e8m0 NaN code 0xff", i), 1;
            s = ldexp(1.0, (int)e - 127); /* __nv_cvt_e8m0x2_to_bf162raw: exact in bf16 (2^-127 subnormal) */
        }
        for (long j = 0; j < t->tile; j++) {
            long c = i * t->tile + j;
            unsigned code = blk[off[0] + c];
            if ((code & 0x7f) == 0x7f)
                return snprintf(why, n, "dim %ld is an e4m3 NaN code (0x%02x)", c, code), 1;
            /* fp8 -> fp32 -> bf16 is exact; the bf16 product rounds once (exact for a power-of-two scale
             * unless it leaves bf16's range) */
            out[c] = fmt_round(e4m3[code] * s, FMT_BF16, FMT_RNE, 0, NULL);
            /* a finite code times a finite scale past bf16's range: the kernel's key is infinite, and every
             * score it meets is infinite or NaN; no attention is defined there */
            if (!isfinite(out[c]))
                return snprintf(why, n, "scale %ld is 2^%d: dim %ld (e4m3 %g) times it overflows bf16", i, ilogb(s), c,
                                e4m3[code]),
                       1;
        }
    }
    for (long j = t->d_nope; j < t->d; j++) {
        const unsigned char *p = blk + off[2] + 2 * (j - t->d_nope);
        double x = fmt_decode((uint32_t)p[0] | (uint32_t)p[1] << 8, FMT_BF16);
        if (!isfinite(x))
            return snprintf(why, n, "RoPE dim %ld is not finite", j), 1;
        out[j] = x;
    }
    return 0;
}
