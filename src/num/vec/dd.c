/* dd_exp -- exponential of a double-double argument to about 2^-100 relative */
#include "num/vec/cpu.h"
#include "num/vec/dd.h"

#include <mpfr.h>
#include <pthread.h>

static const double LN2_HI = 0x1.62e42fefa39efp-1;

/* 1/n! for n = 0..10, as double-doubles (exact rationals rounded twice). */
static const dd_t DD_INV_FACT[11] = {
    {1.0, 0.0},
    {1.0, 0.0},
    {0x1.0000000000000p-1, 0.0},
    {0x1.5555555555555p-3, 0x1.5555555555555p-57},
    {0x1.5555555555555p-5, 0x1.5555555555555p-59},
    {0x1.1111111111111p-7, 0x1.1111111111111p-63},
    {0x1.6c16c16c16c17p-10, -0x1.f49f49f49f49fp-65},
    {0x1.a01a01a01a01ap-13, 0x1.a01a01a01a01ap-73},
    {0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-76},
    {0x1.71de3a556c734p-19, -0x1.c154f8ddc6c00p-73},
    {0x1.27e4fb7789f5cp-22, 0x1.cbbc05b4fa99ap-76},
};

/* exp(x) = 2^m 2^(j/1024) exp(r): k = m 1024 + j = nearest integer to x 1024/ln2 and
 * r = x - k ln2/1024, |r| <= ln2/2048 < 2^-11.4. T[j] = 2^(j/1024) as double-doubles, correctly
 * rounded through MPFR once per process. expm1(r) = r + r^2/2 + r^3/6 + r^4/24 + r^5 q(r):
 * the terms through r^4 in double-double, q = 1/120 + r/720 + ... + r^4/9! in binary64 from
 * r.hi (its relative error 2^-52 is worth 2^-109 of the result; the omitted r^10/10! 2^-135). */
#define DD_EXP_TBITS 10
#define DD_EXP_TSIZE (1 << DD_EXP_TBITS)
static dd_t dd_exp_table[DD_EXP_TSIZE];
static pthread_once_t dd_exp_once = PTHREAD_ONCE_INIT;

static void dd_exp_init(void)
{
    mpfr_t t;
    mpfr_init2(t, 160);
    for (int j = 0; j < DD_EXP_TSIZE; j++) {
        mpfr_set_si(t, j, MPFR_RNDN);
        mpfr_div_2si(t, t, DD_EXP_TBITS, MPFR_RNDN);
        mpfr_exp2(t, t, MPFR_RNDN);
        dd_exp_table[j].hi = mpfr_get_d(t, MPFR_RNDN);
        mpfr_sub_d(t, t, dd_exp_table[j].hi, MPFR_RNDN);
        dd_exp_table[j].lo = mpfr_get_d(t, MPFR_RNDN);
    }
    mpfr_clear(t);
    mpfr_free_cache(); /* this thread's constants (log 2): a worker thread's would outlive it */
}

/* ln2/1024 = hi + mid + lo to 2^-160 relative (k reaches 2^20: a double-double ln 2 would lose
 * 20 bits; k*hi and k*mid are formed exactly with TwoProd). */
static const double LN2K_HI = 0x1.62e42fefa39efp-11, LN2K_MID = 0x1.abc9e3b39803fp-66,
                    LN2K_LO = 0x1.7b57a079a1934p-121;

dd_t dd_exp(dd_t x)
{
    if (x.hi < -745.2)
        return (dd_t){0.0, 0.0};
    if (x.hi > 709.7)
        return (dd_t){INFINITY, 0.0};
    pthread_once(&dd_exp_once, dd_exp_init);
    const double C = 0x1.8p52; /* adding and subtracting C rounds |t| < 2^51 to an integer */
    double k = (x.hi * (DD_EXP_TSIZE / LN2_HI) + C) - C;
    double p1 = k * LN2K_HI, p2 = k * LN2K_MID;
    dd_t r = dd_add(x, (dd_t){-p1, -fma(k, LN2K_HI, -p1)});
    r = dd_add(r, (dd_t){-p2, -fma(k, LN2K_MID, -p2)});
    r = dd_add(r, (dd_t){-k * LN2K_LO, 0.0});
    double h = r.hi;
    double q = DD_INV_FACT[5].hi +
               h * (DD_INV_FACT[6].hi + h * (DD_INV_FACT[7].hi + h * (DD_INV_FACT[8].hi + h * DD_INV_FACT[9].hi)));
    dd_t e = dd_add(DD_INV_FACT[4], dd_mul(r, (dd_t){q, 0.0}));
    for (int n = 3; n >= 1; n--)
        e = dd_add(DD_INV_FACT[n], dd_mul(r, e));
    e = dd_mul(r, e);
    long ki = (long)k;
    long j = ki & (DD_EXP_TSIZE - 1), m = (ki - j) / DD_EXP_TSIZE;
    dd_t t = dd_exp_table[j];
    dd_t y = dd_add(t, dd_mul(t, e));
    if (m < -1022) /* 2^m itself is subnormal */
        return (dd_t){ldexp(y.hi, (int)m), ldexp(y.lo, (int)m)};
    double pm = dd_pow2((int)m);
    return (dd_t){y.hi * pm, y.lo * pm};
}

