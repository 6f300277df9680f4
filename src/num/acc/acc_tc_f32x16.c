/* acc_tc_f32x16 -- acc_tc_f32's block kernel in AVX-512 (sixteen columns at once): the same
 * operations as the eight-column AVX2 kernel, lane for lane, so bit-identical to it and to the
 * scalar block model (t-acc checks all three) */
#include "num/acc/acc_tc_int.h"

#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T16 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")))

/* two int32 halves of a block, eight lanes, joined exactly in binary64 and truncated to the
 * significant bits kept */
T16 static inline __m512d tcf16_join(__m256i h0, __m256i h1, __m512i keep)
{
    __m512d x = _mm512_add_pd(_mm512_cvtepi32_pd(h0), _mm512_cvtepi32_pd(h1)); /* exact: below 2^32 */
    return _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(x), keep));
}

/* C's exponent per lane: the binade of a normal binary32 (a zero's is left to the caller) */
T16 static inline __m512i tcf16_cexp(__m512 c)
{
    __m512i cb = _mm512_srli_epi32(_mm512_castps_si512(c), 23);
    return _mm512_sub_epi32(_mm512_and_si512(cb, _mm512_set1_epi32(0xff)), _mm512_set1_epi32(127));
}

/* A row of C (the columns in cols) as binary32 lanes, zero elsewhere and where !acc: its values as
 * they are (exact: the caller checked them), or with rs scaled first as vec_scale32_ftz does it (the
 * binary64 product rounded to nearest, a subnormal result flushed to a zero of its sign); *big set
 * where a scaled lane's exponent field passes lim (beyond what the caller's bound allows). */
T16 static inline __m512 tcf16_load_c(const double *cr, __mmask16 cols, int acc, const double *rs, int lim,
                                      __mmask16 *big)
{
    if (!acc)
        return _mm512_setzero_ps();
    __m512d lo = _mm512_maskz_loadu_pd((__mmask8)cols, cr), hi = _mm512_maskz_loadu_pd((__mmask8)(cols >> 8), cr + 8);
    if (rs) /* (MXCSR's rounding: the caller's, to nearest) */
        lo = _mm512_mul_pd(lo, _mm512_set1_pd(*rs)), hi = _mm512_mul_pd(hi, _mm512_set1_pd(*rs));
    __m512 y = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
    if (!rs)
        return y;
    __m512i b = _mm512_castps_si512(y), e = _mm512_and_si512(b, _mm512_set1_epi32(0x7f800000));
    *big |= _mm512_cmpgt_epi32_mask(e, _mm512_set1_epi32(lim << 23));
    return _mm512_castsi512_ps(_mm512_mask_and_epi32(b, _mm512_testn_epi32_mask(e, e), b, _mm512_set1_epi32(INT32_MIN)));
}

