/* triton-mla -- the Triton MLA decode vLLM and SGLang serve with (docs/REFERENCES.md), as Triton 3.6 compiles it for
 * Hopper (PTX and SASS: tests/data/triton-mla/code, tests/data/triton-mla-sglang/code); --triton-decode picks whose:
 * vLLM 0155494's vllm/v1/attention/ops/triton_decode_attention.py as its TritonMLAImpl.forward_mqa calls it (vllm),
 * a later file called with is_mla (vllm-mla), CutieillFusion/vllm-kimi-k3 e46a1de's called without it
 * (vllm-e46a1de), or SGLang 03cd2ec4's triton_ops/decode_attention.py (sglang). On a bf16 or fp16 cache the four are
 * one arithmetic, but for SGLang's splits. Stage 1, per split (vLLM: cdiv(len, n) keys, n = sm-parts or 4; SGLang:
 * cdiv(cdiv(len, n), 32) 32 keys, n per request from get_num_kv_splits or sm-parts): blocks of 32 keys from the split's
 * start; S = Q K^T by mma.sync m16n8k16 from zero over the 576 dims (the 512 and the 64 in one chain; padding to 1024
 * adds nothing), fl(S sm_scale); m = max(m, max s); re = exp2f(fl(fl(m_old - m) log2e)) and p = exp2f(fl(fl(s - m)
 * log2e)) (tl.exp: ex2.approx.f32, small arguments halved and squared), O = fl(O re), then O += P V by mma.sync into
 * O (P cast to the input format); the row sum of p: each thread's two columns, the quad's butterfly (xor 2, then 1),
 * the four warps' partials the same way through shared memory; e_sum = fma(e_sum, re, sum). The split's O / e_sum
 * (div.full.f32: times rcp.approx) and e_max + logf(e_sum) (libdevice logf). Stage 2 merges the non-empty splits in
 * order: n = max, old and e as above, e_sum = fma(e_sum, old, e), O = fma(O, old, fl(O_s e)) (vLLM's unrolled first
 * split fma(O_s, e, fl(O old)): the same bits, old = 0 and e = 1 there), O / e_sum (SGLang: times v_scale); lse
 * e_max + logf(e_sum); both stored in q's type. IEEE binary32 (no FTZ).
 * An FP8 cache (e4m3 codes beside k_scale.npy): vLLM's K = fl32(code k_scale) cast to q's type, SGLang's the codes
 * with k_scale in the softmax scale; V: 0155494 fl32(code k_scale) with P left in fp32, P.V by mma.sync m16n8k8 in TF32
 * (the operands' low 13 bits ignored: RZ; tc-hopper-k8); is_mla the K tile; e46a1de the codes (v_scale stays 1: O is
 * 1 / k_scale times the attention); SGLang the codes with P in e4m3 (v_scale on the output). The dots take the order
 * Triton gives an operand converted from 8 bits: for 16-bit dots kWidth 4 (a thread's four consecutive k as two
 * registers feeding two mma.sync: of every 32 k the first sums k = 0, 1, 4, 5, ..., 28, 29, the second 2, 3, 6, 7,
 * ..., 30, 31; S over the head dims, P.V over the keys), for the TF32 P.V four consecutive keys into four mma.sync (of
 * every 32 keys the mma j sums j, j + 4, ..., j + 28). A 16-bit cache keeps kWidth 2: 16 consecutive k an mma. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/gpu_fp.h"
#include "attn/variants/variants.h"

#define TM_BLOCK 32    /* BLOCK_N: keys a block */
#define TM_WARPS 4     /* warps a program; each holds 8 of a block's 32 columns */
#define TM_LOG2E 0x1.715476p0 /* 0f3FB8AA3B */
#define TM_KW4 32      /* the k span two mma.sync share under kWidth 4 */

