/* flashmla_sparse -- FlashMLA's FP8 sparse decoding kernel as a Hopper GPU runs it (deepseek-ai/FlashMLA
 * 9241ae3, csrc/sm90/decode/sparse_fp8; docs/REFERENCES.md, FlashMLA): the producer warpgroup gathers the
 * top-k rows of the FP8 cache 64 slots at a time and dequantizes them to BF16 (data/kvfp8.c); warpgroup 0
 * computes S = Q K^T by WGMMA (64 x 64 x 16, zero-initialized), the online softmax in the log2 domain
 * (raw-score maximum, ex2.approx, FTZ) with per-thread row sums reduced once at the end, and its half of
 * O += P V; warpgroup 1 the other half with the same P and scale. Then O rcp.approx(L) in bf16, or each
 * split's fp32 O and log2 LSE for the combine kernel. One code path for a loaded cache and for generated
 * inputs, which the kernel's cache quantizer (tests/quant.py) turns into a cache first. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/flashmla.h"
#include "attn/variants/gpu_fp.h"
#include "attn/variants/variants.h"
#include "data/kvfp8.h"
#include "num/acc/acc_tc.h"
#include "num/vec/vec.h"

#define FS_BLOCK ATTN_KERNEL_TILE /* TOPK_BLOCK_SIZE: slots per block */
#define FS_QUAD 4                 /* threads sharing a row of the accumulator layout */
#define FS_PER_THREAD 16          /* a thread's columns of a row: (i & 1) + (i / 2) 8 + 2 q */
#define FS_M_INIT (-1e30f)        /* MAX_INIT_VAL */
#define FS_HEADS 64               /* BLOCK_M: query heads per CTA (the SM parts' divisor) */
#define FS_OVERHEAD_FLOOR 0       /* get_decoding_sched_meta: no payload floor */
#define FS_LOG2E 0x1.715476p0     /* LOG_2_E = 1.44269504f, the API's float constant */
#define FS_LOG2E_EXACT 0x1.71547652b82fep0 /* log2 e (exact sites) */

