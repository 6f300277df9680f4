/* ozaki_one -- exact products through one FP64 GEMM and a sparse list of remainders: Q K^T (ozaki_one_int.h
 * says how; P V in ozaki_one_pv.c) */
#include "ref/ozaki_one.h"

#include <cblas.h>
#include <stdlib.h>

#include "base/err.h"
#include "num/vec/cpu.h"
#include "ref/ozaki_one_int.h"
#include "ref/ozaki_slices.h"
#include "ref/ozaki_u8.h"

static long oz1_count[2]; /* products done here, remainder terms summed (since the process started) */

void oz1_counted(long terms)
{
#pragma omp atomic
    oz1_count[0]++;
#pragma omp atomic
    oz1_count[1] += terms;
}

static double oz1_fp64_seconds;

void oz1_timed_fp64(double s)
{
#pragma omp atomic
    oz1_fp64_seconds += s;
}

double ozaki_pv_fp64_seconds(void)
{
    double s;
#pragma omp atomic read
    s = oz1_fp64_seconds;
    return s;
}

void ozaki_one_stats(long *products, long *terms)
{
    long a, b;
#pragma omp atomic read
    a = oz1_count[0];
#pragma omp atomic read
    b = oz1_count[1];
    *products = a;
    *terms = b;
}

/* Widths (ba for Q, bb for K, ba + bb = B) with the least remainder work: a Q remainder costs a
 * pass over sk keys, a K remainder one over the R rows. 0 if even the least is not sparse. */
