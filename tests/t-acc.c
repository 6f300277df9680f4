/* t-acc -- accumulation models against hand-written sequential loops and MPFR-checked rounding */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "num/acc/acc.h"
#include "num/acc/acc_f32.h"
#include "num/acc/acc_tc.h"
#include "num/acc/acc_tc_int.h"
#include "num/vec/cpu.h"
#include "check.h"
#include "num/fmt/fmt.h"
#include "num/vec/vec.h"

/* C1 (scalar) and C2 (vector kernels up to level simd: acc_simd) bit for bit, sign of zero
 * included; the first mismatches reported. */
static void tc_same(const double *C1, const double *C2, long n, int model, fmt_id_t f, int kind, const char *what,
                    int simd, long *compared, long *bad)
{
    for (long i = 0; i < n; i++) {
        ++*compared;
        if (memcmp(&C1[i], &C2[i], sizeof(double)) != 0 && (*bad)++ < 5)
            CHECK(0, "%s %s kind %d %s element %ld: simd level %d %a, scalar %a", acc_table[model].name,
                  fmt_table[f].name, kind, what, i, simd, C2[i], C1[i]);
    }
}

/* A held (acc_tc_hold) gives the scalar model's bits: the product on all of A, and on rows 1..
 * and columns 7.. of it (A inside the held operand at an offset), at the widest level; then a
 * held operand of another format's minimum exponent, which must not be taken. */
static void tc_held_same(const double *A, const double *B, long M, long N, long K, int model, fmt_id_t f, int kind,
                         long *compared, long *bad)
{
    double *C1 = malloc(sizeof(double) * (size_t)(M * N)), *C2 = malloc(sizeof(double) * (size_t)(M * N));
    /* held whole; A a block inside it (from row 1: the AVX2 kernel's int16 pairs; from row 4: its
     * int8 quads, whose groups of four rows line up); held with another minimum exponent; held
     * one row short, so that A (from row 4) is not inside it, though it starts there */
    for (int part = 0; part < 5; part++) {
        long r0 = part == 0 ? 0 : part == 3 || part == 4 ? 4 : 1, k0 = part ? 7 : 0;
        acc_simd = 0;
        acc_gemm_f(C1, N, A + r0 * K + k0, K, B + k0, K, 1, M - r0, N, K - k0, (acc_model_t)model, f, f);
        acc_simd = 2;
        acc_tc_hold(A, K, part == 4 ? M - 1 : M, K, part == 2 ? fmt_table[f].emin - 1 : fmt_table[f].emin);
        acc_gemm_f(C2, N, A + r0 * K + k0, K, B + k0, K, 1, M - r0, N, K - k0, (acc_model_t)model, f, f);
        acc_tc_release();
        tc_same(C1, C2, (M - r0) * N, model, f, kind, part ? "held, inside" : "held", 2, compared, bad);
    }
    free(C1);
    free(C2);
}

/* The AVX2 and AVX-512 tensor-core kernels against the scalar block models, bit for bit (sign
 * of zero included): operands with zeros, subnormals of their format, cancelling pairs, a
 * spread of 2^-140..2^40, results that overflow and underflow binary32; odd sizes (a full and a
 * partial panel of either width; row tiles of 4 (AVX-512) and of 16 in groups of 4 (AVX2), each
 * with a remainder), both layouts. */
static void tc_simd_vs_scalar(fmt_rng_t *rng)
{
    long M = 21, N = 19, K = 300;
    double *A = malloc(sizeof(double) * (size_t)(M * K)), *B = malloc(sizeof(double) * (size_t)(N * K));
    double *C1 = malloc(sizeof(double) * (size_t)(M * N)), *C2 = malloc(sizeof(double) * (size_t)(M * N));
    double *C0 = malloc(sizeof(double) * (size_t)(M * N));
    const fmt_id_t fmts[] = {FMT_BF16, FMT_FP16, FMT_E4M3, FMT_E5M2};
    long compared = 0, bad = 0;
    for (int kind = 0; kind < 4; kind++)
        for (int fi = 0; fi < 4; fi++)
            for (int model = ACC_TC_VOLTA; model <= ACC_TC_HOPPER_FP8_FAST; model++)
                for (int trans = 0; trans < 2; trans++) {
                    fmt_id_t f = fmts[fi];
                    for (long i = 0; i < M * K + N * K; i++) {
                        double u = ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5;
                        int sh = kind == 0 ? 0 : kind == 1 ? (int)(fmt_rng_next(rng) % 180) - 140
                                                 : kind == 2 ? (int)(fmt_rng_next(rng) % 8) + 60 : -(int)(fmt_rng_next(rng) % 40);
                        double x = fmt_round(ldexp(u, sh), f, FMT_RNE, 1, NULL);
                        if (fmt_rng_next(rng) % 7 == 0)
                            x = 0;
                        if (i < M * K)
                            A[i] = x;
                        else
                            B[i - M * K] = x;
                    }
                    if (kind == 3) /* cancelling: the second half of each B row negates the first */
                        for (long j = 0; j < N; j++)
                            for (long k = K / 2; k < K; k++)
                                B[j * K + k] = -B[j * K + k - K / 2];
                    for (int simd = 0; simd <= 2; simd++) { /* scalar, then AVX2, then AVX-512 where present */
                        acc_simd = simd;
                        if (trans) {
                            acc_gemm_f(simd ? C2 : C1, N, A, K, B, K, 1, M, N, K, (acc_model_t)model, f, f);
                        } else {
                            double *Bt = malloc(sizeof(double) * (size_t)(K * N));
                            for (long j = 0; j < N; j++)
                                for (long k = 0; k < K; k++)
                                    Bt[k * N + j] = B[j * K + k];
                            acc_gemm_f(simd ? C2 : C1, N, A, K, Bt, N, 0, M, N, K, (acc_model_t)model, f, f);
                            free(Bt);
                        }
                        if (simd)
                            tc_same(C1, C2, M * N, model, f, kind, trans ? "trans" : "plain", simd, &compared, &bad);
                    }
                    acc_simd = 2;
                    if (!trans)
                        continue;
                    tc_held_same(A, B, M, N, K, model, f, kind, &compared, &bad);
                    /* accumulating (D = A B + C): C binary32 values of every size class (zero,
                     * binary32 subnormals, near its maximum, the products' scale), either sign */
                    for (int crange = 0; crange < 3; crange++) {
                    /* crange 1: C of normal binary32 magnitudes near the products' and zeros only
                     * (the binary32-lane kernel takes those; every class sends it back); crange 2:
                     * tiny normal C (2^-126 .. 2^-96) under blocks of A that are all zero, whose
                     * maximum is C's own binade (the lanes must notice and send it back) */
                    for (long i = 0; i < M * N; i++) {
                        double u = ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5;
                        int cls = crange ? 2 + (int)(fmt_rng_next(rng) % 3) : (int)(fmt_rng_next(rng) % 5);
                        int sh = cls == 0 ? -135 : cls == 1 ? 127 : cls == 2 ? (int)(fmt_rng_next(rng) % 60) - 30 : 0;
                        C0[i] = C1[i] = cls == 4 ? 0.0 : fmt_round(ldexp(u, sh), FMT_FP32, FMT_RNE, 1, NULL);
                        if (crange == 2)
                            C0[i] = C1[i] = ldexp(u < 0 ? -1.0 : 1.0, -96 - (int)(fmt_rng_next(rng) % 31));
                    }
                    for (long i = 0; i < M * K && crange == 2; i++)
                        A[i] = i % K < 64 ? 0.0 : A[i];
                    for (int simd = 0; simd <= 2; simd++) {
                        acc_simd = simd;
                        if (simd)
                            memcpy(C2, C0, sizeof(double) * (size_t)(M * N));
                        acc_tc_gemm_acc(simd ? C2 : C1, N, A, K, B, K, 1, M, N, K, (acc_model_t)model, fmt_table[f].emin,
                                        fmt_table[f].emin);
                        if (simd)
                            tc_same(C1, C2, M * N, model, f, kind,
                                    crange ? "accumulating, C in range" : "accumulating", simd, &compared, &bad);
                    }
                    acc_simd = 2;
                    }
                }
    CHECK(bad == 0, "tensor-core kernels: %ld of %ld elements differ from the scalar models", bad, compared);
    printf("t-acc: tensor-core vector kernels (AVX2%s) equal the scalar models on %ld elements\n",
           cpu_has_avx512() ? " and AVX-512" : "", compared);
    free(A);
    free(B);
    free(C0);
    free(C1);
    free(C2);
}

