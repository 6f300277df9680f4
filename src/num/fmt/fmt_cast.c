/* fmt_cast -- binary32 arrays to narrow encodings, vectorized (fmt_cast_f32) */
#include <math.h>
#include <string.h>

#include "num/vec/cpu.h"
#include "num/fmt/fmt.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

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
#define FMT_X16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
FMT_X16 static void fmt_cast_x16(void *out, const float *x, long n, fmt_id_t f, int sat)
{
    fmt_cast_body(out, x, n, f, sat);
}

FMT_X16 static void fmt_round_x16(double *x, long n, fmt_id_t f, int sat)
{
    fmt_round_body(x, n, f, sat);
}

/* fmt_round_quot32's scalar expression, for the lanes the vectors leave and the tails */
static double quot32_one(double x, double s, int fp32, fmt_id_t f, int sat)
{
    double q = x / s;
    return fmt_round(fp32 ? fmt_fp32(q) : q, f, FMT_RNE, sat, NULL);
}

/* Whether s is a power of two whose reciprocal is a normal binary32 too (x / s then a product by 1 / s, the same
 * exact quotient), and the bits of f's largest finite value as a binary32 */
static int quot32_pow2(double s)
{
    int ex;
    return s >= 0x1p-125 && s <= 0x1p125 && frexp(s, &ex) == 0.5;
}

static int32_t quot32_maxbits(fmt_id_t f)
{
    uint32_t b;
    float mx = (float)fmt_table[f].max_finite;
    memcpy(&b, &mx, sizeof b);
    return (int32_t)b;
}

/* fmt_round_quot32's AVX-512 body, f's fields constants (m fraction bits, emin): sixteen quotients
 * q = RN32(x / s) by one binary32 division, rounded to f on q's bits as fmt_round does it on a binary64's
 * (fmt_rne_bits in the normal range, (|q| + M) - M below it); a lane the vector cannot settle (see
 * fmt_round_quot32) redone by the scalar expression. */
FMT_X16 static inline __attribute__((always_inline)) void quot32_x16(double *out, const double *x, long n, double s,
                                                                       int fp32, fmt_id_t f, int sat, const int m,
                                                                       const int emin)
{
    const int sh = 23 - m, p2 = quot32_pow2(s);
    const __m512 vs = _mm512_set1_ps((float)s), vr = _mm512_set1_ps((float)(1.0 / s));
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1);
    const __m512i half = _mm512_set1_epi32((1 << (sh - 1)) - 1), keep = _mm512_set1_epi32((int)(~0u << sh));
    const __m512i low = _mm512_set1_epi32((emin + 127) << 23), dropped = _mm512_set1_epi32((1 << sh) - 1);
    const __m512i mid = _mm512_set1_epi32(1 << (sh - 1));
    const __m512 magic = _mm512_castsi512_ps(_mm512_set1_epi32((emin - m + 23 + 127) << 23));
    const __m512i vmax = _mm512_set1_epi32(quot32_maxbits(f));
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512d x0 = _mm512_loadu_pd(x + i), x1 = _mm512_loadu_pd(x + i + 8);
        __m256 f0 = _mm512_cvtpd_ps(x0), f1 = _mm512_cvtpd_ps(x1);
        /* x a binary32 value (not NaN) */
        __mmask16 ok = (__mmask16)(_mm512_cmp_pd_mask(_mm512_cvtps_pd(f0), x0, _CMP_EQ_OQ) |
                                   (unsigned)_mm512_cmp_pd_mask(_mm512_cvtps_pd(f1), x1, _CMP_EQ_OQ) << 8);
        __m512 xf = _mm512_insertf32x8(_mm512_castps256_ps512(f0), f1, 1);
        __m512 q = p2 ? _mm512_mul_ps(xf, vr) : _mm512_div_round_ps(xf, vs, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512i u = _mm512_castps_si512(q), a = _mm512_and_si512(u, absm);
        __m512i r = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(a, half), _mm512_and_si512(_mm512_srli_epi32(a, sh), one)), keep);
        __m512 sub = _mm512_sub_round_ps(_mm512_add_round_ps(_mm512_castsi512_ps(a), magic, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                         magic, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __mmask16 small = _mm512_cmplt_epu32_mask(a, low);
        r = _mm512_mask_blend_epi32(small, r, _mm512_castps_si512(sub));
        ok &= _mm512_cmple_epu32_mask(r, vmax); /* no overflow, infinity or NaN */
        if (!fp32) /* q a midpoint of f other than the quotient itself (x - q s, exact in an FMA, not 0), or below
                    * f's normal range */
            ok &= ~small & (_mm512_cmpneq_epi32_mask(_mm512_and_si512(a, dropped), mid) |
                            _mm512_cmp_ps_mask(_mm512_fmsub_ps(q, vs, xf), _mm512_setzero_ps(), _CMP_EQ_OQ));
        __m512 y = _mm512_castsi512_ps(_mm512_or_si512(r, _mm512_andnot_si512(absm, u)));
        _mm512_storeu_pd(out + i, _mm512_cvtps_pd(_mm512_castps512_ps256(y)));
        _mm512_storeu_pd(out + i + 8, _mm512_cvtps_pd(_mm512_extractf32x8_ps(y, 1)));
        for (unsigned bad = (uint16_t)~ok; bad; bad &= bad - 1) {
            long j = i + __builtin_ctz(bad);
            out[j] = quot32_one(x[j], s, fp32, f, sat);
        }
    }
    for (; i < n; i++)
        out[i] = quot32_one(x[i], s, fp32, f, sat);
}