static int oz1_widths(int *ba, int *bb, const double *q, const int *hq, const double *k, long R, long sk, long dk)
{
    long hist_q[64] = {0}, hist_k[64] = {0};
    int B = 53 - ozaki_ceil_log2(dk), have = 0;
    double best = 0;
    for (long i = 0; i < R; i++)
        if (hq[i] != OZ1_EMPTY)
            oz1_hist(hist_q, q + i * dk, dk, hq[i]);
    long step = oz1_step(sk);
    for (long j = 0; j < sk; j += step) {
        int hi;
        if (!oz1_hi(&hi, k + j * dk, dk))
            return 0;
        if (hi != OZ1_EMPTY)
            oz1_hist(hist_k, k + j * dk, dk, hi);
    }
    for (int a = 1; a < B && a <= 50; a++) {
        if (B - a > 50)
            continue;
        double cost = (double)oz1_above(hist_q, a) * (double)sk +
                      (double)oz1_above(hist_k, B - a) * (double)step * (double)R;
        if (!have || cost < best) {
            best = cost;
            *ba = a;
            *bb = B - a;
            have = 1;
        }
    }
    return have && best * OZ1_SPARSE <= (double)R * (double)sk * (double)dk;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* One row's chunk of the scores, h = g fa fk and l = 0, with non-temporal stores (AVX-512): the scores (R sk pairs,
 * 16 MB at MLA's shape) are read again only by the softmax, after the whole of Q K^T, so writing them around the
 * cache saves reading each line in first (Q K^T's pass writing them: 0.0022-0.0026 s against 0.0044-0.0053 s).
 * Where hr is not on a cache line, or n not a multiple of eight: 0. */
__attribute__((target("avx512f"))) static int oz1_scores_nt(double *hr, double *lr, const double *gr, double fa,
                                                            const double *fk, long n)
{
    if (((uintptr_t)hr | (uintptr_t)lr) & 63 || n % 8)
        return 0;
    __m512d a = _mm512_set1_pd(fa), z = _mm512_setzero_pd();
    for (long j = 0; j < n; j += 8) { /* (g fa) fk, as the plain loop */
        _mm512_stream_pd(hr + j, _mm512_mul_pd(_mm512_mul_pd(_mm512_loadu_pd(gr + j), a), _mm512_loadu_pd(fk + j)));
        _mm512_stream_pd(lr + j, z);
    }
    return 1;
}
#endif

/* nt: the scores written by oz1_scores_nt where it can (the AVX-512 build) */
static inline __attribute__((always_inline)) int scores_one_body(double *h, double *l, const attn_group_t *g,
                                                                 const int nt)
{
    (void)nt; /* unused where there is no AVX-512 build */
    long R = g->R, sk = g->sk, dk = g->dk;
    double budget = (double)R * (double)sk * (double)dk / OZ1_SPARSE, work = 0;
    int *hq = err_malloc((size_t)R, sizeof(int)), ba = 0, bb = 0;
    int ok = 1;
    for (long i = 0; i < R && ok; i++)
        ok = oz1_hi(&hq[i], g->q + i * dk, dk);
    ok = ok && oz1_widths(&ba, &bb, g->q, hq, g->k, R, sk, dk);
    /* with AMX the products go through byte digit planes (the same exact sums), fewer keys a chunk: every chunk's
     * scores are its own, so its size changes no bit */
    int u8 = ok && ozaki_u8_usable(ba, bb, dk);
    long ch = u8 ? OZ1_U8_CHUNK : OZAKI_CHUNK;
    ch = sk < ch ? sk : ch;
    int *hk = err_malloc((size_t)ch, sizeof(int));
    double *qs = err_malloc((size_t)(R * dk), sizeof(double)), *ks = err_malloc((size_t)(ch * dk), sizeof(double));
    double *gm = err_malloc((size_t)(R * ch), sizeof(double)), *fq = err_malloc((size_t)R, sizeof(double));
    double *fk = err_malloc((size_t)ch, sizeof(double));
    oz1_terms_t tq = {err_malloc((size_t)(R * dk), sizeof(oz1_term_t)), 0, R * dk};
    oz1_terms_t tk = {err_malloc((size_t)(ch * dk), sizeof(oz1_term_t)), 0, ch * dk};
    for (long i = 0; i < R && ok; i++) {
        ok = oz1_cut(qs + i * dk, &tq, g->q + i * dk, dk, hq[i], ba, i);
        fq[i] = hq[i] == OZ1_EMPTY ? 0.0 : ldexp(1.0, hq[i] - ba);
    }
    work = (double)tq.n * (double)sk;
    long nterms = tq.n;
    /* Q's slice as byte digit planes, once, where the products go through AMX */
    ozaki_u8_t qz = {0};
    uint64_t *u8w = u8 ? err_malloc((size_t)(R * ch), sizeof(uint64_t)) : NULL;
    if (u8)
        ozaki_u8_planes(&qz, qs, R, dk, ba, 0, OZAKI_U8_A);
    for (long j0 = 0; j0 < sk && ok; j0 += ch) {
        long n = sk - j0 < ch ? sk - j0 : ch;
        tk.n = 0;
        for (long j = 0; j < n && ok; j++) {
            const double *kr = g->k + (j0 + j) * dk;
            ok = oz1_hi(&hk[j], kr, dk) && oz1_cut(ks + j * dk, &tk, kr, dk, hk[j], bb, j);
            fk[j] = hk[j] == OZ1_EMPTY ? 0.0 : ldexp(1.0, hk[j] - bb);
        }
        work += (double)tk.n * (double)R;
        nterms += tk.n;
        if (!ok || work > budget) {
            ok = 0;
            break;
        }
        if (u8) { /* the same exact sums through 8-bit digit planes */
            ozaki_u8_t kz;
            ozaki_u8_planes(&kz, ks, n, dk, bb, 0, OZAKI_U8_B);
            ozaki_u8_product(gm, n, &qz, &kz, u8w);
            ozaki_u8_free(&kz);
        } else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)n, (int)dk, 1.0, qs, (int)dk, ks,
                        (int)dk, 0.0, gm, (int)n);
        for (long i = 0; i < R; i++) {
            double fa = fq[i];
            const double *gr = gm + i * n;
            double *hr = h + i * sk + j0, *lr = l + i * sk + j0;
#if defined(__x86_64__) && defined(__GNUC__)
            if (nt && oz1_scores_nt(hr, lr, gr, fa, fk, n))
                continue;
#endif
#pragma omp simd
            for (long j = 0; j < n; j++) {
                hr[j] = gr[j] * fa * fk[j];
                lr[j] = 0.0;
            }
        }
        /* Q K2^T: each K remainder against the whole column of Q */
        for (long t = 0; t < tk.n; t++) {
            const oz1_term_t *e = &tk.t[t];
            for (long i = 0; i < R; i++)
                oz1_add(&h[i * sk + j0 + e->r], &l[i * sk + j0 + e->r], g->q[i * dk + e->c], e->v);
        }
        /* Q2 K1^T: each Q remainder against K1's column (K1 = K - K2, the slice scaled back) */
        for (long t = 0; t < tq.n; t++) {
            const oz1_term_t *e = &tq.t[t];
            for (long j = 0; j < n; j++)
                oz1_add(&h[e->r * sk + j0 + j], &l[e->r * sk + j0 + j], e->v, ks[j * dk + e->c] * fk[j]);
        }
    }
    if (ok)
        oz1_counted(nterms);
    if (u8)
        ozaki_u8_free(&qz);
    free(u8w);
    free(hq);
    free(hk);
    free(qs);
    free(ks);
    free(gm);
    free(fq);
    free(fk);
    free(tq.t);
    free(tk.t);
    return ok;
}

/* Compiled twice, the second for AVX-512 (its loops element by element, eight lanes a vector; the one reduction,
 * the cut's sum of |t - q|, only tested against zero and NaN), chosen at run time. */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))) static int scores_one_x16(double *h, double *l,
                                                                                     const attn_group_t *g)
{
    int ok = scores_one_body(h, l, g, 1);
    _mm_sfence(); /* the non-temporal stores ordered before whatever follows */
    return ok;
}
#endif

int ozaki_scores_one(double *h, double *l, const attn_group_t *g)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512())
        return scores_one_x16(h, l, g);
#endif
    return scores_one_body(h, l, g, 0);
}