/* op(B)'s source held (acc_tc_hold_b) gives the scalar model's bits: B inside a larger held array at an offset,
 * and alone, read transposed (op(B)'s columns: Q K^T's keys) and not (its rows: P V's V), accumulating and not,
 * for the models' block sizes; and a product whose B is not inside the held one ignores it. */
static void tc_heldb_same(fmt_rng_t *rng)
{
    enum { M = 21, N = 19, K = 96, HR = K + 5, HC = K + 7 };
    static double A[M * K], H[HR * HC], C0[M * N], C1[M * N], C2[M * N];
    long compared = 0, bad = 0;
    int e = fmt_table[FMT_BF16].emin;
    for (int model = ACC_TC_VOLTA; model <= ACC_TC_HOPPER_FP8_FAST; model++)
        for (int trans = 0; trans < 2; trans++)
            for (int acc = 0; acc < 2; acc++) {
                for (long i = 0; i < M * K + HR * HC; i++) {
                    double u = ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5;
                    double x = fmt_rng_next(rng) % 7 == 0 ? 0 : fmt_round(ldexp(u, (int)(fmt_rng_next(rng) % 12) - 6),
                                                                        i < M * K ? FMT_BF16 : FMT_E4M3, FMT_RNE, 1, NULL);
                    if (i < M * K)
                        A[i] = x;
                    else
                        H[i - M * K] = x;
                }
                for (long i = 0; i < M * N; i++)
                    C0[i] = fmt_round(ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5, FMT_FP32, FMT_RNE, 1, NULL);
                /* B at row 2, column 3 of the held rows: [N][K] where transposed, else [K][N] */
                const double *B = H + 2 * HC + 3;
                for (int held = 0; held < 4; held++) { /* scalar; AVX2/AVX-512 holding B in H, B alone (its
                                                         * lines whole: transposed from the held rows in place), or
                                                         * another array */
                    double *C = held ? C2 : C1;
                    memcpy(C, C0, sizeof C0);
                    acc_simd = held ? 2 : 0;
                    if (held == 1)
                        acc_tc_hold_b(H, HC, HR, HC, e);
                    if (held == 2)
                        acc_tc_hold_b(H + 3 * HC, HC, HR - 3, HC, e); /* starts below B: B is not inside */
                    if (held == 3)
                        acc_tc_hold_b(B, HC, trans ? N : K, trans ? K : N, e);
                    if (acc)
                        acc_tc_gemm_acc(C, N, A, K, B, HC, trans, M, N, K, (acc_model_t)model, e, e);
                    else
                        acc_tc_gemm(C, N, A, K, B, HC, trans, M, N, K, (acc_model_t)model, e, e);
                    acc_tc_release_b();
                    if (held)
                        tc_same(C1, C2, M * N, model, FMT_E4M3, held, trans ? "B held, transposed" : "B held", 2,
                                &compared, &bad);
                }
                acc_simd = 2;
            }
    CHECK(bad == 0, "tensor-core kernels with op(B) held: %ld of %ld elements differ from the scalar models", bad, compared);
    printf("t-acc: products with op(B)'s source held equal the scalar models on %ld elements\n", compared);
}

/* acc_tc_gemm_acc_scaled gives the bits of its two steps (each row of C through vec_scale32_ftz, then
 * acc_tc_gemm_acc by the scalar model) for every model, both layouts, at each vector level: C's rows scaled by 1,
 * by 0, by 2^-120 (most of C flushed) and by binary32 values in [1/8, 1); C's values mixed from zeros of both
 * signs, binary32 values at binades -6 .. 6, values whose scaled product is subnormal (flushed, keeping its sign),
 * doubles that are not binary32 (rounded twice, as the two steps do it), and from row 12 on values scaled below
 * 2^(f - 126) (the kernels leave those rows to the binary64 lanes); kind 1 adds values near 2^127 there (past the
 * bound the kernel checks as it loads C), kind 2 an infinity (the scalar model's rows), kind 3 an A value at 2^60
 * (the kernels' pairs, not their quads), kind 4 both kind 1's C and kind 3's A (pairs with a C near the bound). */