/* v's lanes in cols written to a row of C */
T16 static inline void tcf16_store_c(double *cr, __mmask16 cols, __m512 v)
{
    _mm512_mask_storeu_pd(cr, (__mmask8)cols, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    _mm512_mask_storeu_pd(cr + 8, (__mmask8)(cols >> 8), _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
}

/* The terms of four rows (acc_tc_int.h) */
ACC_TCF_TERMS(tcf16_terms, T16, __m512i, __m512, 16, _mm512, _mm512_loadu_si512)

T16 static inline __attribute__((always_inline)) void
tcf16_rows(const int mr, const int single, const int whole, double *C, long ldc, long j0, long nr,
           const float *const *a, const float *const *ea, const int32_t *const *ep, long K, const float *bp,
           const float *be, const int32_t *bq, int f, const int bsz, int acc, int promote, const double *rs, int lim,
           int *low)
{
    const int pairs = bsz >= ACC_TCF16_PAIRS; /* exponents as int16 pairs (else binary32 values) */
    const __m512 zero = _mm512_setzero_ps();
    const __m512i none = _mm512_set1_epi32(ACC_TCF_NONE); /* the exponent of a zero */
    const int p = f + 1 < 24 ? f + 1 : 24;
    const __m512i keep = _mm512_set1_epi64((long long)(~0ULL << (53 - p))); /* p significant bits of an integer */
    const __m512i keep32 = _mm512_set1_epi32((int)(~0U << (24 - p)));       /* of a binary32 */
    const __mmask16 cols = (__mmask16)((1u << nr) - 1);
    __m512 c[ACC_TCF16_MR], outer[ACC_TCF16_MR];
    __mmask16 big = 0;
    _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
        outer[r] = zero;
        c[r] = tcf16_load_c(C + r * ldc + j0, cols, acc, rs ? rs + r : NULL, lim, &big);
    }
    for (long k0 = 0; k0 < K; k0 += bsz) {
        long k1 = whole || k0 + bsz < K ? k0 + bsz : K, kh = single ? k1 : k0 + (k1 - k0) / 2;
        __m512 up[ACC_TCF16_MR];
        __m512i s0[ACC_TCF16_MR], s1[ACC_TCF16_MR], ei[ACC_TCF16_MR], em[ACC_TCF16_MR / 2];
        __mmask16 live[ACC_TCF16_MR];
        if (pairs) { /* two rows per vector: int16 sums of exact small integers */
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) { /* C's exponent: its binade (a normal binary32) */
                __m512i ec = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(c[r], zero, _CMP_NEQ_UQ), none, tcf16_cexp(c[r]));
                if (r % 2 == 0)
                    em[r / 2] = _mm512_and_si512(ec, _mm512_set1_epi32(0xffff));
                else
                    em[r / 2] = _mm512_or_si512(em[r / 2], _mm512_slli_epi32(ec, 16));
            }
            for (long k = k0; k < k1; k++) {
                __m512i bev = _mm512_loadu_si512(bq + k * 16);
                _Pragma("GCC unroll 2") for (int h = 0; h < (mr + 1) / 2; h++)
                    em[h] = _mm512_max_epi16(em[h], _mm512_add_epi16(_mm512_set1_epi32(ep[h][k]), bev));
            }
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
                __m512i e = r % 2 ? _mm512_srai_epi32(em[r / 2], 16) : _mm512_srai_epi32(_mm512_slli_epi32(em[r / 2], 16), 16);
                live[r] = _mm512_cmpgt_epi32_mask(e, _mm512_set1_epi32(ACC_TCF_LIVE));
                *low |= _mm512_mask_cmplt_epi32_mask(live[r], e, _mm512_set1_epi32(f - 126)) != 0; /* as the AVX2 kernel */
                ei[r] = _mm512_maskz_mov_epi32(live[r], e);
            }
        } else { /* one row per vector: binary32 sums (exact), a zero's exponent -infinity; the
                  * compares on the binary32 sums, off the conversion's latency */
            const __m512 ninf = _mm512_set1_ps(-INFINITY);
            __m512 ef[ACC_TCF16_MR];
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++)
                ef[r] = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(c[r], zero, _CMP_NEQ_UQ), ninf,
                                             _mm512_cvtepi32_ps(tcf16_cexp(c[r])));
            for (long k = k0; k < k1; k++) {
                __m512 bev = _mm512_loadu_ps(be + k * 16);
                _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++)
                    ef[r] = _mm512_max_ps(ef[r], _mm512_add_ps(_mm512_set1_ps(ea[r][k]), bev));
            }
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
                live[r] = _mm512_cmp_ps_mask(ef[r], ninf, _CMP_NEQ_UQ);
                *low |= _mm512_mask_cmp_ps_mask(live[r], ef[r], _mm512_set1_ps((float)(f - 126)), _CMP_LT_OQ) != 0;
                ei[r] = _mm512_cvtps_epi32(_mm512_maskz_mov_ps(live[r], ef[r])); /* integers: exact */
            }
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
            up[r] = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(127 + f), ei[r]), 23));
            s0[r] = _mm512_cvttps_epi32(_mm512_mul_ps(c[r], up[r]));
            s1[r] = _mm512_setzero_si512();
        }
        for (long k = k0; k < kh; k++) {
            __m512 bv = _mm512_loadu_ps(bp + k * 16);
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++)
                s0[r] = _mm512_add_epi32(s0[r], _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(a[r][k]), bv), up[r])));
        }
        for (long k = kh; k < k1; k++) {
            __m512 bv = _mm512_loadu_ps(bp + k * 16);
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++)
                s1[r] = _mm512_add_epi32(s1[r], _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(a[r][k]), bv), up[r])));
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
            /* the block's int32 sum (the halves' where they do not overflow it), converted toward
             * zero: it keeps 24 significant bits, then p */
            __m512i sum = single ? s0[r] : _mm512_add_epi32(s0[r], s1[r]);
            __m512 x = _mm512_cvt_roundepi32_ps(sum, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            if (p < 24)
                x = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), keep32));
            /* overflow: both halves' signs differ from the sum's (0x42: (s0 ^ sum) & (s1 ^ sum)) */
            if (!single && _mm512_movepi32_mask(_mm512_ternarylogic_epi32(s0[r], s1[r], sum, 0x42))) {
                __m512d lo = tcf16_join(_mm512_castsi512_si256(s0[r]), _mm512_castsi512_si256(s1[r]), keep);
                __m512d hi = tcf16_join(_mm512_extracti64x4_epi64(s0[r], 1), _mm512_extracti64x4_epi64(s1[r], 1), keep);
                x = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
            }
            /* 2^(emax - f), a normal binary32 here; the product is exact (at most 24 bits, normal) */
            __m512 down = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_set1_epi32(127 - f), ei[r]), 23));
            c[r] = _mm512_maskz_mul_ps(live[r], x, down);
        }
        /* promotion: the tensor-core value added into the FP32 accumulator (RNE) */
        if (promote && ((k0 + bsz) % promote == 0 || k0 + bsz >= K))
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
                outer[r] = _mm512_add_ps(outer[r], c[r]);
                c[r] = zero;
            }
    }
    *low |= big != 0; /* a scaled C past lim */
    if (*low) /* C left as it was (unscaled): the caller recomputes these rows in binary64 lanes */
        return;
    _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++)
        tcf16_store_c(C + r * ldc + j0, cols, promote ? outer[r] : c[r]);
}

