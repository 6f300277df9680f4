/* fmt -- number formats (bf16, fp16, e4m3, e5m2, tf32, fp32, fp64) and rounding modes */
#ifndef AMLA_FMT_H
#define AMLA_FMT_H

#include <stdint.h>
#include <string.h>

/* A binary floating-point format is data: precision, exponent range, encoding. */
typedef struct {
    const char *name;
    const char *summary;
    int bits;        /* width of the encoding (tf32 is stored in a 32-bit container) */
    int prec;        /* significand bits including the implicit one */
    int emin;        /* exponent of the smallest normal number */
    int emax;        /* largest exponent field value used by finite numbers, unbiased */
    int bias;
    int has_inf;     /* 0: E4M3FN, overflow goes to NaN */
    uint32_t max_code;  /* encoding (magnitude) of the largest finite value */
    uint32_t nan_code;  /* canonical positive quiet NaN */
    uint32_t inf_code;  /* +infinity (unused when has_inf is 0) */
    double max_finite;
} fmt_t;

typedef enum {
    FMT_BF16, FMT_FP16, FMT_E4M3, FMT_E5M2, FMT_TF32, FMT_FP32, FMT_FP64, FMT_COUNT
} fmt_id_t;

typedef enum {
    FMT_RNE, FMT_RNA, FMT_RZ, FMT_RU, FMT_RD, FMT_RODD, FMT_RSTOCH, FMT_ROUND_COUNT
} fmt_round_t;

/* Stochastic rounding draws from this counter-based stream (splitmix64). */
typedef struct {
    uint64_t state;
} fmt_rng_t;

extern const fmt_t fmt_table[FMT_COUNT];
extern const char *const fmt_round_names[FMT_ROUND_COUNT];
extern const char *const fmt_round_summaries[FMT_ROUND_COUNT];

/* Name lookups; return -1 when the name is unknown. */
int fmt_from_name(const char *name);

/* The other names fmt_from_name accepts for f ("bfloat16" for bf16, ...), comma-separated. */
const char *fmt_alias_list(fmt_id_t f);
int fmt_round_from_name(const char *name);

void fmt_rng_seed(fmt_rng_t *rng, uint64_t seed);
uint64_t fmt_rng_next(fmt_rng_t *rng);

/* RNE of the magnitude bits a of a binary64 at a target precision of 53 - sh bits, for a
 * result in the target's normal range: add half an ulp minus one plus the last kept bit, clear
 * the dropped bits (a carry into the exponent is the correct rounding up). Shared by
 * fmt_round and the vectorized fmt_round_array_rne. */
static inline uint64_t fmt_rne_bits(uint64_t a, int sh)
{
    return (a + ((1ULL << (sh - 1)) - 1) + ((a >> sh) & 1)) & ~((1ULL << sh) - 1);
}

/* decode(encode(x)): fmt_round's general path. */
double fmt_round_general(double x, fmt_id_t f, fmt_round_t mode, int sat, fmt_rng_t *rng);

/* Round x to the format; returns the rounded value as a double (exact).
 * sat: clamp finite overflow (and infinities) to +-max_finite, as PTX cvt.satfinite.
 * rng: required for FMT_RSTOCH, ignored otherwise.
 * The rounding is a single rounding of the double x (no intermediate binary32 step).
 * Inline fast path for RNE (the variants' hot loops): a result in the format's normal range is
 * rounded half to even on the binary64 bits (a carry into the exponent is the correct rounding
 * up); below it, |x| + 2^52 quanta - 2^52 quanta rounds to the subnormal quantum and keeps
 * zeros. Overflow, NaN and the other modes take fmt_round_general. */
