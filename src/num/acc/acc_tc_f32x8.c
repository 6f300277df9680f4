/* acc_tc_f32x8 -- acc_tc_f32's block kernel in AVX2 (eight columns at once; its operands are made in
 * acc_tc_pack8.c): the sixteen-column AVX-512 kernel's operations lane for lane, or with the exponents
 * as int8 quads, bit-identical to it and to the scalar block model either way (t-acc checks all three) */
#include "num/acc/acc_tc_int.h"

#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T8 __attribute__((target("avx2,fma")))

/* int32 lanes as the mask of their sign bits (a compare's result) */
T8 static inline int tcf8_mask(__m256i m)
{
    return _mm256_movemask_ps(_mm256_castsi256_ps(m));
}

/* two int32 halves of a block, four lanes, joined exactly in binary64 (below 2^32) and truncated
 * to the significant bits kept */
T8 static inline __m256d tcf8_join(__m128i h0, __m128i h1, __m256i keep)
{
    __m256d x = _mm256_add_pd(_mm256_cvtepi32_pd(h0), _mm256_cvtepi32_pd(h1));
    return _mm256_and_pd(x, _mm256_castsi256_pd(keep));
}

/* an int32 s rounded toward zero to binary32, then to the significant bits keep32 keeps:
 * binary32's conversion rounds to nearest; where that went past s (x's integer value minus s,
 * nonzero with s's sign), the binary32 one step nearer zero. The difference is exact modulo 2^32,
 * and below 2^7 in magnitude, also where x is 2^31 (converting back to -2^31). */
T8 static inline __m256 tcf8_rz(__m256i s, __m256i keep32)
{
    __m256 x = _mm256_cvtepi32_ps(s);
    __m256i d = _mm256_sub_epi32(s, _mm256_cvttps_epi32(x));
    __m256i past = _mm256_andnot_si256(_mm256_cmpeq_epi32(d, _mm256_setzero_si256()),
                                       _mm256_srai_epi32(_mm256_xor_si256(d, s), 31));
    __m256i xi = _mm256_add_epi32(_mm256_castps_si256(x), past); /* the magnitude's bits, one less */
    return _mm256_castsi256_ps(_mm256_and_si256(xi, keep32));
}

/* C's exponent per lane: the binade of a normal binary32 (a zero's is left to the caller) */
T8 static inline __m256i tcf8_cexp(__m256 c)
{
    __m256i cb = _mm256_srli_epi32(_mm256_castps_si256(c), 23);
    return _mm256_sub_epi32(_mm256_and_si256(cb, _mm256_set1_epi32(0xff)), _mm256_set1_epi32(127));
}

/* Row r's C for a panel of nr columns as the kernels start from it: zero beyond nr (and where !acc), binary32
 * values as they are (exact: the caller checked them), or with rs scaled first as vec_scale32_ftz does it (the
 * binary64 product rounded by MXCSR's mode, to nearest here, and flushed where subnormal). *big set in the
 * lanes whose exponent field passes lim (a scaled C beyond what the caller's bound allows). */
T8 static inline __m256 tcf8_load_c(const double *cr, long nr, int acc, const double *rs, int lim, __m256i *big)
{
    if (!acc)
        return _mm256_setzero_ps();
    __m256d lo, hi;
    if (nr == 8) {
        lo = _mm256_loadu_pd(cr), hi = _mm256_loadu_pd(cr + 4);
    } else {
        double in[8] = {0};
        for (long j = 0; j < nr; j++)
            in[j] = cr[j];
        lo = _mm256_loadu_pd(in), hi = _mm256_loadu_pd(in + 4);
    }
    if (!rs)
        return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
    const __m256d s = _mm256_set1_pd(*rs);
    __m256 y = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_mul_pd(hi, s)), _mm256_cvtpd_ps(_mm256_mul_pd(lo, s)));
    __m256i b = _mm256_castps_si256(y), e = _mm256_and_si256(b, _mm256_set1_epi32(0x7f800000));
    __m256i flush = _mm256_cmpeq_epi32(e, _mm256_setzero_si256()); /* keeps only its sign */
    *big = _mm256_or_si256(*big, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(lim << 23)));
    return _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_andnot_si256(_mm256_set1_epi32(INT32_MIN), flush), b));
}

