/* vec -- elementwise array loops in AVX2 (see vec.h) */
#include "num/vec.h"

#include <math.h>

#include "num/cpu.h"

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

VEC_AVX2 static void rescale_add32_avx2(double *o, const double *t, long n, double a, double ts)
{
    __m256d av = _mm256_set1_pd(a), tv = _mm256_set1_pd(ts);
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d u = _mm256_loadu_pd(t + i);
        if (ts != 0)
            u = f32x4(_mm256_mul_pd(u, tv));
        _mm256_storeu_pd(o + i, f32x4(_mm256_add_pd(f32x4(_mm256_mul_pd(_mm256_loadu_pd(o + i), av)), u)));
    }
    for (; i < n; i++)
        o[i] = (double)(float)((double)(float)(o[i] * a) + (ts != 0 ? (double)(float)(t[i] * ts) : t[i]));
}

/* max_pd(v, m) is v > m ? v : m lane by lane (m where either is NaN), as the scalar loop */
VEC_AVX2 static double absmax_avx2(const double *x, long n, double m)
{
    const __m256d abs = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d m0 = _mm256_set1_pd(m), m1 = m0;
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        m0 = _mm256_max_pd(_mm256_and_pd(_mm256_loadu_pd(x + i), abs), m0);
        m1 = _mm256_max_pd(_mm256_and_pd(_mm256_loadu_pd(x + i + 4), abs), m1);
    }
    double t[8];
    _mm256_storeu_pd(t, m0);
    _mm256_storeu_pd(t + 4, m1);
    for (int j = 0; j < 8; j++)
        m = t[j] > m ? t[j] : m;
    for (; i < n; i++)
        m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}
#define VEC_HAVE_AVX2 cpu_has_avx2_fma()
#else
#define VEC_HAVE_AVX2 0
static void mul_avx2(double *o, const double *x, long n, double s, int div)
{
    (void)o, (void)x, (void)n, (void)s, (void)div;
}
static void rescale_add32_avx2(double *o, const double *t, long n, double a, double ts)
{
    (void)o, (void)t, (void)n, (void)a, (void)ts;
}
static double absmax_avx2(const double *x, long n, double m)
{
    (void)x, (void)n;
    return m;
}
#endif

void vec_mul(double *o, const double *x, long n, double s)
{
    if (VEC_HAVE_AVX2) {
        mul_avx2(o, x, n, s, 0);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = x[i] * s;
}

void vec_div(double *o, const double *x, long n, double s)
{
    if (VEC_HAVE_AVX2) {
        mul_avx2(o, x, n, s, 1);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = x[i] / s;
}

void vec_rescale_add32(double *o, const double *t, long n, double a, double ts)
{
    if (VEC_HAVE_AVX2) {
        rescale_add32_avx2(o, t, n, a, ts);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = (double)(float)((double)(float)(o[i] * a) + (ts != 0 ? (double)(float)(t[i] * ts) : t[i]));
}

double vec_absmax(const double *x, long n, double m)
{
    if (VEC_HAVE_AVX2)
        return absmax_avx2(x, n, m);
    for (long i = 0; i < n; i++)
        m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}
