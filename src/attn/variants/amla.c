/* amla -- AMLA Algorithm 2: rescaling by INT32 addition on FP32 bit patterns, with the
 * error compensation of Appendix A, and its ablations (no compensation, pre-multiplication) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/variants.h"
#include "num/vec/cpu.h"

/* Named constants of Algorithm 2 (the AMLA paper, Algorithm 2, lines 9-12). */
#define AMLA_N_CLAMP (-30)      /* N <- max(n_i - n_{i-1}, -30) */
#define AMLA_EPS_GAIN 1.5f      /* eps <- 1.5 (c ratio - 1): mantissa midpoint M = 2^22 */
#define AMLA_N_BIAS 1e-6f       /* N <- ... + 1e-6 */
#define AMLA_MANT_SCALE 0x1p23f /* Cast_to_int32(N * 2^23) */
#define AMLA_CANN_CLAMP 1e10    /* CANN: |O| > 1e10 after the division is set to 0 */
#define AMLA_LN2 0x1.62e42fefa39efp-1

#define AMLA_SITES(X) \
    X(QK_ACC, "qk_acc", "S_i = Q K_i^T (line 4, Cube)", SITE_ACC_QK, FMT_FP32, FMT_RNE, 0) \
    X(S_SCALE, "s_scale", "S_i / sqrt(Dk) in fp32 (line 5)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_EXP, "p_exp", "P_i = exp(S_i - m_i), M_up = exp(m_{i-1} - m_i) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(L_SUM, "l_sum", "l_i = l_{i-1} M_up + rowsum(P_i), fp32 in order", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(AMLA_SCALE, "amla_scale", "S32 = exp(ln2 (n_i + m_i/ln2)) in fp32 (line 7)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(S16_CAST, "s16_cast", "S16 = Cast_to_BF16(S32) (line 8; the P.V input format)", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(AMLA_COMP, "amla_comp", "c_i = S32/S16, eps, N in fp32 (lines 9, 11)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_SCALE, "p_scale", "P_i S16 in fp32 (line 10)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_CAST, "p_cast", "P_i S16 cast for P.V (line 10)", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(PV_ACC, "pv_acc", "O_i = P_i V_i (line 17, Cube)", SITE_ACC_PV, FMT_FP32, FMT_RNE, 0) \
    X(AMLA_INT_ADD, "amla_int_add", "O rescale as INT32 add of round(N 2^23) to O's bits (14)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(O_ACC, "o_acc", "O <- O + O_i, the FP32 AtomicAdd (line 18)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(O_DIV, "o_div", "O / (l_N S16) in fp32 (line 20)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { AMLA_SITES(SITE_ENUM) };

const site_def_t attn_amla_sites[] = {AMLA_SITES(SITE_ROW) SITE_END};

/* The INT32 add on the bits u of one FP32 value: the sum's bits in *r, 1 where it is an event. */
static inline int amla_int_add_bits(uint32_t *r, uint32_t u, int32_t n)
{
    *r = u + (uint32_t)n; /* two's complement wrap-around: defined for uint32_t */
    /* Lemma 3.1 holds when the operand is normal and the magnitude bits plus n stay within
     * the normal exponent fields 1..254 (no wrap into the sign bit or around it) */
    uint32_t e = (u >> 23) & 0xFF;
    int64_t mag = (int64_t)(u & 0x7FFFFFFFu) + n;
    return e == 0 || e == 0xFF || mag < ((int64_t)1 << 23) || mag >= ((int64_t)0xFF << 23);
}

int attn_amla_int_add(float *x, int32_t n)
{
    uint32_t u, r;
    memcpy(&u, x, sizeof u);
    int ev = amla_int_add_bits(&r, u, n);
    memcpy(x, &r, sizeof r);
    return ev;
}

/* O's row x[0:n] (binary32 values) rescaled by the INT32 add of n to each one's bits; the events
 * counted. One loop the compiler vectorizes; an AVX-512 build of it where the processor has it. */
static inline __attribute__((always_inline)) long amla_int_add_row_body(double *x, long len, int32_t n)
{
    long events = 0;
#pragma omp simd reduction(+ : events)
    for (long c = 0; c < len; c++) {
        float f = (float)x[c];
        uint32_t u, r;
        memcpy(&u, &f, sizeof u);
        events += amla_int_add_bits(&r, u, n);
        memcpy(&f, &r, sizeof f);
        x[c] = f;
    }
    return events;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512dq,avx512vl,avx2"))) static long amla_int_add_row_x16(double *x, long len,
                                                                                          int32_t n)
{
    return amla_int_add_row_body(x, len, n);
}
#endif

static long amla_int_add_row(double *x, long len, int32_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512())
        return amla_int_add_row_x16(x, len, n);
#endif
    return amla_int_add_row_body(x, len, n);
}

/* The form's integer rounding: the paper's Cast_to_int32/round (ties to even, as rint),
 * or CANN's CAST_ROUND (ties away from zero). */
static double amla_rint(double x, int form)
{
    return form == ATTN_AMLA_CANN ? round(x) : nearbyint(x);
}

typedef enum { AMLA_FULL, AMLA_NOCOMP, AMLA_PREMUL } amla_kind_t;

/* Per row state across KV blocks. */
typedef struct {
    double m, l, n, c, s16, s32;
    int started;
    int add;      /* rescale O before adding this block's P V */
    int32_t nint; /* Cast_to_int32(N 2^23) */
    double factor; /* the rescale the add stands for: 2^(n_i - n_{i-1}) (1 + eps/1.5) */
} amla_row_t;

static void amla_core(double *o, const attn_group_t *g, attn_ctx_t *ctx, amla_kind_t kind)
{
    long R = g->R, B = attn_tile(ctx, g->sk), dv = g->dv;
    int form = ctx->cfg->amla_form;
    double *s = err_malloc((size_t)(R * B), sizeof(double));
    double *t = err_malloc((size_t)(R * dv), sizeof(double));
    amla_row_t *st = err_calloc((size_t)R, sizeof *st);
    double *tmax = err_malloc((size_t)R, sizeof(double));
    long *valid = err_malloc((size_t)R, sizeof(long));
    double scale = attn_round(ctx, S_SCALE, ctx->cfg->scale);
    double ln2 = attn_round(ctx, AMLA_SCALE, AMLA_LN2);
    long events = 0;
    for (long r = 0; r < R; r++) {
        st[r].m = -INFINITY;
        st[r].c = 1.0;
    }
    for (long i = 0; i < R * dv; i++)
        o[i] = 0.0;
    /* with no stochastic site, P S16's scale and cast as passes over a row */
    int draws = 0;
    for (int site = QK_ACC; site <= OUT_CAST; site++)
        draws |= attn_site_draws(ctx, site);

    for (long j0 = 0; j0 < g->sk; j0 += B) {
        long nb = g->sk - j0 < B ? g->sk - j0 : B;
        attn_tile_scores(s, valid, tmax, ctx, QK_ACC, S_SCALE, g, j0, nb, scale); /* lines 4-5 */
        for (long r = 0; r < R; r++) {
            amla_row_t *w = &st[r];
            double *row = s + r * nb;
            w->add = 0;
            if (valid[r] <= 0)
                continue;
            double mnew = tmax[r] > w->m ? tmax[r] : w->m;
            double mup = attn_round(ctx, P_EXP, exp(attn_round(ctx, P_EXP, w->m - mnew)));
            /* line 6: n_i = round(-m_i / ln2) */
            double mq = attn_round(ctx, AMLA_SCALE, mnew / ln2);
            double nnew = amla_rint(-mq, form);
            double sum = attn_exp_row(ctx, P_EXP, L_SUM, row, nb, valid[r], mnew);
            w->l = attn_round(ctx, L_SUM, attn_round(ctx, L_SUM, w->l * mup) + sum);
            /* lines 7-9 */
            double s32 = attn_round(ctx, AMLA_SCALE,
                                    exp(attn_round(ctx, AMLA_SCALE, ln2 * attn_round(ctx, AMLA_SCALE, nnew + mq))));
            double s16 = attn_round(ctx, S16_CAST, s32);
            double cnew = attn_round(ctx, AMLA_COMP, s32 / s16);
            double ratio = form == ATTN_AMLA_CANN ? attn_round(ctx, AMLA_COMP, w->c / cnew)
                                                  : attn_round(ctx, AMLA_COMP, cnew / w->c);
            double eps = 0.0;
            if (kind == AMLA_FULL)
                eps = attn_round(ctx, AMLA_COMP, AMLA_EPS_GAIN * attn_round(ctx, AMLA_COMP, ratio - 1.0));
            /* line 10: P_i S16, cast */
            if (draws)
                for (long c = 0; c < nb; c++)
                    row[c] = attn_round(ctx, P_CAST, attn_round(ctx, P_SCALE, row[c] * s16));
            else {
                for (long c = 0; c < nb; c++)
                    row[c] = row[c] * s16;
                attn_round_n(ctx, P_SCALE, row, nb);
                attn_round_n(ctx, P_CAST, row, nb);
            }
            /* lines 11-12 */
            if (w->started) {
                double dn = nnew - w->n;
                double nclamp = dn < AMLA_N_CLAMP ? AMLA_N_CLAMP : dn;
                double nf = attn_round(ctx, AMLA_COMP, attn_round(ctx, AMLA_COMP, nclamp + eps) + AMLA_N_BIAS);
                w->nint = (int32_t)amla_rint(nf * AMLA_MANT_SCALE, form);
                w->factor = ldexp(1.0 + (kind == AMLA_FULL ? ratio - 1.0 : 0.0), (int)dn);
                w->add = 1;
            }
            w->m = mnew;
            w->n = nnew;
            w->c = cnew;
            w->s16 = s16;
            w->s32 = s32;
            w->started = 1;
        }
        /* lines 13-18: INT32 AtomicAdd on O's bits, then FP32 AtomicAdd of P V */
        attn_gemm(ctx, PV_ACC, t, dv, s, nb, g->v + j0 * dv, dv, 0, R, dv, nb);
        int exact_add = ctx->site[AMLA_INT_ADD].exact;
        for (long r = 0; r < R; r++) { /* the rescale of the row, then its sum with P V (no site draws here) */
            double *x = o + r * dv;
            const double *tr = t + r * dv;
            if (st[r].add && exact_add)
                for (long c = 0; c < dv; c++)
                    x[c] *= st[r].factor;
            else if (st[r].add)
                events += amla_int_add_row(x, dv, st[r].nint);
            if (attn_site_draws(ctx, O_ACC))
                for (long c = 0; c < dv; c++)
                    x[c] = attn_round(ctx, O_ACC, x[c] + tr[c]);
            else {
                for (long c = 0; c < dv; c++)
                    x[c] = x[c] + tr[c];
                attn_round_n(ctx, O_ACC, x, dv);
            }
        }
    }
    /* line 20: O / (l_N S16); pre-multiplication without compensation assumes the
     * accumulator carries the exact 1/r_N = S32 */
    for (long r = 0; r < R; r++) {
        double den = attn_round(ctx, O_DIV, st[r].l * (kind == AMLA_PREMUL ? st[r].s32 : st[r].s16));
        for (long c = 0; c < dv; c++) {
            double *x = &o[r * dv + c];
            double y = attn_round(ctx, O_DIV, *x / den);
            if (form == ATTN_AMLA_CANN && fabs(y) > AMLA_CANN_CLAMP)
                y = 0.0;
            *x = attn_round(ctx, OUT_CAST, y);
        }
    }
    ctx->stats->events += events;
    free(s);
    free(t);
    free(st);
    free(tmax);
    free(valid);
}

ATTN_VARIANT(attn_amla) { amla_core(o, g, ctx, AMLA_FULL); }

ATTN_VARIANT(attn_amla_nocomp) { amla_core(o, g, ctx, AMLA_NOCOMP); }

ATTN_VARIANT(attn_amla_premul) { amla_core(o, g, ctx, AMLA_PREMUL); }