static void tc_scaled_same(fmt_rng_t *rng)
{
    enum { M = 21, N = 19, K = 96 };
    static double A[M * K], B[N * K], C0[M * N], C1[M * N], C2[M * N], rs[M];
    long compared = 0, bad = 0;
    int e = fmt_table[FMT_BF16].emin;
    for (int model = ACC_TC_VOLTA; model <= ACC_TC_HOPPER_FP8_FAST; model++)
        for (int kind = 0; kind < 5; kind++)
            for (int trans = 0; trans < 2; trans++) {
                for (long i = 0; i < M * K + N * K; i++) { /* binades -6 .. 5: the AVX2 kernel's int8 quads */
                    double u = 1 + ldexp((double)(fmt_rng_next(rng) >> 11), -53);
                    double x = fmt_rng_next(rng) % 9 == 0 ? 0 : fmt_round(ldexp(fmt_rng_next(rng) % 2 ? u : -u,
                                                                                (int)(fmt_rng_next(rng) % 12) - 6),
                                                                          i < M * K ? FMT_BF16 : FMT_E4M3, FMT_RNE, 1, NULL);
                    if (i < M * K)
                        A[i] = x;
                    else
                        B[i - M * K] = x;
                }
                if (kind == 3 || kind == 4)
                    A[5 * K + 17] = 0x1p60;
                for (long i = 0; i < M; i++)
                    rs[i] = i == 0 ? 1.0 : i == 1 ? 0.0 : i == 2 ? 0x1p-120
                                               : fmt_round(0.125 + 0.875 * ldexp((double)(fmt_rng_next(rng) >> 11), -53),
                                                           FMT_FP32, FMT_RNE, 1, NULL);
                for (long i = 0; i < M * N; i++) {
                    double u = ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5;
                    int cls = (int)(fmt_rng_next(rng) % 8);
                    double x = fmt_round(ldexp(u, (int)(fmt_rng_next(rng) % 13) - 6), FMT_FP32, FMT_RNE, 1, NULL);
                    if (cls == 0)
                        x = fmt_rng_next(rng) % 2 ? 0.0 : -0.0;
                    else if (cls == 1) /* scaled below 2^-126 (rs >= 1/8): flushed */
                        x = fmt_round(ldexp(u, -127), FMT_FP32, FMT_RNE, 1, NULL);
                    else if (cls == 2 && i >= 12 * N) /* scaled below 2^(f - 126) for every model's f (rows 12 ..) */
                        x = fmt_round(ldexp(u, -110), FMT_FP32, FMT_RNE, 1, NULL);
                    else if (cls == 3) /* not a binary32 value */
                        x = u / 3;
                    C0[i] = x;
                }
                if (kind == 1 || kind == 4)
                    C0[13 * N + 4] = 0x1.8p126, C0[18 * N + 11] = -0x1.fffffep127;
                if (kind == 2)
                    C0[19 * N + 2] = -INFINITY;
                for (int simd = 0; simd <= 2; simd++) {
                    double *C = simd ? C2 : C1;
                    memcpy(C, C0, sizeof C0);
                    acc_simd = simd;
                    if (simd) {
                        acc_tc_gemm_acc_scaled(C, N, rs, A, K, B, trans ? K : N, trans, M, N, K, (acc_model_t)model, e, e);
                        tc_same(C1, C2, M * N, model, FMT_E4M3, kind, trans ? "C scaled, transposed" : "C scaled", simd,
                                &compared, &bad);
                    } else {
                        for (long i = 0; i < M; i++)
                            vec_scale32_ftz(C + i * N, C + i * N, N, rs[i]);
                        acc_tc_gemm_acc(C, N, A, K, B, trans ? K : N, trans, M, N, K, (acc_model_t)model, e, e);
                    }
                }
                acc_simd = 2;
            }
    CHECK(bad == 0, "tensor-core kernels with C scaled as loaded: %ld of %ld elements differ from the two steps", bad,
          compared);
    printf("t-acc: products with C's rows scaled equal scaling then the scalar models on %ld elements\n", compared);
}

/* Hopper's block of 16 (F = 25) sums its terms in two int32 halves: each half fits, their sum
 * need not. With every operand bf16's largest significand 255/128 at binade 0, each product is
 * 3.969 (terms 3.969 2^25 on the block's grid 2^-25) and a C of 0x1.fffffep0 (binade 0, the
 * block's maximum stays 0) adds 1.99 2^25: 16 3.969 + 1.99 = 65.5 > 64, so the block's integer is
 * past 2^31, either sign. A C of 0.5 - n 2^-25 brings it to 2^31 - n (16 terms are 2^31 - 2^24):
 * n = 40 is where binary32's nearest rounding of the integer gives 2^31 itself, n = 150 where it
 * rounds up to 2^31 - 128 and rounding toward zero gives 2^31 - 256. The vector kernels must give
 * the scalar model's bits there. */
enum { SO_M = 4, SO_N = 16, SO_K = 48 };

/* C = c everywhere plus A B^T (tc-hopper, A [4][48], B [16][48]) by the scalar model and by each vector kernel,
 * compared bit for bit */
static void tc_block_sums(const double *A, const double *B, double c, const char *what, long *compared, long *bad)
{
    static double C1[SO_M * SO_N], C2[SO_M * SO_N];
    for (int simd = 0; simd <= 2; simd++) {
        double *C = simd ? C2 : C1;
        for (long i = 0; i < SO_M * SO_N; i++)
            C[i] = c;
        acc_simd = simd;
        acc_tc_gemm_acc(C, SO_N, A, SO_K, B, SO_K, 1, SO_M, SO_N, SO_K, ACC_TC_HOPPER, fmt_table[FMT_BF16].emin,
                        fmt_table[FMT_BF16].emin);
        if (simd)
            tc_same(C1, C2, SO_M * SO_N, ACC_TC_HOPPER, FMT_BF16, 4, what, simd, compared, bad);
    }
    acc_simd = 2;
}