/* The products' exponent maximum over k0 .. k1 - 1 (int8 quads, at most 32) as saturating int8 sums in a tree
 * (that of a group's first block: each later one is folded in along its previous block's terms, tcf16_terms) */
T16 static inline __attribute__((always_inline)) __m512i tcf16_emax_q(const int32_t *eq, const int32_t *bq, long k0,
                                                                       long k1)
{
    __m512i t[32];
    const long n = k1 - k0;
    t[0] = _mm512_set1_epi8(ACC_TCF8_QNONE); /* (n >= 1: replaced) */
    _Pragma("GCC unroll 32") for (long k = 0; k < n; k++)
        t[k] = _mm512_adds_epi8(_mm512_set1_epi32(eq[k0 + k]), _mm512_loadu_si512(bq + (k0 + k) * 16));
    _Pragma("GCC unroll 5") for (long w = 1; w < n; w *= 2)
        _Pragma("GCC unroll 16") for (long k = 0; k + w < n; k += 2 * w)
            t[k] = _mm512_max_epi8(t[k], t[k + w]);
    return t[0];
}

/* One block of four rows with the exponents as int8 quads (acc_tcf8_quads), as the AVX2 kernel's
 * tcf8_block_q does it, lane for lane: em the products' maximum over k (saturating int8 sums), then per
 * row in int32 lanes as binary32 exponent fields (1 .. 254), the products' (every live one
 * has at least f + 1: the caller's range check) or f + 1 where all are zero, against C's own field (0
 * for a zero C); a lane with neither takes f + 1, where it computes 0 from 0. That floor is exact but
 * for a C alone below 2^(f - 126) whose bits reach below 2^-126, never one the blocks make (every bit of
 * a block's result is on its grid, at least 2^(emin_a + emin_b - f) >= 2^-126), so only the C the
 * caller gives is watched (tcf16_rows_q). The block's integer is converted toward zero by the
 * conversion's own rounding (embedded: MXCSR is left alone). At most 32 products. Returns the next
 * block's maximum (its exponents at neq and nbq, nn <= k1 - k0 of them, 0 where there is none: tcf16_terms),
 * folded in along the terms. */
