/* acc_tc_f32 -- the tensor-core block models in binary32 and int32 lanes, where the operands
 * allow (bit-identical to the scalar block model of acc_tc.c) */
#include "num/acc/acc_tc_int.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "num/acc/acc_model.h"
#include "num/acc/acc_tc.h"
#include "num/vec/cpu.h"
#include "num/vec/vec.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* ---- The block model in binary32 and int32 lanes (acc_tc_f32x8.c, acc_tc_f32x16.c) ----
 * Where every operand has at most 12 significant bits (the formats' values: products exact in
 * binary32), exponents keep every product a normal binary32, and results cannot leave binary32's
 * normal range (as tc_rows' safe == 2; a C of zeros and normal binary32 values), each block is: the
 * exponent maximum over sums of operand exponents (exact small integers, as binary32 values, as
 * int16 pairs: two rows per lane, or in AVX2, where each operand's exponents span at most 63
 * binades, as int8 quads relative to the largest: four rows per lane, with
 * saturating sums, ACC_TCF8_QNONE for a zero); each term |t 2^(f - emax)| < 2^(f+2) scaled exactly in binary32
 * and truncated to an int32 (cvttps: toward zero, as trunc); the integers summed in one int32
 * where B + 1 terms below 2^(f+2) fit it, else in two halves of the block (each below 2^31 for
 * B <= 16, f <= 25) whose sum is used where it does not overflow and joined exactly in binary64
 * where it does; the sum truncated to min(24, f + 1) significant bits (toward zero: a conversion
 * that rounds toward zero: a correction of the nearest, or with the quads one conversion in MXCSR's
 * round-toward-zero, then low significand bits cleared) and scaled by 2^(emax - f) exactly:
 * acc_tc_block's result. A block whose maximum falls below f - 126 (C alone, tiny) would scale
 * out of binary32: the kernels report it and the caller recomputes those rows in binary64 lanes. */

/* One operand for the binary32 lanes (acc_tcf16_convert's contract, one element). */
static inline void tcf_operand(float *v, float *e, double x, int emin, acc_tcf_range_t *g)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int ef = (int)(u >> 52 & 0x7ff), ex = ef - 1023;
    ex = ex < emin ? emin : ex;
    int zero = (u << 1) == 0;
    g->ok &= zero || ((u & ((1ULL << 41) - 1)) == 0 && ef != 0x7ff && ef - 1023 >= -126);
    *v = (float)x;
    *e = zero ? -INFINITY : (float)ex;
    if (!zero) {
        g->emx = (float)ex > g->emx ? (float)ex : g->emx;
        g->emn = (float)ex < g->emn ? (float)ex : g->emn;
    }
}

void acc_tcf_convert1(float *v, float *e, const double *x, long n, int emin, acc_tcf_range_t *g)
{
    for (long i = 0; i < n; i++)
        tcf_operand(v + i, e + i, x[i], emin, g);
}

int acc_tcf_check_c1(const double *C, long ldc, long M, long N, double *cmax)
{
    int cok = 1;
    for (long i = 0; i < M && cok; i++)
        for (long j = 0; j < N; j++) {
            double c = C[i * ldc + j], ac = fabs(c);
            cok &= c == 0 || (ac >= 0x1p-126 && ac < 0x1p127 && (double)(float)c == c);
            *cmax = ac > *cmax ? ac : *cmax;
        }
    return cok;
}

/* x[0:n] for the binary32 lanes: eight at a time (AVX-512 where wide, else AVX2), the rest one
 * by one. */
static void tcf_convert(float *v, float *e, const double *x, long n, int emin, acc_tcf_range_t *g, int wide)
{
    long i = (wide ? acc_tcf16_convert : acc_tcf8_convert)(v, e, x, n, emin, g);
    acc_tcf_convert1(v + i, e + i, x + i, n - i, emin, g);
}

