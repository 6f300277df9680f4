/* vec -- elementwise array loops in AVX2, and some in AVX-512 (see vec.h) */
#include "num/vec/vec.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "num/vec/cpu.h"

int vec_simd = 2;

/* Loops that are their plain C forms: the scalar code, and compiled for AVX-512 below */
static inline __attribute__((always_inline)) void mul_body(double *o, const double *x, long n, double s, int div)
{
    if (div)
#pragma omp simd
        for (long i = 0; i < n; i++)
            o[i] = x[i] / s;
    else
#pragma omp simd
        for (long i = 0; i < n; i++)
            o[i] = x[i] * s;
}

/* the scale a[i * as]: one for all (as 0) or one per element (as 1) */
static inline __attribute__((always_inline)) void rescale_add32_body(double *o, const double *t, long n,
                                                                     const double *a, long as, double ts)
{
    if (as && ts != 0)
#pragma omp simd
        for (long i = 0; i < n; i++)
            o[i] = (double)(float)((double)(float)(o[i] * a[i]) + (double)(float)(t[i] * ts));
    else if (as)
#pragma omp simd
        for (long i = 0; i < n; i++)
            o[i] = (double)(float)((double)(float)(o[i] * a[i]) + t[i]);
    else if (ts != 0)
#pragma omp simd
        for (long i = 0; i < n; i++)
            o[i] = (double)(float)((double)(float)(o[i] * a[0]) + (double)(float)(t[i] * ts));
    else
#pragma omp simd
        for (long i = 0; i < n; i++)
            o[i] = (double)(float)((double)(float)(o[i] * a[0]) + t[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define VEC_AVX2 __attribute__((target("avx2,fma")))

VEC_AVX2 static void mul_avx2(double *o, const double *x, long n, double s, int div)
{
    __m256d sv = _mm256_set1_pd(s);
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d v = _mm256_loadu_pd(x + i);
        _mm256_storeu_pd(o + i, div ? _mm256_div_pd(v, sv) : _mm256_mul_pd(v, sv));
    }
    for (; i < n; i++)
        o[i] = div ? x[i] / s : x[i] * s;
}

/* f32 in four lanes: binary64 to binary32 (RNE, as the C conversion) and back */
VEC_AVX2 static inline __m256d f32x4(__m256d v)
{
    return _mm256_cvtps_pd(_mm256_cvtpd_ps(v));
}

/* the scale a[i * as]: one for all (as 0) or one per element (as 1) */
VEC_AVX2 static void rescale_add32_avx2(double *o, const double *t, long n, const double *a, long as, double ts)
{
    __m256d tv = _mm256_set1_pd(ts);
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d u = _mm256_loadu_pd(t + i), av = as ? _mm256_loadu_pd(a + i) : _mm256_set1_pd(a[0]);
        if (ts != 0)
            u = f32x4(_mm256_mul_pd(u, tv));
        _mm256_storeu_pd(o + i, f32x4(_mm256_add_pd(f32x4(_mm256_mul_pd(_mm256_loadu_pd(o + i), av)), u)));
    }
    for (; i < n; i++)
        o[i] = (double)(float)((double)(float)(o[i] * a[i * as]) + (ts != 0 ? (double)(float)(t[i] * ts) : t[i]));
}

/* max_pd(v, m) is v > m ? v : m lane by lane (m where either is NaN), as the scalar loop: two
 * running maxima of W lanes each, then the lanes and the tail in order. One definition for both
 * vector widths (name, its target, the vector type and its operations). */
#define VEC_ABSMAX(name, tgt, vd, W, set1, load, and_, max_, store, absmask)                                       \
    tgt static double name(const double *x, long n, double m)                                                    \
    {                                                                                                           \
        const vd abs = absmask;                                                                                 \
        vd m0 = set1(m), m1 = m0;                                                                               \
        long i = 0;                                                                                             \
        for (; i + 2 * (W) <= n; i += 2 * (W)) {                                                                \
            /* 4 kB ahead into L2: a pass over all of K or V is memory-bound (in-process pairs of Golden and \
             * fa3-fp8 samples: 0.977 of the time each) */                                                      \
            __builtin_prefetch(x + i + 512, 0, 2);                                                              \
            if (2 * (W) > 8) /* a second line */                                                                \
                __builtin_prefetch(x + i + 520, 0, 2);                                                          \
            m0 = max_(and_(load(x + i), abs), m0);                                                              \
            m1 = max_(and_(load(x + i + (W)), abs), m1);                                                        \
        }                                                                                                       \
        double t[2 * (W)];                                                                                      \
        store(t, m0);                                                                                           \
        store(t + (W), m1);                                                                                     \
        for (int j = 0; j < 2 * (W); j++)                                                                       \
            m = t[j] > m ? t[j] : m;                                                                            \
        for (; i < n; i++)                                                                                      \
            m = fabs(x[i]) > m ? fabs(x[i]) : m;                                                                \
        return m;                                                                                               \
    }
VEC_ABSMAX(absmax_avx2, VEC_AVX2, __m256d, 4, _mm256_set1_pd, _mm256_loadu_pd, _mm256_and_pd, _mm256_max_pd,
           _mm256_storeu_pd, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL)))