T16 static inline __attribute__((always_inline)) __m512i
tcf16_block_q(const int single, const int trunc, __m512 *c, const float *const *a, long k0, long k1, long kh, const float *bp, int f, __m512i qbias, __m512i keep, __m512i keep32,
              __m512i em, const int32_t *neq, const int32_t *nbq, long nn)
{
    __m512i up[4], s0[4], s1[4], en = _mm512_set1_epi8(ACC_TCF8_QNONE);
    /* each byte's field (qbias: a relative exponent's field, modulo 256): exact for a live one, f + 1
     * where no product is live */
    const __m512i fb = _mm512_mask_blend_epi8(_mm512_cmpeq_epi8_mask(em, _mm512_set1_epi8(ACC_TCF8_QNONE)),
                                              _mm512_add_epi8(em, qbias), _mm512_set1_epi8((char)(f + 1)));
    /* the fields where binary32 keeps them (bits 23 .. 30): C's is one mask, 2^(f - emax) one subtraction
     * (modulo 2^32) */
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        __m512i fp = r == 3 ? _mm512_srli_epi32(_mm512_and_si512(fb, _mm512_set1_epi32((int)0xff000000u)), 1)
                            : _mm512_slli_epi32(_mm512_and_si512(fb, _mm512_set1_epi32(0xff << 8 * r)), 23 - 8 * r);
        __m512i fc = _mm512_and_si512(_mm512_castps_si512(c[r]), _mm512_set1_epi32(0x7f800000));
        up[r] = _mm512_sub_epi32(_mm512_set1_epi32((int)((uint32_t)(254 + f) << 23)), _mm512_max_epi32(fp, fc));
        s0[r] = _mm512_cvttps_epi32(_mm512_mul_ps(c[r], _mm512_castsi512_ps(up[r])));
        s1[r] = _mm512_setzero_si512();
    }
    const __m512 upf[4] = {_mm512_castsi512_ps(up[0]), _mm512_castsi512_ps(up[1]), _mm512_castsi512_ps(up[2]),
                           _mm512_castsi512_ps(up[3])};
    const long nh = nn < kh - k0 ? nn : kh - k0; /* the next block's exponents taken along the first half */
    tcf16_terms(s0, a, k0, kh, bp, upf, &en, neq, nbq, nh);
    tcf16_terms(s1, a, kh, k1, bp, upf, &en, neq + nh, nbq + nh * 16, nn - nh);
    __m512i sum[4];
    __mmask16 o = 0;
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        sum[r] = single ? s0[r] : _mm512_add_epi32(s0[r], s1[r]);
        if (!single) /* both halves' signs differ from the sum's: (s0 ^ sum) & (s1 ^ sum) */
            o |= _mm512_movepi32_mask(_mm512_ternarylogic_epi32(s0[r], s1[r], sum[r], 0x42));
    }
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        __m512 x;
        if (!single && o) { /* rare: a block's integer past int32, joined exactly in binary64 (p bits) */
            __m512d lo = tcf16_join(_mm512_castsi512_si256(s0[r]), _mm512_castsi512_si256(s1[r]), keep);
            __m512d hi = tcf16_join(_mm512_extracti64x4_epi64(s0[r], 1), _mm512_extracti64x4_epi64(s1[r], 1), keep);
            x = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
        } else {
            x = _mm512_cvt_roundepi32_ps(sum[r], _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            if (trunc) /* fewer than 24 significant bits kept */
                x = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), keep32));
        }
        __m512i dn = _mm512_sub_epi32(_mm512_set1_epi32(254 << 23), up[r]); /* 2^(emax - f): exact product */
        c[r] = _mm512_mul_ps(x, _mm512_castsi512_ps(dn));
    }
    return en;
}

/* Rows i .. i + mr - 1 (mr <= 4; the group computes four, rows past mr copies of real ones) against the nr
 * columns from j0 in panels of sixteen (panel p's operands at bp and bq + 16 p K) with the exponents as int8
 * quads (eq: the group's line), block by block, panel after panel: the exponent maximum of each block, the
 * next panel's first included, folded in along the block before it. C read and written only where a panel's
 * tile is left to this kernel (low[p] clear). */
