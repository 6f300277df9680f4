/* registry -- every attention variant: name, summary, entry point, sites, fixed tile. Adding a
 * variant adds its file (src/attn/variants/) and one line here. */
#include "attn/attn.h"
#include "attn/variants/variants.h"

/* X(name, summary, entry point, site table, the kernel's KV tile by head dim or NULL for --block, the real kernel
 * the variant reproduces bit for bit or NULL for a paper's emulation) */
#define ATTN_VARIANTS(X) \
    X("standard", "non-flash attention as a framework runs it: S = QK^T, softmax, P.V, each result in the input format", attn_standard, attn_standard_sites, NULL, NULL) \
    X("base", "FlashAttention-2 / AMLA Algorithm 1: KV tiles, online softmax in FP32, P cast to the input format", attn_base, attn_base_sites, NULL, NULL) \
    X("amla", "AMLA Algorithm 2: power-of-two rescale as INT32 add on FP32 bits, with error compensation", attn_amla, attn_amla_sites, NULL, NULL) \
    X("amla-nocomp", "AMLA ablation: no compensation (eps = 0)", attn_amla_nocomp, attn_amla_sites, NULL, NULL) \
    X("amla-premul", "AMLA ablation: P pre-multiplied by (1/r)_bf16, no c correction (Appendix A item 2)", attn_amla_premul, attn_amla_sites, NULL, NULL) \
    X("amla-naive", "AMLA Eq. (3): O += exp(m_i) P_i V_i without safe softmax (overflows for m > 88)", attn_amla_naive, attn_amla_naive_sites, NULL, NULL) \
    X("snapmla", "SnapMLA: FP8 e4m3 per-token RoPE-aware KV/Q, P per 1x64 block with V-scale fusion (64-token pages)", attn_snapmla, attn_snapmla_sites, attn_kernel_tile, NULL) \
    X("snapmla-a", "SnapMLA Table 2 config A: per-token RoPE-unaware (RoPE quantized with the content)", attn_snapmla_a, attn_snapmla_sites, attn_kernel_tile, NULL) \
    X("snapmla-b", "SnapMLA Table 2 config B: per-tensor static scale 1.0, RoPE-aware", attn_snapmla_b, attn_snapmla_sites, attn_kernel_tile, NULL) \
    X("snapmla-c", "SnapMLA Table 2 config C: per-tensor dynamic scale, RoPE-aware", attn_snapmla_c, attn_snapmla_sites, attn_kernel_tile, NULL) \
    X("snapmla-d", "SnapMLA Table 2 config D: per-block (64 tokens x content) scale, RoPE-aware", attn_snapmla_d, attn_snapmla_sites, attn_kernel_tile, NULL) \
    X("snapmla-inverted", "SnapMLA Appendix C: pages of each pair in inverted order, bidirectional rescaling", attn_snapmla_inverted, attn_snapmla_sites, attn_kernel_tile, NULL) \
    X("flashmla-fp8", "FlashMLA FP8 cache: e4m3 content, pow2 scale per 1x128 tile, RoPE bf16; Base on 64-token tiles", attn_flashmla_fp8, attn_flashmla_fp8_sites, attn_kernel_tile, NULL) \
    X("flashmla", "FlashMLA dense decode as an H100 runs it: WGMMA, SFU ex2/rcp/lg2, FTZ, split-KV and combine (sm-parts)", attn_flashmla, attn_flashmla_sites, attn_kernel_tile, "FlashMLA's dense decode kernel") \
    X("flashmla-sparse", "FlashMLA's FP8 sparse decode kernel (V3.2 and MODEL1 caches) as an H100 runs it: bf16 dequant, WGMMA, SFU, FTZ, split-KV and combine", attn_flashmla_sparse, attn_flashmla_sparse_sites, attn_kernel_tile, "FlashMLA's FP8 sparse decode kernel") \
    X("flashmla-sparse-prefill", "FlashMLA's sparse prefill kernel (flash_mla_sparse_fwd; V3.2 d_qk 576, V4 512 with topk_length and attn_sink) as an H100 runs it: invalid slots masked in place, the two warpgroups' block pairs, WGMMA, its build's exp2f / logf / division", attn_flashmla_prefill, attn_flashmla_prefill_sites, attn_kernel_tile, "FlashMLA's sparse prefill kernel") \
    X("seesaw", "FlashMLA's seesaw schedule: 64-token blocks in pairs, O split into O_L/O_R, scales in the blog's order", attn_seesaw, attn_seesaw_sites, attn_kernel_tile, NULL) \
    X("etap", "FlashMLA-ETAP: S^T = K Q^T, softmax along the KV axis (tree sums per 64-token tile), O^T = V^T P^T", attn_etap, attn_etap_sites, attn_kernel_tile, NULL) \
    X("flashmla-etap", "FlashMLA-ETAP's kernel as an H100 runs it: S^T = K Q^T and O^T = V^T P^T by WGMMA, blocks last to first, SFU, FTZ, split-KV and combine", attn_flashmla_etap, attn_flashmla_etap_sites, attn_kernel_tile, "FlashMLA-ETAP's kernel") \
    X("fastattn", "FastAttention: two-level tiling (--row-block, --sub-block rows; --block KV), tiling-mask causal", attn_fastattn, attn_fastattn_sites, NULL, NULL) \
    X("fastattn-fp16acc", "FastAttention's Volta m8n8k4 path: FP16 accumulators in both products", attn_fastattn, attn_fastattn_fp16acc_sites, NULL, NULL) \
    X("fa2", "FlashAttention-2 forward as PyTorch's SDPA flash backend runs it on an H100: mma.sync, SFU ex2/rcp, FTZ, blocks in reverse", attn_fa2, attn_fa2_sites, attn_fa2_tile, "PyTorch SDPA's flash backend") \
    X("sdpa-math", "PyTorch SDPA's math backend on CUDA: fp32 upcast, sqrt(scale) on Q and K, cuBLAS FFMA SGEMMs, PyTorch's softmax kernel (expf, warp/block sums, IEEE division)", attn_sdpa_math, attn_sdpa_math_sites, NULL, "PyTorch SDPA's math backend") \
    X("sdpa-efficient", "PyTorch SDPA's memory-efficient backend (xFormers' CUTLASS kernel, fmha_cutlassF) on an H100: mma.sync, scale then log2 e, exp2f, per-warp sums, O in registers or an fp32 buffer", attn_sdpa_efficient, attn_sdpa_efficient_sites, attn_sdpa_efficient_tile, "PyTorch SDPA's memory-efficient backend") \
    X("sdpa-cudnn", "PyTorch SDPA's cuDNN backend (sm90 flash fprop WGMMA) as captures show it: 128-key blocks, tc-hopper, exp2f, per-thread sums, IEEE 1/L", attn_sdpa_cudnn, attn_sdpa_cudnn_sites, attn_sdpa_cudnn_tile, "PyTorch SDPA's cuDNN backend") \
    X("fa3", "FlashAttention-3 (0251105a) BF16/FP16 forward as it runs on an H100: WGMMA, SFU ex2/rcp/lg2, FTZ, its tiles, split heuristic and combine (q_v path on MLA)", attn_fa3, attn_fa3_sites, attn_fa3_tile, "FlashAttention-3") \
    X("flashmla-dense-fp8", "vLLM's FlashMLA fork's dense FP8 decode (46d64a8): e4m3 q and cache with per-tensor descales, FP8 WGMMA, P in e4m3, FlashMLA's scheduler and natural-log combine", attn_flashmla_dense_fp8, attn_fa3_sites, attn_kernel_tile, "vLLM's FlashMLA dense FP8 decode kernel") \
    X("triton-mla", "vLLM's (TRITON_MLA) or SGLang's Triton MLA decode (--triton-decode): mma.sync, tl.exp as ex2.approx, two stages over sm-parts splits (4), div.full, libdevice logf, output and lse in q's type", attn_triton_mla, attn_triton_mla_sites, NULL, "vLLM's Triton MLA decode kernel") \
    X("fa3-fp8", "FlashAttention-3 FP8: e4m3 Q/K/V, block scales and random-sign Hadamard (--fa3-block, --fa3-hadamard)", attn_fa3fp8, attn_fa3fp8_sites, attn_kernel_tile, NULL)

#define ATTN_DECLARE(name, summary, fn, sites, tile, kernel) ATTN_VARIANT(fn); extern const site_def_t sites[];
#define ATTN_ROW(name, summary, fn, sites, tile, kernel) {name, summary, fn, sites, tile, kernel},

ATTN_VARIANTS(ATTN_DECLARE)

long attn_kernel_tile(long dk)
{
    (void)dk;
    return ATTN_KERNEL_TILE;
}

const attn_variant_t attn_variants[] = {ATTN_VARIANTS(ATTN_ROW)};
const int attn_variant_count = (int)(sizeof attn_variants / sizeof attn_variants[0]);