VEC_AVX2 static void prod_avx2(double *o, const double *x, const double *y, long n)
{
    long i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(o + i, _mm256_mul_pd(_mm256_loadu_pd(x + i), _mm256_loadu_pd(y + i)));
    for (; i < n; i++)
        o[i] = x[i] * y[i];
}

/* Some of the same loops for AVX-512: the plain C loops below, compiled for it (eight binary64
 * lanes; the same operations element by element) */
#define VEC_X16 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
VEC_X16 static void mul_x16(double *o, const double *x, long n, double s, int div)
{
    mul_body(o, x, n, s, div);
}

VEC_X16 static void rescale_add32_x16(double *o, const double *t, long n, const double *a, long as, double ts)
{
    rescale_add32_body(o, t, n, a, as, ts);
}

VEC_ABSMAX(absmax_x16, VEC_X16, __m512d, 8, _mm512_set1_pd, _mm512_loadu_pd, _mm512_and_pd, _mm512_max_pd,
           _mm512_storeu_pd, _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffLL)))

/* vec_hadamard's AVX-512 form for h = 8 nv (nv <= 16, h a power of two): the block in nv registers, each
 * butterfly the scalar loop's (lanes with bit len clear take u + w, the others u - w, w the partner lane) */
VEC_X16 static void hadamard_x16(double *o, const double *x, const double *sign, long h, double norm)
{
    __m512d v[16];
    const long nv = h / 8;
    for (long t = 0; t < nv; t++) {
        __m512d a = _mm512_mul_pd(_mm512_loadu_pd(x + 8 * t), _mm512_loadu_pd(sign + 8 * t));
        __m512d s = _mm512_permute_pd(a, 0x55); /* len 1 */
        a = _mm512_mask_sub_pd(_mm512_add_pd(a, s), 0xaa, s, a);
        s = _mm512_permutex_pd(a, _MM_SHUFFLE(1, 0, 3, 2)); /* len 2 */
        a = _mm512_mask_sub_pd(_mm512_add_pd(a, s), 0xcc, s, a);
        s = _mm512_shuffle_f64x2(a, a, _MM_SHUFFLE(1, 0, 3, 2)); /* len 4 */
        v[t] = _mm512_mask_sub_pd(_mm512_add_pd(a, s), 0xf0, s, a);
    }
    for (long len = 1; len < nv; len *= 2) /* len 8, 16, ...: whole registers */
        for (long i = 0; i < nv; i += 2 * len)
            for (long j = i; j < i + len; j++) {
                __m512d u = v[j], w = v[j + len];
                v[j] = _mm512_add_pd(u, w);
                v[j + len] = _mm512_sub_pd(u, w);
            }
    const __m512d vn = _mm512_set1_pd(norm);
    for (long t = 0; t < nv; t++)
        _mm512_storeu_pd(o + 8 * t, _mm512_mul_pd(v[t], vn));
}

/* stages len = 1 and 2 inside each vector of four (the partner lanes by permutation: lane t's
 * sum is v_t + v_partner, its difference v_partner - v_t where t is the upper of the pair), then
 * len >= 4 a vector at a time */
VEC_AVX2 static void fwht_avx2(double *v, long h)
{
    for (long i = 0; i < h; i += 4) {
        __m256d a = _mm256_loadu_pd(v + i), s = _mm256_permute_pd(a, 0x5);
        __m256d b = _mm256_blend_pd(_mm256_add_pd(a, s), _mm256_sub_pd(s, a), 0xa);
        s = _mm256_permute2f128_pd(b, b, 0x01);
        _mm256_storeu_pd(v + i, _mm256_blend_pd(_mm256_add_pd(b, s), _mm256_sub_pd(s, b), 0xc));
    }
    for (long len = 4; len < h; len *= 2)
        for (long i = 0; i < h; i += 2 * len)
            for (long j = i; j < i + len; j += 4) {
                __m256d u = _mm256_loadu_pd(v + j), w = _mm256_loadu_pd(v + j + len);
                _mm256_storeu_pd(v + j, _mm256_add_pd(u, w));
                _mm256_storeu_pd(v + j + len, _mm256_sub_pd(u, w));
            }
}
/* ftz in four binary32 lanes: a lane whose exponent field is zero keeps only its sign */
VEC_AVX2 static inline __m128 ftz4(__m128 y)
{
    __m128i b = _mm_castps_si128(y), e = _mm_and_si128(b, _mm_set1_epi32(0x7f800000));
    __m128i keep = _mm_cmpeq_epi32(e, _mm_setzero_si128()); /* all ones where flushed */
    return _mm_castsi128_ps(_mm_andnot_si128(_mm_andnot_si128(_mm_set1_epi32(INT32_MIN), keep), b));
}

