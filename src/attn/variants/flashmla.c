/* flashmla -- FlashMLA's dense decode kernel as it runs on an H100 (deepseek-ai/FlashMLA,
 * csrc/kernels/splitkv_mla.cu; docs/REFERENCES.md, FlashMLA): its no-split path, instruction by
 * instruction. Two warpgroups take the 64-key blocks in pairs; warpgroup 0 holds O's left
 * half (columns 0-255) and the first block's P, warpgroup 1 the right half and the second
 * block's P; scores and sums live in the log2 domain; every FP32 operation flushes subnormals
 * (--use_fast_math), exp2 and 1/x are the SFU's ex2.approx and rcp.approx (num/sfu.c); both
 * products are WGMMAs accumulating into their registers (the tc-hopper model, D = A B + D). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/flashmla.h"
#include "attn/variants/gpu_fp.h"
#include "attn/variants/variants.h"
#include "num/vec/vec.h"

#define FMLA_BLOCK ATTN_KERNEL_TILE /* keys per block (PAGE_BLOCK_SIZE) */
#define FMLA_HALF 256               /* O columns per warpgroup (HEAD_DIM_V / 2) */
#define FMLA_QUAD 4                 /* threads sharing a row of the accumulator layout */
#define FMLA_K_SPLIT 256            /* warpgroup 1 accumulates Q.K^T over dims 256.. first */
#define FMLA_MASKED (-1e33f)        /* MAX_INIT_VAL: a masked score */
#define FMLA_M_INIT (-1e30f)        /* MAX_INIT_VAL_SM: the running maximum's start */
#define FMLA_LOG2E 0x1.71547652b82fep0 /* log2 e, M_LOG2E */
#define FMLA_LN2 0x1.62e43p-1            /* fl32(ln 2), the kernel's 1 / M_LOG2E in fp32 */