/* Every group's C for a panel (tcf8_load_c, row by row; the common case, a whole panel of real rows with C given,
 * with its conditions out of the rows' loop: 2-4% of flashmla-sparse's time, whose P V panels hold four blocks each),
 * and the promotions' sums zeroed */
T8 static inline __attribute__((always_inline)) void
tcf8_load_rows(__m256 (*c)[4], __m256 (*outer)[4], const double *C, long ldc, long j0, long nr, int acc, int mr, int ng,
               const double *rs, int lim, __m256i *big)
{
    const int full = acc && nr == 8 && mr == 4 * ng;
    for (int g = 0; g < ng; g++)
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            const int r = 4 * g + i;
            outer[g][i] = _mm256_setzero_ps();
            if (full && rs)
                c[g][i] = tcf8_load_c(C + r * ldc + j0, 8, 1, rs + r, lim, &big[g]);
            else if (full)
                c[g][i] = tcf8_load_c(C + r * ldc + j0, 8, 1, NULL, lim, &big[g]);
            else
                c[g][i] = tcf8_load_c(C + r * ldc + j0, nr, acc && r < mr, rs ? rs + r : NULL, lim, &big[g]);
        }
}

/* The terms of four rows (acc_tc_int.h) */
ACC_TCF_TERMS(tcf8_terms, T8, __m256i, __m256, 8, _mm256, _mm256_loadu_si256)

/* One block (products k0 .. k1 - 1) of one group of four rows: c updated in place, the lanes
 * whose maximum falls below f - 126 (C alone, tiny: its scales leave binary32) or'ed into *lowv */