/* The largest significand (below 2) of binary32 operands whose bits, OR'ed, are u (at most 12
 * significant bits: fraction bits 22 .. 12): 2 - 2^(1 - p) for p significant bits. */
static double tcf_sig_max(uint32_t u)
{
    int p = 1;
    for (uint32_t frac = u >> 12 & 0x7ffu; frac; frac = (frac << 1) & 0x7ffu) /* the lowest bit used: fraction bit p */
        p++;
    return 2 - ldexp(1.0, 1 - p);
}

/* Whether a block's integer fits one int32: each of its bsz terms is at most ma mb 2^f on the
 * block's grid 2^(emax - f) (|a| <= ma 2^ea, |b| <= mb 2^eb, emax >= ea + eb), C's below 2^(f+1)
 * (its binade at most emax), so every sum is below bsz ma mb 2^f + 2^(f+1) <= 2^31 (exact in
 * binary64). Operands of 8 and 4 significant bits (bf16 against an e4m3 value) fit Hopper's block
 * of 16 at F = 25 (16 x 3.735 + 2 < 64); two bf16 (16 x 3.969 + 2) do not. ua, ub: the block's
 * operands' bits, OR'ed. */
static int tcf_single(const acc_tc_t *tc, uint32_t ua, uint32_t ub)
{
    return tc->b * tcf_sig_max(ua) * tcf_sig_max(ub) * ldexp(1.0, tc->f) + ldexp(1.0, tc->f + 1) <= 0x1p31;
}

/* q[i] = acc_tcf_pair(lo[i], hi[i]), i < n, in the kernel's width */
static void tcf_pair_line(int32_t *q, const float *lo, const float *hi, long n, int wide)
{
    (wide ? acc_tcf16_pairs : acc_tcf8_pairs)(q, lo, hi, n);
}

/* Exponents e [m][lde] of rows paired for the kernels: q [(m + 1) / 2][k], rows 2h and 2h + 1
 * (the last row with itself where m is odd). */
static void tcf_pairs(int32_t *q, const float *e, long lde, long m, long k, int wide)
{
    for (long h = 0; h < (m + 1) / 2; h++) {
        const float *lo = e + 2 * h * lde, *hi = 2 * h + 1 < m ? lo + lde : lo;
        tcf_pair_line(q + h * k, lo, hi, k, wide);
    }
}

/* Exponents e [m][lde] of rows in quads for the AVX2 kernel (acc_tcf8_quads): q [(m + 3) / 4][k],
 * rows 4h .. 4h + 3, those past m as row m - 1. */
static void tcf_quads(int32_t *q, const float *e, long lde, long m, long k, int bias)
{
    for (long h = 0; h < (m + 3) / 4; h++) {
        const float *rows[4];
        for (int j = 0; j < 4; j++)
            rows[j] = e + (4 * h + j < m ? 4 * h + j : m - 1) * lde;
        acc_tcf8_quads(q + h * k, rows, k, bias);
    }
}

/* A range's largest exponent as the quads' bias (0 where every operand is zero), or
 * ACC_TCF8_NOQ where its exponents span more than ACC_TCF8_QSPAN binades. */
static int tcf_quad_bias(const acc_tcf_range_t *g)
{
    return g->emx == -INFINITY ? 0 : g->emx - g->emn <= ACC_TCF8_QSPAN ? (int)g->emx : ACC_TCF8_NOQ;
}

/* The operand held for this thread's products (acc_tc_hold): A [m][k] converted once (its
 * exponents paired, or in quads, from row 0 by the first product whose kernel takes them). */
typedef struct {
    const double *a;
    long lda, m, k;
    int emin;
    float *v, *e;
    int32_t *q, *q4;
    uint32_t *bits; /* column k's values' bits OR'ed over the rows (made by the first product that needs them) */
    acc_tcf_range_t g;
} tcf_held_t;

static _Thread_local tcf_held_t tcf_held;

/* An operand held (A or op(B)'s source): x [rows][cols] (row stride ld) converted into new arrays v, e, its
 * range g. */