VEC_AVX2 static void scale32_ftz_avx2(double *o, const double *x, long n, double a)
{
    __m256d av = _mm256_set1_pd(a);
    long i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(o + i, _mm256_cvtps_pd(ftz4(_mm256_cvtpd_ps(_mm256_mul_pd(_mm256_loadu_pd(x + i), av)))));
    for (; i < n; i++)
        o[i] = _mm_cvtss_f32(ftz4(_mm_set_ss((float)(x[i] * a))));
}

/* scale32_ftz_avx2 with binary32 results */
VEC_AVX2 static void scale32_ftz_f_avx2(float *o, const double *x, long n, double a)
{
    __m256d av = _mm256_set1_pd(a);
    long i = 0;
    for (; i + 4 <= n; i += 4)
        _mm_storeu_ps(o + i, ftz4(_mm256_cvtpd_ps(_mm256_mul_pd(_mm256_loadu_pd(x + i), av))));
    for (; i < n; i++)
        o[i] = _mm_cvtss_f32(ftz4(_mm_set_ss((float)(x[i] * a))));
}

/* o[i] = ftz(fma(x[i], a, c[i])), or with b for every c[i] where c is NULL */
VEC_AVX2 static void fma32_ftz_avx2(double *o, const double *x, long n, double a, double b, const double *c)
{
    __m128 av = _mm_set1_ps((float)a), bv = _mm_set1_ps((float)b);
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        __m128 cv = c ? _mm256_cvtpd_ps(_mm256_loadu_pd(c + i)) : bv;
        _mm256_storeu_pd(o + i, _mm256_cvtps_pd(ftz4(_mm_fmadd_ps(_mm256_cvtpd_ps(_mm256_loadu_pd(x + i)), av, cv))));
    }
    for (; i < n; i++)
        o[i] = _mm_cvtss_f32(ftz4(_mm_fmadd_ss(_mm_set_ss((float)x[i]), av, c ? _mm_set_ss((float)c[i]) : bv)));
}
/* o[i] = (float)x[i] (narrow), or x's binary32 values widened (o as double *) */
VEC_AVX2 static void cvt32_avx2(void *o, const void *x, long n, int narrow)
{
    long i = 0;
    if (narrow) {
        float *of = o;
        const double *xd = x;
        for (; i + 4 <= n; i += 4)
            _mm_storeu_ps(of + i, _mm256_cvtpd_ps(_mm256_loadu_pd(xd + i)));
        for (; i < n; i++)
            of[i] = (float)xd[i];
    } else {
        double *od = o;
        const float *xf = x;
        for (; i + 4 <= n; i += 4)
            _mm256_storeu_pd(od + i, _mm256_cvtps_pd(_mm_loadu_ps(xf + i)));
        for (; i < n; i++)
            od[i] = xf[i];
    }
}
#define VEC_HAVE_AVX2 (vec_simd >= 1 && cpu_has_avx2_fma())
#define VEC_HAVE_X16 (vec_simd >= 2 && cpu_has_avx512())
#else
#define VEC_HAVE_AVX2 0
#define VEC_HAVE_X16 0
static void mul_x16(double *o, const double *x, long n, double s, int div)
{
    (void)o, (void)x, (void)n, (void)s, (void)div;
}
static void rescale_add32_x16(double *o, const double *t, long n, const double *a, long as, double ts)
{
    (void)o, (void)t, (void)n, (void)a, (void)as, (void)ts;
}
static double absmax_x16(const double *x, long n, double m)
{
    (void)x, (void)n;
    return m;
}
static void cvt32_avx2(void *o, const void *x, long n, int narrow)
{
    (void)o, (void)x, (void)n, (void)narrow;
}
static void scale32_ftz_f_avx2(float *o, const double *x, long n, double a)
{
    (void)o, (void)x, (void)n, (void)a;
}
static void mul_avx2(double *o, const double *x, long n, double s, int div)
{
    (void)o, (void)x, (void)n, (void)s, (void)div;
}
static void rescale_add32_avx2(double *o, const double *t, long n, const double *a, long as, double ts)
{
    (void)o, (void)t, (void)n, (void)a, (void)as, (void)ts;
}
static double absmax_avx2(const double *x, long n, double m)
{
    (void)x, (void)n;
    return m;
}
static void prod_avx2(double *o, const double *x, const double *y, long n)
{
    (void)o, (void)x, (void)y, (void)n;
}
static void scale32_ftz_avx2(double *o, const double *x, long n, double a)
{
    (void)o, (void)x, (void)n, (void)a;
}
static void fma32_ftz_avx2(double *o, const double *x, long n, double a, double b, const double *c)
{
    (void)o, (void)x, (void)n, (void)a, (void)b, (void)c;
}
static void fwht_avx2(double *v, long h)
{
    (void)v, (void)h;
}
#endif