#define TRITON_MLA_SITES(X)                                                                                       \
    X(QK_ACC, "qk_acc", "S = Q K^T, mma.sync m16n8k16 from zero over the head dim (tc-hopper)", SITE_ACC_HOPPER,   \
      FMT_FP32, FMT_RNE, 0)                                                                                       \
    X(P_EXP, "p_exp", "fl(S sm_scale); p = exp2f(fl(fl(s - m) log2e)) (tl.exp, IEEE binary32)", SITE_FMT_FIXED,      \
      FMT_FP32, FMT_RNE, 0)                                                                                       \
    X(L_SUM, "l_sum", "row sums: thread pairs, the quad's butterfly, the warps' partials; e_sum = fma(e_sum, re, sum)", \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                       \
    X(P_CAST, "p_cast", "P cast to the input format for P.V", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)                   \
    X(PV_ACC, "pv_acc", "O += P V, mma.sync accumulating into O (tc-hopper)", SITE_ACC_HOPPER, FMT_FP32, FMT_RNE, 0) \
    X(O_RESCALE, "o_rescale", "re = exp2f(fl(fl(m_old - m) log2e)); O times it; stage 2's merge", SITE_FMT_FIXED,   \
      FMT_FP32, FMT_RNE, 0)                                                                                       \
    X(O_DIV, "o_div", "O / e_sum (div.full.f32: O rcp(e_sum)); lse = e_max + logf(e_sum)", SITE_FMT_FIXED, FMT_FP32,  \
      FMT_RNE, 0)                                                                                                 \
    X(OUT_CAST, "out_cast", "output and lse cast to q's type", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)             \
    X(K_CAST, "k_cast", "vLLM, an FP8 cache's K: fl32(code k_scale) cast to q's type", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(P_CAST8, "p_cast8", "SGLang, an FP8 cache: P cast to e4m3 (satfinite) for P.V on the codes", SITE_FMT_FIXED,     \
      FMT_E4M3, FMT_RNE, 1)                                                                                       \
    X(V_SCALE, "v_scale", "SGLang: the output times v_scale (fp32)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)          \
    X(KV_DEQ, "kv_deq", "vLLM, an FP8 cache: fl32(code k_scale) (K; 0155494's V)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(TF32_CAST, "tf32_cast", "vLLM 0155494, FP8: P and V as the TF32 mma reads them (RZ to tf32)", SITE_FMT_FIXED,  \
      FMT_TF32, FMT_RZ, 0)                                                                                        \
    X(PV_TF32, "pv_tf32", "vLLM 0155494, FP8: O += P V by mma.sync m16n8k8 TF32 (tc-hopper-k8)", SITE_ACC_HOPPER_K8, \
      FMT_TF32, FMT_RNE, 0)

enum { TRITON_MLA_SITES(SITE_ENUM) };

const site_def_t attn_triton_mla_sites[] = {TRITON_MLA_SITES(SITE_ROW) SITE_END};

/* tl.exp(x) on binary32: exp2f's form of ex2.approx.f32 of fl(x log2e) */
static double tm_exp(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? exp(x) : gpu_exp2f(ctx, site, gpu_r32(ctx, site, x * TM_LOG2E));
}

/* kWidth 4's order: the k that slot i of a 32-wide span feeds (slots 0-15 the first mma.sync, 16-31 the second) */
static long tm_kw4(long i)
{
    long x = i % TM_KW4, h = x / 16, y = x % 16;
    return i - x + (y / 2) * 4 + 2 * h + y % 2;
}

/* TF32's order (P.V on fp32 operands, vLLM 0155494): a thread's four consecutive keys feed four successive
 * mma.sync m16n8k8, so of every 32 keys the mma j sums keys j, j + 4, ..., j + 28: the key slot i feeds */
static long tm_tf32k(long i)
{
    long x = i % TM_KW4;
    return i - x + 4 * (x % 8) + x / 8;
}

/* rows x n values of a (row stride lda) with each row's k in kWidth 4's order, n a multiple of 32 */
static double *tm_kw4_rows(const double *a, long lda, long rows, long n)
{
    double *t = err_malloc((size_t)(rows * n), sizeof(double));
    for (long r = 0; r < rows; r++)
        for (long i = 0; i < n; i++)
            t[r * n + i] = a[r * lda + tm_kw4(i)];
    return t;
}

static long tm_cdiv(long a, long b)
{
    return (a + b - 1) / b;
}

/* SGLang's get_num_kv_splits (triton_ops/metadata.py) for a request of len keys: over the batch's lengths, the
 * heads and --sm-count, with max_kv_splits as _mla_decode_kv_splits_cap gives it for a model of 8192 tokens or more
 * (max(8, next_pow2(SMs))); log2 of max_len / 64 in binary32 (log2f for the kernel's tl.log2) */
static long tm_sglang_splits(const attn_ctx_t *ctx, long len)
{
    long sms = ctx->cfg->sm_count > 0 ? ctx->cfg->sm_count : 132, cap = 1, nb = ctx->batch_n > 0 ? ctx->batch_n : 1;
    while (cap < sms)
        cap *= 2;
    cap = cap > 8 ? cap : 8;
    long mx = len, mn = len;
    for (long b = 0; b < ctx->batch_n; b++) {
        mx = ctx->batch_seqlens[b] > mx ? ctx->batch_seqlens[b] : mx;
        mn = ctx->batch_seqlens[b] < mn ? ctx->batch_seqlens[b] : mn;
    }
    if (mx < 1 || len < 1)
        return 1;
    mn = mn < 1 ? 1 : mn; /* a request of no key: the kernel would divide by zero here */
    if (mx * 8 < mn * 10)
        mn = mx;
    long s1 = tm_cdiv(mx, mn) < cap ? tm_cdiv(mx, mn) : cap, c1 = tm_cdiv(mx, s1);
    float lg = log2f((float)mx / 64.0f);
    long cores = (long)((float)sms * (lg > 1.0f ? lg : 1.0f));
    long hq = ctx->shape->hq, group = hq / ctx->shape->hkv, bh = group < 16 ? group : 16;
    long grid = group == 1 ? nb * hq : nb * tm_cdiv(hq, bh);
    long s2 = tm_cdiv(cores, grid) < cap ? tm_cdiv(cores, grid) : cap, c2 = tm_cdiv(mx, s2);
    return tm_cdiv(len, c1) > tm_cdiv(len, c2) ? tm_cdiv(len, c1) : tm_cdiv(len, c2);
}

/* y[i] = div.full.f32(a[i], b) for i < n, b normal: fl(a[i] rcp.approx(b)), the reciprocal once */
static void tm_div_n(attn_ctx_t *ctx, double *y, const double *a, long n, double b)
{
    if (ctx->site[O_DIV].exact) {
        for (long i = 0; i < n; i++)
            y[i] = a[i] / b;
        return;
    }
    if (y != a)
        memcpy(y, a, sizeof(double) * (size_t)n);
    gpu_r32_scale(ctx, O_DIV, y, n, gpu_rcp(ctx, O_DIV, b));
}

ATTN_VARIANT(attn_triton_mla)
{
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv;
    const attn_cfg_t *cfg = ctx->cfg;
    int dec = cfg->triton_decode, sgl = dec == ATTN_TRITON_SGLANG, fp8 = g->scale[1] > 0;
    int tf32 = fp8 && dec == ATTN_TRITON_VLLM; /* 0155494: V and P in fp32, P.V in TF32 */
    /* the splits: vLLM's cdiv(len, n) keys, SGLang's cdiv(cdiv(len, n), 32) 32 with n its own per request */
    long nsplit = cfg->sm_parts > 0 ? cfg->sm_parts : sgl ? tm_sglang_splits(ctx, sk) : 4;
    long per = sgl ? tm_cdiv(tm_cdiv(sk, nsplit), TM_BLOCK) * TM_BLOCK : tm_cdiv(sk, nsplit);
    /* the fp32 softmax scale: SGLang's sm_scale k_scale (a Python product) */
    double ks = fp8 ? g->scale[1] : 1, vs = g->scale[2] > 0 ? g->scale[2] : ks;
    double sm = ctx->site[P_EXP].exact ? cfg->scale * (sgl ? ks : 1) : (double)(float)(cfg->scale * (sgl ? ks : 1));
    /* the cache's K as the kernel reads it, and V: bf16 values; an FP8 cache's codes (SGLang; vLLM's V), or
     * bf16(fl32(code k_scale)) (vLLM's K) */
    double *kk = NULL, *vv = NULL;
    const double *K = g->k, *V = g->v;
    if (fp8) {
        kk = err_malloc((size_t)(sk * dk), sizeof(double));
        vv = err_malloc((size_t)(sk * dv), sizeof(double));
        for (long i = 0; i < sk * dk; i++) /* vLLM: code ks in fp32, then .to(bf16) */
            kk[i] = sgl ? g->k[i] / ks : attn_round(ctx, K_CAST, attn_round(ctx, KV_DEQ, g->k[i]));
        for (long j = 0; j < sk; j++)
            for (long c = 0; c < dv; c++) {
                double code = g->v[j * dv + c] / vs;
                /* SGLang: the codes (v_scale at the end); e46a1de: the codes (v_scale 1); is_mla: the K tile;
                 * 0155494: fl32(code k_scale) as the TF32 mma reads it */
                vv[j * dv + c] = dec == ATTN_TRITON_VLLM_MLA ? kk[j * dk + c]
                                 : tf32 ? attn_round(ctx, TF32_CAST, attn_round(ctx, KV_DEQ, code * ks)) : code;
            }
        K = kk, V = vv;
    }
    int p8 = sgl && fp8; /* P.V on e4m3 P and codes */
    /* an FP8 cache's dots in kWidth 4's order: Q's and K's head dims once (576 is 18 spans of 32), P's columns and
     * V's rows each block (a short block's missing keys are the zeros the masked loads give) */
    int kw4 = fp8 && dk % TM_KW4 == 0;
    long (*pord)(long) = tf32 ? tm_tf32k : kw4 ? tm_kw4 : NULL; /* P.V's key order (NULL: natural) */
    const double *Q = g->q;
    double *qw = NULL, *kw = NULL, *vw = NULL;
    if (kw4) {
        qw = tm_kw4_rows(g->q, dk, R, dk), kw = tm_kw4_rows(K, dk, sk, dk);
        Q = qw, K = kw;
    }
    if (pord)
        vw = err_calloc((size_t)(TM_BLOCK * dv), sizeof(double));
    double *s = err_malloc((size_t)(R * TM_BLOCK), sizeof(double)), *pb = err_malloc((size_t)(R * TM_BLOCK), sizeof(double));
    double *os = err_malloc((size_t)(nsplit * R * dv), sizeof(double)), *ls = err_malloc((size_t)(nsplit * R), sizeof(double));
    double *acc = err_malloc((size_t)(R * dv), sizeof(double)), *m = err_malloc((size_t)R, sizeof(double));
    double *es = err_malloc((size_t)R, sizeof(double)), *re = err_malloc((size_t)R, sizeof(double));
    int *used = err_calloc((size_t)nsplit, sizeof(int));
    for (long sp = 0; sp < nsplit; sp++) { /* stage 1 */
        long j0 = per * sp, j1 = j0 + per < sk ? j0 + per : sk;
        if (j1 <= j0)
            continue;
        used[sp] = 1;
        memset(acc, 0, sizeof(double) * (size_t)(R * dv));
        for (long r = 0; r < R; r++)
            m[r] = -INFINITY, es[r] = 0;
        for (long b = j0; b < j1; b += TM_BLOCK) {
            long nb = j1 - b < TM_BLOCK ? j1 - b : TM_BLOCK;
            memset(s, 0, sizeof(double) * (size_t)(R * TM_BLOCK));
            gpu_gemm(ctx, QK_ACC, 0, s, TM_BLOCK, Q, dk, K + b * dk, dk, 1, R, nb, dk);
            int vexp = !ctx->site[P_EXP].exact; /* the block's exps in one vectorized pass */
            for (long r = 0; r < R; r++) {
                double *sr = s + r * TM_BLOCK, mb = -INFINITY;
                for (long c = 0; c < TM_BLOCK; c++) { /* the kernel masks past the split; the lab's causal rows too */
                    sr[c] = c < nb && b + c <= g->limit[r] ? gpu_r32(ctx, P_EXP, sr[c] * sm) : -INFINITY;
                    mb = sr[c] > mb ? sr[c] : mb;
                }
                double n = mb > m[r] ? mb : m[r];
                /* a row with no key yet (only under a causal mask, which the kernel lacks) stays 0 */
                re[r] = n == -INFINITY ? 1 : tm_exp(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, m[r] - n));
                for (long c = 0; c < TM_BLOCK; c++) /* tl.exp's argument fl(fl(s - n) log2e) (-inf: p = 0) */
                    sr[c] = n == -INFINITY ? -INFINITY
                            : vexp ? (double)(float)((double)(float)(sr[c] - n) * TM_LOG2E)
                                   : tm_exp(ctx, P_EXP, gpu_r32(ctx, P_EXP, sr[c] - n));
                m[r] = n;
            }
            if (vexp)
                gpu_exp2f_n(ctx, P_EXP, s, R * TM_BLOCK);
            for (long r = 0; r < R; r++) {
                double *sr = s + r * TM_BLOCK;
                /* tl.sum: a thread's two columns, the quad (xor 2, then 1), then the warps (xor 2, then 1) */
                double w[TM_WARPS];
                for (int wi = 0; wi < TM_WARPS; wi++) {
                    double x[4];
                    for (int t = 0; t < 4; t++)
                        x[t] = gpu_r32(ctx, L_SUM, sr[8 * wi + 2 * t] + sr[8 * wi + 2 * t + 1]);
                    w[wi] = gpu_r32(ctx, L_SUM, gpu_r32(ctx, L_SUM, x[0] + x[2]) + gpu_r32(ctx, L_SUM, x[1] + x[3]));
                }
                double sum = gpu_r32(ctx, L_SUM, gpu_r32(ctx, L_SUM, w[0] + w[2]) + gpu_r32(ctx, L_SUM, w[1] + w[3]));
                es[r] = gpu_fmaf(ctx, L_SUM, es[r], re[r], sum);
                gpu_r32_scale(ctx, O_RESCALE, acc + r * dv, dv, re[r]);
                for (long c = 0; c < TM_BLOCK; c++)
                    pb[r * TM_BLOCK + c] = sr[pord ? pord(c) : c];
                attn_round_n(ctx, tf32 ? TF32_CAST : p8 ? P_CAST8 : P_CAST, pb + r * TM_BLOCK, TM_BLOCK);
            }
            if (pord) {
                for (long c = 0; c < TM_BLOCK; c++) {
                    long j = pord(c);
                    if (j < nb)
                        memcpy(vw + c * dv, V + (b + j) * dv, sizeof(double) * (size_t)dv);
                    else
                        memset(vw + c * dv, 0, sizeof(double) * (size_t)dv);
                }
                gpu_gemm(ctx, tf32 ? PV_TF32 : PV_ACC, 1, acc, dv, pb, TM_BLOCK, vw, dv, 0, R, dv, TM_BLOCK);
            } else {
                gpu_gemm(ctx, PV_ACC, 1, acc, dv, pb, TM_BLOCK, V + b * dv, dv, 0, R, dv, nb);
            }
        }
        for (long r = 0; r < R; r++) {
            tm_div_n(ctx, os + (sp * R + r) * dv, acc + r * dv, dv, es[r]);
            ls[sp * R + r] = es[r] == 0 ? -INFINITY /* no key of this row in the split */
                             : ctx->site[O_DIV].exact ? m[r] + log(es[r])
                                                     : gpu_r32(ctx, O_DIV, m[r] + gpu_logf(ctx, O_DIV, es[r]));
        }
    }
    for (long r = 0; r < R; r++) { /* stage 2 */
        double em = -INFINITY, e_sum = 0;
        double *ar = acc + r * dv;
        memset(ar, 0, sizeof(double) * (size_t)dv);
        int first = 1;
        for (long sp = 0; sp < nsplit; sp++) {
            if (!used[sp] || ls[sp * R + r] == -INFINITY)
                continue;
            const double *tv = os + (sp * R + r) * dv;
            double tl = ls[sp * R + r], n = tl > em ? tl : em;
            double old = tm_exp(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, em - n));
            double e = tm_exp(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, tl - n));
            for (long c = 0; c < dv; c++)
                ar[c] = first ? gpu_fmaf(ctx, O_RESCALE, tv[c], e, gpu_r32(ctx, O_RESCALE, ar[c] * old))
                              : gpu_fmaf(ctx, O_RESCALE, ar[c], old, gpu_r32(ctx, O_RESCALE, tv[c] * e));
            e_sum = gpu_fmaf(ctx, L_SUM, e_sum, old, e);
            em = n;
            first = 0;
        }
        if (e_sum == 0)
            memset(ar, 0, sizeof(double) * (size_t)dv);
        else
            tm_div_n(ctx, ar, ar, dv, e_sum);
        for (long c = 0; c < dv; c++) /* SGLang's acc / e_sum * v_scale */
            o[r * dv + c] = attn_round(ctx, OUT_CAST, sgl && vs != 1 ? attn_round(ctx, V_SCALE, ar[c] * vs) : ar[c]);
        if (ctx->lse)
            ctx->lse[r] = e_sum == 0 ? INFINITY : attn_round(ctx, OUT_CAST, ctx->site[O_DIV].exact ? em + log(e_sum)
                                                    : gpu_r32(ctx, O_DIV, em + gpu_logf(ctx, O_DIV, e_sum)));
    }
    free(kk);
    free(vv);
    free(qw);
    free(kw);
    free(vw);
    free(s);
    free(pb);
    free(os);
    free(ls);
    free(acc);
    free(m);
    free(es);
    free(re);
    free(used);
}