static void tcf_hold_rows(float **v, float **e, acc_tcf_range_t *g, const double *x, long ld, long rows, long cols,
                          int emin)
{
    const int wide = acc_simd >= 2 && cpu_has_avx512();
    *v = err_malloc((size_t)(rows * cols), sizeof(float));
    *e = err_malloc((size_t)(rows * cols), sizeof(float));
    *g = (acc_tcf_range_t){-INFINITY, INFINITY, 1};
    for (long i = 0; i < rows; i++)
        tcf_convert(*v + i * cols, *e + i * cols, x + i * ld, cols, emin, g, wide);
}

void acc_tc_hold(const double *A, long lda, long M, long K, int emin)
{
    acc_tc_release();
    if (M < 1 || K < 1)
        return;
    tcf_held = (tcf_held_t){A, lda, M, K, emin, NULL, NULL, NULL, NULL, NULL, {0, 0, 0}};
    tcf_hold_rows(&tcf_held.v, &tcf_held.e, &tcf_held.g, A, lda, M, K, emin);
}

void acc_tc_release(void)
{
    free(tcf_held.v);
    free(tcf_held.e);
    free(tcf_held.q);
    free(tcf_held.q4);
    free(tcf_held.bits);
    memset(&tcf_held, 0, sizeof tcf_held);
}

/* The op(B) source held for this thread's products (acc_tc_hold_b): B [rows][cols] converted once. */
typedef struct {
    const double *b;
    long ldb, rows, cols;
    int emin;
    float *v, *e;
    acc_tcf_range_t g;
} tcf_heldb_t;

static _Thread_local tcf_heldb_t tcf_heldb;

void acc_tc_hold_b(const double *B, long ldb, long rows, long cols, int emin)
{
    acc_tc_release_b();
    if (rows < 1 || cols < 1)
        return;
    tcf_heldb = (tcf_heldb_t){B, ldb, rows, cols, emin, NULL, NULL, {0, 0, 0}};
    tcf_hold_rows(&tcf_heldb.v, &tcf_heldb.e, &tcf_heldb.g, B, ldb, rows, cols, emin);
}

void acc_tc_release_b(void)
{
    free(tcf_heldb.v);
    free(tcf_heldb.e);
    memset(&tcf_heldb, 0, sizeof tcf_heldb);
}

/* Whether A [M][K] (stride lda, minimum exponent emin) lies inside the held operand: then its
 * first element's row and column there. */
static int tcf_held_has(const double *A, long lda, long M, long K, int emin, long *row, long *col)
{
    const tcf_held_t *h = &tcf_held;
    return h->v && h->emin == emin && acc_inside(h->a, h->lda, h->m, h->k, A, lda, M, K, row, col);
}

/* gemm_tc (with acc, C's own values as the first block's C) in binary32/int32
 * lanes where its conditions hold (then returns 1), else does nothing and returns 0. */