static void tc_split_overflow(void)
{
    static double A[SO_M * SO_K], B[SO_N * SO_K];
    const double c0[] = {0x1.fffffep0, 0.5 - 40 * 0x1p-25, 0.5 - 150 * 0x1p-25};
    long compared = 0, bad = 0;
    for (int sign = -1; sign <= 1; sign += 2)
        for (int ci = 0; ci < 3; ci++) {
            for (long i = 0; i < SO_M * SO_K; i++)
                A[i] = sign * 255.0 / 128;
            for (long i = 0; i < SO_N * SO_K; i++)
                B[i] = 255.0 / 128;
            tc_block_sums(A, B, sign * c0[ci], "int32 halves at 2^31", &compared, &bad);
        }
    /* The same block where one operand has fewer significant bits: the kernels keep each block's integer in one
     * int32 where bsz ma mb 2^f + 2^(f+1) <= 2^31 (ma, mb the operands' largest significands). B at e4m3's
     * largest significand 15/8 (4 bits): 16 x 255/128 x 15/8 + 1.99 = 61.75 < 64, one int32 at its largest; B at
     * 31/16 (5 bits): 63.76, still one; at 63/32 (6 bits): 64.7, past 2^31 again, so two halves. The last case
     * mixes them in one product, block by block: 15/8 in the first two blocks (one int32; A negated in the second,
     * so that C returns to binade 0), 255/128 in the third (65.5 again: two halves). */
    const double bsig[] = {15.0 / 8, 31.0 / 16, 63.0 / 32, 0};
    for (int sign = -1; sign <= 1; sign += 2)
        for (int bi = 0; bi < 4; bi++) {
            for (long i = 0; i < SO_M * SO_K; i++)
                A[i] = (bsig[bi] == 0 && i % SO_K >= 16 && i % SO_K < 32 ? -sign : sign) * 255.0 / 128;
            for (long i = 0; i < SO_N * SO_K; i++)
                B[i] = bsig[bi] ? bsig[bi] : i % SO_K < 32 ? 15.0 / 8 : 255.0 / 128;
            tc_block_sums(A, B, sign * 0x1.fffffep0, "one int32 up to 2^31", &compared, &bad);
        }
    CHECK(bad == 0, "tensor-core kernels, block sums past 2^31: %ld of %ld elements differ", bad, compared);
    /* A block result below 2^(f - 126) by cancellation, then blocks of zero products (C alone, whose scales would
     * leave binary32 but for the AVX2 kernel's floor of the block maximum at f + 1): operands at 2^-45 (their
     * products 2^-90, within the binary32 lanes' range), (1 + 2^-7)^2 - (1 + 2^-6) = 2^-14, so C = 2^-104 <
     * 2^-101, every bit of it on the first block's grid (2^-115). */
    memset(A, 0, sizeof A);
    memset(B, 0, sizeof B);
    for (long i = 0; i < SO_M; i++)
        A[i * SO_K] = 0x1.02p-45, A[i * SO_K + 1] = 0x1.04p-45;
    for (long j = 0; j < SO_N; j++)
        B[j * SO_K] = 0x1.02p-45, B[j * SO_K + 1] = -0x1p-45;
    compared = bad = 0;
    tc_block_sums(A, B, 0.0, "C below 2^(f - 126) by cancellation", &compared, &bad);
    for (int simd = 0; simd <= 2; simd++) { /* by hand: every element 2^-104 */
        static double Ct[SO_M * SO_N];
        memset(Ct, 0, sizeof Ct);
        acc_simd = simd;
        acc_tc_gemm_acc(Ct, SO_N, A, SO_K, B, SO_K, 1, SO_M, SO_N, SO_K, ACC_TC_HOPPER, fmt_table[FMT_BF16].emin,
                        fmt_table[FMT_BF16].emin);
        for (long i = 0; i < SO_M * SO_N; i++)
            bad += Ct[i] != 0x1p-104;
        compared += SO_M * SO_N;
    }
    acc_simd = 2;
    CHECK(bad == 0, "tensor-core kernels, a tiny C then zero products: %ld of %ld elements differ", bad, compared);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The binary32 lanes' operand conversion and C check, AVX2 and AVX-512 against one element at a
 * time: each value, exponent, the exponent range and the fits flag, over every class that must
 * send a GEMM back to the binary64 lanes (13 significant bits, infinity, NaN, binades below -126,
 * binary64 subnormals) and those that fit (zeros of both signs, 12-bit values, format subnormals
 * clamped to emin), in runs of 8 with one odd value each (so each lane meets each class). */
static void tcf_convert_vs_scalar(fmt_rng_t *rng)
{
    for (int wide = 0; wide < 2; wide++) {
        if (wide ? !cpu_has_avx512() : !cpu_has_avx2_fma())
            continue;
        long (*convert)(float *, float *, const double *, long, int, acc_tcf_range_t *) =
            wide ? acc_tcf16_convert : acc_tcf8_convert;
        int (*check_c)(const double *, long, long, long, double *) = wide ? acc_tcf16_check_c : acc_tcf8_check_c;
        const char *name = wide ? "AVX-512" : "AVX2";
        const double odd[] = {1 + 0x1p-12, INFINITY, -INFINITY, NAN, 0x1p-127, -0x1.8p-130, 0x1p-1070, 0x1p127, -0.0};
        enum { N = 64 };
        double x[N];
        long cases = 0, bad = 0;
        for (int emin = -133; emin <= -6; emin += 127) /* binade clamps of e4m3-like and bf16-like formats */
            for (size_t o = 0; o <= sizeof odd / sizeof odd[0]; o++)
                for (int lane = 0; lane < 8; lane++) {
                    for (int i = 0; i < N; i++) {
                        double u = ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5;
                        x[i] = fmt_round(ldexp(u, (int)(fmt_rng_next(rng) % 40) - 20), FMT_BF16, FMT_RNE, 0, NULL);
                        if (fmt_rng_next(rng) % 5 == 0)
                            x[i] = ldexp(1.0, emin - 3); /* below emin: its exponent clamps */
                    }
                    if (o < sizeof odd / sizeof odd[0])
                        x[8 * (lane % 4) + lane] = odd[o];
                    float v1[N], e1[N], v2[N], e2[N];
                    acc_tcf_range_t g1 = {-INFINITY, INFINITY, 1}, g2 = g1;
                    acc_tcf_convert1(v1, e1, x, N - 3, emin, &g1); /* a tail of 5 after 7 vectors */
                    long m = convert(v2, e2, x, N - 3, emin, &g2);
                    acc_tcf_convert1(v2 + m, e2 + m, x + m, N - 3 - m, emin, &g2);
                    cases++;
                    int same = memcmp(e1, e2, sizeof(float) * (N - 3)) == 0 && g1.ok == g2.ok && g1.emx == g2.emx &&
                               g1.emn == g2.emn;
                    for (int i = 0; i < N - 3; i++)
                        same &= memcmp(&v1[i], &v2[i], sizeof(float)) == 0 || (isnan(v1[i]) && isnan(v2[i]));
                    if (!same && bad++ < 3)
                        CHECK(0, "binary32-lane conversion (%s), odd value %zu in lane %d, emin %d: ok %d/%d", name, o,
                              lane, emin, g2.ok, g1.ok);
                }
        /* C's check, the same way: one odd C value per run, at each position of a 5 x 13 C (ldc 16) */
        const double oddc[] = {0x1p-127, 0x1p-126, -0x1p-126, 0x1p127, 0x1.fffffep126, 1 + 0x1p-30, NAN, INFINITY, -0.0,
                               0x1p-1074, 3.0};
        double Cm[5 * 16];
        for (size_t o = 0; o < sizeof oddc / sizeof oddc[0]; o++)
            for (int at = 0; at < 5 * 13; at++) {
                for (int i = 0; i < 5 * 16; i++)
                    Cm[i] = i % 16 >= 13 ? NAN /* beyond N: never read */
                                         : fmt_round(ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5, FMT_FP32, FMT_RNE,
                                                     0, NULL);
                Cm[at / 13 * 16 + at % 13] = oddc[o];
                double m1 = 0, m2 = 0;
                int ok1 = acc_tcf_check_c1(Cm, 16, 5, 13, &m1), ok2 = check_c(Cm, 16, 5, 13, &m2);
                cases++;
                if ((ok1 != ok2 || (ok1 && m1 != m2)) && bad++ < 3)
                    CHECK(0, "C check (%s), odd value %a at %d: vector %d (max %a), scalar %d (max %a)", name, oddc[o],
                          at, ok2, m2, ok1, m1);
            }
        /* op(B)'s exponents in quads, sixteen at a time, against their definition written out (acc_tc_int.h): each
         * byte the exponent less the bias (two's complement), ACC_TCF8_QNONE's for a zero (-infinity), the same
         * byte in all four of a word; biases 0 and 5, exponents -63 .. 0 above them, a tail of 13 */
        for (int bias = 0; wide && bias <= 5; bias += 5) {
            enum { NQ = 16 * 9 + 13 };
            float eq[NQ];
            int32_t q[NQ];
            for (int i = 0; i < NQ; i++)
                eq[i] = fmt_rng_next(rng) % 7 == 0 ? -INFINITY : (float)(bias - (int)(fmt_rng_next(rng) % 64));
            acc_tcf16_bquads(q, eq, NQ, bias);
            int same = 1;
            for (int i = 0; i < NQ; i++) {
                uint32_t byte = eq[i] == -INFINITY ? 0x80u : (uint32_t)((int)eq[i] - bias) & 0xffu;
                same &= (uint32_t)q[i] == byte * 0x01010101u;
            }
            cases++;
            if (!same && bad++ < 3)
                CHECK(0, "op(B)'s quads (%s), bias %d: not the exponents' bytes", name, bias);
        }
        CHECK(bad == 0, "binary32-lane conversion and C check: %ld of %ld runs differ between %s and scalar", bad, cases,
              name);
        printf("t-acc: the binary32 lanes' %s operand conversion and C check equal the scalar ones on %ld runs\n", name,
               cases);
    }
}
#else
static void tcf_convert_vs_scalar(fmt_rng_t *rng)
{
    (void)rng;
}
#endif

/* The FP16 accumulator's rounding, vector against scalar (fmt_round to binary16, RNE, overflow
 * to infinity), on the values that make a binary16 rounding hard: every binary16 midpoint and
 * its binary64 neighbours, the overflow threshold 65520 and its neighbours, the subnormal range,
 * zeros of both signs, infinities, NaN and a random spread over 2^-40..2^20. C = 1 x B (K = 1)
 * is the sum rounded once; B's column count (13) leaves a partial tile. */
static void fp16_round_vs_scalar(fmt_rng_t *rng)
{
    enum { NV = 13 * 4096 };
    double *x = malloc(sizeof(double) * NV), *C1 = malloc(sizeof(double) * NV), *C2 = malloc(sizeof(double) * NV);
    double one = 1.0;
    long n = 0;
    for (uint32_t h = 0; h < 0x7c00 && n + 6 <= NV; h += 7) { /* midpoints between h and h + 1 */
        double lo = fmt_decode(h, FMT_FP16), hi = fmt_decode(h + 1, FMT_FP16), mid = 0.5 * (lo + hi);
        double v[3] = {mid, nextafter(mid, 0), nextafter(mid, INFINITY)};
        for (int i = 0; i < 3; i++) {
            x[n++] = v[i];
            x[n++] = -v[i];
        }
    }
    double fixed[] = {65504, 65520, nextafter(65520, 0), nextafter(65520, INFINITY), 0x1p-24, 0x1p-25,
                      nextafter(0x1p-25, 1), 0x1p-26, 0x1p-14, 0x1.ffcp-15, 0.0, -0.0, INFINITY, -INFINITY, NAN,
                      0x1p-1074, 1e300};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && n < NV; i++)
        x[n++] = fixed[i];
    while (n < NV) {
        double u = ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5;
        x[n++] = ldexp(u, (int)(fmt_rng_next(rng) % 61) - 40);
    }
    long bad = 0;
    for (int simd = 0; simd <= 2; simd++) { /* scalar, AVX2, AVX-512 where present: each against scalar */
        acc_simd = simd;
        acc_gemm(simd ? C2 : C1, 13, &one, 1, x, 13, 0, 1, 13, 1, ACC_FP16);
        for (long r = 1; r < NV / 13; r++) /* the remaining rows of B, 13 columns each */
            acc_gemm((simd ? C2 : C1) + r * 13, 13, &one, 1, x + r * 13, 13, 0, 1, 13, 1, ACC_FP16);
        if (simd == 0)
            continue;
        for (long i = 0; i < NV; i++) {
            int same = memcmp(&C1[i], &C2[i], sizeof(double)) == 0 || (isnan(C1[i]) && isnan(C2[i]));
            if (!same && bad++ < 5)
                CHECK(0, "fp16 rounding of %a: simd %a, scalar %a", x[i], C2[i], C1[i]);
            if (i < 6 * 1000 && !isnan(x[i])) /* and the scalar against fmt_round itself */
                CHECK(memcmp(&C1[i], &(double){fmt_round(x[i], FMT_FP16, FMT_RNE, 0, NULL)}, sizeof(double)) == 0,
                      "fp16-acc scalar of %a", x[i]);
        }
    }
    acc_simd = 2;
    CHECK(bad == 0, "fp16 rounding: %ld of %d values differ between the vector and scalar paths", bad, NV);
    printf("t-acc: the FP16 accumulator's vector rounding equals the scalar one on %d values\n", NV);
    free(x);
    free(C1);
    free(C2);
}