#define FLASHMLA_SITES(X)                                                                                        \
    X(QK_ACC, "qk_acc", "S = Q K^T, WGMMA (tc-hopper), warpgroup 1 from dim 256 on", SITE_ACC_HOPPER, FMT_FP32,  \
      FMT_RNE, 0)                                                                                                \
    X(P_EXP, "p_exp", "sM = max(sM, fl(max s * scale_log2)); p = ex2.approx(fma(s, scale_log2, -sM))",           \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                      \
    X(L_SUM, "l_sum", "per-thread rowsum of fp32 p (pairs), L = fma(L, scale, sum); quad and warpgroup sums",    \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                      \
    X(P_CAST, "p_cast", "p (and p scale_1 for the other warpgroup) cast for P.V", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(PV_ACC, "pv_acc", "O += P V_half, WGMMA accumulating into O (tc-hopper)", SITE_ACC_HOPPER, FMT_FP32,       \
      FMT_RNE, 0)                                                                                                \
    X(O_RESCALE, "o_rescale", "scale = ex2.approx(sM_old - sM); O and L rescales in fp32 (FTZ)", SITE_FMT_FIXED,  \
      FMT_FP32, FMT_RNE, 0)                                                                                      \
    X(O_DIV, "o_div", "O rcp.approx(L) in fp32 (FTZ)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                      \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { FLASHMLA_SITES(SITE_ENUM) };

const site_def_t attn_flashmla_sites[] = {FLASHMLA_SITES(SITE_ROW) SITE_END};

/* Per row: the running maximum (log2 domain), each warpgroup's per-thread partial sums. */
typedef struct {
    double m;
    double l[2][FMLA_QUAD];
} fmla_row_t;

typedef struct {
    const attn_group_t *g;
    attn_ctx_t *ctx;
    double sl2;     /* scale_softmax_log2 = fl32(fl32(scale) log2 e) */
    double *s[2];   /* scores of the pair's blocks [R][64] */
    double *pb[2];  /* P cast for P.V [R][64] */
    double *pb0s;   /* warpgroup 0's P rescaled by scale_1 and cast, for warpgroup 1 */
    double *o;      /* O [R][dv]: columns 0-255 warpgroup 0's, 256-511 warpgroup 1's */
    double *sc0;    /* scale_0 per row (sScale0) */
    fmla_row_t *st;
} fmla_t;

/* S [R][64] for the block at key j0 (nb keys): warpgroup w's Q.K^T order (w = 1: dims
 * FMLA_K_SPLIT.. then 0..FMLA_K_SPLIT-1, as its pipeline issues the tiles); masked keys -1e33. */
static void fmla_scores(fmla_t *f, double *s, long j0, long nb, int w)
{
    const attn_group_t *g = f->g;
    long R = g->R, dk = g->dk;
    for (long i = 0; i < R * FMLA_BLOCK; i++)
        s[i] = 0;
    if (w == 1 && dk > FMLA_K_SPLIT) {
        gpu_gemm(f->ctx, QK_ACC, 0, s, FMLA_BLOCK, g->q + FMLA_K_SPLIT, dk, g->k + j0 * dk + FMLA_K_SPLIT, dk, 1, R,
                  nb, dk - FMLA_K_SPLIT);
        gpu_gemm(f->ctx, QK_ACC, 1, s, FMLA_BLOCK, g->q, dk, g->k + j0 * dk, dk, 1, R, nb, FMLA_K_SPLIT);
    } else {
        gpu_gemm(f->ctx, QK_ACC, 0, s, FMLA_BLOCK, g->q, dk, g->k + j0 * dk, dk, 1, R, nb, dk);
    }
    for (long r = 0; r < R; r++)
        for (long c = 0; c < FMLA_BLOCK; c++)
            if (c >= nb || j0 + c > g->limit[r])
                s[r * FMLA_BLOCK + c] = FMLA_MASKED;
}

/* One warpgroup's softmax on its block for row r (wg*_bunch_0): the new maximum, the old
 * one's scale, p in place (fp32), and each thread's sum of its column pairs in cs. */
static double fmla_softmax(fmla_t *f, double *p, long r, double cs[FMLA_QUAD], int skip_exp)
{
    attn_ctx_t *ctx = f->ctx;
    fmla_row_t *st = &f->st[r];
    double cur = attn_row_max(p, FMLA_BLOCK, FMLA_MASKED);
    cur = gpu_f32(ctx, P_EXP, cur * f->sl2);
    double mnew = st->m > cur ? st->m : cur;
    double scale = gpu_ex2(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, st->m - mnew));
    st->m = mnew;
    for (int q = 0; q < FMLA_QUAD; q++)
        cs[q] = 0;
    if (skip_exp)
        return scale;
    gpu_ex2_fma_n(ctx, P_EXP, p, FMLA_BLOCK, f->sl2, -mnew);
    /* thread q holds columns 8j + 2q and 8j + 2q + 1: cur_sum += p_a + p_b, j in order */
    for (int q = 0; q < FMLA_QUAD; q++)
        for (int j = 0; j < FMLA_BLOCK / 8; j++)
            cs[q] = gpu_f32(ctx, L_SUM, cs[q] + gpu_f32(ctx, L_SUM, p[8 * j + 2 * q] + p[8 * j + 2 * q + 1]));
    return scale;
}

/* O's half (+)= P V_half over the block's keys (V rows of masked keys are zero, fill_oob_V); with rs, O's half
 * rescaled first, row r by rs[r] in fp32 (o_rescale: the product does it as it reads O) */
static void fmla_pv(fmla_t *f, int half, const double *p, long j0, long nb, const double *rs)
{
    const attn_group_t *g = f->g;
    long dv = g->dv, c0 = half * FMLA_HALF, n = half ? dv - FMLA_HALF : (dv < FMLA_HALF ? dv : FMLA_HALF);
    if (n <= 0)
        return;
    if (rs)
        gpu_gemm_scaled(f->ctx, PV_ACC, O_RESCALE, f->o + c0, dv, rs, p, FMLA_BLOCK, g->v + j0 * dv + c0, dv, 0, g->R, n,
                        nb);
    else
        gpu_gemm(f->ctx, PV_ACC, 1, f->o + c0, dv, p, FMLA_BLOCK, g->v + j0 * dv + c0, dv, 0, g->R, n, nb);
}

/* One pair of blocks (wg0_subroutine and wg1_subroutine): b0 at key j0, b1 after it unless
 * the pair is the last block alone. */
static void fmla_pair(fmla_t *f, long j0, long nb0, long nb1)
{
    const attn_group_t *g = f->g;
    attn_ctx_t *ctx = f->ctx;
    long R = g->R;
    int has1 = nb1 > 0;
    fmla_scores(f, f->s[0], j0, nb0, 0);
    if (has1)
        fmla_scores(f, f->s[1], j0 + FMLA_BLOCK, nb1, 1);
    /* each rescale of an O half is done by the product that next reads that half (fmla_pv's rs) */
    double *sc1 = err_malloc((size_t)R, sizeof(double)), *so1 = err_malloc((size_t)R, sizeof(double));
    for (long r = 0; r < R; r++) { /* warpgroup 0: bunch 0 on block 0 */
        fmla_row_t *st = &f->st[r];
        double cs[FMLA_QUAD];
        double *p0 = f->s[0] + r * FMLA_BLOCK;
        f->sc0[r] = fmla_softmax(f, p0, r, cs, 0);
        for (int q = 0; q < FMLA_QUAD; q++)
            st->l[0][q] = gpu_fma(ctx, L_SUM, st->l[0][q], f->sc0[r], cs[q]);
        memcpy(f->pb[0] + r * FMLA_BLOCK, p0, sizeof(double) * FMLA_BLOCK);
        attn_round_n(ctx, P_CAST, f->pb[0] + r * FMLA_BLOCK, FMLA_BLOCK);
    }
    fmla_pv(f, 0, f->pb[0], j0, nb0, f->sc0); /* O_L = O_L scale_0 + P0 V0L */
    for (long r = 0; r < R; r++) { /* warpgroup 1: bunch 0 on block 1 (all masked when absent) */
        fmla_row_t *st = &f->st[r];
        double cs[FMLA_QUAD];
        double *p1 = f->s[1] + r * FMLA_BLOCK;
        if (!has1)
            for (long c = 0; c < FMLA_BLOCK; c++)
                p1[c] = FMLA_MASKED;
        sc1[r] = fmla_softmax(f, p1, r, cs, !has1);
        so1[r] = gpu_f32(ctx, O_RESCALE, sc1[r] * f->sc0[r]);
        for (int q = 0; q < FMLA_QUAD; q++)
            st->l[1][q] = gpu_fma(ctx, L_SUM, st->l[1][q], so1[r], cs[q]);
        if (has1) {
            memcpy(f->pb[1] + r * FMLA_BLOCK, p1, sizeof(double) * FMLA_BLOCK);
            attn_round_n(ctx, P_CAST, f->pb[1] + r * FMLA_BLOCK, FMLA_BLOCK);
        }
        /* warpgroup 0's P rescaled by scale_1 in fp32, cast, for warpgroup 1 (wg0_scale_rP0) */
        double *ps = f->pb0s + r * FMLA_BLOCK;
        for (long c = 0; c < FMLA_BLOCK; c++)
            ps[c] = attn_fp32(ctx, P_CAST, gpu_f32(ctx, O_RESCALE, f->s[0][r * FMLA_BLOCK + c] * sc1[r]));
        attn_round_n(ctx, P_CAST, ps, FMLA_BLOCK);
    }
    if (has1)
        fmla_pv(f, 1, f->pb[1], j0 + FMLA_BLOCK, nb1, so1); /* O_R = O_R scale_0 scale_1 + P1 V1R */
    if (has1) { /* warpgroup 0: O_L and its sums rescaled by scale_1, then O_L += P1 V1L */
        for (long r = 0; r < R; r++)
            for (int q = 0; q < FMLA_QUAD; q++)
                f->st[r].l[0][q] = gpu_f32(ctx, L_SUM, f->st[r].l[0][q] * sc1[r]);
        fmla_pv(f, 0, f->pb[1], j0 + FMLA_BLOCK, nb1, sc1);
    }
    fmla_pv(f, 1, f->pb0s, j0, nb0, has1 ? NULL : so1); /* O_R += (P0 scale_1) V0R */
    free(sc1);
    free(so1);
}

/* The keys of blocks [b0, b1) (one split, or all of them): O [R][dv] as the kernel leaves it in
 * fp32 (O rcp(L)), L per row (the reduced sum; 0 or NaN made 1 for O) and sM per row. */
static void fmla_range(fmla_t *f, long b0, long b1, double *lsum, double *msum)
{
    const attn_group_t *g = f->g;
    attn_ctx_t *ctx = f->ctx;
    long R = g->R, dv = g->dv, sk = g->sk;
    for (long r = 0; r < R; r++) {
        memset(&f->st[r], 0, sizeof f->st[r]);
        f->st[r].m = FMLA_M_INIT;
    }
    memset(f->o, 0, sizeof(double) * (size_t)(R * dv));
    for (long b = b0; b < b1; b += 2) {
        long j0 = b * FMLA_BLOCK, nb0 = sk - j0 < FMLA_BLOCK ? sk - j0 : FMLA_BLOCK;
        long nb1 = b + 1 < b1 ? (sk - j0 - nb0 < FMLA_BLOCK ? sk - j0 - nb0 : FMLA_BLOCK) : 0;
        fmla_pair(f, j0, nb0, nb1);
    }
    /* L: each warpgroup's quad butterfly ((l0 + l1) + (l2 + l3)), then the two warpgroups' sum;
     * 0 or NaN becomes 1 for O = fl32(O rcp(L)) */
    for (long r = 0; r < R; r++) {
        double lw[2];
        for (int w = 0; w < 2; w++) {
            const double *l = f->st[r].l[w];
            lw[w] = gpu_f32(ctx, L_SUM, gpu_f32(ctx, L_SUM, l[0] + l[1]) + gpu_f32(ctx, L_SUM, l[2] + l[3]));
        }
        double L = gpu_f32(ctx, L_SUM, lw[0] + lw[1]);
        lsum[r] = L;
        msum[r] = f->st[r].m;
        if (L == 0 || L != L)
            L = 1;
        double inv = gpu_rcp(ctx, O_DIV, L); /* rO / rL: O rcp(L) with fast math, the IEEE quotient without */
        for (long c = 0; c < dv; c++)
            f->o[r * dv + c] = ctx->site[O_DIV].exact || gpu_ieee(ctx) ? gpu_div(ctx, O_DIV, f->o[r * dv + c], L)
                                                                        : gpu_f32(ctx, O_DIV, f->o[r * dv + c] * inv);
    }
}

/* The split-KV scheduler (get_mla_metadata): the batch's blocks plus a fixed overhead per entry,
 * shared out over the SM parts with a payload of ceil(total / parts) + overhead blocks each, at
 * least min_payload; a part takes entries (each costing its remaining blocks plus the overhead)
 * until its payload is spent, splitting an entry where it runs out. With no floor (9241ae3's
 * get_decoding_sched_meta, also the sparse decode's) an empty entry counts one block, so that no part's loop
 * is empty; 9c5dfab counted none. */
#define FMLA_OVERHEAD 5 /* fixed_overhead_num_blocks */
static long fmla_sched_blocks(long seqlen, long min_payload)
{
    long blocks = (seqlen + FMLA_BLOCK - 1) / FMLA_BLOCK;
    return blocks == 0 && min_payload == 0 ? 1 : blocks;
}

void flashmla_schedule_min(long (*meta)[5], long *num_splits, const long *seqlens, long b, long parts,
                           long min_payload)
{
    long total = 0;
    for (long i = 0; i < b; i++)
        total += fmla_sched_blocks(seqlens[i], min_payload) + FMLA_OVERHEAD;
    long payload = (total + parts - 1) / parts + FMLA_OVERHEAD;
    if (payload < min_payload)
        payload = min_payload;
    long now = 0, now_block = 0, now_split = 0, cum = 0;
    num_splits[0] = 0;
    for (long p = 0; p < parts; p++) {
        meta[p][0] = now;
        meta[p][1] = now_block * FMLA_BLOCK;
        meta[p][4] = now_split;
        long remain = payload;
        while (now < b) {
            long blocks = fmla_sched_blocks(seqlens[now], min_payload), left = blocks - now_block;
            if (remain >= left + FMLA_OVERHEAD) {
                cum += now_split + 1;
                num_splits[now + 1] = cum;
                remain -= left + FMLA_OVERHEAD;
                now++;
                now_block = 0;
                now_split = 0;
            } else {
                if (remain - FMLA_OVERHEAD > 0) {
                    now_block += remain - FMLA_OVERHEAD;
                    now_split++;
                }
                break;
            }
        }
        meta[p][2] = now_block > 0 ? now : now - 1;
        meta[p][3] = now_block > 0 ? now_block * FMLA_BLOCK : seqlens[now - 1];
    }
}

/* FlashMLA 9c5dfab's payload: at least two overheads */
void flashmla_schedule(long (*meta)[5], long *num_splits, const long *seqlens, long b, long parts)
{
    flashmla_schedule_min(meta, num_splits, seqlens, b, parts, 2 * FMLA_OVERHEAD);
}

long flashmla_splits(long *begin, long *first, long *total, const long *seqlens, long b, long entry, long parts,
                     long min_payload)
{
    long(*meta)[5] = err_malloc((size_t)parts, sizeof *meta), *ns = err_malloc((size_t)(b + 1), sizeof(long));
    flashmla_schedule_min(meta, ns, seqlens, b, parts, min_payload);
    long nsplit = 0;
    for (long p = 0; p < parts; p++)
        if (meta[p][0] <= entry && entry <= meta[p][2])
            begin[nsplit++] = entry == meta[p][0] ? meta[p][1] / FMLA_BLOCK : 0;
    begin[nsplit] = (seqlens[entry] + FMLA_BLOCK - 1) / FMLA_BLOCK;
    *first = ns[entry];
    *total = ns[b];
    free(meta);
    free(ns);
    return nsplit;
}

void flashmla_dump_schedule(attn_ctx_t *ctx, const long *seqlens, long b, long parts, long min_payload)
{
    long(*meta)[5] = err_malloc((size_t)parts, sizeof *meta), *ns = err_malloc((size_t)(b + 1), sizeof(long));
    flashmla_schedule_min(meta, ns, seqlens, b, parts, min_payload);
    for (long p = 0; p < parts; p++) {
        double row[5];
        for (int k = 0; k < 5; k++)
            row[k] = (double)meta[p][k];
        ctx->extra(ctx->extra_arg, "tile_scheduler_metadata", parts, 1, p, 0, row, 5);
    }
    for (long i = 0; i <= b; i++) {
        double v = (double)ns[i];
        ctx->extra(ctx->extra_arg, "num_splits", b + 1, 1, i, 0, &v, 1);
    }
    free(meta);
    free(ns);
}

long flashmla_parts(const attn_ctx_t *ctx, long R)
{
    long parts = ctx->cfg->sm_parts;
    if (parts <= 0) {
        long hkv = ctx->shape ? ctx->shape->hkv : 1;
        parts = (ctx->cfg->sm_count > 0 ? ctx->cfg->sm_count : 132) / hkv / ((R + 63) / 64);
        parts = parts > 0 ? parts : 1;
    }
    return parts;
}

double flashmla_from_log2(attn_ctx_t *ctx, int site, double x)
{
    if (ctx->site[site].exact)
        return x / FMLA_LOG2E;
    return gpu_ieee(ctx) ? gpu_div(ctx, site, x, (float)FMLA_LOG2E) : gpu_f32(ctx, site, x * FMLA_LN2);
}

/* The combine kernel for one row (flashmla.h): gmax, the lanes' sums of ex2(lse_i - gmax) and their
 * butterfly, g = lg2(sum) + gmax, O = sum_i ex2(lse_i - g) O_i by FFMA in split order. */
#define FMLA_LANES 32
double flashmla_combine(attn_ctx_t *ctx, int site_sum, int site_scale, int skip_zero, double *o, const double *oacc,
                        long ldo_split, const double *lse, long nsplit, long dv, long max_splits)
{
    double gmax = -INFINITY;
    for (long i = 0; i < nsplit; i++)
        gmax = lse[i] > gmax ? lse[i] : gmax;
    if (gmax == -INFINITY)
        gmax = 0;
    double lane[FMLA_LANES];
    for (int t = 0; t < FMLA_LANES; t++) {
        lane[t] = 0;
        for (long i = t; i < max_splits; i += FMLA_LANES)
            if (i < nsplit)
                lane[t] = gpu_f32(ctx, site_sum, lane[t] + gpu_ex2(ctx, site_scale, gpu_f32(ctx, site_scale, lse[i] - gmax)));
    }
    double sum = gpu_butterfly_sum(ctx, site_sum, lane, FMLA_LANES, 1);
    double glse = sum == 0 || sum != sum ? INFINITY
                                         : gpu_f32(ctx, site_scale, gpu_lg2(ctx, site_scale, sum) + gmax);
    for (long c = 0; c < dv; c++)
        o[c] = 0;
    for (long i = 0; i < nsplit; i++) {
        double w = gpu_ex2(ctx, site_scale, gpu_f32(ctx, site_scale, lse[i] - glse));
        if (w == 0 && skip_zero)
            continue;
        gpu_fma_acc_n(ctx, site_scale, o, oacc + i * ldo_split, dv, w);
    }
    return glse;
}

void flashmla_combine_rows(attn_ctx_t *ctx, int site_sum, int site_scale, int site_out, int skip_zero, double *o,
                           const double *oacc, const float *oacc32, const double *lse, long R, long nsplit, long dv,
                           long parts)
{
    /* the combine kernel's template bound on the splits: 32, 64, ... 160, from num_sm_parts */
    long max_splits = (parts + 31) / 32 * 32;
    double *oc = err_malloc((size_t)dv, sizeof(double));
    double *row = oacc ? NULL : err_malloc((size_t)(nsplit * dv), sizeof(double)); /* a row's splits, from binary32 */
    for (long r = 0; r < R; r++) {
        for (long i = 0; !oacc && i < nsplit; i++)
            vec_widen32(row + i * dv, oacc32 + (i * R + r) * dv, dv);
        double g2 = flashmla_combine(ctx, site_sum, site_scale, skip_zero, oc, oacc ? oacc + r * dv : row,
                                     oacc ? R * dv : dv, lse + r * nsplit, nsplit, dv, max_splits);
        if (ctx->lse) /* lse = g / M_LOG2E: g fl32(ln 2) with fast math, the IEEE quotient by fl32(M_LOG2E) without */
            ctx->lse[r] = flashmla_from_log2(ctx, site_scale, g2);
        for (long c = 0; c < dv; c++)
            o[r * dv + c] = attn_round(ctx, site_out, oc[c]);
    }
    free(oc);
    free(row);
}

ATTN_VARIANT(attn_flashmla)
{
    long R = g->R, dv = g->dv, sk = g->sk;
    fmla_t f = {g, ctx, 0, {NULL, NULL}, {NULL, NULL}, NULL, NULL, NULL, NULL};
    /* the kernel's scale_softmax_log2: the scale held in fp32, times log2 e in double, to fp32 */
    f.sl2 = ctx->site[P_EXP].exact ? ctx->cfg->scale * FMLA_LOG2E : (double)(float)((double)(float)ctx->cfg->scale * FMLA_LOG2E);
    for (int i = 0; i < 2; i++) {
        f.s[i] = err_malloc((size_t)(R * FMLA_BLOCK), sizeof(double));
        f.pb[i] = err_calloc((size_t)(R * FMLA_BLOCK), sizeof(double));
    }
    f.pb0s = err_malloc((size_t)(R * FMLA_BLOCK), sizeof(double));
    f.sc0 = err_malloc((size_t)R, sizeof(double));
    f.st = err_calloc((size_t)R, sizeof(fmla_row_t));
    double *lsum = err_malloc((size_t)R, sizeof(double)), *msum = err_malloc((size_t)R, sizeof(double));
    /* SM parts: sm_count / h_kv / ceil(q rows per KV head / 64), as flash_api.cpp chooses them
     * (this group is one KV head: R = s_q h_q / h_kv rows) */
    long parts = flashmla_parts(ctx, R);
    /* the scheduler sees the whole batch: this entry's splits depend on the others' keys */
    long alone = sk, nb = ctx->batch_n > 0 ? ctx->batch_n : 1, bi = ctx->batch_n > 0 ? ctx->batch_i : 0;
    const long *seqlens = ctx->batch_n > 0 ? ctx->batch_seqlens : &alone;
    long nblocks = (sk + FMLA_BLOCK - 1) / FMLA_BLOCK;
    long *begin = err_malloc((size_t)(parts + 1), sizeof(long));
    long first, total;
    /* FlashMLA 9241ae3's scheduler (no payload floor) or 9c5dfab's (two overheads at least) */
    const int old = ctx->cfg->flashmla_sched == ATTN_FMLA_SCHED_9C5DFAB;
    const long floor = old ? 2 * FMLA_OVERHEAD : 0;
    long nsplit = flashmla_splits(begin, &first, &total, seqlens, nb, bi, parts, floor);
    if (ctx->extra && bi == 0) /* --dump: the scheduler's metadata for the whole batch */
        flashmla_dump_schedule(ctx, seqlens, nb, parts, floor);
    if (nsplit <= 1) { /* the no-split path: O written by the split kernel itself */
        f.o = o;
        fmla_range(&f, 0, nblocks, lsum, msum);
        for (long i = 0; i < R * dv; i++)
            o[i] = attn_round(ctx, OUT_CAST, o[i]);
        /* lse = logf(L) + sM / M_LOG2E: FFMA(lg2(L), fl32(ln 2), fl32(sM fl32(ln 2))) under fast math,
         * fl32(fl32(sM / fl32(M_LOG2E)) + logf(L)) without; L == 0 gives +inf */
        for (long r = 0; r < R && ctx->lse; r++)
            ctx->lse[r] = lsum[r] == 0 || lsum[r] != lsum[r]
                              ? INFINITY
                              : gpu_logf_add(ctx, O_RESCALE, lsum[r], flashmla_from_log2(ctx, O_RESCALE, msum[r]));
    } else { /* each split's O rcp(L) and lg2(L) + sM, then the combine kernel */
        /* the splits' O kept as the binary32 values they are (o_div not exact: O rcp(L) in fp32), each made in
         * one buffer that stays in cache: half the memory the combine reads */
        const int f32 = !ctx->site[O_DIV].exact;
        double *oacc = f32 ? NULL : err_malloc((size_t)(nsplit * R * dv), sizeof(double));
        float *oacc32 = f32 ? err_malloc((size_t)(nsplit * R * dv), sizeof(float)) : NULL;
        double *ow = f32 ? err_malloc((size_t)(R * dv), sizeof(double)) : NULL;
        double *lse = err_malloc((size_t)(nsplit * R), sizeof(double));
        for (long i = 0; i < nsplit; i++) {
            f.o = f32 ? ow : oacc + i * R * dv;
            fmla_range(&f, begin[i], begin[i + 1], lsum, msum);
            if (f32)
                vec_narrow32(oacc32 + i * R * dv, ow, R * dv); /* exact */
            for (long r = 0; r < R; r++)
                lse[r * nsplit + i] = lsum[r] == 0 || lsum[r] != lsum[r]
                                          ? -INFINITY
                                          : gpu_f32(ctx, O_RESCALE, gpu_lg2(ctx, O_RESCALE, lsum[r]) + msum[r]);
            /* the split kernel's outputs as the kernel lays them out: [split][s_q h_q] rows,
             * row t h_q + h for query token t of head h */
            for (long r = 0; r < R && ctx->extra && ctx->shape; r++) {
                long hq = ctx->shape->hq, sq = ctx->shape->sq, row = (ctx->row0 + r) % sq * hq + (ctx->row0 + r) / sq;
                ctx->extra(ctx->extra_arg, "oaccum", total, sq * hq, first + i, row, f.o + r * dv, dv);
                ctx->extra(ctx->extra_arg, "lse_accum", total, sq * hq, first + i, row, lse + r * nsplit + i, 1);
            }
        }
        flashmla_combine_rows(ctx, L_SUM, O_RESCALE, OUT_CAST, old, o, oacc, oacc32, lse, R, nsplit, dv, parts);
        free(oacc);
        free(oacc32);
        free(ow);
        free(lse);
    }
    free(begin);
    free(lsum);
    free(msum);
    for (int i = 0; i < 2; i++) {
        free(f.s[i]);
        free(f.pb[i]);
    }
    free(f.pb0s);
    free(f.sc0);
    free(f.st);
}