__attribute__((target("avx2,fma"))) int acc_tc_gemm_f32(double *C, long ldc, const double *A, long lda, const double *B,
                                                          long ldb, int b_trans, long M, long N, long K,
                                                          const acc_tc_t *tc, int emin_a, int emin_b, int acc,
                                                          const double *rs)
{
    /* each int32 half holds at most b/2 terms below 2^(f+2), and C's below 2^(f+1) */
    if ((double)(tc->b / 2 + 1) * ldexp(1.0, tc->f + 2) >= 0x1p31 || M < 1 || N < 1 || K < 1)
        return 0;
    /* the kernels take panels of sixteen (AVX-512) or eight (AVX2) columns, four rows (AVX-512)
     * or up to sixteen (AVX2: groups of four, interleaved) at a time */
    const int wide = acc_simd >= 2 && cpu_has_avx512(), np = wide ? 16 : 8, mp = wide ? ACC_TCF16_MR : ACC_TCF8_ROWS;
    /* C's values checked here, or with rs (scaled C: binary32 values, no subnormals) as the kernels load
     * them, each against the largest exponent field (lim) that the bound below allows */
    double cmax = 0;
    rs = acc ? rs : NULL;
    if (acc && !rs && !(wide ? acc_tcf16_check_c : acc_tcf8_check_c)(C, ldc, M, N, &cmax))
        return 0;
    long nbp = (N + np - 1) / np;
    float *bp = err_malloc((size_t)(nbp * K * np + 1), sizeof(float));
    const int pairs = tc->b >= ACC_TCF16_PAIRS; /* the kernels take int16 pairs (or, in AVX2, quads) */
    /* op(B)'s exponents as binary32 values, panel by panel; where the kernel takes pairs (or
     * quads), those made from them once the operands' ranges are known */
    float *be = err_malloc((size_t)(nbp * K * np + 1), sizeof(float));
    int32_t *bq = NULL;
    acc_tcf_range_t ga = {-INFINITY, INFINITY, 1}, gb = {-INFINITY, INFINITY, 1};
    /* A's operands: the held ones where A lies inside them (their range covers A's: the checks
     * below may only be stricter), else converted here; row i at av + i ak, of am rows from av0 */
    float *af = NULL, *ae = NULL;
    int32_t *aq = NULL;
    const float *av, *aw, *av0;
    const int32_t *ap = NULL; /* A's exponents in pairs (row pair h) or quads (row group h) at ap + h apk */
    long ak, apk = K, hr, hc, am = M;
    const int held = tcf_held_has(A, lda, M, K, emin_a, &hr, &hc);
    if (held) {
        ak = tcf_held.k, am = tcf_held.m;
        av0 = tcf_held.v + hc;
        av = av0 + hr * ak;
        aw = tcf_held.e + hr * ak + hc;
        ga = tcf_held.g;
    } else {
        hr = hc = 0; /* (tcf_held_has may have set them) */
        af = err_malloc((size_t)(M * K + 1), sizeof(float));
        ae = err_malloc((size_t)(M * K + 1), sizeof(float));
        for (long i = 0; i < M; i++)
            tcf_convert(af + i * K, ae + i * K, A + i * lda, K, emin_a, &ga, wide);
        av = av0 = af, aw = ae, ak = K;
    }
    /* op(B) by its contiguous lines (a column of op(B) where b_trans, else a row) into panels
     * of np columns, zero beyond N */
    long nl = b_trans ? N : K, ll = b_trans ? K : N;
    /* the held op(B) source where these lines lie inside it (its range covers theirs: the checks below may
     * only be stricter): line l converted at hb + l hbs */
    long hbr, hbc, hbs = tcf_heldb.cols;
    const int heldb = tcf_heldb.v && tcf_heldb.emin == emin_b &&
                      acc_inside(tcf_heldb.b, tcf_heldb.ldb, tcf_heldb.rows, tcf_heldb.cols, B, ldb, nl, ll, &hbr, &hbc);
    const float *hbv = heldb ? tcf_heldb.v + hbr * hbs + hbc : NULL, *hbe = heldb ? tcf_heldb.e + hbr * hbs + hbc : NULL;
    if (heldb)
        gb = tcf_heldb.g;
    /* where b_trans, a panel's columns at a time, transposed into it */
    long lines = b_trans ? np : 1;
    float *tv = err_malloc((size_t)(lines * ll) + 1, sizeof(float));
    float *te = err_malloc((size_t)(lines * ll) + 1, sizeof(float));
    for (long j0 = 0; lines > 1 && j0 < N; j0 += np) {
        /* the panel's columns as rows of K: the held ones in place where they are whole rows of it */
        const int direct = heldb && hbs == K && j0 + np <= N;
        for (long t = 0; t < np && !direct; t++) {
            float *v = tv + t * K, *e = te + t * K;
            if (j0 + t < N && heldb) {
                memcpy(v, hbv + (j0 + t) * hbs, sizeof(float) * (size_t)K);
                memcpy(e, hbe + (j0 + t) * hbs, sizeof(float) * (size_t)K);
            } else if (j0 + t < N) {
                tcf_convert(v, e, B + (j0 + t) * ldb, K, emin_b, &gb, wide);
            }
            for (long k = 0; j0 + t >= N && k < K; k++) /* beyond N: zero operands */
                v[k] = 0.0f, e[k] = -INFINITY;
        }
        void (*transpose)(void *, const void *, long) = wide ? acc_tcf16_transpose : acc_tcf8_transpose;
        transpose(bp + j0 * K, direct ? hbv + j0 * hbs : tv, K);
        transpose(be + j0 * K, direct ? hbe + j0 * hbs : te, K);
    }
    for (long l = 0; lines == 1 && l < nl; l++) { /* row l of op(B): np contiguous values in each panel */
        const float *lv = tv, *le = te;
        if (heldb)
            lv = hbv + l * hbs, le = hbe + l * hbs;
        else
            tcf_convert(tv, te, B + l * ldb, ll, emin_b, &gb, wide);
        for (long j0 = 0; j0 < N; j0 += np) {
            long w = N - j0 < np ? N - j0 : np, at = j0 * K + l * np;
            if (w == 8) { /* a whole panel: a copy of constant size (not a call) */
                memcpy(bp + at, lv + j0, 8 * sizeof(float));
                memcpy(be + at, le + j0, 8 * sizeof(float));
            } else if (w == 16) {
                memcpy(bp + at, lv + j0, 16 * sizeof(float));
                memcpy(be + at, le + j0, 16 * sizeof(float));
            } else {
                memcpy(bp + at, lv + j0, (size_t)w * sizeof(float));
                memcpy(be + at, le + j0, (size_t)w * sizeof(float));
            }
        }
    }
    for (long j = N; j < nbp * np; j++)
        for (long k = 0; k < K; k++) {
            long at = (j / np * K + k) * np + j % np;
            bp[at] = 0.0f;
            be[at] = -INFINITY;
        }
    free(tv);
    free(te);
    /* every nonzero operand and product a normal binary32 with its bits; C below 2^128 (as
     * tc_rows' safe == 2: |C| and K terms of at most 2^(amax + bmax + 2)); results on a grid no
     * finer than 2^(amin + bmin - f) >= 2^-126, so 2^(f - emax) and 2^(emax - f) normal too
     * in a block with a nonzero product. A block of C alone takes C's binade as its maximum,
     * and a tiny C (below 2^(f - 126): given, or left by cancellation) would scale out of
     * binary32: the kernels report it (low) and leave their tile of C as it was, and the tile
     * goes to the binary64 lanes (acc_tc_gemm_x64). */
    int ok = ga.ok && gb.ok, lim = 253; /* C below 2^127 */
    if (ok && ga.emx != -INFINITY && gb.emx != -INFINITY) {
        double terms = ((double)K + 1) * ldexp(1.0, (int)(ga.emx + gb.emx) + 2);
        ok = ga.emx <= 127 && gb.emx <= 127 && ga.emn + gb.emn - tc->f >= -126 && log2(cmax + terms) + 1 < 128;
        while (rs && lim > 0 && !(log2(ldexp(1.0, lim - 126) + terms) + 1 < 128)) /* |C| < 2^(lim - 126) */
            lim--;
    }
    /* the int8 quads where each operand's exponents span few enough binades (the held ones' groups of
     * four rows lining up with A's; in AVX-512, blocks of at most 32), else pairs or binary32 values */
    int ba = tcf_quad_bias(&ga), bb = tcf_quad_bias(&gb), qbias = ACC_TCF8_NOQ;
    const int quads = ok && (!wide || tc->b <= 32) && ba != ACC_TCF8_NOQ && bb != ACC_TCF8_NOQ && hr % 4 == 0;
    if (quads || (ok && pairs))
        bq = err_malloc((size_t)(nbp * K * np + 1), sizeof(int32_t));
    if (quads) {
        const float *bl[4] = {be, be, be, be};
        if (wide)
            acc_tcf16_bquads(bq, be, nbp * K * np, bb);
        else
            acc_tcf8_quads(bq, bl, nbp * K * np, bb);
        if (held && !tcf_held.q4) {
            tcf_held.q4 = err_malloc((size_t)((tcf_held.m + 3) / 4 * ak), sizeof(int32_t));
            tcf_quads(tcf_held.q4, tcf_held.e, ak, tcf_held.m, ak, ba);
        }
        if (!held) {
            aq = err_malloc((size_t)((M + 3) / 4 * K + 1), sizeof(int32_t));
            tcf_quads(aq, aw, ak, M, K, ba);
        }
        ap = held ? tcf_held.q4 + hr / 4 * ak + hc : aq, apk = ak;
        qbias = ba + bb;
    } else if (ok && pairs) {
        tcf_pair_line(bq, be, be, nbp * K * np, wide);
        if (held && hr % 2 == 0) { /* the held pairs line up with A's */
            if (!tcf_held.q) {
                tcf_held.q = err_malloc((size_t)((tcf_held.m + 1) / 2 * ak), sizeof(int32_t));
                tcf_pairs(tcf_held.q, tcf_held.e, ak, tcf_held.m, ak, wide);
            }
            ap = tcf_held.q + hr / 2 * ak + hc, apk = ak;
        } else {
            aq = err_malloc((size_t)((M + 1) / 2 * K + 1), sizeof(int32_t));
            tcf_pairs(aq, aw, ak, M, K, wide);
            ap = aq, apk = K;
        }
    }
    /* one int32 per block where the block's operands bound its sum (tcf_single; the AVX-512 kernel's pairs
     * and binary32 values bound it by the model alone): A's bits per column (the held ones' over all their
     * rows), op(B)'s over each block's part of every panel */
    long nblk = (K + tc->b - 1) / tc->b;
    unsigned char *single = NULL;
    if (ok && (!wide || quads)) {
        single = err_malloc((size_t)nblk, 1);
        uint32_t *abits = NULL;
        if (held) {
            if (!tcf_held.bits) {
                tcf_held.bits = err_calloc((size_t)tcf_held.k, sizeof(uint32_t));
                acc_tcf8_or_cols(tcf_held.bits, tcf_held.v, tcf_held.m, tcf_held.k, tcf_held.k);
            }
        } else {
            abits = err_calloc((size_t)K, sizeof(uint32_t));
            acc_tcf8_or_cols(abits, av, M, ak, K);
        }
        const uint32_t *ab = held ? tcf_held.bits + hc : abits;
        for (long b = 0; b < nblk; b++) {
            long k0 = b * tc->b, k1 = k0 + tc->b < K ? k0 + tc->b : K;
            uint32_t ua = 0, ub = 0;
            for (long k = k0; k < k1; k++)
                ua |= ab[k];
            for (long p = 0; p < nbp; p++)
                ub |= acc_tcf8_or_bits(bp + (p * K + k0) * np, (k1 - k0) * np);
            single[b] = (unsigned char)tcf_single(tc, ua, ub);
        }
        free(abits);
    }
    /* row group by row group (its operands' pointers made once), each against every panel */
    int *lows = err_calloc((size_t)nbp, sizeof(int));
    for (long i = 0; i < M && ok; i += mp) {
        int mr = M - i < mp ? (int)(M - i) : mp;
        const float *a[ACC_TCF8_ROWS], *ea[ACC_TCF8_ROWS];
        const int32_t *eq[ACC_TCF8_ROWS / 2];
        /* rows past mr (the AVX2 kernel computes them, and drops them) are copies of real
         * rows, the same as the exponents give them: with pairs, the last real pair's row
         * where it is a row with itself, rows i and i + 1 (or i) where the pair is past mr
         * too; with quads, the row the group's line holds (past A's rows, its last) */
        for (int r = 0; r < mp; r++) {
            int row = r < mr ? r : r - r % 2 < mr ? r - 1 : mr >= 2 ? r % 2 : 0;
            long qrow = hr + i + r < am ? hr + i + r : am - 1;
            a[r] = qbias != ACC_TCF8_NOQ ? av0 + qrow * ak : av + (i + row) * ak;
            ea[r] = aw + (i + row) * ak;
        }
        for (int h = 0; pairs && qbias == ACC_TCF8_NOQ && h < mp / 2; h++) /* i is even: pairs (i + 2h, i + 2h + 1) */
            eq[h] = ap + (i / 2 + (2 * h < mr ? h : 0)) * apk;
        for (int g = 0; qbias != ACC_TCF8_NOQ && g < mp / 4; g++) /* i is a multiple of 4: groups (i + 4g ..) */
            eq[g] = ap + (i / 4 + (4 * g < mr ? g : 0)) * apk;
        acc_tcf_job_t job = {tc->f, tc->b, acc, tc->promote, qbias, single, rs ? rs + i : NULL, lim};
        /* every panel in one call: a mask of the groups left to the binary64 lanes per panel */
        memset(lows, 0, sizeof(int) * (size_t)nbp);
        (wide ? acc_tcf16_rows : acc_tcf8_rows)(mr, C + i * ldc, ldc, 0, N, a, ea, pairs || quads ? eq : NULL, K, bp, be,
                                                bq, &job, lows);
        for (long j0 = 0; j0 < N; j0 += np) {
            long nr = N - j0 < np ? N - j0 : np;
            int low = lows[j0 / np];
            for (int g = 0; g * 4 < mr; g++) { /* these four rows in binary64 lanes (their C untouched; |C| < 2^127 as they need) */
                long i0 = i + 4 * g, gr = mr - 4 * g < 4 ? mr - 4 * g : 4;
                if (low >> g & 1 && rs) { /* scaled here (C left as it was: not yet), then any C */
                    for (long r = i0; r < i0 + gr; r++)
                        vec_scale32_ftz(C + r * ldc + j0, C + r * ldc + j0, nr, rs[r]);
                    acc_tc_gemm_acc64(C + i0 * ldc + j0, ldc, A + i0 * lda, lda, b_trans ? B + j0 * ldb : B + j0, ldb,
                                      b_trans, gr, nr, K, tc, emin_a, emin_b);
                } else if (low >> g & 1) {
                    acc_tc_gemm_x64(C + i0 * ldc + j0, ldc, A + i0 * lda, lda, b_trans ? B + j0 * ldb : B + j0, ldb,
                                    b_trans, gr, nr, K, tc, emin_a, emin_b, acc);
                }
            }
        }
    }
    free(af);
    free(ae);
    free(aq);
    free(bp);
    free(be);
    free(bq);
    free(single);
    free(lows);
    return ok;
}
#else
int acc_tc_gemm_f32(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                    long N, long K, const acc_tc_t *tc, int emin_a, int emin_b, int acc, const double *rs)
{
    (void)rs, (void)C, (void)ldc, (void)A, (void)lda, (void)B, (void)ldb, (void)b_trans, (void)M, (void)N, (void)K, (void)tc;
    (void)emin_a, (void)emin_b, (void)acc;
    return 0;
}

void acc_tc_hold(const double *A, long lda, long M, long K, int emin)
{
    (void)A, (void)lda, (void)M, (void)K, (void)emin;
}

void acc_tc_release(void)
{
}

void acc_tc_hold_b(const double *B, long ldb, long rows, long cols, int emin)
{
    (void)B, (void)ldb, (void)rows, (void)cols, (void)emin;
}

void acc_tc_release_b(void)
{
}
#endif
