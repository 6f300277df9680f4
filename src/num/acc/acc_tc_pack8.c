/* acc_tc_pack8 -- the AVX2 tensor-core kernel's operands (acc_tc_f32x8.c is the kernel): op(B)'s panels
 * transposed, the exponents in int16 pairs and int8 quads, the conversion of binary64 operands to the
 * binary32 lanes and the check of an accumulating C; each equal to its scalar form in acc_tc_f32.c (t-acc) */
#include "num/acc/acc_tc_int.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T8 __attribute__((target("avx2,fma")))

T8 void acc_tcf8_transpose(void *dst, const void *src, long K)
{
    /* 8 x 8 tiles: pairs of rows interleaved (32-bit, then 64-bit), then the 128-bit halves */
    const float *in = src;
    float *out = dst;
    long k0 = 0;
    for (; k0 + 8 <= K; k0 += 8) {
        __m256 r[8], t[8], u[8];
        _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
            r[i] = _mm256_loadu_ps(in + i * K + k0);
        _Pragma("GCC unroll 4") for (int i = 0; i < 8; i += 2) {
            t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
            t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
        }
        _Pragma("GCC unroll 2") for (int i = 0; i < 8; i += 4) {
            u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
            u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
            u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
            u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
        }
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            _mm256_storeu_ps(out + (k0 + i) * 8, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
            _mm256_storeu_ps(out + (k0 + i + 4) * 8, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
        }
    }
    for (; k0 < K; k0++)
        for (int t = 0; t < 8; t++)
            out[k0 * 8 + t] = in[t * K + k0];
}

T8 void acc_tcf8_pairs(int32_t *q, const float *lo, const float *hi, long n)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    const __m256i none = _mm256_set1_epi32(ACC_TCF_NONE), low16 = _mm256_set1_epi32(0xffff);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 l = _mm256_loadu_ps(lo + i), h = _mm256_loadu_ps(hi + i);
        __m256i li = _mm256_blendv_epi8(_mm256_cvttps_epi32(l), none, _mm256_castps_si256(_mm256_cmp_ps(l, ninf, _CMP_EQ_OQ)));
        __m256i hi16 = _mm256_blendv_epi8(_mm256_cvttps_epi32(h), none, _mm256_castps_si256(_mm256_cmp_ps(h, ninf, _CMP_EQ_OQ)));
        _mm256_storeu_si256((__m256i *)(q + i), _mm256_or_si256(_mm256_and_si256(li, low16), _mm256_slli_epi32(hi16, 16)));
    }
    for (; i < n; i++)
        q[i] = acc_tcf_pair(lo[i], hi[i]);
}

T8 void acc_tcf8_quads(int32_t *q, const float *const *e, long n, int bias)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    const __m256i vb = _mm256_set1_epi32(bias), none = _mm256_set1_epi32(ACC_TCF8_QNONE & 0xff);
    const __m256i low8 = _mm256_set1_epi32(0xff);
    long i = 0;
    for (; i + 8 <= n && e[0] == e[1] && e[1] == e[2] && e[2] == e[3]; i += 8) { /* op(B)'s: one byte, four times */
        __m256 x = _mm256_loadu_ps(e[0] + i);
        __m256i b = _mm256_and_si256(_mm256_sub_epi32(_mm256_cvttps_epi32(x), vb), low8);
        b = _mm256_blendv_epi8(b, none, _mm256_castps_si256(_mm256_cmp_ps(x, ninf, _CMP_EQ_OQ)));
        b = _mm256_or_si256(b, _mm256_slli_epi32(b, 8));
        _mm256_storeu_si256((__m256i *)(q + i), _mm256_or_si256(b, _mm256_slli_epi32(b, 16)));
    }
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_setzero_si256();
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            __m256 x = _mm256_loadu_ps(e[j] + i);
            __m256i b = _mm256_and_si256(_mm256_sub_epi32(_mm256_cvttps_epi32(x), vb), low8);
            b = _mm256_blendv_epi8(b, none, _mm256_castps_si256(_mm256_cmp_ps(x, ninf, _CMP_EQ_OQ)));
            w = _mm256_or_si256(w, _mm256_slli_epi32(b, 8 * j));
        }
        _mm256_storeu_si256((__m256i *)(q + i), w);
    }
    for (; i < n; i++) {
        uint32_t w = 0;
        for (int j = 0; j < 4; j++)
            w |= (uint32_t)(e[j][i] == -INFINITY ? ACC_TCF8_QNONE & 0xff : ((int)e[j][i] - bias) & 0xff) << 8 * j;
        q[i] = (int32_t)w;
    }
}

T8 void acc_tcf8_or_cols(uint32_t *kf, const float *x, long rows, long ld, long K)
{
    for (long i = 0; i < rows; i++) {
        const float *xr = x + i * ld;
        long k = 0;
        for (; k + 8 <= K; k += 8)
            _mm256_storeu_si256((__m256i *)(kf + k), _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(kf + k)),
                                                                     _mm256_castps_si256(_mm256_loadu_ps(xr + k))));
        for (; k < K; k++) {
            uint32_t u;
            memcpy(&u, xr + k, sizeof u);
            kf[k] |= u;
        }
    }
}

T8 uint32_t acc_tcf8_or_bits(const float *x, long n)
{
    __m256i o = _mm256_setzero_si256();
    long i = 0;
    for (; i + 8 <= n; i += 8)
        o = _mm256_or_si256(o, _mm256_castps_si256(_mm256_loadu_ps(x + i)));
    uint32_t w[8], r = 0;
    _mm256_storeu_si256((__m256i *)w, o);
    for (int t = 0; t < 8; t++)
        r |= w[t];
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        r |= u;
    }
    return r;
}

