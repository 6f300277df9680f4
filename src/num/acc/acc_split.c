/* acc_split -- cuBLAS's split-K GEMMs (docs/REFERENCES.md, "cuBLAS's split-K GEMMs" and "PyTorch SDPA math") */
#include "num/acc/acc_split.h"

#include <stdlib.h>

#include "base/err.h"
#include "num/fmt/fmt.h"

/* C = A op(B) with K's tiles of `tile` dealt to `splits` parts, contiguously (part s: tiles s per ..
 * (s + 1) per - 1, per = ceil(tiles / splits)) or round-robin (part s: tiles s, s + splits, ...); each part's
 * k's gathered in order, its partial under `model` from zero, the partials added in binary32 in part order
 * (the reduction kernel), from zero. */
static void split_gemm(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans,
                       long M, long N, long K, acc_model_t model, fmt_id_t fa, fmt_id_t fb, long splits, long tile,
                       int round_robin)
{
    if (splits <= 1 || M <= 0 || N <= 0) {
        acc_gemm_f(C, ldc, A, lda, B, ldb, b_trans, M, N, K, model, fa, fb);
        return;
    }
    long tiles = (K + tile - 1) / tile, per = (tiles + splits - 1) / splits, kmax = per * tile;
    double *a = err_malloc((size_t)(M * kmax + 1), sizeof(double)), *b = err_malloc((size_t)(kmax * N + 1), sizeof(double));
    double *p = err_malloc((size_t)(M * N), sizeof(double));
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++)
            C[i * ldc + j] = 0;
    for (long s = 0; s < splits; s++) {
        long ks = 0;
        for (long n = 0; n < per; n++) { /* the part's n-th tile */
            long t = round_robin ? s + n * splits : s * per + n;
            for (long k = t * tile; t < tiles && k < (t + 1) * tile && k < K; k++, ks++) {
                for (long i = 0; i < M; i++)
                    a[i * kmax + ks] = A[i * lda + k];
                for (long j = 0; j < N; j++)
                    b[ks * N + j] = acc_b_at(B, ldb, b_trans, k, j);
            }
        }
        if (ks == 0)
            break;
        acc_gemm_f(p, N, a, kmax, b, N, 0, M, N, ks, model, fa, fb);
        for (long i = 0; i < M; i++)
            for (long j = 0; j < N; j++)
                C[i * ldc + j] = fmt_fp32(C[i * ldc + j] + p[i * N + j]);
    }
    free(a);
    free(b);
    free(p);
}

void acc_gemm_split(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                    long N, long K, acc_model_t model, fmt_id_t fa, fmt_id_t fb, long splits)
{
    /* k-tiles of 128 bytes of A (64 bf16/fp16 values, 128 e4m3/e5m2: the nvjet kernels' 64x16 and 128x16 K
     * tiles), ceil(tiles / splits) per split, the last split taking what is left */
    split_gemm(C, ldc, A, lda, B, ldb, b_trans, M, N, K, model, fa, fb, splits, ACC_SPLIT_TILE_BYTES / fmt_cast_width(fa),
               0);
}

void acc_gemm_split_interleaved(double *C, long ldc, const double *A, long lda, const double *B, long ldb,
                                int b_trans, long M, long N, long K, acc_model_t model, fmt_id_t fa, fmt_id_t fb,
                                long splits)
{
    split_gemm(C, ldc, A, lda, B, ldb, b_trans, M, N, K, model, fa, fb, splits, ACC_SPLIT_XMMA_TILE, 1);
}
