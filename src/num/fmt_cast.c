/* fmt_cast -- binary32 arrays to narrow encodings, vectorized (fmt_cast_f32) */
#include <math.h>
#include <string.h>

#include "num/cpu.h"
#include "num/fmt.h"

/* ---- fast binary32 -> narrow encodings, RNE ----
 * Normal results: add the exponent rebias and a round-half-even increment to the binary32
 * bits, then shift (a carry into the exponent is the correct rounding up). Subnormal
 * results: |x| + 2^(emin - m + 23) in binary32 arithmetic lands the target's subnormal
 * quantum on binary32's ulp, so the hardware addition rounds to nearest even. Overflow,
 * infinities and NaN as fmt_encode. Branch-free, so the compiler vectorizes the loops (the Makefile
 * builds this file with -O3 -fno-trapping-math: only exception flags could differ, never a
 * result; the AVX2 build runs where the processor has it, see the end of the file). */
static inline uint32_t fmt_cast1(float x, int m, int bias, int emin, uint32_t max_code, uint32_t ovf_code,
                                 uint32_t nan_code, int bits)
{
    uint32_t u, mag;
    memcpy(&u, &x, sizeof u);
    uint32_t a = u & 0x7fffffffu, sh = (uint32_t)(23 - m);
    int32_t t = (int32_t)a - ((127 - bias) << 23) + (int32_t)((1u << (sh - 1)) - 1) + (int32_t)((a >> sh) & 1);
    uint32_t normal = (uint32_t)t >> sh;
    float ax, magic;
    uint32_t mb = (uint32_t)(emin - m + 23 + 127) << 23;
    memcpy(&ax, &a, sizeof ax);
    memcpy(&magic, &mb, sizeof magic);
    float sum = ax + magic;
    uint32_t sb;
    memcpy(&sb, &sum, sizeof sb);
    uint32_t sub = sb - mb;
    mag = a < (uint32_t)(emin + 127) << 23 ? sub : normal;
    mag = mag > max_code ? ovf_code : mag;
    mag = a > 0x7f800000u ? nan_code : mag;
    return (u >> 31) << (bits - 1) | mag;
}

#define FMT_CAST_LOOP(T, F, ovf)                                                                         \
    do {                                                                                                 \
        T *o = out;                                                                                      \
        for (long i = 0; i < n; i++)                                                                     \
            o[i] = (T)fmt_cast1(x[i], F.prec - 1, F.bias, F.emin, F.max_code, ovf, F.nan_code, F.bits);  \
    } while (0)

static inline __attribute__((always_inline)) void fmt_cast_body(void *out, const float *x, long n, fmt_id_t f,
                                                                  int sat)
{
    /* the table's fields are constants here, so each loop is compiled for its format */
    const fmt_t BF = fmt_table[FMT_BF16], HF = fmt_table[FMT_FP16], E4 = fmt_table[FMT_E4M3], E5 = fmt_table[FMT_E5M2];
    switch (f) {
    case FMT_BF16:
        if (sat)
            FMT_CAST_LOOP(uint16_t, BF, BF.max_code);
        else
            FMT_CAST_LOOP(uint16_t, BF, BF.inf_code);
        return;
    case FMT_FP16:
        if (sat)
            FMT_CAST_LOOP(uint16_t, HF, HF.max_code);
        else
            FMT_CAST_LOOP(uint16_t, HF, HF.inf_code);
        return;
    case FMT_E4M3:
        if (sat)
            FMT_CAST_LOOP(uint8_t, E4, E4.max_code);
        else
            FMT_CAST_LOOP(uint8_t, E4, E4.nan_code);
        return;
    case FMT_E5M2:
        if (sat)
            FMT_CAST_LOOP(uint8_t, E5, E5.max_code);
        else
            FMT_CAST_LOOP(uint8_t, E5, E5.inf_code);
        return;
    default: {
        uint32_t *o = out;
        for (long i = 0; i < n; i++)
            o[i] = fmt_encode((double)x[i], f, FMT_RNE, sat, NULL);
    }
    }
}

/* x[i] <- fmt_round(x[i], f, RNE, sat), branch-free: results in the format's normal range on the
 * binary64 bits (the rounding fmt_round's inline path does); |x| below the smallest normal
 * (zeros and subnormal results) by (|x| + C) - C with C = 2^52 times the subnormal quantum q,
 * one binary64 addition in RNE to a multiple of q (|x| + C stays in C's binade, whose ulp is q;
 * C's own bits there are zero, so ties go to the even multiple); the rest (overflow, infinity,
 * NaN) are then redone one by one by fmt_round. */
