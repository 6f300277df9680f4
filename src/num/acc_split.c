/* acc_split -- cuBLAS's split-K GEMMs (docs/REFERENCES.md, "cuBLAS's split-K GEMMs" and "PyTorch SDPA math") */
#include "num/acc_split.h"

#include <stdlib.h>

#include "base/err.h"
#include "num/fmt.h"

void acc_gemm_split(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                    long N, long K, acc_model_t model, fmt_id_t fa, fmt_id_t fb, long splits)
{
    if (splits <= 1 || M <= 0 || N <= 0) {
        acc_gemm_f(C, ldc, A, lda, B, ldb, b_trans, M, N, K, model, fa, fb);
        return;
    }
    /* k-tiles of 128 bytes of A (64 bf16/fp16 values, 128 e4m3/e5m2: the nvjet kernels' 64x16 and 128x16 K
     * tiles), ceil(tiles / splits) per split, the last split taking what is left */
    long tile = ACC_SPLIT_TILE_BYTES / fmt_cast_width(fa);
    long tiles = (K + tile - 1) / tile, per = (tiles + splits - 1) / splits;
    double *p = err_malloc((size_t)(M * N), sizeof(double));
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++)
            C[i * ldc + j] = 0;
    for (long s = 0; s < splits; s++) {
        long k0 = s * per * tile, k1 = (s + 1) * per * tile;
        k1 = k1 < K ? k1 : K;
        if (k0 >= k1)
            break;
        /* this split's partial from zero: A's columns k0..k1-1 against op(B)'s rows k0..k1-1 */
        acc_gemm_f(p, N, A + k0, lda, b_trans ? B + k0 : B + k0 * ldb, ldb, b_trans, M, N, k1 - k0, model, fa, fb);
        for (long i = 0; i < M; i++) /* the reduction kernel: binary32 adds in split order */
            for (long j = 0; j < N; j++)
                C[i * ldc + j] = fmt_fp32(C[i * ldc + j] + p[i * N + j]);
    }
    free(p);
}

void acc_gemm_split_interleaved(double *C, long ldc, const double *A, long lda, const double *B, long ldb,
                                int b_trans, long M, long N, long K, acc_model_t model, fmt_id_t fa, fmt_id_t fb,
                                long splits)
{
    if (splits <= 1 || M <= 0 || N <= 0) {
        acc_gemm_f(C, ldc, A, lda, B, ldb, b_trans, M, N, K, model, fa, fb);
        return;
    }
    /* each split's k's gathered in order: A's columns as a [M][ks] block, op(B)'s rows as [ks][N] */
    long t = ACC_SPLIT_XMMA_TILE, kmax = ((K + t - 1) / t + splits - 1) / splits * t;
    double *a = err_malloc((size_t)(M * kmax + 1), sizeof(double)), *b = err_malloc((size_t)(kmax * N + 1), sizeof(double));
    double *p = err_malloc((size_t)(M * N), sizeof(double));
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++)
            C[i * ldc + j] = 0;
    for (long s = 0; s < splits; s++) {
        long ks = 0;
        for (long k0 = s * t; k0 < K; k0 += splits * t)
            for (long k = k0; k < k0 + t && k < K; k++, ks++) {
                for (long i = 0; i < M; i++)
                    a[i * kmax + ks] = A[i * lda + k];
                for (long j = 0; j < N; j++)
                    b[ks * N + j] = acc_b_at(B, ldb, b_trans, k, j);
            }
        if (ks == 0)
            break;
        acc_gemm_f(p, N, a, kmax, b, N, 0, M, N, ks, model, fa, fb);
        for (long i = 0; i < M; i++) /* the reduction: binary32 adds in split order */
            for (long j = 0; j < N; j++)
                C[i * ldc + j] = fmt_fp32(C[i * ldc + j] + p[i * N + j]);
    }
    free(a);
    free(b);
    free(p);
}
