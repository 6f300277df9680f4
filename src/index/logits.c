/* logits -- the indexer's logits: exact (Golden), and as DeepGEMM's sm90 kernels compute them (index.h) */
#include "index/index.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "num/acc/acc.h"
#include "num/vec/dd.h"

#define IDX_QUAD 4 /* the lanes of a WGMMA accumulator row that share a key row's heads */

/* The valid key positions of row i gathered: their key rows' values into kb [n][D] (row order of positions), n. */
static long idx_gather(const idx_case_t *c, long i, double *kb, long *pos)
{
    long n = 0;
    for (long j = c->ks[i]; j < c->ke[i]; j++, n++) {
        memcpy(kb + n * c->D, c->k + idx_krow(c, i, j) * c->D, sizeof(double) * (size_t)c->D);
        pos[n] = j;
    }
    return n;
}

/* x[i][col] NAN, then the valid positions' values v[0..n) at their columns */
static void idx_put(const idx_case_t *c, double *x, long i, const long *pos, const double *v, long n)
{
    for (long col = 0; col < c->L; col++)
        x[i * c->L + col] = NAN;
    for (long t = 0; t < n; t++) {
        long col = c->compressed ? pos[t] - c->ks[i] : pos[t];
        if (col >= 0 && col < c->L)
            x[i * c->L + col] = v[t];
    }
}

/* One key's logit from its heads' dot products st[H] (the row's weights w[H], the key's scale ks). */
typedef double (*idx_logit_fn)(const idx_case_t *c, const double *st, const double *w, double ks);

/* Every row: its valid keys gathered, their dot products with the row's heads under acc (binary64: exact, as e4m3
 * products are multiples of 2^-18 below 2^18 and D <= 256 of them sum to fewer than 53 significant bits; the
 * kernel's WGMMA: keys (M) by heads (N), K = D in k-steps of 32, from zero), each key's logit by fn into x, and by
 * fn2 into x2 where x2 is given (the same products). */
static void idx_rows(const idx_case_t *c, acc_model_t acc, idx_logit_fn fn, double *x, idx_logit_fn fn2, double *x2)
{
    long D = c->D, H = c->H, kmax = c->nrows > c->L ? c->nrows : c->L;
    double *kb = err_malloc((size_t)(kmax * D), sizeof(double)), *s = err_malloc((size_t)(kmax * H), sizeof(double));
    double *v = err_malloc((size_t)kmax, sizeof(double));
    long *pos = err_malloc((size_t)kmax, sizeof(long));
    for (long i = 0; i < c->S; i++) {
        long n = idx_gather(c, i, kb, pos);
        acc_gemm_f(s, H, kb, D, c->q + i * H * D, D, 1, n, H, D, acc, FMT_E4M3, FMT_E4M3);
        for (int k = 0; k < (x2 ? 2 : 1); k++) {
            for (long t = 0; t < n; t++)
                v[t] = (k ? fn2 : fn)(c, s + t * H, c->w + i * H, c->kscale[idx_krow(c, i, pos[t])]);
            idx_put(c, k ? x2 : x, i, pos, v, n);
        }
    }
    free(kb), free(s), free(v), free(pos);
}

/* sum_h relu(st) w in double-double (each product exact), times ks, rounded once */
static double idx_exact_logit(const idx_case_t *c, const double *st, const double *w, double ks)
{
    dd_t sum = {0, 0};
    for (long h = 0; h < c->H; h++) {
        double r = st[h] > 0 ? st[h] : 0, p = r * w[h];
        sum = dd_add(sum, (dd_t){p, fma(r, w[h], -p)});
    }
    double hi = sum.hi * ks;
    dd_t z = dd_add((dd_t){hi, fma(sum.hi, ks, -hi)}, (dd_t){sum.lo * ks, 0});
    return z.hi + z.lo;
}

/* the kernel's sequence in binary64 (no rounding until the caller's cast) */
static double idx_binary64_logit(const idx_case_t *c, const double *st, const double *w, double ks)
{
    double sum = 0;
    for (long h = 0; h < c->H; h++)
        sum += (st[h] > 0 ? st[h] : 0) * w[h];
    return sum * ks;
}

/* the kernel's binary32 sequence: lane q sums heads 8j + 2q (a) and 8j + 2q + 1 (b), j in order, nvcc contracting
 * the first two terms t0 + t1 into FFMA(r0, w0, fl(r1 w1)), then FFMAs j = 2, 3, ...; (a + b) ks; the quad's
 * butterfly (xor 1, then xor 2); the cast */
static double idx_kernel_logit(const idx_case_t *c, const double *st, const double *w, double ks)
{
    long H = c->H;
    float lane[IDX_QUAD];
    for (int q = 0; q < IDX_QUAD; q++) {
        float sum[2];
        for (int ab = 0; ab < 2; ab++) {
            long h0 = 2 * q + ab;
            float r0 = st[h0] > 0 ? (float)st[h0] : 0.0f, a = r0 * (float)w[h0];
            if (H >= 16) {
                float r1 = st[h0 + 8] > 0 ? (float)st[h0 + 8] : 0.0f;
                a = fmaf(r0, (float)w[h0], r1 * (float)w[h0 + 8]);
            }
            for (long j = 2; j < H / 8; j++) {
                float r = st[8 * j + h0] > 0 ? (float)st[8 * j + h0] : 0.0f;
                a = fmaf(r, (float)w[8 * j + h0], a);
            }
            sum[ab] = a;
        }
        lane[q] = (sum[0] + sum[1]) * (float)ks;
    }
    float r = (lane[0] + lane[1]) + (lane[2] + lane[3]);
    return fmt_round((double)r, c->out, FMT_RNE, 0, NULL);
}

void idx_golden(const idx_case_t *c, double *g, double *seq)
{
    idx_rows(c, ACC_FP64, idx_exact_logit, g, idx_binary64_logit, seq);
}

void idx_deepgemm(const idx_case_t *c, double *x)
{
    idx_rows(c, ACC_TC_HOPPER_FP8_FAST, idx_kernel_logit, x, NULL, NULL);
}