T16 static inline __attribute__((always_inline)) void
tcf16_rows_q(const int whole, int mr, double *C, long ldc, long j0, long nr, const float *const *a,
             const int32_t *eq, long K, const float *bp, const int32_t *bq, const int bsz, const acc_tcf_job_t *job,
             int *low)
{
    const int f = job->f, acc = job->acc, promote = job->promote;
    const unsigned char *single = job->single;
    const int p = f + 1 < 24 ? f + 1 : 24;
    const __m512i keep = _mm512_set1_epi64((long long)(~0ULL << (53 - p))); /* p significant bits of an integer */
    const __m512i keep32 = _mm512_set1_epi32((int)(~0U << (24 - p)));       /* of a binary32 */
    const __m512i bias = _mm512_set1_epi8((char)((job->qbias + 127) & 0xff)); /* a relative exponent's field, mod 256 */
    const double *rs = acc ? job->rs : NULL;
    const long n0 = whole || bsz < K ? bsz : K, npan = (nr + 15) / 16; /* a panel's first block; the panels */
    __m512i em = _mm512_setzero_si512();
    int have = 0; /* em is this panel's first block's (folded in along the last panel's last block) */
    for (long pi = 0; pi < npan; pi++) {
        const float *bpp = bp + pi * K * 16;
        const int32_t *bqp = bq + pi * K * 16;
        const long jp = j0 + 16 * pi, w = nr - 16 * pi < 16 ? nr - 16 * pi : 16;
        const __mmask16 cols = (__mmask16)((1u << w) - 1);
        const int more = pi + 1 < npan; /* a panel after this one */
        if (!have)
            em = tcf16_emax_q(eq, bqp, 0, n0);
        __m512 c[4], outer[4];
        __m512i cmin = _mm512_set1_epi32(-1);
        __mmask16 big = 0;
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
            outer[r] = _mm512_setzero_ps();
            c[r] = tcf16_load_c(C + r * ldc + jp, cols, acc && r < mr, rs && r < mr ? rs + r : NULL, job->lim, &big);
            /* C's field less one (times 2^23), unsigned: a C below 2^(f - 126) seen (tcf16_block_q) */
            __m512i fc = _mm512_and_si512(_mm512_castps_si512(c[r]), _mm512_set1_epi32(0x7f800000));
            cmin = _mm512_min_epu32(cmin, _mm512_sub_epi32(fc, _mm512_set1_epi32(1 << 23)));
        }
        for (long k0 = 0; k0 < K; k0 += bsz) {
            long k1 = whole || k0 + bsz < K ? k0 + bsz : K, kh = k0 + (k1 - k0) / 2;
            /* the next block's exponents: this panel's, else the next panel's first (none after the last) */
            const int32_t *neq = k1 < K ? eq + k1 : eq, *nbq = k1 < K ? bqp + k1 * 16 : bqp + K * 16;
            const int one = single[k0 / bsz];
            if (whole && (k1 < K || more)) { /* a whole block next: a constant */
                have = 1;
                if (one)
                    em = tcf16_block_q(1, p < 24, c, a, k0, k1, k1, bpp, f, bias, keep, keep32, em, neq, nbq, bsz);
                else
                    em = tcf16_block_q(0, p < 24, c, a, k0, k1, kh, bpp, f, bias, keep, keep32, em, neq, nbq, bsz);
            } else { /* (the next panel's first block along this panel's last only where it is as long) */
                long nn = k1 < K ? (k1 + bsz < K ? bsz : K - k1) : more && k1 - k0 >= n0 ? n0 : 0;
                have = k1 < K || nn > 0;
                if (one)
                    em = tcf16_block_q(1, p < 24, c, a, k0, k1, k1, bpp, f, bias, keep, keep32, em, neq, nbq, nn);
                else
                    em = tcf16_block_q(0, p < 24, c, a, k0, k1, kh, bpp, f, bias, keep, keep32, em, neq, nbq, nn);
            }
            /* promotion: the tensor-core value added into the FP32 accumulator (RNE) */
            if (promote && ((k0 + bsz) % promote == 0 || k0 + bsz >= K))
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
                    outer[r] = _mm512_add_ps(outer[r], c[r]);
                    c[r] = _mm512_setzero_ps();
                }
        }
        /* a C below 2^(f - 126) (C's field 1 .. f) seen, or a scaled C above lim: the caller recomputes these
         * rows of the panel (their C unscaled) */
        if (big || _mm512_cmpeq_epi32_mask(_mm512_min_epu32(cmin, _mm512_set1_epi32((f - 1) << 23)), cmin)) {
            low[pi] = 1;
            continue;
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
            if (r < mr)
                tcf16_store_c(C + r * ldc + jp, cols, promote ? outer[r] : c[r]);
    }
}