T8 static inline __attribute__((always_inline)) void
tcf8_block(const int single, const int pairs, __m256 *c, const float *const *a, const float *const *ea,
           const int32_t *const *ep, long k0, long k1, long kh, const float *bp, const float *be, const int32_t *bq,
           int f, __m256i keep, __m256i keep32, __m256i *lowv)
{
    const __m256 zero = _mm256_setzero_ps();
    __m256 up[4], live[4];
    __m256i s0[4], s1[4], ei[4];
    if (pairs) { /* two rows per vector: int16 sums of exact small integers */
        /* the products' maximum first, C's exponent (its binade, a normal binary32) last: the
         * chain from the previous block's C is one maximum long */
        const __m256i none = _mm256_set1_epi32(ACC_TCF_NONE); /* the exponent of a zero */
        __m256i em[2] = {_mm256_set1_epi16(ACC_TCF_NONE), _mm256_set1_epi16(ACC_TCF_NONE)}, ec[2];
        _Pragma("GCC unroll 32") for (long k = k0; k < k1; k++) {
            __m256i bev = _mm256_loadu_si256((const __m256i *)(bq + k * 8));
            _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
                em[h] = _mm256_max_epi16(em[h], _mm256_add_epi16(_mm256_set1_epi32(ep[h][k]), bev));
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
            __m256i nz = _mm256_castps_si256(_mm256_cmp_ps(c[r], zero, _CMP_NEQ_UQ));
            __m256i e = _mm256_blendv_epi8(none, tcf8_cexp(c[r]), nz);
            if (r % 2 == 0)
                ec[r / 2] = _mm256_and_si256(e, _mm256_set1_epi32(0xffff));
            else
                ec[r / 2] = _mm256_or_si256(ec[r / 2], _mm256_slli_epi32(e, 16));
        }
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
            em[h] = _mm256_max_epi16(em[h], ec[h]);
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
            __m256i e = r % 2 ? _mm256_srai_epi32(em[r / 2], 16) : _mm256_srai_epi32(_mm256_slli_epi32(em[r / 2], 16), 16);
            __m256i lv = _mm256_cmpgt_epi32(e, _mm256_set1_epi32(ACC_TCF_LIVE));
            live[r] = _mm256_castsi256_ps(lv);
            *lowv = _mm256_or_si256(*lowv, _mm256_and_si256(lv, _mm256_cmpgt_epi32(_mm256_set1_epi32(f - 126), e)));
            ei[r] = _mm256_and_si256(lv, e);
        }
    } else { /* one row per vector: binary32 sums (exact), a zero's exponent -infinity */
        const __m256 ninf = _mm256_set1_ps(-INFINITY);
        __m256 ef[4] = {ninf, ninf, ninf, ninf};
        _Pragma("GCC unroll 32") for (long k = k0; k < k1; k++) {
            __m256 bev = _mm256_loadu_ps(be + k * 8);
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
                ef[r] = _mm256_max_ps(ef[r], _mm256_add_ps(_mm256_set1_ps(ea[r][k]), bev));
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
            ef[r] = _mm256_max_ps(ef[r], _mm256_blendv_ps(ninf, _mm256_cvtepi32_ps(tcf8_cexp(c[r])),
                                                          _mm256_cmp_ps(c[r], zero, _CMP_NEQ_UQ)));
            live[r] = _mm256_cmp_ps(ef[r], ninf, _CMP_NEQ_UQ);
            __m256 lw = _mm256_and_ps(live[r], _mm256_cmp_ps(ef[r], _mm256_set1_ps((float)(f - 126)), _CMP_LT_OQ));
            *lowv = _mm256_or_si256(*lowv, _mm256_castps_si256(lw));
            ei[r] = _mm256_cvtps_epi32(_mm256_and_ps(live[r], ef[r])); /* integers: exact */
        }
    }
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        up[r] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_sub_epi32(_mm256_set1_epi32(127 + f), ei[r]), 23));
        s0[r] = _mm256_cvttps_epi32(_mm256_mul_ps(c[r], up[r]));
        s1[r] = _mm256_setzero_si256();
    }
    tcf8_terms(s0, a, k0, kh, bp, up, NULL, NULL, NULL, 0);
    tcf8_terms(s1, a, kh, k1, bp, up, NULL, NULL, NULL, 0);
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        /* the block's integer, rounded toward zero to binary32 (then to p bits); where the halves'
         * sum leaves int32 (both halves' signs differ from the sum's), joined exactly in binary64 */
        __m256i sum = single ? s0[r] : _mm256_add_epi32(s0[r], s1[r]);
        __m256 x = tcf8_rz(sum, keep32);
        if (!single && tcf8_mask(_mm256_and_si256(_mm256_xor_si256(s0[r], sum), _mm256_xor_si256(s1[r], sum)))) {
            __m256d lo = tcf8_join(_mm256_castsi256_si128(s0[r]), _mm256_castsi256_si128(s1[r]), keep);
            __m256d hi = tcf8_join(_mm256_extracti128_si256(s0[r], 1), _mm256_extracti128_si256(s1[r], 1), keep);
            x = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
        }
        /* 2^(emax - f), a normal binary32 here; the product is exact (at most 24 bits, normal) */
        __m256 down = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_set1_epi32(127 - f), ei[r]), 23));
        c[r] = _mm256_and_ps(live[r], _mm256_mul_ps(x, down));
    }
}

/* an int32 s rounded toward zero to binary32 by the conversion itself: only where MXCSR rounds
 * toward zero (tcf8_rows_q sets it). Kept in order with the mode's changes (volatile). */
T8 static inline __m256 tcf8_cvt_rz(__m256i s)
{
    __m256 x;
    __asm__ volatile("vcvtdq2ps %1, %0" : "=x"(x) : "x"(s));
    return x;
}

