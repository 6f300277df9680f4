/* acc_split -- cuBLAS's split-K GEMMs: K cut into parts, each part's product under an accumulation model
 * from zero, the partials added in binary32 */
#ifndef AMLA_ACC_SPLIT_H
#define AMLA_ACC_SPLIT_H

#include "num/acc/acc.h"

/* cuBLAS's split-K kernels cut K in tiles of this many bytes of A (the nvjet_sm90 kernels' K tile: 64 bf16/fp16
 * values, 128 e4m3/e5m2) */
#define ACC_SPLIT_TILE_BYTES 128

/* C = A op(B) as cuBLAS's split-K GEMMs compute it (nvjet_sm90_*_splitK with cublasLt's splitKreduce_kernel):
 * K in tiles of ACC_SPLIT_TILE_BYTES of A, ceil(tiles / splits) tiles to each split but the last, each split's partial
 * product under `model` from zero, and the partials added in binary32 in split order (from 0). splits <= 1:
 * acc_gemm_f. */
void acc_gemm_split(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                    long N, long K, acc_model_t model, fmt_id_t fa, fmt_id_t fb, long splits);

/* The K tile cuBLAS's xmma SIMT SGEMMs (sm80_xmma_gemm_f32f32_*_ffma) deal to their splits. */
#define ACC_SPLIT_XMMA_TILE 8

/* C = A op(B) as the split-K of cuBLAS's xmma SIMT SGEMMs computes it (sm80_xmma_gemm_f32f32_*_execute_kernel with
 * execute_split_k_kernel, read off H200 captures: scripts/device/capture_sdpa_probe.py): K in tiles of
 * ACC_SPLIT_XMMA_TILE dealt round-robin, split s taking tiles s, s + splits, ...; each split's partial under `model`
 * from zero, the partials added in binary32 in split order. splits <= 1: acc_gemm_f. */
void acc_gemm_split_interleaved(double *C, long ldc, const double *A, long lda, const double *B, long ldb,
                                int b_trans, long M, long N, long K, acc_model_t model, fmt_id_t fa, fmt_id_t fb,
                                long splits);

#endif