/* quot32_x16 in AVX2, eight lanes: the same steps, masks as vectors (the comparisons of fields and codes
 * unsigned where a NaN's rounding can pass 2^31), the division and the subnormal step in MXCSR's nearest */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) void
quot32_avx2(double *out, const double *x, long n, double s, int fp32, fmt_id_t f, int sat, const int m, const int emin)
{
    const int sh = 23 - m, p2 = quot32_pow2(s);
    const __m256 vs = _mm256_set1_ps((float)s), vr = _mm256_set1_ps((float)(1.0 / s));
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), one = _mm256_set1_epi32(1);
    const __m256i half = _mm256_set1_epi32((1 << (sh - 1)) - 1), keep = _mm256_set1_epi32((int)(~0u << sh));
    const __m256i low = _mm256_set1_epi32((emin + 127) << 23), dropped = _mm256_set1_epi32((1 << sh) - 1);
    const __m256i mid = _mm256_set1_epi32(1 << (sh - 1));
    const __m256 magic = _mm256_castsi256_ps(_mm256_set1_epi32((emin - m + 23 + 127) << 23));
    const __m256i vmax = _mm256_set1_epi32(quot32_maxbits(f));
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d x0 = _mm256_loadu_pd(x + i), x1 = _mm256_loadu_pd(x + i + 4);
        __m128 f0 = _mm256_cvtpd_ps(x0), f1 = _mm256_cvtpd_ps(x1);
        unsigned ok = (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(_mm256_cvtps_pd(f0), x0, _CMP_EQ_OQ)) |
                      (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(_mm256_cvtps_pd(f1), x1, _CMP_EQ_OQ)) << 4;
        __m256 xf = _mm256_set_m128(f1, f0);
        __m256 q = p2 ? _mm256_mul_ps(xf, vr) : _mm256_div_ps(xf, vs);
        __m256i u = _mm256_castps_si256(q), a = _mm256_and_si256(u, absm);
        __m256i r = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(a, half), _mm256_and_si256(_mm256_srli_epi32(a, sh), one)), keep);
        __m256 sub = _mm256_sub_ps(_mm256_add_ps(_mm256_castsi256_ps(a), magic), magic);
        __m256i small = _mm256_cmpgt_epi32(low, a); /* a below 2^31: signed */
        r = _mm256_blendv_epi8(r, _mm256_castps_si256(sub), small);
        __m256i good = _mm256_cmpeq_epi32(_mm256_max_epu32(r, vmax), vmax); /* r <= vmax */
        if (!fp32)
            good = _mm256_andnot_si256(small, _mm256_and_si256(good, _mm256_or_si256(
                _mm256_xor_si256(_mm256_cmpeq_epi32(_mm256_and_si256(a, dropped), mid), _mm256_set1_epi32(-1)),
                _mm256_castps_si256(_mm256_cmp_ps(_mm256_fmsub_ps(q, vs, xf), _mm256_setzero_ps(), _CMP_EQ_OQ)))));
        ok &= (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(good));
        __m256 y = _mm256_castsi256_ps(_mm256_or_si256(r, _mm256_andnot_si256(absm, u)));
        _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm256_castps256_ps128(y)));
        _mm256_storeu_pd(out + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(y, 1)));
        for (unsigned bad = ~ok & 0xffu; bad; bad &= bad - 1) {
            long j = i + __builtin_ctz(bad);
            out[j] = quot32_one(x[j], s, fp32, f, sat);
        }
    }
    for (; i < n; i++)
        out[i] = quot32_one(x[i], s, fp32, f, sat);
}