/* One block of one group of four rows with the exponents as int8 quads (acc_tcf8_quads): the
 * products' maximum over k as saturating int8 sums, then per row in int32 lanes as binary32
 * exponent fields (1 .. 254): the products' (every live one has at least f + 1: the caller's
 * range check) or f + 1 where all are zero, against C's own field (0 for a zero C); a lane with
 * neither takes f + 1, where it computes 0 from 0. That floor is exact but for a C alone below
 * 2^(f - 126) whose bits reach below 2^-126: never one the blocks make (every bit of a block's
 * result is on its grid, at least 2^(emin_a + emin_b - f) >= 2^-126 by the caller's range check;
 * and C alone is its own result), so only the C the caller gives is watched (tcf8_rows_q). */
T8 static inline __attribute__((always_inline)) void
tcf8_block_q(const int single, const int trunc, __m256 *c, const float *const *a, const int32_t *eq, const int32_t *bq, long k0, long k1,
             long kh, const float *bp, int f, __m256i qbias, __m256i keep, __m256i keep32)
{
    __m256i up[4], s0[4], s1[4];
    /* the products' exponent sums, then their maximum as a tree: its depth, not k1 - k0, before the block's scales
     * are known (in-process pairs of flashmla-sparse samples: 0.96-1.01 of the chain's time; four chains: 1.02-1.13) */
    __m256i t[32];
    const long n = k1 - k0;
    _Pragma("GCC unroll 32") for (long k = 0; k < n; k++)
        t[k] = _mm256_adds_epi8(_mm256_set1_epi32(eq[k0 + k]), _mm256_loadu_si256((const __m256i *)(bq + (k0 + k) * 8)));
    _Pragma("GCC unroll 5") for (long w = 1; w < n; w *= 2)
        _Pragma("GCC unroll 16") for (long k = 0; k + w < n; k += 2 * w)
            t[k] = _mm256_max_epi8(t[k], t[k + w]);
    const __m256i em = t[0];
    /* each byte's field (qbias: a relative exponent's field, modulo 256): exact for a live one (f + 1 .. 254),
     * f + 1 where no product is live (below or at every live one's: the maximum with C's below needs no floor) */
    __m256i fb = _mm256_blendv_epi8(_mm256_add_epi8(em, qbias), _mm256_set1_epi8((char)(f + 1)),
                                    _mm256_cmpeq_epi8(em, _mm256_set1_epi8(ACC_TCF8_QNONE)));
    /* the fields where binary32 keeps them (bits 23 .. 30), so that C's is one mask and 2^(f - emax) one
     * subtraction (modulo 2^32: (254 + f) 2^23 may pass 2^31, the difference does not) */
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        __m256i fp = r == 3 ? _mm256_srli_epi32(_mm256_and_si256(fb, _mm256_set1_epi32((int)0xff000000u)), 1)
                            : _mm256_slli_epi32(_mm256_and_si256(fb, _mm256_set1_epi32(0xff << 8 * r)), 23 - 8 * r);
        __m256i fc = _mm256_and_si256(_mm256_castps_si256(c[r]), _mm256_set1_epi32(0x7f800000));
        __m256i m = _mm256_max_epi32(fp, fc);
        up[r] = _mm256_sub_epi32(_mm256_set1_epi32((int)((uint32_t)(254 + f) << 23)), m); /* 2^(f - emax) */
        s0[r] = _mm256_cvttps_epi32(_mm256_mul_ps(c[r], _mm256_castsi256_ps(up[r])));
        s1[r] = _mm256_setzero_si256();
    }
    const __m256 upf[4] = {_mm256_castsi256_ps(up[0]), _mm256_castsi256_ps(up[1]), _mm256_castsi256_ps(up[2]),
                           _mm256_castsi256_ps(up[3])};
    tcf8_terms(s0, a, k0, kh, bp, upf, NULL, NULL, NULL, 0);
    tcf8_terms(s1, a, kh, k1, bp, upf, NULL, NULL, NULL, 0);
    __m256i sum[4], o = _mm256_setzero_si256();
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        sum[r] = single ? s0[r] : _mm256_add_epi32(s0[r], s1[r]);
        if (!single)
            o = _mm256_or_si256(o, _mm256_and_si256(_mm256_xor_si256(s0[r], sum[r]), _mm256_xor_si256(s1[r], sum[r])));
    }
    if (!single && tcf8_mask(o)) { /* rare: a block's integer past int32, joined exactly in binary64 */
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
            __m256d lo = tcf8_join(_mm256_castsi256_si128(s0[r]), _mm256_castsi256_si128(s1[r]), keep);
            __m256d hi = tcf8_join(_mm256_extracti128_si256(s0[r], 1), _mm256_extracti128_si256(s1[r], 1), keep);
            __m256 x = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo)); /* exact: p bits */
            __m256i dn = _mm256_sub_epi32(_mm256_set1_epi32(254 << 23), up[r]);      /* 2^(emax - f) */
            c[r] = _mm256_mul_ps(x, _mm256_castsi256_ps(dn));
        }
        return;
    }
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        __m256 x = tcf8_cvt_rz(sum[r]);
        if (trunc) /* fewer than 24 significant bits kept */
            x = _mm256_and_ps(x, _mm256_castsi256_ps(keep32));
        __m256i dn = _mm256_sub_epi32(_mm256_set1_epi32(254 << 23), up[r]); /* 2^(emax - f): exact product */
        c[r] = _mm256_mul_ps(x, _mm256_castsi256_ps(dn));
    }
}