/* tcf16_rows with its row count a constant, so that the accumulators stay in registers */
T16 static inline __attribute__((always_inline)) void
tcf16_mr(const int single, const int whole, const int bsz, int mr, double *C, long ldc, long j0, long nr,
         const float *const *a, const float *const *ea, const int32_t *const *ep, long K, const float *bp,
         const float *be, const int32_t *bq, int f, int acc, int promote, const double *rs, int lim, int *low)
{
    switch (mr) {
    case 4: tcf16_rows(4, single, whole, C, ldc, j0, nr, a, ea, ep, K, bp, be, bq, f, bsz, acc, promote, rs, lim, low); break;
    case 3: tcf16_rows(3, single, whole, C, ldc, j0, nr, a, ea, ep, K, bp, be, bq, f, bsz, acc, promote, rs, lim, low); break;
    case 2: tcf16_rows(2, single, whole, C, ldc, j0, nr, a, ea, ep, K, bp, be, bq, f, bsz, acc, promote, rs, lim, low); break;
    default: tcf16_rows(1, single, whole, C, ldc, j0, nr, a, ea, ep, K, bp, be, bq, f, bsz, acc, promote, rs, lim, low); break;
    }
}

T16 void acc_tcf16_rows(int mr, double *C, long ldc, long j0, long nr, const float *const *a, const float *const *ea,
                        const int32_t *const *ep, long K, const float *bp, const float *be, const int32_t *bq,
                        const acc_tcf_job_t *job, int *low)
{
    const int f = job->f, bsz = job->bsz, acc = job->acc, promote = job->promote, lim = job->lim;
    const double *rs = acc ? job->rs : NULL;
    if (job->qbias != ACC_TCF8_NOQ) { /* int8 quads: the models' blocks as constants where K holds whole blocks */
        switch (K % bsz ? 0 : bsz) {
        case 4: tcf16_rows_q(1, mr, C, ldc, j0, nr, a, ep[0], K, bp, bq, 4, job, low); break;
        case 8: tcf16_rows_q(1, mr, C, ldc, j0, nr, a, ep[0], K, bp, bq, 8, job, low); break;
        case 16: tcf16_rows_q(1, mr, C, ldc, j0, nr, a, ep[0], K, bp, bq, 16, job, low); break;
        case 32: tcf16_rows_q(1, mr, C, ldc, j0, nr, a, ep[0], K, bp, bq, 32, job, low); break;
        default: tcf16_rows_q(0, mr, C, ldc, j0, nr, a, ep[0], K, bp, bq, bsz, job, low);
        }
        return;
    }
    /* one int32 sum per block where the block's terms and C (each below 2^(f+2)) cannot leave
     * it; else two halves, added where their sum does not overflow */
    const int single = (double)(bsz + 1) * ldexp(1.0, f + 2) < 0x1p31;
    for (long pi = 0; pi * 16 < nr; pi++) { /* panel by panel */
        const long jp = j0 + 16 * pi, w = nr - 16 * pi < 16 ? nr - 16 * pi : 16, o = pi * K * 16;
        const float *bpp = bp + o, *bep = be + o;
        const int32_t *bqp = bq ? bq + o : NULL;
        /* the models' blocks (Volta 4, Ampere 8, Hopper 16) as constants where K holds whole blocks: each
         * block's loops unrolled. Hopper FP8's 32 is not: four rows' 32 unrolled terms spill registers, and the
         * general loop takes 6% fewer cycles there (perf samples of base:acc=tc-hopper-fp8-fast, Zen 5) */
        switch (K % bsz ? 0 : bsz * 2 + single) {
        case 4 * 2 + 1: tcf16_mr(1, 1, 4, mr, C, ldc, jp, w, a, ea, ep, K, bpp, bep, bqp, f, acc, promote, rs, lim, low + pi); break;
        case 8 * 2 + 1: tcf16_mr(1, 1, 8, mr, C, ldc, jp, w, a, ea, ep, K, bpp, bep, bqp, f, acc, promote, rs, lim, low + pi); break;
        case 16 * 2: tcf16_mr(0, 1, 16, mr, C, ldc, jp, w, a, ea, ep, K, bpp, bep, bqp, f, acc, promote, rs, lim, low + pi); break;
        default:
            if (single)
                tcf16_mr(1, 0, bsz, mr, C, ldc, jp, w, a, ea, ep, K, bpp, bep, bqp, f, acc, promote, rs, lim, low + pi);
            else
                tcf16_mr(0, 0, bsz, mr, C, ldc, jp, w, a, ea, ep, K, bpp, bep, bqp, f, acc, promote, rs, lim, low + pi);
        }
    }
}