static inline double fmt_round(double x, fmt_id_t f, fmt_round_t mode, int sat, fmt_rng_t *rng)
{
    if (f == FMT_FP64)
        return x;
    if (f == FMT_FP32 && mode == FMT_RNE && !sat)
        return (double)(float)x; /* the C conversion is binary32 RNE */
    if (mode == FMT_RNE) {
        const fmt_t *F = &fmt_table[f];
        uint64_t u, a, r;
        double y;
        memcpy(&u, &x, sizeof u);
        a = u & 0x7fffffffffffffffULL;
        int E = (int)(a >> 52) - 1023, sh = 53 - F->prec;
        if (E < F->emin) {
            uint64_t mb = (uint64_t)(F->emin - F->prec + 1 + 52 + 1023) << 52;
            double M;
            memcpy(&M, &mb, sizeof M);
            memcpy(&y, &a, sizeof y);
            y = (y + M) - M;
            memcpy(&r, &y, sizeof r);
            r |= u & 0x8000000000000000ULL;
            memcpy(&y, &r, sizeof y);
            return y;
        }
        if (E <= F->emax) {
            r = fmt_rne_bits(a, sh);
            memcpy(&y, &r, sizeof y);
            if (y <= F->max_finite) {
                r |= u & 0x8000000000000000ULL;
                memcpy(&y, &r, sizeof y);
                return y;
            }
        }
    }
    return fmt_round_general(x, f, mode, sat, rng);
}

/* As fmt_round, returning the target encoding (for tf32: the binary32 container). */
uint32_t fmt_encode(double x, fmt_id_t f, fmt_round_t mode, int sat, fmt_rng_t *rng);
/* x's position on the format's number line: consecutive values of f are consecutive integers (-0 and +0 both 0), so
 * |a - b| counts the ulps between two values of f. */
int64_t fmt_ordinal(double x, fmt_id_t f);

/* Value of an encoding of a (non-fp64) format. */
double fmt_decode(uint32_t code, fmt_id_t f);

/* The value of each code of an 8-bit format (e4m3, e5m2; NULL for others), made once. */
const double *fmt_decode_table8(fmt_id_t f);

/* Round an array in place with round-to-nearest-even, non-saturating. */
void fmt_round_array(double *x, long n, fmt_id_t f);

/* x[i] <- fmt_round(x[i], f, FMT_RNE, sat, NULL) for i < n, vectorized (src/fmt_cast.c). */
void fmt_round_array_rne(double *x, long n, fmt_id_t f, int sat);

/* out[i] = fmt_round(fp32 ? fmt_fp32(x[i] / s) : x[i] / s, f, FMT_RNE, sat, NULL) for i < n, by binary32
 * divisions and roundings sixteen at a time, where x and s are binary32 values and f is e4m3, e5m2 or fp16
 * (fmt_cast.c says why every element is the same); returns 0, nothing written, where it does not apply. */
int fmt_round_quot32(double *out, const double *x, long n, double s, int fp32, fmt_id_t f, int sat);

/* Encode n binary32 values with round-to-nearest-even (sat as in fmt_encode) into uint16_t
 * codes (bf16, fp16), uint8_t codes (e4m3, e5m2) or, for other formats, uint32_t codes;
 * every code equals fmt_encode's. The fast path for arrays (about 1e9 values per second
 * per core with AVX2). */
void fmt_cast_f32(void *out, const float *x, long n, fmt_id_t f, int sat);

/* 2 (default): fmt_cast_f32 and fmt_round_array_rne use their AVX-512 builds where the processor
 * has AVX-512, else AVX2; 1: the AVX2 builds at most; 0: the baseline builds (tests run all). */
extern int fmt_simd;

/* Bytes per code that fmt_cast_f32 writes for format f. */
static inline int fmt_cast_width(fmt_id_t f) { return f == FMT_BF16 || f == FMT_FP16 ? 2 : f == FMT_E4M3 || f == FMT_E5M2 ? 1 : 4; }

/* Fast binary32 rounding: (float) conversion, RNE. */
static inline double fmt_fp32(double x) { return (double)(float)x; }

#endif