/* Up to ACC_TCF8_ROWS / 4 groups of four rows against one panel, block by block: each block of every group
 * before the next block, so that one group's block (whose start waits on its previous block's
 * result, through the exponent maximum) overlaps the others' */
T8 static inline __attribute__((always_inline)) void
tcf8_rows(const int whole, int mr, double *C, long ldc, long j0, long nr, const float *const *a,
          const float *const *ea, const int32_t *const *ep, long K, const float *bp, const float *be, const int32_t *bq,
          const int bsz, const acc_tcf_job_t *job, int *low)
{
    const int f = job->f, acc = job->acc, promote = job->promote, lim = job->lim;
    const unsigned char *single = job->single;
    const double *rs = acc ? job->rs : NULL;
    const int pairs = bsz >= ACC_TCF16_PAIRS; /* exponents as int16 pairs (else binary32 values) */
    const int p = f + 1 < 24 ? f + 1 : 24, ng = (mr + 3) / 4;
    const __m256i keep = _mm256_set1_epi64x((long long)(~0ULL << (53 - p))); /* p significant bits of an integer */
    const __m256i keep32 = _mm256_set1_epi32((int)(~0U << (24 - p)));       /* of a binary32 */
    __m256 c[ACC_TCF8_ROWS / 4][4], outer[ACC_TCF8_ROWS / 4][4];
    __m256i lowv[ACC_TCF8_ROWS / 4];
    for (int g = 0; g < ng; g++)
        lowv[g] = _mm256_setzero_si256();
    tcf8_load_rows(c, outer, C, ldc, j0, nr, acc, mr, ng, rs, lim, lowv);
    for (long k0 = 0; k0 < K; k0 += bsz) {
        long k1 = whole || k0 + bsz < K ? k0 + bsz : K, kh = k0 + (k1 - k0) / 2;
        for (int g = 0; g < ng; g++)
            if (single[k0 / bsz])
                tcf8_block(1, pairs, c[g], a + 4 * g, ea + 4 * g, ep + 2 * g, k0, k1, k1, bp, be, bq, f, keep, keep32, &lowv[g]);
            else
                tcf8_block(0, pairs, c[g], a + 4 * g, ea + 4 * g, ep + 2 * g, k0, k1, kh, bp, be, bq, f, keep, keep32, &lowv[g]);
        /* promotion: the tensor-core value added into the FP32 accumulator (RNE; binary32's
         * own addition is the binary64 sum rounded once, as gemm_tc does it) */
        if (promote && ((k0 + bsz) % promote == 0 || k0 + bsz >= K))
            for (int g = 0; g < ng; g++)
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
                    outer[g][r] = _mm256_add_ps(outer[g][r], c[g][r]);
                    c[g][r] = _mm256_setzero_ps();
                }
    }
    for (int g = 0; g < ng; g++) {
        if (!_mm256_testz_si256(lowv[g], lowv[g])) { /* C left as it was: the caller recomputes these rows */
            *low |= 1 << g;
            continue;
        }
        for (int r = 4 * g; r < mr && r < 4 * g + 4; r++) {
            float out[8];
            _mm256_storeu_ps(out, promote ? outer[g][r % 4] : c[g][r % 4]);
            for (long j = 0; j < nr; j++)
                C[r * ldc + j0 + j] = out[j];
        }
    }
}