/* The FP16 accumulator's kernels for binary32 operands (exact products, fma chains, a rounding
 * with a deferred overflow test, and without that test where a bound rules overflow out),
 * against the scalar path:
 * - every value of fp16_round_vs_scalar's list as the sum hi + lo of two binary32 values
 *   (C = [1 1] [hi lo]^T, B in both layouts, a partial panel), so each rounding case reaches
 *   the binary32 kernels: midpoints and their binary64 neighbours, 65520, subnormals, -0, inf;
 * - products of bf16 values whose sums grow past 2^15 (some overflowing to infinity), so that
 *   the tile with the deferred test is recomputed, beside tiles that are not. */
static void fp16_f32_operands(fmt_rng_t *rng)
{
    enum { NV = 13 * 1024 + 5 };
    double *x = malloc(sizeof(double) * NV), *B = malloc(sizeof(double) * 2 * NV), *Bt = malloc(sizeof(double) * 2 * NV);
    double *C1 = malloc(sizeof(double) * NV), *C2 = malloc(sizeof(double) * NV), one[2] = {1.0, 1.0};
    long n = 0;
    for (uint32_t h = 0; h < 0x7c00 && n + 6 <= NV - 40; h += 2) {
        double lo = fmt_decode(h, FMT_FP16), hi = fmt_decode(h + 1, FMT_FP16), mid = 0.5 * (lo + hi);
        double v[3] = {mid, nextafter(mid, 0), nextafter(mid, INFINITY)};
        for (int i = 0; i < 3; i++) {
            x[n++] = v[i];
            x[n++] = -v[i];
        }
    }
    double fixed[] = {65504, 65520, nextafter(65520, 0), nextafter(65520, INFINITY), 0x1p-24, 0x1p-25,
                      nextafter(0x1p-25, 1), -0x1p-26, 0x1p-14, 0x1.ffcp-15, 0.0, -0.0, INFINITY, -INFINITY, -0x1p-30};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        x[n++] = fixed[i];
    while (n < NV) {
        double u = ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5;
        x[n++] = ldexp(u, (int)(fmt_rng_next(rng) % 50) - 30);
    }
    for (long i = 0; i < NV; i++) { /* x as hi + lo, both binary32 (x itself where lo would not be) */
        double hi = (float)x[i], lo = isfinite(x[i]) ? (float)(x[i] - hi) : 0.0;
        x[i] = hi + lo;
        B[i] = Bt[2 * i] = hi;
        B[NV + i] = Bt[2 * i + 1] = lo;
    }
    long bad = 0;
    for (int trans = 0; trans < 2; trans++)
        for (int simd = 0; simd <= 2; simd += 2) {
            acc_simd = simd;
            acc_gemm(simd ? C2 : C1, NV, one, 2, trans ? Bt : B, trans ? 2 : NV, trans, 1, NV, 2, ACC_FP16);
            acc_simd = 2;
            for (long i = 0; simd && i < NV; i++) {
                double want = fmt_round(x[i], FMT_FP16, FMT_RNE, 0, NULL);
                int ok = memcmp(&C2[i], &want, sizeof(double)) == 0 && memcmp(&C1[i], &want, sizeof(double)) == 0;
                if (!ok && bad++ < 5)
                    CHECK(0, "fp16-acc of %a (trans %d): simd %a, scalar %a, want %a", x[i], trans, C2[i], C1[i], want);
            }
        }
    CHECK(bad == 0, "fp16-acc, binary32 operands: %ld of %d sums rounded differently", bad, 2 * NV);
    /* growing sums: bf16 A (9 rows: a tile of eight and one more) against bf16 B scaled so
     * that some columns' sums pass 2^15 and overflow, K = 301 (a partial group of four) */
    long M = 9, N = 40, K = 301;
    double *A = malloc(sizeof(double) * (size_t)(M * K)), *G = malloc(sizeof(double) * (size_t)(N * K));
    double *D1 = malloc(sizeof(double) * (size_t)(M * N)), *D2 = malloc(sizeof(double) * (size_t)(M * N));
    for (long i = 0; i < M * K; i++)
        A[i] = fmt_round(ldexp((double)(fmt_rng_next(rng) >> 11), -53) * 4 - 1, FMT_BF16, FMT_RNE, 0, NULL);
    for (long j = 0; j < N; j++)
        for (long k = 0; k < K; k++) /* column j: magnitude 2^(j / 3), all of one sign for j >= 20 */
            G[j * K + k] = fmt_round(ldexp(ldexp((double)(fmt_rng_next(rng) >> 11), -53) - (j < 20 ? 0.5 : 0), j / 3),
                                     FMT_BF16, FMT_RNE, 0, NULL);
    long over = 0;
    for (int simd = 0; simd <= 2; simd += 2) {
        acc_simd = simd;
        acc_gemm(simd ? D2 : D1, N, A, K, G, K, 1, M, N, K, ACC_FP16);
    }
    acc_simd = 2;
    for (long i = 0; i < M * N; i++) {
        over += isinf(D1[i]);
        CHECK(memcmp(&D1[i], &D2[i], sizeof(double)) == 0, "fp16-acc growing sums [%ld]: simd %a, scalar %a", i, D2[i],
              D1[i]);
    }
    CHECK(over > 0 && over < M * N, "fp16-acc growing sums: %ld of %ld overflow (want some, not all)", over, M * N);
    printf("t-acc: the FP16 accumulator's binary32-operand kernels equal the scalar path (%d sums, %ld overflowing)\n",
           2 * NV, over);
    free(x), free(B), free(Bt), free(C1), free(C2), free(A), free(G), free(D1), free(D2);
}