/* the high (odd) or low (even) 32-bit words of eight binary64 values, in order */
T8 static inline __m256i tcf8_words(__m256d x0, __m256d x1, const int high)
{
    __m256 w = high ? _mm256_shuffle_ps(_mm256_castpd_ps(x0), _mm256_castpd_ps(x1), 0xdd)
                    : _mm256_shuffle_ps(_mm256_castpd_ps(x0), _mm256_castpd_ps(x1), 0x88);
    return _mm256_permute4x64_epi64(_mm256_castps_si256(w), 0xd8);
}

T8 long acc_tcf8_convert(float *v, float *e, const double *x, long n, int emin, acc_tcf_range_t *g)
{
    const __m256i e11 = _mm256_set1_epi32(0x7ff), bias = _mm256_set1_epi32(1023), vmin = _mm256_set1_epi32(emin);
    const __m256i zero = _mm256_setzero_si256(), mag = _mm256_set1_epi32(0x7fffffff), low9 = _mm256_set1_epi32(0x1ff);
    __m256i emx = _mm256_set1_epi32(INT32_MIN), emn = _mm256_set1_epi32(INT32_MAX), bad = zero;
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d x0 = _mm256_loadu_pd(x + i), x1 = _mm256_loadu_pd(x + i + 4);
        __m256i hi = tcf8_words(x0, x1, 1), lo = tcf8_words(x0, x1, 0);
        __m256i ef = _mm256_and_si256(_mm256_srli_epi32(hi, 20), e11);
        __m256i z = _mm256_cmpeq_epi32(_mm256_or_si256(_mm256_and_si256(hi, mag), lo), zero);
        /* at most 12 significant bits (the low 41 of the significand clear), finite, binade >= -126 */
        __m256i fits = _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_or_si256(_mm256_and_si256(hi, low9), lo), zero),
                                        _mm256_cmpgt_epi32(ef, _mm256_set1_epi32(1023 - 127)));
        fits = _mm256_andnot_si256(_mm256_cmpeq_epi32(ef, e11), fits);
        bad = _mm256_or_si256(bad, _mm256_andnot_si256(_mm256_or_si256(z, fits), _mm256_set1_epi32(-1)));
        __m256i ex = _mm256_max_epi32(_mm256_sub_epi32(ef, bias), vmin);
        emx = _mm256_max_epi32(emx, _mm256_blendv_epi8(ex, _mm256_set1_epi32(INT32_MIN), z));
        emn = _mm256_min_epi32(emn, _mm256_blendv_epi8(ex, _mm256_set1_epi32(INT32_MAX), z));
        _mm256_storeu_ps(v + i, _mm256_set_m128(_mm256_cvtpd_ps(x1), _mm256_cvtpd_ps(x0)));
        _mm256_storeu_ps(e + i, _mm256_blendv_ps(_mm256_cvtepi32_ps(ex), _mm256_set1_ps(-INFINITY), _mm256_castsi256_ps(z)));
    }
    int32_t mx[8], mn[8];
    _mm256_storeu_si256((__m256i *)mx, emx);
    _mm256_storeu_si256((__m256i *)mn, emn);
    for (int t = 1; t < 8; t++) {
        mx[0] = mx[t] > mx[0] ? mx[t] : mx[0];
        mn[0] = mn[t] < mn[0] ? mn[t] : mn[0];
    }
    if (mx[0] != INT32_MIN) {
        g->emx = (float)mx[0] > g->emx ? (float)mx[0] : g->emx;
        g->emn = (float)mn[0] < g->emn ? (float)mn[0] : g->emn;
    }
    g->ok &= !_mm256_testz_si256(bad, bad) ? 0 : 1;
    return i;
}

T8 int acc_tcf8_check_c(const double *C, long ldc, long M, long N, double *cmax)
{
    /* per four values: binary32 and back equal (a binary32 value: finite or infinite), its magnitude's running
     * maximum (below 2^127: no infinity) and minimum over the nonzero ones (at least 2^-126: no binary32
     * subnormal); the tests once at the end */
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const __m256d zero = _mm256_setzero_pd(), inf = _mm256_set1_pd(INFINITY);
    __m256d mx = _mm256_set1_pd(*cmax), mn = inf, same = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j += 4) {
            const double *cr = C + i * ldc + j;
            __m256d c;
            if (j + 4 <= N) {
                c = _mm256_loadu_pd(cr);
            } else { /* zero beyond N: it suits */
                __m256i in = _mm256_cmpgt_epi64(_mm256_set1_epi64x(N - j), _mm256_set_epi64x(3, 2, 1, 0));
                c = _mm256_maskload_pd(cr, in);
            }
            __m256d ac = _mm256_and_pd(c, absmask);
            same = _mm256_and_pd(same, _mm256_cmp_pd(_mm256_cvtps_pd(_mm256_cvtpd_ps(c)), c, _CMP_EQ_OQ));
            mx = _mm256_max_pd(mx, ac);
            mn = _mm256_min_pd(mn, _mm256_blendv_pd(ac, inf, _mm256_cmp_pd(c, zero, _CMP_EQ_OQ)));
        }
    double m[4], n[4];
    _mm256_storeu_pd(m, mx);
    _mm256_storeu_pd(n, mn);
    for (int t = 1; t < 4; t++) {
        m[0] = m[t] > m[0] ? m[t] : m[0];
        n[0] = n[t] < n[0] ? n[t] : n[0];
    }
    if (_mm256_movemask_pd(same) != 0xf || !(m[0] < 0x1p127) || n[0] < 0x1p-126)
        return 0;
    *cmax = m[0];
    return 1;
}
#endif