#define FLASHMLA_SPARSE_SITES(X)                                                                                  \
    X(KV_QUANT, "kv_quant", "generated K to the FP8 cache as tests/quant.py writes it (a loaded cache is as read)", \
      SITE_FMT_FIXED, FMT_E4M3, FMT_RNE, 0)                                                                        \
    X(QK_ACC, "qk_acc", "S = Q K^T over the dequantized bf16 block, WGMMA 64x64x16 from zero (tc-hopper)",         \
      SITE_ACC_HOPPER, FMT_FP32, FMT_RNE, 0)                                                                       \
    X(P_EXP, "p_exp", "m = max(m, fl(max s * scale_log2)); p = ex2.approx(fma(s, scale_log2, -m))", SITE_FMT_FIXED, \
      FMT_FP32, FMT_RNE, 0)                                                                                        \
    X(L_SUM, "l_sum", "per-thread sums of 16 p in order, L = fma(L, scale, sum); the quad's sum at the end",     \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                        \
    X(P_CAST, "p_cast", "p cast for P.V", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)                                       \
    X(PV_ACC, "pv_acc", "O += P V, WGMMA accumulating into O (tc-hopper)", SITE_ACC_HOPPER, FMT_FP32, FMT_RNE, 0) \
    X(O_RESCALE, "o_rescale", "scale = ex2.approx(m_old - m), O scale in fp32 (FTZ); LSE and combine",            \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                        \
    X(O_DIV, "o_div", "O rcp.approx(L) in fp32 (FTZ)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                      \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { FLASHMLA_SPARSE_SITES(SITE_ENUM) };

const site_def_t attn_flashmla_sparse_sites[] = {FLASHMLA_SPARSE_SITES(SITE_ROW) SITE_END};

typedef struct {
    attn_ctx_t *ctx;
    long R, dk, dv, nk, nslots, ldv;
    const double *q, *k, *v; /* q [R][dk]; the valid keys k [nk][dk], v [nk] rows of ldv (unless v_in_k) */
    kvfp8_layout_t rt;       /* generated keys: the cache's quantization, applied to a block's keys as the
                                producer gathers them (kvfp8_roundtrip); KVFP8_NONE: read as they are */
    int v_in_k;              /* V is the first dv dims of those keys (the kernel reads it from K) */
    const long *kpos;        /* key j's slot */
    const long *limit;       /* generated inputs: row r sees keys j <= limit[r] (a causal mask the kernel
                                lacks, kept so that exact sites give Golden); NULL for a sparse entry */
    double sl2;              /* scale_softmax_log2 = fl32(fl32(scale) fl32(log2 e)) */
    double *kb, *vb, *s, *p; /* a block: K [64][dk], V [64][dv], S and P [R][64] */
    double *sc;              /* a block's O scale per row */
    long *valid;             /* a block's slots: the key index, or -1 (invalid) */
} fs_t;

/* Blocks [b0, b1) of the slots: O [R][dv] as the kernel leaves it in fp32 (O rcp(L)), L and m per row; where o32
 * is given (o_div not exact), O rcp(L) is written there as binary32 instead (o: the working O). */
static void fs_range(fs_t *f, long b0, long b1, double *o, float *o32, double *L, double *M)
{
    attn_ctx_t *ctx = f->ctx;
    long R = f->R, dk = f->dk, dv = f->dv;
    double(*l)[FS_QUAD] = err_calloc((size_t)R, sizeof *l);
    for (long r = 0; r < R; r++)
        M[r] = FS_M_INIT;
    /* the first block's WGMMA from a zero O is the tc-hopper model's product without one: it writes O (in
     * binary64, exact, it adds to a zero O: a sum of -0 products stays +0) */
    const int fresh = !ctx->site[PV_ACC].exact;
    /* O's rescale by the product that next reads O (the same bits) where both round as the kernel does */
    const int scaled = !ctx->site[PV_ACC].exact && !ctx->site[O_RESCALE].exact;
    if (b1 <= b0 || !fresh)
        memset(o, 0, sizeof(double) * (size_t)(R * dv));
    long j = 0;
    while (j < f->nk && f->kpos[j] < b0 * FS_BLOCK)
        j++;
    for (long bi = b0; bi < b1; bi++) {
        /* the producer's block: invalid slots hold zeros (codes and scales zeroed). A block whose 64 slots
         * are all valid holds keys j .. j+63 in order: K and V are read where they are, not copied. */
        const double *kb = f->kb, *vb = f->vb;
        long ldk = dk, ldv = dv;
        if (j + FS_BLOCK <= f->nk && f->kpos[j] == bi * FS_BLOCK && f->kpos[j + FS_BLOCK - 1] == (bi + 1) * FS_BLOCK - 1) {
            for (int c = 0; c < FS_BLOCK; c++) /* slots ascend with the keys: the ends fix every one */
                f->valid[c] = j + c;
            if (f->rt != KVFP8_NONE) /* quantized as the block is gathered (it stays in cache for its products) */
                kvfp8_roundtrip(f->kb, f->k + j * dk, FS_BLOCK, f->rt);
            else
                kb = f->k + j * dk;
            vb = f->v_in_k ? kb : f->v + j * f->ldv, ldv = f->v_in_k ? dk : f->ldv;
            j += FS_BLOCK;
        } else {
            memset(f->kb, 0, sizeof(double) * (size_t)(FS_BLOCK * dk));
            memset(f->vb, 0, sizeof(double) * (size_t)(FS_BLOCK * dv));
            for (int c = 0; c < FS_BLOCK; c++)
                f->valid[c] = -1;
            for (; j < f->nk && f->kpos[j] < (bi + 1) * FS_BLOCK; j++) {
                long c = f->kpos[j] - bi * FS_BLOCK;
                if (f->rt != KVFP8_NONE)
                    kvfp8_roundtrip(f->kb + c * dk, f->k + j * dk, 1, f->rt);
                else
                    memcpy(f->kb + c * dk, f->k + j * dk, sizeof(double) * (size_t)dk);
                memcpy(f->vb + c * dv, f->v_in_k ? f->kb + c * dk : f->v + j * f->ldv, sizeof(double) * (size_t)dv);
                f->valid[c] = j;
            }
        }
        if (!ctx->site[QK_ACC].exact && !ctx->site[PV_ACC].exact) /* the block's keys converted once for both products */
            acc_tc_hold_b(kb, ldk, FS_BLOCK, dk, fmt_table[ctx->cfg->in_format].emin);
        gpu_gemm(ctx, QK_ACC, 0, f->s, FS_BLOCK, f->q, dk, kb, ldk, 1, R, FS_BLOCK, dk);
        const int every = !f->limit && f->valid[0] >= 0 && f->valid[FS_BLOCK - 1] >= 0 &&
                          f->valid[FS_BLOCK - 1] - f->valid[0] == FS_BLOCK - 1; /* a whole block of keys, no mask */
        for (long r = 0; r < R; r++) { /* each row's maximum, scale and FFMA; the block's ex2s after, in one call */
            double *s = f->s + r * FS_BLOCK, *p = f->p + r * FS_BLOCK;
            double cur = -INFINITY;
            if (every) {
                memcpy(p, s, sizeof(double) * FS_BLOCK);
                for (int c = 0; c < FS_BLOCK; c++)
                    cur = p[c] > cur ? p[c] : cur;
            }
            for (int c = 0; c < FS_BLOCK && !every; c++) {
                int ok = f->valid[c] >= 0 && (!f->limit || f->valid[c] <= f->limit[r]);
                p[c] = ok ? s[c] : -INFINITY;
                cur = p[c] > cur ? p[c] : cur;
            }
            cur = gpu_f32(ctx, P_EXP, cur * f->sl2);
            double mnew = cur > M[r] ? cur : M[r];
            f->sc[r] = gpu_ex2(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, M[r] - mnew));
            M[r] = mnew;
            if (bi > b0 && !scaled) /* O is zero before the first block */
                gpu_f32_scale(ctx, O_RESCALE, o + r * dv, dv, f->sc[r]);
            gpu_fma_n(ctx, P_EXP, p, FS_BLOCK, f->sl2, -mnew);
        }
        gpu_ex2_n(ctx, P_EXP, f->p, R * FS_BLOCK);
        for (long r = 0; r < R; r++) {
            const double *p = f->p + r * FS_BLOCK;
            double cs[FS_QUAD] = {0};
            for (int q = 0; q < FS_QUAD && ctx->site[L_SUM].exact; q++)
                for (int i = 0; i < FS_PER_THREAD; i++)
                    cs[q] += p[(i & 1) + (i / 2) * 8 + 2 * q];
            if (!ctx->site[L_SUM].exact) { /* binary32 additions (binary64's rounded once: the same), the quads side by side */
                float c32[FS_QUAD] = {0};
                for (int i = 0; i < FS_PER_THREAD; i++)
                    for (int q = 0; q < FS_QUAD; q++)
                        c32[q] = gpu_ftz(c32[q] + (float)p[(i & 1) + (i / 2) * 8 + 2 * q]);
                for (int q = 0; q < FS_QUAD; q++)
                    cs[q] = c32[q];
            }
            for (int q = 0; q < FS_QUAD; q++)
                l[r][q] = gpu_fma(ctx, L_SUM, l[r][q], f->sc[r], cs[q]);
        }
        attn_round_n(ctx, P_CAST, f->p, R * FS_BLOCK);
        if (bi > b0 && scaled) /* O rescaled as the product reads it */
            gpu_gemm_scaled(ctx, PV_ACC, O_RESCALE, o, dv, f->sc, f->p, FS_BLOCK, vb, ldv, 0, R, dv, FS_BLOCK);
        else
            gpu_gemm(ctx, PV_ACC, bi > b0 || !fresh, o, dv, f->p, FS_BLOCK, vb, ldv, 0, R, dv, FS_BLOCK);
    }
    acc_tc_release_b();
    for (long r = 0; r < R; r++) { /* the quad's butterfly; o_scale = L == 0 ? 0 : rcp(L) */
        L[r] = gpu_f32(ctx, L_SUM, gpu_f32(ctx, L_SUM, l[r][0] + l[r][1]) + gpu_f32(ctx, L_SUM, l[r][2] + l[r][3]));
        double *orow = o + r * dv;
        if (o32 && L[r] == 0)
            memset(o32 + r * dv, 0, sizeof(float) * (size_t)dv);
        else if (o32) /* gpu_f32(O rcp(L)) as binary32 */
            vec_scale32_ftz_f(o32 + r * dv, orow, dv, gpu_rcp(ctx, O_DIV, L[r]));
        else if (L[r] == 0)
            memset(orow, 0, sizeof(double) * (size_t)dv);
        else if (ctx->site[O_DIV].exact)
            for (long c = 0; c < dv; c++)
                orow[c] /= L[r];
        else /* gpu_f32(O rcp(L)) */
            gpu_f32_scale(ctx, O_DIV, orow, dv, gpu_rcp(ctx, O_DIV, L[r]));
    }
    free(l);
}

/* Generated keys as the kernel would read them from its cache: quantized as tests/quant.py writes the cache
 * and dequantized as the producer does (f->rt for kvfp8_roundtrip, block by block: the same values without
 * the bytes; kv_quant exact: left as they are). V is read from that K where the kernel reads it there (dv 512,
 * V the first 512 dims of K): f->v_in_k then, else V stays as given. */
static void fs_cache(fs_t *f, const attn_group_t *g, attn_ctx_t *ctx, kvfp8_layout_t l)
{
    long dv = g->dv;
    f->rt = l == KVFP8_NONE || ctx->site[KV_QUANT].exact ? KVFP8_NONE : l;
    f->v_in_k = l != KVFP8_NONE && dv == KVFP8_DV && attn_v_is_k_prefix(g);
}

ATTN_VARIANT(attn_flashmla_sparse)
{
    long R = g->R, dk = g->dk, dv = g->dv, sk = g->sk;
    const attn_cfg_t *cfg = ctx->cfg;
    fs_t f = {ctx, R, dk, dv, sk, 0, dv, g->q, g->k, g->v, KVFP8_NONE, 0, g->kpos, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL};
    long *pos = NULL;
    if (!g->kpos) { /* generated (dense) inputs: every key valid, in order, in whole blocks of slots */
        fs_cache(&f, g, ctx, g->kv_fp8 ? KVFP8_NONE : kvfp8_layout_of_dim(dk));
        pos = err_malloc((size_t)(sk > 0 ? sk : 1), sizeof(long));
        for (long j = 0; j < sk; j++)
            pos[j] = j;
        f.kpos = pos, f.limit = g->limit;
        f.nslots = (sk + FS_BLOCK - 1) / FS_BLOCK * FS_BLOCK;
    } else {
        f.nslots = g->kslots;
    }
    if (f.nslots < FS_BLOCK)
        f.nslots = FS_BLOCK;
    /* sm_scale * LOG_2_E, both float, on the host */
    f.sl2 = ctx->site[P_EXP].exact ? cfg->scale * FS_LOG2E_EXACT : (double)((float)cfg->scale * (float)FS_LOG2E);
    f.kb = err_malloc((size_t)(FS_BLOCK * dk), sizeof(double));
    f.vb = err_malloc((size_t)(FS_BLOCK * dv), sizeof(double));
    f.s = err_malloc((size_t)(R * FS_BLOCK), sizeof(double));
    f.p = err_malloc((size_t)(R * FS_BLOCK), sizeof(double));
    f.valid = err_malloc(FS_BLOCK, sizeof(long));
    f.sc = err_malloc((size_t)R, sizeof(double));
    double *L = err_malloc((size_t)R, sizeof(double)), *M = err_malloc((size_t)R, sizeof(double));
    /* SM parts: max(sm_count / s_q / (h_q / 64), 1) (Decode_Sm90_Impl::get_meta); the scheduler counts each
     * batch entry's top-k (or top-k length) keys, 5 blocks of overhead, no payload floor */
    long sq = ctx->batch_sq > 0 ? ctx->batch_sq : ctx->shape ? ctx->shape->sq : 1;
    long hq = ctx->shape ? ctx->shape->hq : R;
    long parts = cfg->sm_parts;
    if (parts <= 0) {
        long hb = (hq + FS_HEADS - 1) / FS_HEADS;
        parts = (cfg->sm_count > 0 ? cfg->sm_count : 132) / sq / (hb > 0 ? hb : 1);
        parts = parts > 0 ? parts : 1;
    }
    long alone = f.nslots, nb = ctx->batch_n > 0 ? ctx->batch_n : 1, bi = ctx->batch_n > 0 ? ctx->batch_i : 0;
    const long *seqlens = ctx->batch_n > 0 ? ctx->batch_seqlens : &alone;
    long *begin = err_malloc((size_t)(parts + 1), sizeof(long)), first, total;
    long nsplit = flashmla_splits(begin, &first, &total, seqlens, nb, bi, parts, FS_OVERHEAD_FLOOR);
    begin[nsplit] = f.nslots / FS_BLOCK; /* the kernel walks its own slots; the scheduler's count agrees */
    if (nsplit <= 1) { /* the no-split path: bf16 O and the natural-log LSE from the split kernel itself */
        fs_range(&f, 0, f.nslots / FS_BLOCK, o, NULL, L, M);
        for (long i = 0; i < R * dv; i++)
            o[i] = attn_round(ctx, OUT_CAST, o[i]);
        for (long r = 0; r < R && ctx->lse; r++)
            ctx->lse[r] = L[r] == 0 ? INFINITY /* logf(L) + sM / (float)M_LOG2E, as the build compiles it */
                                    : gpu_logf_add(ctx, O_RESCALE, L[r], flashmla_from_log2(ctx, O_RESCALE, M[r]));
    } else { /* each split's fp32 O and lg2(L) + m, then the combine kernel (every weight applied) */
        /* the splits' O kept as the binary32 values they are (o_div not exact: O rcp(L) in fp32), each made in
         * one buffer that stays in cache: half the memory the combine reads */
        const int f32 = !ctx->site[O_DIV].exact;
        double *oacc = f32 ? NULL : err_malloc((size_t)(nsplit * R * dv), sizeof(double));
        float *oacc32 = f32 ? err_malloc((size_t)(nsplit * R * dv), sizeof(float)) : NULL;
        double *ow = f32 ? err_malloc((size_t)(R * dv), sizeof(double)) : NULL;
        double *lse = err_malloc((size_t)(nsplit * R), sizeof(double));
        for (long i = 0; i < nsplit; i++) {
            fs_range(&f, begin[i], begin[i + 1], f32 ? ow : oacc + i * R * dv, f32 ? oacc32 + i * R * dv : NULL, L, M);
            for (long r = 0; r < R; r++)
                lse[r * nsplit + i] = L[r] == 0 ? -INFINITY
                                                : gpu_f32(ctx, O_RESCALE, gpu_lg2(ctx, O_RESCALE, L[r]) + M[r]);
        }
        flashmla_combine_rows(ctx, L_SUM, O_RESCALE, OUT_CAST, 0, o, oacc, oacc32, lse, R, nsplit, dv, parts);
        free(oacc);
        free(oacc32);
        free(ow);
        free(lse);
    }
    free(begin);
    free(L);
    free(M);
    free(f.kb);
    free(f.vb);
    free(f.s);
    free(f.p);
    free(f.valid);
    free(f.sc);
    free(pos);
}