T16 void acc_tcf16_transpose(void *dst, const void *src, long K)
{
    /* 16 x 16 tiles by four rounds of block swaps: at distance d, rows i and i + d (i & d == 0)
     * exchange their columns with bit d set (row i's) and clear (row i + d's), shifted by d */
    int32_t top[4][16], bot[4][16];
    for (int s = 0; s < 4; s++)
        for (int c = 0; c < 16; c++) {
            int d = 8 >> s;
            top[s][c] = c & d ? 16 + c - d : c;
            bot[s][c] = c & d ? 16 + c : c + d;
        }
    const int32_t *in = src;
    int32_t *out = dst;
    long k0 = 0;
    for (; k0 + 16 <= K; k0 += 16) {
        __m512i r[16];
        _Pragma("GCC unroll 16") for (int t = 0; t < 16; t++)
            r[t] = _mm512_loadu_si512(in + t * K + k0);
        _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) {
            const int d = 8 >> s;
            const __m512i it = _mm512_loadu_si512(top[s]), ib = _mm512_loadu_si512(bot[s]);
            _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)
                if (!(i & d)) {
                    __m512i a = r[i], b = r[i + d];
                    r[i] = _mm512_permutex2var_epi32(a, it, b);
                    r[i + d] = _mm512_permutex2var_epi32(a, ib, b);
                }
        }
        _Pragma("GCC unroll 16") for (int t = 0; t < 16; t++)
            _mm512_storeu_si512(out + (k0 + t) * 16, r[t]);
    }
    for (; k0 < K; k0++)
        for (int t = 0; t < 16; t++)
            out[k0 * 16 + t] = in[t * K + k0];
}

T16 void acc_tcf16_pairs(int32_t *q, const float *lo, const float *hi, long n)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512i none = _mm512_set1_epi32(ACC_TCF_NONE), low16 = _mm512_set1_epi32(0xffff);
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 l = _mm512_loadu_ps(lo + i), h = _mm512_loadu_ps(hi + i);
        __m512i li = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(l, ninf, _CMP_EQ_OQ), _mm512_cvttps_epi32(l), none);
        __m512i hi16 = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(h, ninf, _CMP_EQ_OQ), _mm512_cvttps_epi32(h), none);
        _mm512_storeu_si512(q + i, _mm512_or_si512(_mm512_and_si512(li, low16), _mm512_slli_epi32(hi16, 16)));
    }
    for (; i < n; i++)
        q[i] = acc_tcf_pair(lo[i], hi[i]);
}

T16 void acc_tcf16_bquads(int32_t *q, const float *e, long n, int bias)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512i vb = _mm512_set1_epi32(bias), low8 = _mm512_set1_epi32(0xff);
    const __m512i none = _mm512_set1_epi32(ACC_TCF8_QNONE & 0xff);
    /* byte 0 of each 32-bit word into all four of its bytes */
    const __m512i spread = _mm512_set_epi8(12, 12, 12, 12, 8, 8, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0, 12, 12, 12, 12, 8, 8, 8, 8, 4,
                                           4, 4, 4, 0, 0, 0, 0, 12, 12, 12, 12, 8, 8, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0, 12, 12,
                                           12, 12, 8, 8, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0);
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = _mm512_loadu_ps(e + i);
        __m512i b = _mm512_and_si512(_mm512_sub_epi32(_mm512_cvttps_epi32(x), vb), low8);
        b = _mm512_mask_mov_epi32(b, _mm512_cmp_ps_mask(x, ninf, _CMP_EQ_OQ), none);
        _mm512_storeu_si512(q + i, _mm512_shuffle_epi8(b, spread));
    }
    const float *el[4] = {e + i, e + i, e + i, e + i};
    acc_tcf8_quads(q + i, el, n - i, bias); /* the rest */
}

