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

void idx_golden(const idx_case_t *c, double *g)
{
    long D = c->D, H = c->H, kmax = c->nrows > c->L ? c->nrows : c->L;
    double *kb = err_malloc((size_t)(kmax * D), sizeof(double)), *s = err_malloc((size_t)(kmax * H), sizeof(double));
    double *v = err_malloc((size_t)kmax, sizeof(double));
    long *pos = err_malloc((size_t)kmax, sizeof(long));
    for (long i = 0; i < c->S; i++) {
        long n = idx_gather(c, i, kb, pos);
        /* s[t][h] = q_h . k_t exactly: e4m3 products are multiples of 2^-18 below 2^18, so D <= 256 of them
         * sum to fewer than 53 significant bits */
        acc_gemm_f(s, H, kb, D, c->q + i * H * D, D, 1, n, H, D, ACC_FP64, FMT_E4M3, FMT_E4M3);
        for (long t = 0; t < n; t++) {
            dd_t sum = {0, 0};
            for (long h = 0; h < H; h++) {
                double r = s[t * H + h] > 0 ? s[t * H + h] : 0, w = c->w[i * H + h], p = r * w;
                sum = dd_add(sum, (dd_t){p, fma(r, w, -p)});
            }
            double ks = c->kscale[idx_krow(c, i, pos[t])], hi = sum.hi * ks;
            dd_t z = dd_add((dd_t){hi, fma(sum.hi, ks, -hi)}, (dd_t){sum.lo * ks, 0});
            v[t] = z.hi + z.lo;
        }
        idx_put(c, g, i, pos, v, n);
    }
    free(kb), free(s), free(v), free(pos);
}

void idx_deepgemm(const idx_case_t *c, int exact, double *x)
{
    long D = c->D, H = c->H, kmax = c->nrows > c->L ? c->nrows : c->L;
    double *kb = err_malloc((size_t)(kmax * D), sizeof(double)), *s = err_malloc((size_t)(kmax * H), sizeof(double));
    double *v = err_malloc((size_t)kmax, sizeof(double));
    long *pos = err_malloc((size_t)kmax, sizeof(long));
    for (long i = 0; i < c->S; i++) {
        long n = idx_gather(c, i, kb, pos);
        /* the WGMMA: keys (M) by the row's heads (N), K = D in k-steps of 32, from zero */
        acc_gemm_f(s, H, kb, D, c->q + i * H * D, D, 1, n, H, D, exact ? ACC_FP64 : ACC_TC_HOPPER_FP8_FAST, FMT_E4M3,
                   FMT_E4M3);
        const double *w = c->w + i * H;
        for (long t = 0; t < n; t++) {
            const double *st = s + t * H;
            double ks = c->kscale[idx_krow(c, i, pos[t])];
            if (exact) {
                double sum = 0;
                for (long h = 0; h < H; h++)
                    sum += (st[h] > 0 ? st[h] : 0) * w[h];
                v[t] = sum * ks;
                continue;
            }
            /* lane q: heads 8j + 2q (sum a) and 8j + 2q + 1 (sum b), j in order; nvcc contracts the first two
             * terms t0 + t1 into FFMA(r0, w0, fl(r1 w1)), then FFMAs j = 2, 3, ... */
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
            /* the quad's butterfly: xor 1, then xor 2 */
            float r = (lane[0] + lane[1]) + (lane[2] + lane[3]);
            v[t] = fmt_round((double)r, c->out, FMT_RNE, 0, NULL);
        }
        idx_put(c, x, i, pos, v, n);
    }
    free(kb), free(s), free(v), free(pos);
}
