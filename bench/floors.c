/* floors -- the lab's product kernels on operands in cache (see floors.h) */
#include "floors.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "num/acc/acc.h"
#include "num/acc/acc_f32.h"
#include "num/acc/acc_model.h"
#include "num/acc/acc_tc.h"
#include "num/acc/acc_tc_int.h"
#include "num/vec/cpu.h"
#include "num/fmt/fmt.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double floors_best_of(void (*f)(void *), void *arg, int reps, int runs)
{
    double best = 1e9;
    for (int t = 0; t < runs; t++) {
        double t0 = now();
        for (int i = 0; i < reps; i++)
            f(arg);
        double dt = (now() - t0) / reps;
        best = dt < best ? dt : best;
    }
    return best;
}

#if defined(__x86_64__) && defined(__GNUC__)
static float tl_a[16][FLOORS_TERMS_K], tl_b[FLOORS_TERMS_K][8], tl_b16[FLOORS_TERMS_K][16];

/* The kernels' own inner loop (acc_tc_int.h) in both widths, and the terms alone around it: sixteen rows in
 * groups of four, blocks of 16 k, W columns a vector, each group's four int32 sums a chain. One definition for
 * both widths (the vector types, their prefix, zero, sum and first lane). */
#define TL_AVX2 __attribute__((target("avx2,fma")))
#define TL_X16 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")))
ACC_TCF_TERMS(tl_terms8, TL_AVX2, __m256i, __m256, 8, _mm256, _mm256_loadu_si256)
ACC_TCF_TERMS(tl_terms16, TL_X16, __m512i, __m512, 16, _mm512, _mm512_loadu_si512)
#define TL_TERMS_ONLY(name, tgt, vi, vf, V, terms, bp, zero, first)                                               \
    tgt __attribute__((noinline)) static int name(void)                                                           \
    {                                                                                                             \
        vi tot = zero;                                                                                            \
        vf up[4];                                                                                                 \
        for (int r = 0; r < 4; r++)                                                                               \
            up[r] = V##_set1_ps(1024.0f * (float)(r + 1));                                                        \
        for (long k0 = 0; k0 < FLOORS_TERMS_K; k0 += 16)                                                          \
            for (int g = 0; g < 4; g++) {                                                                         \
                vi s[4] = {tot, tot, tot, tot};                                                                   \
                const float *a[4] = {tl_a[4 * g], tl_a[4 * g + 1], tl_a[4 * g + 2], tl_a[4 * g + 3]};             \
                terms(s, a, k0, k0 + 16, &bp[0][0], up, NULL, NULL, NULL, 0);                                     \
                tot = V##_add_epi32(tot, V##_add_epi32(V##_add_epi32(s[0], s[1]), V##_add_epi32(s[2], s[3])));    \
                __asm__ volatile("" ::: "memory");                                                                \
            }                                                                                                     \
        return first;                                                                                             \
    }
TL_TERMS_ONLY(terms_only8, TL_AVX2, __m256i, __m256, _mm256, tl_terms8, tl_b, _mm256_setzero_si256(),
              _mm256_extract_epi32(tot, 0))
TL_TERMS_ONLY(terms_only16, TL_X16, __m512i, __m512, _mm512, tl_terms16, tl_b16, _mm512_setzero_si512(),
              _mm_cvtsi128_si32(_mm512_castsi512_si128(tot)))

static void run_terms8(void *p)
{
    *(volatile int *)p = terms_only8();
}

static void run_terms16(void *p)
{
    *(volatile int *)p = terms_only16();
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
/* the terms' operands: small integers, every product and sum exact, none zero throughout */
static void terms_setup(void)
{
    for (int i = 0; i < 16; i++)
        for (int k = 0; k < FLOORS_TERMS_K; k++)
            tl_a[i][k] = (float)((i * 7 + k) % 13 - 6);
    for (int k = 0; k < FLOORS_TERMS_K; k++)
        for (int j = 0; j < 16; j++) {
            tl_b16[k][j] = (float)((k + j) % 5 - 2);
            if (j < 8)
                tl_b[k][j] = tl_b16[k][j];
        }
}
#endif

double floors_terms_seconds(int wide)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (!cpu_has_avx2_fma() || (wide && !cpu_has_avx512()))
        return 0;
    terms_setup();
    int sink;
    return floors_best_of(wide ? run_terms16 : run_terms8, &sink, 200, 15);
#else
    (void)wide;
    return 0;
#endif
}

typedef struct {
    double *s, *o;
    const double *q, *k, *p, *v;
    long R, sk, dk, dv;
    acc_model_t model;
} floors_gemm_t;