__attribute__((target("avx2,fma"))) static void quot32_avx2_f(double *out, const double *x, long n, double s,
                                                               int fp32, fmt_id_t f, int sat)
{
    switch (f) { /* (the caller's formats only) */
    case FMT_E4M3: quot32_avx2(out, x, n, s, fp32, FMT_E4M3, sat, 3, -6); return;
    case FMT_E5M2: quot32_avx2(out, x, n, s, fp32, FMT_E5M2, sat, 2, -14); return;
    default: quot32_avx2(out, x, n, s, fp32, FMT_FP16, sat, 10, -14); return;
    }
}

FMT_X16 static void quot32_x16_e4m3(double *out, const double *x, long n, double s, int fp32, int sat)
{
    quot32_x16(out, x, n, s, fp32, FMT_E4M3, sat, 3, -6);
}

FMT_X16 static void quot32_x16_e5m2(double *out, const double *x, long n, double s, int fp32, int sat)
{
    quot32_x16(out, x, n, s, fp32, FMT_E5M2, sat, 2, -14);
}

FMT_X16 static void quot32_x16_fp16(double *out, const double *x, long n, double s, int fp32, int sat)
{
    quot32_x16(out, x, n, s, fp32, FMT_FP16, sat, 10, -14);
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

/* out[i] = fmt_round(q, f, RNE, sat) with q = fmt_fp32(x[i] / s) where fp32, else the binary64 x[i] / s.
 * Where x's values and s are binary32 values (s normal and positive) and f is e4m3, e5m2 or fp16, q is
 * one binary32 division: with fp32 it is RN32(x / s) itself (the binary64 quotient rounded to binary32 is
 * the quotient rounded to binary32 once, 53 >= 2 * 24 + 2: Figueroa), and without it RN32(x / s) rounds
 * to f as the binary64 quotient does but where it is a midpoint of f (f's midpoints in its normal range are
 * binary32 values, so one other than q is at least a binary32 unit from q, and the quotient and its binary64
 * rounding, within half a unit of q, lie on q's side of it), or below f's normal range; those lanes, and
 * any x not a binary32 value or a rounding past f's largest finite value, are redone element by element.
 * Returns 0, nothing written, where it does not suit (another format, s not as said, neither AVX-512 nor
 * AVX2): the caller's loops then. */
int fmt_round_quot32(double *out, const double *x, long n, double s, int fp32, fmt_id_t f, int sat)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (!(s >= 0x1p-126 && s <= 0x1p127) || (double)(float)s != s || (f != FMT_E4M3 && f != FMT_E5M2 && f != FMT_FP16))
        return 0;
    if (fmt_simd < 2 || !cpu_has_avx512()) {
        if (fmt_simd < 1 || !cpu_has_avx2_fma())
            return 0;
        quot32_avx2_f(out, x, n, s, fp32, f, sat);
        return 1;
    }
    switch (f) {
    case FMT_E4M3: quot32_x16_e4m3(out, x, n, s, fp32, sat); return 1;
    case FMT_E5M2: quot32_x16_e5m2(out, x, n, s, fp32, sat); return 1;
    case FMT_FP16: quot32_x16_fp16(out, x, n, s, fp32, sat); return 1;
    default: return 0;
    }
#else
    (void)out, (void)x, (void)n, (void)s, (void)fp32, (void)f, (void)sat;
    return 0;
#endif
}