/* dd_sum_array from running sums a[4] at element j on */
static dd_t dd_sum_from(dd_t a[4], const double *hi, const double *lo, long j, long n)
{
    for (; j + 4 <= n; j += 4)
        for (int k = 0; k < 4; k++)
            a[k] = dd_add(a[k], (dd_t){hi[j + k], lo[j + k]});
    for (; j < n; j++)
        a[j % 4] = dd_add(a[j % 4], (dd_t){hi[j], lo[j]});
    return dd_add(dd_add(a[0], a[1]), dd_add(a[2], a[3]));
}

dd_t dd_sum_array(const double *hi, const double *lo, long n)
{
    dd_t a[4] = {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}};
    return dd_sum_from(a, hi, lo, 0, n);
}

/* ---- dd_exp_array: the same operations, eight lanes at a time (AVX-512) or four (AVX2) ---- */
static dd_t dd_exp_shifted(dd_t x, double m, dd_t scale)
{
    return dd_exp(dd_mul(dd_add(x, (dd_t){-m, 0.0}), scale));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Several vectors at once: the exp is one long chain of dependent operations, so a lone vector
 * waits on latencies that independent vectors going through it together fill. VN_FN: one
 * operation on each of count vectors (a loop GCC unrolls), under the target attribute tgt. */
#define VN_FN(tgt, count, type, name, params, expr)                                                \
    tgt static inline __attribute__((always_inline)) type name params                              \
    {                                                                                            \
        type r;                                                                                  \
        _Pragma("GCC unroll 4") for (int n = 0; n < (count); n++)                                \
            r.v[n] = (expr);                                                                     \
        return r;                                                                                \
    }
/* DD4_N AVX2 vectors */
#define DD4_N 4
#define T4 __attribute__((target("avx2,fma")))
#define T4I T4 static inline __attribute__((always_inline))
typedef struct {
    __m256d v[DD4_N];
} v4n_d;
typedef struct {
    __m128i v[DD4_N];
} v4n_i;
#define V4N_FN(type, name, params, expr) VN_FN(T4, DD4_N, type, name, params, expr)
/* The operations the exp needs, on each of a width's vectors (fn: V4N_FN or V8N_FN): p the names'
 * prefix (p_d, p_i the types), PD and PI the intrinsics' prefixes for the binary64 and the int32
 * vectors, W lanes a vector, IAND the int32 vectors' and, GATHER(base, idx) their gather */
#define VN_OPS(fn, p, PD, PI, W, IAND, GATHER)                                                                 \
    fn(p##_d, p##_set1, (double x), PD##_set1_pd(x))                                                            \
    fn(p##_d, p##_add, (p##_d x, p##_d y), PD##_add_pd(x.v[n], y.v[n]))                                           \
    fn(p##_d, p##_sub, (p##_d x, p##_d y), PD##_sub_pd(x.v[n], y.v[n]))                                           \
    fn(p##_d, p##_mul, (p##_d x, p##_d y), PD##_mul_pd(x.v[n], y.v[n]))                                           \
    fn(p##_d, p##_fmsub, (p##_d x, p##_d y, p##_d z), PD##_fmsub_pd(x.v[n], y.v[n], z.v[n]))                      \
    fn(p##_d, p##_xor, (p##_d x, p##_d y), PD##_xor_pd(x.v[n], y.v[n]))                                           \
    fn(p##_d, p##_load, (const double *ptr), PD##_loadu_pd(ptr + (W) * n))                                        \
    fn(p##_i, p##_cvt_i, (p##_d x), PD##_cvtpd_epi32(x.v[n]))                                                     \
    fn(p##_i, p##_iset1, (int x), PI##_set1_epi32(x))                                                             \
    fn(p##_i, p##_iand, (p##_i x, p##_i y), IAND(x.v[n], y.v[n]))                                                 \
    fn(p##_i, p##_isub, (p##_i x, p##_i y), PI##_sub_epi32(x.v[n], y.v[n]))                                       \
    fn(p##_i, p##_israi, (p##_i x, int s), PI##_srai_epi32(x.v[n], s))                                            \
    fn(p##_i, p##_islli, (p##_i x, int s), PI##_slli_epi32(x.v[n], s))                                            \
    fn(p##_d, p##_gather, (const double *base, p##_i i), GATHER(base, i.v[n]))
#define DD4_GATHER(base, idx) _mm256_i32gather_pd(base, idx, 8)
VN_OPS(V4N_FN, v4n, _mm256, _mm, 4, _mm_and_si128, DD4_GATHER)
T4I __m256d dd4_pow2(__m128i i)
{
    return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(i), _mm256_set1_epi64x(1023)), 52));
}
T4I int dd4_redo(__m256d x, __m128i i)
{
    return _mm256_movemask_pd(_mm256_or_pd(_mm256_cmp_pd(x, _mm256_set1_pd(-745.2), _CMP_NGE_UQ),
                                           _mm256_cmp_pd(x, _mm256_set1_pd(709.7), _CMP_GT_OQ))) |
           _mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(i, _mm_set1_epi32(-1022))));
}
V4N_FN(v4n_d, v4n_pow2, (v4n_i i), dd4_pow2(i.v[n]))
/* Any lane of the width's vectors outside the common range (REDO per vector: a lane mask), and the
 * stores of binary64 and int32 vectors */
#define VN_REDO_STORE(tgt, p, cnt, W, REDO, STORE_PD, ISTORE)                                                  \
    tgt int p##_redo(p##_d x, p##_i i)                                                                          \
    {                                                                                                           \
        int m = 0;                                                                                              \
        for (int n = 0; n < (cnt); n++)                                                                         \
            m |= REDO(x.v[n], i.v[n]);                                                                          \
        return m;                                                                                               \
    }                                                                                                           \
    tgt void p##_store(double *ptr, p##_d x)                                                                     \
    {                                                                                                           \
        for (int n = 0; n < (cnt); n++)                                                                         \
            STORE_PD(ptr + (W) * n, x.v[n]);                                                                    \
    }                                                                                                           \
    tgt void p##_istore(int *ptr, p##_i x)                                                                       \
    {                                                                                                           \
        for (int n = 0; n < (cnt); n++)                                                                         \
            ISTORE(ptr + (W) * n, x.v[n]);                                                                      \
    }
#define DD4_ISTORE(ptr, v) _mm_storeu_si128((__m128i *)(ptr), v)
VN_REDO_STORE(T4I, v4n, DD4_N, 4, dd4_redo, _mm256_storeu_pd, DD4_ISTORE)
#define DDV_W (4 * DD4_N)
#define DDV(name) dd4n_##name
#define DDV_TGT T4
#define VD v4n_d
#define VI v4n_i
#define V_SET1 v4n_set1
#define V_ADD v4n_add
#define V_SUB v4n_sub
#define V_MUL v4n_mul
#define V_FMSUB v4n_fmsub
#define V_XOR v4n_xor
#define V_LOAD v4n_load
#define V_STORE v4n_store
#define V_CVT_I v4n_cvt_i
#define I_SET1 v4n_iset1
#define I_AND v4n_iand
#define I_SUB v4n_isub
#define I_SRAI v4n_israi
#define I_SLLI v4n_islli
#define I_STORE v4n_istore
#define V_GATHER v4n_gather
#define V_POW2 v4n_pow2
#define V_REDO v4n_redo
#include "num/vec/dd_exp_vec.h"
#undef DDV_W
#undef DDV
#undef DDV_TGT
#undef VD
#undef VI
#undef V_SET1
#undef V_ADD
#undef V_SUB
#undef V_MUL
#undef V_FMSUB
#undef V_XOR
#undef V_LOAD
#undef V_STORE
#undef V_CVT_I
#undef I_SET1
#undef I_AND
#undef I_SUB
#undef I_SRAI
#undef I_SLLI
#undef I_STORE
#undef V_GATHER
#undef V_POW2
#undef V_REDO

/* DD8_N AVX-512 vectors of eight lanes */
#define DD8_N 4
#define T8 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#define T8I T8 static inline __attribute__((always_inline))
typedef struct {
    __m512d v[DD8_N];
} v8n_d;
typedef struct {
    __m256i v[DD8_N];
} v8n_i;
#define V8N_FN(type, name, params, expr) VN_FN(T8, DD8_N, type, name, params, expr)
#define DD8_GATHER(base, idx) _mm512_i32gather_pd(idx, base, 8)
VN_OPS(V8N_FN, v8n, _mm512, _mm256, 8, _mm256_and_si256, DD8_GATHER)
T8I __m512d dd8_pow2(__m256i i)
{
    return _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(_mm512_cvtepi32_epi64(i), _mm512_set1_epi64(1023)), 52));
}
T8I int dd8_redo(__m512d x, __m256i i)
{
    return _mm512_cmp_pd_mask(x, _mm512_set1_pd(-745.2), _CMP_NGE_UQ) | _mm512_cmp_pd_mask(x, _mm512_set1_pd(709.7), _CMP_GT_OQ) |
           _mm256_cmplt_epi32_mask(i, _mm256_set1_epi32(-1022));
}
V8N_FN(v8n_d, v8n_pow2, (v8n_i i), dd8_pow2(i.v[n]))
#define DD8_ISTORE(ptr, v) _mm256_storeu_si256((__m256i *)(ptr), v)
VN_REDO_STORE(T8I, v8n, DD8_N, 8, dd8_redo, _mm512_storeu_pd, DD8_ISTORE)
#define DDV_W (8 * DD8_N)
#define DDV(name) dd8n_##name
#define DDV_TGT T8
#define VD v8n_d
#define VI v8n_i
#define V_SET1 v8n_set1
#define V_ADD v8n_add
#define V_SUB v8n_sub
#define V_MUL v8n_mul
#define V_FMSUB v8n_fmsub
#define V_XOR v8n_xor
#define V_LOAD v8n_load
#define V_STORE v8n_store
#define V_CVT_I v8n_cvt_i
#define I_SET1 v8n_iset1
#define I_AND v8n_iand
#define I_SUB v8n_isub
#define I_SRAI v8n_israi
#define I_SLLI v8n_islli
#define I_STORE v8n_istore
#define V_GATHER v8n_gather
#define V_POW2 v8n_pow2
#define V_REDO v8n_redo
#include "num/vec/dd_exp_vec.h"
#endif

int dd_simd = 2;

void dd_exp_array(double *hi, double *lo, long n, double m, dd_t scale)
{
    long j = 0;
    pthread_once(&dd_exp_once, dd_exp_init);
#if defined(__x86_64__) && defined(__GNUC__)
    if (dd_simd >= 2 && cpu_has_avx512())
        for (; j + 8 * DD8_N <= n; j += 8 * DD8_N)
            dd8n_exp(hi + j, lo + j, m, scale);
    if (dd_simd >= 1 && cpu_has_avx2_fma())
        for (; j + 4 * DD4_N <= n; j += 4 * DD4_N)
            dd4n_exp(hi + j, lo + j, m, scale);
#endif
    for (; j < n; j++) {
        dd_t p = dd_exp_shifted((dd_t){hi[j], lo[j]}, m, scale);
        hi[j] = p.hi;
        lo[j] = p.lo;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Eight rows from the first: rows 2 v and 2 v + 1 in vector v, lanes 4 (r % 2) + k their running sum k, through
 * the four-element blocks every row has; each row then goes on alone. */
T8 static void dd8_sum_rows(dd_t *s, const double *hi, const double *lo, long ld, const long *n)
{
    dd8n_dd_t acc, y;
    long m = n[0];
    for (int r = 1; r < 8; r++)
        m = n[r] < m ? n[r] : m;
    m = m > 0 ? m / 4 * 4 : 0;
    for (int v = 0; v < DD8_N; v++)
        acc.hi.v[v] = acc.lo.v[v] = _mm512_setzero_pd();
    for (long j = 0; j < m; j += 4) {
        for (int v = 0; v < DD8_N; v++) { /* rows 2 v, 2 v + 1: elements j .. j + 3 of each */
            long a = 2 * v * ld + j, b = a + ld;
            y.hi.v[v] = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(hi + a)), _mm256_loadu_pd(hi + b), 1);
            y.lo.v[v] = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(lo + a)), _mm256_loadu_pd(lo + b), 1);
        }
        acc = dd8n_add(acc, y); /* dd_add, lane for lane */
    }
    for (int r = 0; r < 8; r++) {
        double th[8], tl[8];
        _mm512_storeu_pd(th, acc.hi.v[r / 2]);
        _mm512_storeu_pd(tl, acc.lo.v[r / 2]);
        dd_t a[4];
        for (int k = 0; k < 4; k++)
            a[k] = (dd_t){th[4 * (r % 2) + k], tl[4 * (r % 2) + k]};
        s[r] = dd_sum_from(a, hi + r * ld, lo + r * ld, m, n[r]);
    }
}
#endif

void dd_sum_rows(dd_t *s, const double *hi, const double *lo, long ld, const long *n, long rows)
{
    long r = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (dd_simd >= 2 && cpu_has_avx512())
        for (; r + 8 <= rows; r += 8)
            dd8_sum_rows(s + r, hi + r * ld, lo + r * ld, ld, n + r);
#endif
    for (; r < rows; r++)
        s[r] = dd_sum_array(hi + r * ld, lo + r * ld, n[r]);
}