/* The FP32 models' sequential chain, written out: C[i][j] = A[i][k] B[j][k] accumulated in k order
 * in binary32 (fused: fmaf; else the product rounded, then the sum). */
static void f32_loop(double *C, const double *A, long lda, const double *B, long ldb, long M, long N, long K,
                     int fused)
{
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            float f = 0;
            for (long k = 0; k < K; k++) {
                float a = (float)A[i * lda + k], b = (float)B[j * ldb + k];
                f = fused ? fmaf(a, b, f) : f + a * b;
            }
            C[i * N + j] = f;
        }
}

/* The FP32 GEMM where C's rows and columns take more than one pass (a row-major op(B) packed
 * for a pass of panels from whole rows; the last pass and its last panel partial), K in more
 * than one chunk, and with an A held (acc_hold_f32): the whole of it and a block inside it at
 * an offset, and a held array that does not contain A (not taken). Against f32_loop. */
static void f32_passes_and_held(fmt_rng_t *rng)
{
    const int quick = check_quick();
    long M = quick ? 400 : 700, N = 300, K = quick ? 8 : 200; /* quick: still two passes, one chunk */
    double *A = malloc(sizeof(double) * (size_t)(M * K)), *B = malloc(sizeof(double) * (size_t)(N * K));
    double *Bt = malloc(sizeof(double) * (size_t)(K * N)), *other = calloc((size_t)(M * K), sizeof(double));
    double *C = malloc(sizeof(double) * (size_t)(M * N)), *W = malloc(sizeof(double) * (size_t)(M * N));
    for (long i = 0; i < M * K; i++)
        A[i] = fmt_round(ldexp((double)(fmt_rng_next(rng) >> 11), -53) - 0.5, FMT_BF16, FMT_RNE, 0, NULL);
    for (long i = 0; i < N * K; i++)
        B[i] = fmt_round(ldexp((double)(fmt_rng_next(rng) >> 11), -52) - 1.0, FMT_BF16, FMT_RNE, 0, NULL);
    for (long j = 0; j < N; j++)
        for (long k = 0; k < K; k++)
            Bt[k * N + j] = B[j * K + k];
    long bad = 0, compared = 0;
    for (int fused = 0; fused < 2; fused++) {
        acc_model_t model = fused ? ACC_FP32_FMA : ACC_FP32_MULADD;
        /* plain, A held whole, held inside, held elsewhere; B held (its panels, where transposed), from
         * column 5 and whole */
        for (int part = 0; part < 6; part++) {
            long r0 = part == 2 ? 3 : 0, k0 = part == 2 || part == 4 ? 5 : 0, m = M - r0, kk = K - k0;
            f32_loop(W, A + r0 * K + k0, K, B + k0, K, m, N, kk, fused);
            if (part == 1 || part == 2)
                acc_hold_f32(A, K, M, K);
            if (part == 3)
                acc_hold_f32(other, K, M, K);
            if (part >= 4)
                acc_hold_f32(B, K, N, K);
            for (int simd = 2; simd >= (quick ? 2 : 0); simd -= 2) /* the widest kernels, then the scalar ones */
                for (int trans = 0; trans < 2; trans++) {
                    acc_simd = simd;
                    acc_gemm(C, N, A + r0 * K + k0, K, trans ? B + k0 : Bt + k0 * N, trans ? K : N, trans, m, N, kk,
                             model);
                    acc_simd = 2;
                    for (long i = 0; i < m * N; i++, compared++)
                        if (C[i] != W[i] && bad++ < 5)
                            CHECK(0, "%s part %d simd %d trans %d (%ld,%ld): %a vs %a", acc_table[model].name, part,
                                  simd, trans, i / N, i % N, C[i], W[i]);
                }
            acc_release_f32();
        }
    }
    CHECK(bad == 0 && compared > 0, "fp32 GEMM over passes and held operands: %ld of %ld differ", bad, compared);
    /* the product added into an output as an online softmax rescales it (acc_gemm32_rescale): O's rows
     * (binary32 values) times their scale, plus the product or the product times ts, each step rounded to
     * binary32, written out here from the loop's product; both layouts of B, every kernel width, ts 0 and not */
    double *O0 = malloc(sizeof(double) * (size_t)(M * N)), *rsc = malloc(sizeof(double) * (size_t)M);
    for (long i = 0; i < M * N; i++)
        O0[i] = (float)(ldexp((double)(fmt_rng_next(rng) >> 11), -53) * 8 - 4);
    for (long i = 0; i < M; i++)
        rsc[i] = (float)ldexp(ldexp((double)(fmt_rng_next(rng) >> 11), -53) + 0.5, -(int)(i % 5));
    long rbad = 0;
    for (int fused = 0; fused < 2; fused++) {
        f32_loop(W, A, K, B, K, M, N, K, fused);
        for (int scaled = 0; scaled < 2; scaled++) {
            double ts = scaled ? 0.3 : 0;
            for (int simd = 2; simd >= (quick ? 2 : 0); simd -= 2)
                for (int trans = 0; trans < 2; trans++) {
                    memcpy(C, O0, sizeof(double) * (size_t)(M * N));
                    acc_simd = simd;
                    acc_gemm32_rescale(C, N, A, K, trans ? B : Bt, trans ? K : N, trans, M, N, K, fused, rsc, ts);
                    acc_simd = 2;
                    for (long i = 0; i < M * N; i++) {
                        double t = scaled ? (double)(float)(W[i] * ts) : W[i];
                        double want = (double)(float)((double)(float)(O0[i] * rsc[i / N]) + t);
                        if (C[i] != want && rbad++ < 5)
                            CHECK(0, "rescaled fp32 GEMM fused %d ts %g simd %d trans %d (%ld,%ld): %a vs %a", fused, ts,
                                  simd, trans, i / N, i % N, C[i], want);
                    }
                }
        }
    }
    CHECK(rbad == 0, "fp32 GEMM added into a rescaled output: %ld differ", rbad);
    free(O0);
    free(rsc);
    free(A);
    free(B);
    free(Bt);
    free(other);
    free(C);
    free(W);
}