void vec_mul(double *o, const double *x, long n, double s)
{
    if (VEC_HAVE_X16) {
        mul_x16(o, x, n, s, 0);
        return;
    }
    if (VEC_HAVE_AVX2) {
        mul_avx2(o, x, n, s, 0);
        return;
    }
    mul_body(o, x, n, s, 0);
}

void vec_div(double *o, const double *x, long n, double s)
{
    if (VEC_HAVE_X16) {
        mul_x16(o, x, n, s, 1);
        return;
    }
    if (VEC_HAVE_AVX2) {
        mul_avx2(o, x, n, s, 1);
        return;
    }
    mul_body(o, x, n, s, 1);
}

static void rescale_add32(double *o, const double *t, long n, const double *a, long as, double ts)
{
    if (VEC_HAVE_X16) {
        rescale_add32_x16(o, t, n, a, as, ts);
        return;
    }
    if (VEC_HAVE_AVX2) {
        rescale_add32_avx2(o, t, n, a, as, ts);
        return;
    }
    rescale_add32_body(o, t, n, a, as, ts);
}

void vec_rescale_add32(double *o, const double *t, long n, double a, double ts)
{
    rescale_add32(o, t, n, &a, 0, ts);
}

void vec_rescale_add32_each(double *o, const double *t, long n, const double *a)
{
    rescale_add32(o, t, n, a, 1, 0);
}

double vec_absmax(const double *x, long n, double m)
{
    if (VEC_HAVE_X16)
        return absmax_x16(x, n, m);
    if (VEC_HAVE_AVX2)
        return absmax_avx2(x, n, m);
    for (long i = 0; i < n; i++)
        m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

void vec_prod(double *o, const double *x, const double *y, long n)
{
    if (VEC_HAVE_AVX2) {
        prod_avx2(o, x, y, n);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = x[i] * y[i];
}

void vec_fwht(double *v, long h)
{
    if (VEC_HAVE_AVX2 && h >= 4) {
        fwht_avx2(v, h);
        return;
    }
    for (long len = 1; len < h; len *= 2)
        for (long i = 0; i < h; i += 2 * len)
            for (long j = i; j < i + len; j++) {
                double u = v[j], w = v[j + len];
                v[j] = u + w;
                v[j + len] = u - w;
            }
}

void vec_hadamard(double *o, const double *x, const double *sign, long h, double norm)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (VEC_HAVE_X16 && h >= 8 && h <= 128) {
        hadamard_x16(o, x, sign, h, norm);
        return;
    }
#endif
    vec_prod(o, x, sign, h);
    vec_fwht(o, h);
    vec_mul(o, o, h, norm);
}

/* the scalar ftz */
static float ftz1(float y)
{
    uint32_t u;
    memcpy(&u, &y, sizeof u);
    u = (u & 0x7f800000u) ? u : u & 0x80000000u;
    memcpy(&y, &u, sizeof y);
    return y;
}

void vec_scale32_ftz(double *o, const double *x, long n, double a)
{
    if (VEC_HAVE_AVX2) {
        scale32_ftz_avx2(o, x, n, a);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = ftz1((float)(x[i] * a));
}

void vec_fma32_ftz(double *x, long n, double a, double b)
{
    if (VEC_HAVE_AVX2) {
        fma32_ftz_avx2(x, x, n, a, b, NULL);
        return;
    }
    for (long i = 0; i < n; i++)
        x[i] = ftz1(fmaf((float)x[i], (float)a, (float)b));
}

void vec_axpy32_ftz(double *o, const double *y, long n, double a)
{
    if (VEC_HAVE_AVX2) {
        fma32_ftz_avx2(o, y, n, a, 0, o);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = ftz1(fmaf((float)y[i], (float)a, (float)o[i]));
}

void vec_narrow32(float *o, const double *x, long n)
{
    if (VEC_HAVE_AVX2) {
        cvt32_avx2(o, x, n, 1);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = (float)x[i];
}

void vec_widen32(double *o, const float *x, long n)
{
    if (VEC_HAVE_AVX2) {
        cvt32_avx2(o, x, n, 0);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = x[i];
}

void vec_scale32_ftz_f(float *o, const double *x, long n, double a)
{
    if (VEC_HAVE_AVX2) {
        scale32_ftz_f_avx2(o, x, n, a);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = (float)ftz1((float)(x[i] * a));
}