/* tcf8_rows with the exponents as int8 quads (ep[g]: group g's line; bq: op(B)'s), in MXCSR's
 * rounding toward zero rz (the block's integer converted by one instruction; the caller's mode for
 * the promotions' additions); C read and written eight at a time where the panel is whole. */
T8 static inline __attribute__((always_inline)) void
tcf8_rows_q(const int whole, int mr, double *C, long ldc, long j0, long nr, const float *const *a,
            const int32_t *const *ep, long K, const float *bp, const int32_t *bq, const int bsz, const acc_tcf_job_t *job,
            unsigned mode, unsigned rz, int *low)
{
    const int f = job->f, acc = job->acc, promote = job->promote, lim = job->lim, qbias = job->qbias;
    const unsigned char *single = job->single;
    const double *rs = acc ? job->rs : NULL;
    const int p = f + 1 < 24 ? f + 1 : 24, ng = (mr + 3) / 4;
    const __m256i keep = _mm256_set1_epi64x((long long)(~0ULL << (53 - p))); /* p significant bits of an integer */
    const __m256i keep32 = _mm256_set1_epi32((int)(~0U << (24 - p)));       /* of a binary32 */
    const __m256i bias = _mm256_set1_epi8((char)((qbias + 127) & 0xff)); /* a relative exponent's binary32 field, mod 256 */
    __m256 c[ACC_TCF8_ROWS / 4][4], outer[ACC_TCF8_ROWS / 4][4];
    __m256i cmin[ACC_TCF8_ROWS / 4], big[ACC_TCF8_ROWS / 4];
    for (int g = 0; g < ng; g++)
        cmin[g] = _mm256_set1_epi32(-1), big[g] = _mm256_setzero_si256();
    tcf8_load_rows(c, outer, C, ldc, j0, nr, acc, mr, ng, rs, lim, big);
    for (int g = 0; g < ng; g++) /* C's field less one (times 2^23) folded into cmin (unsigned): a C below
                                  * 2^(f - 126) seen (tcf8_block_q) */
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            __m256i fc = _mm256_and_si256(_mm256_castps_si256(c[g][i]), _mm256_set1_epi32(0x7f800000));
            cmin[g] = _mm256_min_epu32(cmin[g], _mm256_sub_epi32(fc, _mm256_set1_epi32(1 << 23)));
        }
    if (rs) /* C scaled to nearest (the caller's mode), the blocks toward zero */
        __asm__ volatile("ldmxcsr %0" : : "m"(rz));
    for (long k0 = 0; k0 < K; k0 += bsz) {
        long k1 = whole || k0 + bsz < K ? k0 + bsz : K, kh = k0 + (k1 - k0) / 2;
        const int one = single[k0 / bsz];
        for (int g = 0; g < ng; g++) {
            if (one)
                tcf8_block_q(1, p < 24, c[g], a + 4 * g, ep[g], bq, k0, k1, k1, bp, f, bias, keep, keep32);
            else
                tcf8_block_q(0, p < 24, c[g], a + 4 * g, ep[g], bq, k0, k1, kh, bp, f, bias, keep, keep32);
            __asm__ volatile("" ::: "memory"); /* each group's block on its own: nothing hoisted across */
        }
        /* promotion: the tensor-core value added into the FP32 accumulator, rounded to nearest (the
         * caller's mode for these additions; volatile, so they stay between the mode's changes) */
        if (promote && ((k0 + bsz) % promote == 0 || k0 + bsz >= K)) {
            __asm__ volatile("ldmxcsr %0" : : "m"(mode));
            for (int g = 0; g < ng; g++)
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
                    __asm__ volatile("vaddps %1, %0, %0" : "+x"(outer[g][r]) : "x"(c[g][r]));
                    c[g][r] = _mm256_setzero_ps();
                }
            __asm__ volatile("ldmxcsr %0" : : "m"(rz));
        }
    }
    if (rs)
        __asm__ volatile("ldmxcsr %0" : : "m"(mode));
    for (int g = 0; g < ng; g++) {
        /* a C below 2^(f - 126) (C's field 1 .. f) seen, or a scaled C above lim: the caller recomputes these rows */
        __m256i m = cmin[g], tiny = _mm256_set1_epi32((f - 1) << 23);
        if (!_mm256_testz_si256(_mm256_or_si256(_mm256_cmpeq_epi32(_mm256_min_epu32(m, tiny), m), big[g]),
                                _mm256_set1_epi32(-1))) {
            *low |= 1 << g;
            continue;
        }
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            if (4 * g + i >= mr)
                break;
            double *cr = C + (4 * g + i) * ldc + j0;
            __m256 v = promote ? outer[g][i] : c[g][i];
            if (nr == 8) {
                _mm256_storeu_pd(cr, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
                _mm256_storeu_pd(cr + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
            } else {
                float out[8];
                _mm256_storeu_ps(out, v);
                for (long j = 0; j < nr; j++)
                    cr[j] = out[j];
            }
        }
    }
}