int main(void)
{
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 2024); /* seed 2024 (include this in bug reports) */
    /* each model against the loop it names, on bf16-valued operands, odd sizes, both layouts */
    long M = 7, N = 19, K = 437; /* K above the GEMM's L1 chunk: chains resume across chunks */
    double *A = malloc(sizeof(double) * (size_t)(M * K)), *B = malloc(sizeof(double) * (size_t)(N * K));
    double *C = malloc(sizeof(double) * (size_t)(M * N)), *Bt = malloc(sizeof(double) * (size_t)(K * N));
    for (long i = 0; i < M * K; i++)
        A[i] = fmt_round(ldexp((double)(fmt_rng_next(&rng) >> 11), -53) - 0.5, FMT_BF16, FMT_RNE, 0, NULL);
    for (long i = 0; i < N * K; i++)
        B[i] = fmt_round(ldexp((double)(fmt_rng_next(&rng) >> 11), -52) - 1.0, FMT_BF16, FMT_RNE, 0, NULL);
    for (long j = 0; j < N; j++)
        for (long k = 0; k < K; k++)
            Bt[k * N + j] = B[j * K + k];
    /* the tensor-core block step by hand (exponents given as the hardware takes them):
     * 1 + 2^-30 with 25 fraction bits: 2^-30 falls below the grid 2^-25 and is dropped;
     * 1 - 2^-30: the negative term truncates toward zero too, so no borrow (no sticky bit);
     * 1 + 2^-23 + 2^-26: 2^-26 is dropped, 2^-23 kept; with 13 fraction bits (FP8) 1 + 2^-14
     * is 1, and 1.5 + 1.5 = 3 keeps 14 significant bits */
    {
        double t1[2] = {1.0, 0x1p-30}, t2[2] = {1.0, -0x1p-30}, t3[3] = {1.0, 0x1p-23, 0x1p-26}, t4[2] = {1.0, 0x1p-14},
               t5[2] = {1.5, 1.5};
        int e1[2] = {0, -30}, e3[3] = {0, -23, -26}, e4[2] = {0, -14}, e5[2] = {0, 0};
        CHECK(acc_tc_block(t1, e1, 2, 25) == 1.0, "1 + 2^-30 -> %a", acc_tc_block(t1, e1, 2, 25));
        CHECK(acc_tc_block(t2, e1, 2, 25) == 1.0, "1 - 2^-30 -> %a", acc_tc_block(t2, e1, 2, 25));
        CHECK(acc_tc_block(t3, e3, 3, 25) == 1.0 + 0x1p-23, "1 + 2^-23 + 2^-26 -> %a", acc_tc_block(t3, e3, 3, 25));
        CHECK(acc_tc_block(t4, e4, 2, 13) == 1.0, "fp8: 1 + 2^-14 -> %a", acc_tc_block(t4, e4, 2, 13));
        CHECK(acc_tc_block(t5, e5, 2, 13) == 3.0, "fp8: 1.5 + 1.5 -> %a", acc_tc_block(t5, e5, 2, 13));
        /* a product 1.5 x 1.5 = 2.25 keeps its operands' exponent sum (0): on the grid of 25
         * fraction bits from 2^0, a companion 2^-25 survives, though 2.25's own binade is 1 */
        double t6[2] = {2.25, 0x1p-25};
        int e6[2] = {0, -25};
        CHECK(acc_tc_block(t6, e6, 2, 25) == fmt_round(2.25 + 0x1p-25, FMT_FP32, FMT_RZ, 0, NULL), "2.25 + 2^-25");
    }
    /* the element-wise models against the loops they name (the tensor-core models are checked
     * against H100 captures in t-gpu) */
    for (int simd = 2; simd >= 0; simd--) { /* AVX-512 where present, AVX2, then the scalar kernels */
        for (int model = 0; model <= ACC_FP16; model++)
            for (int trans = 0; trans < 2; trans++) {
                acc_simd = simd;
                acc_gemm(C, N, A, K, trans ? B : Bt, trans ? K : N, trans, M, N, K, (acc_model_t)model);
                acc_simd = 2;
                for (long i = 0; i < M; i++)
                    for (long j = 0; j < N; j++) {
                        double want = 0;
                        float f = 0;
                        for (long k = 0; k < K; k++) {
                            double a = A[i * K + k], b = B[j * K + k];
                            if (model == ACC_FP64)
                                want = fma(a, b, want);
                            else if (model == ACC_FP32_FMA)
                                f = fmaf((float)a, (float)b, f);
                            else if (model == ACC_FP32_MULADD)
                                f = f + (float)a * (float)b;
                        }
                        if (model == ACC_FP32_FMA || model == ACC_FP32_MULADD)
                            want = f;
                        if (model == ACC_FP16)
                            for (long k0 = 0; k0 < K; k0 += ACC_FP16_K) {
                                double s = want;
                                for (long k = k0; k < k0 + ACC_FP16_K && k < K; k++)
                                    s += A[i * K + k] * B[j * K + k];
                                want = fmt_round(s, FMT_FP16, FMT_RNE, 0, NULL);
                            }
                        CHECK(C[i * N + j] == want, "%s trans %d (%ld,%ld): %a vs %a", acc_table[model].name, trans, i, j,
                              C[i * N + j], want);
                    }
            }
    }
    free(A);
    free(B);
    free(C);
    free(Bt);
    f32_passes_and_held(&rng);
    tc_simd_vs_scalar(&rng);
    tc_heldb_same(&rng);
    tc_scaled_same(&rng);
    tc_split_overflow();
    tcf_convert_vs_scalar(&rng);
    fp16_round_vs_scalar(&rng);
    fp16_f32_operands(&rng);
    return check_done("t-acc");
}