/* the attention's two products under one model as base makes them: per block of FLOORS_BLOCK keys, S = Q K^T
 * and T = P V from zero (base then adds T into its rescaled O) */
#define FLOORS_BLOCK 512
static void run_products(void *arg)
{
    floors_gemm_t *g = arg;
    for (long j0 = 0; j0 < g->sk; j0 += FLOORS_BLOCK) {
        long nb = g->sk - j0 < FLOORS_BLOCK ? g->sk - j0 : FLOORS_BLOCK;
        for (long i = 0; i < g->R * nb; i++)
            g->s[i] = 0;
        for (long i = 0; i < g->R * g->dv; i++)
            g->o[i] = 0;
        acc_gemm_f(g->s, nb, g->q, g->dk, g->k + j0 * g->dk, g->dk, 1, g->R, nb, g->dk, g->model, FMT_BF16,
                   FMT_BF16);
        acc_gemm_f(g->o, g->dv, g->p + j0, g->sk, g->v + j0 * g->dv, g->dv, 0, g->R, g->dv, nb, g->model, FMT_BF16,
                   FMT_BF16);
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* FLOORS_PAIRS runs of f, each after a run of the reference: the least time (*t) and the median of the
 * times over the reference's just before (returned), scaled by `scale` (the terms: to the sample's products) */
#define FLOORS_PAIRS 3
static double paired(void (*f)(void *), void *arg, int reps, double scale, double (*ref)(void *), void *ref_arg,
                     double *t)
{
    double r[FLOORS_PAIRS];
    *t = 1e30;
    for (int i = 0; i < FLOORS_PAIRS; i++) {
        double tr = ref(ref_arg), t0 = now();
        for (int j = 0; j < reps; j++)
            f(arg);
        double dt = (now() - t0) / reps * scale;
        *t = dt < *t ? dt : *t;
        r[i] = dt / tr;
    }
    qsort(r, FLOORS_PAIRS, sizeof *r, cmp_double);
    return r[FLOORS_PAIRS / 2];
}

#if defined(__x86_64__) && defined(__GNUC__)
typedef struct {
    int wide;
    volatile int sink;
} floors_terms_t;

static void run_terms(void *p)
{
    floors_terms_t *t = p;
    t->sink = t->wide ? terms_only16() : terms_only8();
}
#endif

int floors_measure(floors_t *f, const double *q, const double *k, const double *v, long R, long sk, long dk,
                   long dv, double (*ref)(void *), void *ref_arg)
{
    double *s = malloc(sizeof(double) * (size_t)(R * FLOORS_BLOCK)), *p = malloc(sizeof(double) * (size_t)(R * sk));
    double *o = malloc(sizeof(double) * (size_t)(R * dv));
    if (!s || !p || !o) {
        free(s);
        free(p);
        free(o);
        return -1;
    }
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 5);
    for (long i = 0; i < R * sk; i++) { /* P: exp(-|N(0,1)|) by Box-Muller, rounded to BF16 */
        double u1 = ((double)(fmt_rng_next(&rng) >> 11) + 0.5) * 0x1p-53;
        double u2 = ((double)(fmt_rng_next(&rng) >> 11) + 0.5) * 0x1p-53;
        p[i] = fmt_round(exp(-fabs(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2))), FMT_BF16, FMT_RNE, 0, NULL);
    }
    /* Q held as attn_run holds it for the binary32 and tensor-core models (converted once for every block) */
    floors_gemm_t g = {s, o, q, k, p, v, R, sk, dk, dv, ACC_FP32_FMA};
    acc_hold_f32(q, dk, R, dk);
    f->r_fp32 = paired(run_products, &g, 1, 1, ref, ref_arg, &f->fp32);
    acc_release_f32();
    g.model = ACC_FP16;
    f->r_fp16acc = paired(run_products, &g, 1, 1, ref, ref_arg, &f->fp16acc);
    g.model = ACC_TC_HOPPER;
    acc_tc_hold(q, dk, R, dk, fmt_table[FMT_BF16].emin);
    f->r_tc = paired(run_products, &g, 1, 1, ref, ref_arg, &f->tc);
    acc_tc_release();
    f->terms = f->r_terms = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    floors_terms_t tt = {cpu_has_avx512(), 0};
    if (cpu_has_avx2_fma()) {
        terms_setup();
        double calls = (double)R * (double)sk * (double)(dk + dv) / (16.0 * FLOORS_TERMS_K * (tt.wide ? 16 : 8));
        f->r_terms = paired(run_terms, &tt, 200, calls, ref, ref_arg, &f->terms);
    }
#endif
    free(s);
    free(p);
    free(o);
    return 0;
}