T8 void acc_tcf8_rows(int mr, double *C, long ldc, long j0, long nr, const float *const *a, const float *const *ea,
                      const int32_t *const *ep, long K, const float *bp, const float *be, const int32_t *bq,
                      const acc_tcf_job_t *job, int *low)
{
    const int bsz = job->bsz;
    /* panel after panel in one call; the models' blocks (Volta 4, Ampere and Hopper's m16n8k8 8, Hopper 16,
     * Hopper FP8 32) as constants where K holds whole blocks: each block's loops unrolled. The int8 quads in
     * MXCSR's rounding toward zero. */
    const int quads = job->qbias != ACC_TCF8_NOQ, rs = job->acc && job->rs;
    unsigned mode = _mm_getcsr(), rz = mode | 0x6000;
    if (quads && !rs) /* (with rs, each panel's call once it has scaled C) */
        __asm__ volatile("ldmxcsr %0" : : "m"(rz));
    for (long p = 0; 8 * p < nr; p++) {
        long w = nr - 8 * p < 8 ? nr - 8 * p : 8;
        const float *pb = bp + 8 * p * K, *pe = be + 8 * p * K;
        const int32_t *pq = bq ? bq + 8 * p * K : NULL;
#define TCF8_BY_BLOCK(CALL)                                                                                    \
    switch (K % bsz ? 0 : bsz) {                                                                                  \
    case 4: CALL(1, 4); break;                                                                                    \
    case 8: CALL(1, 8); break;                                                                                    \
    case 16: CALL(1, 16); break;                                                                                  \
    case 32: CALL(1, 32); break;                                                                                  \
    default: CALL(0, bsz);                                                                                        \
    }
#define TCF8_Q(whole, b) \
    tcf8_rows_q(whole, mr, C, ldc, j0 + 8 * p, w, a, ep, K, pb, pq, b, job, mode, rz, &low[p])
#define TCF8_R(whole, b) \
    tcf8_rows(whole, mr, C, ldc, j0 + 8 * p, w, a, ea, ep, K, pb, pe, pq, b, job, &low[p])
        if (quads) {
            TCF8_BY_BLOCK(TCF8_Q)
        } else {
            TCF8_BY_BLOCK(TCF8_R)
        }
#undef TCF8_Q
#undef TCF8_R
#undef TCF8_BY_BLOCK
    }
    if (quads && !rs)
        __asm__ volatile("ldmxcsr %0" : : "m"(mode));
}
#endif