T16 long acc_tcf16_convert(float *v, float *e, const double *x, long n, int emin, acc_tcf_range_t *g)
{
    const __m512i e11 = _mm512_set1_epi64(0x7ff), low41 = _mm512_set1_epi64((1LL << 41) - 1);
    const __m512i bias = _mm512_set1_epi64(1023), vmin = _mm512_set1_epi64(emin), zero = _mm512_setzero_si512();
    __m512i emx = _mm512_set1_epi64(INT32_MIN), emn = _mm512_set1_epi64(INT32_MAX);
    __mmask8 bad = 0;
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        /* 4 kB ahead into L2: an attention block's keys stream from memory at about 9 GB/s where they are read
         * alone (in-process pairs of flashmla samples, with and without: 0.95 of the time) */
        _mm_prefetch((const char *)(x + i + 512), _MM_HINT_T1);
        __m512i u = _mm512_loadu_si512(x + i);
        __m512i ef = _mm512_and_si512(_mm512_srli_epi64(u, 52), e11);
        __mmask8 z = _mm512_cmpeq_epi64_mask(_mm512_slli_epi64(u, 1), zero);
        __mmask8 fits = _mm512_cmpeq_epi64_mask(_mm512_and_si512(u, low41), zero) & _mm512_cmpneq_epi64_mask(ef, e11) &
                        _mm512_cmpge_epi64_mask(ef, _mm512_set1_epi64(1023 - 126));
        bad |= (__mmask8) ~(z | fits);
        __m512i ex = _mm512_max_epi64(_mm512_sub_epi64(ef, bias), vmin);
        emx = _mm512_mask_max_epi64(emx, (__mmask8)~z, emx, ex);
        emn = _mm512_mask_min_epi64(emn, (__mmask8)~z, emn, ex);
        _mm256_storeu_ps(v + i, _mm512_cvtpd_ps(_mm512_castsi512_pd(u)));
        _mm256_storeu_ps(e + i, _mm256_mask_blend_ps(z, _mm512_cvtepi64_ps(ex), _mm256_set1_ps(-INFINITY)));
    }
    long mx = _mm512_reduce_max_epi64(emx), mn = _mm512_reduce_min_epi64(emn);
    if (mx != INT32_MIN) {
        g->emx = (float)mx > g->emx ? (float)mx : g->emx;
        g->emn = (float)mn < g->emn ? (float)mn : g->emn;
    }
    g->ok &= bad == 0;
    return i;
}

T16 int acc_tcf16_check_c(const double *C, long ldc, long M, long N, double *cmax)
{
    const __m512i absmask = _mm512_set1_epi64(0x7fffffffffffffffLL);
    const __m512d lo = _mm512_set1_pd(0x1p-126), hi = _mm512_set1_pd(0x1p127), zero = _mm512_setzero_pd();
    __m512d mx = _mm512_set1_pd(*cmax);
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j += 8) {
            __mmask8 in = (__mmask8)(N - j >= 8 ? 0xff : (1u << (N - j)) - 1);
            __m512d c = _mm512_maskz_loadu_pd(in, C + i * ldc + j); /* zero beyond N: it suits */
            __m512d ac = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(c), absmask));
            __mmask8 fits = _mm512_cmp_pd_mask(c, zero, _CMP_EQ_OQ) |
                            (_mm512_cmp_pd_mask(ac, lo, _CMP_GE_OQ) & _mm512_cmp_pd_mask(ac, hi, _CMP_LT_OQ) &
                             _mm512_cmp_pd_mask(_mm512_cvtps_pd(_mm512_cvtpd_ps(c)), c, _CMP_EQ_OQ));
            if (fits != 0xff)
                return 0;
            mx = _mm512_max_pd(mx, ac);
        }
    *cmax = _mm512_reduce_max_pd(mx);
    return 1;
}
#endif