static inline __attribute__((always_inline)) uint64_t fmt_round_step(uint64_t u, uint64_t lo, uint64_t hi, int sh,
                                                                     double C, int *ok)
{
    uint64_t a = u & 0x7fffffffffffffffULL, r, rs;
    double ax, sub;
    memcpy(&ax, &a, sizeof ax);
    sub = (ax + C) - C;
    memcpy(&rs, &sub, sizeof rs);
    r = a < lo ? rs : fmt_rne_bits(a, sh);
    *ok = a < lo || r <= hi;
    return *ok ? r | (u & 0x8000000000000000ULL) : u;
}

static inline __attribute__((always_inline)) void fmt_round_body(double *x, long n, fmt_id_t f, int sat)
{
    if (f == FMT_FP64)
        return;
    const fmt_t *F = &fmt_table[f];
    const int sh = 53 - F->prec;
    const uint64_t lo = (uint64_t)(F->emin + 1023) << 52;
    uint64_t hi;
    memcpy(&hi, &F->max_finite, sizeof hi);
    const double C = ldexp(1.0, F->emin - F->prec + 1 + 52);
    enum { CH = 512 };
    for (long i0 = 0; i0 < n; i0 += CH) {
        long m = n - i0 < CH ? n - i0 : CH;
        double *y = x + i0;
        int bad = 0;
        for (long i = 0; i < m; i++) {
            uint64_t u;
            int ok;
            memcpy(&u, &y[i], sizeof u);
            u = fmt_round_step(u, lo, hi, sh, C, &ok);
            bad |= !ok;
            memcpy(&y[i], &u, sizeof u);
        }
        /* a chunk with a value left as it was: found again (a rounded value passes the test
         * again) and redone */
        for (long i = 0; bad && i < m; i++) {
            uint64_t u;
            int ok;
            memcpy(&u, &y[i], sizeof u);
            fmt_round_step(u, lo, hi, sh, C, &ok);
            if (!ok)
                y[i] = fmt_round(y[i], f, FMT_RNE, sat, NULL);
        }
    }
}

/* Each loop compiled twice, for AVX2 and for the baseline, chosen at run time (GCC and clang
 * alike; target_clones is not in every compiler the fuzz build uses). */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void fmt_cast_avx2(void *out, const float *x, long n, fmt_id_t f, int sat)
{
    fmt_cast_body(out, x, n, f, sat);
}

__attribute__((target("avx2"))) static void fmt_round_avx2(double *x, long n, fmt_id_t f, int sat)
{
    fmt_round_body(x, n, f, sat);
}

/* And for AVX-512 (fmt_simd 2): twice the lanes and registers enough that the cast's constants
 * stay in them (the AVX2 loop reloads one from the stack per vector) */
#define FMT_X16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2")))
FMT_X16 static void fmt_cast_x16(void *out, const float *x, long n, fmt_id_t f, int sat)
{
    fmt_cast_body(out, x, n, f, sat);
}

FMT_X16 static void fmt_round_x16(double *x, long n, fmt_id_t f, int sat)
{
    fmt_round_body(x, n, f, sat);
}

#endif

int fmt_simd = 2;

void fmt_cast_f32(void *out, const float *x, long n, fmt_id_t f, int sat)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (fmt_simd >= 2 && cpu_has_avx512()) {
        fmt_cast_x16(out, x, n, f, sat);
        return;
    }
    if (fmt_simd && cpu_has_avx2_fma()) {
        fmt_cast_avx2(out, x, n, f, sat);
        return;
    }
#endif
    fmt_cast_body(out, x, n, f, sat);
}

void fmt_round_array_rne(double *x, long n, fmt_id_t f, int sat)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (fmt_simd >= 2 && cpu_has_avx512()) {
        fmt_round_x16(x, n, f, sat);
        return;
    }
    if (fmt_simd && cpu_has_avx2_fma()) {
        fmt_round_avx2(x, n, f, sat);
        return;
    }
#endif
    fmt_round_body(x, n, f, sat);
}

/* Array rounding to a format (RNE, not saturating): the vectorized path above. */
void fmt_round_array(double *x, long n, fmt_id_t f)
{
    fmt_round_array_rne(x, n, f, 0);
}
