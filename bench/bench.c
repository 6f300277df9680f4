/* bench -- seconds per sample of Golden, the variants and cast, against plain BLAS attention of
 * the same shape measured in the same run (the speed targets of the lab) */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "fmt.h"
#include "gen.h"
#include "golden.h"

void openblas_set_num_threads(int);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Plain attention through BLAS: S = Q K^T, row softmax with exp, O = P V / rowsum. */
static void blas_attn64(double *o, const double *q, const double *k, const double *v, double *s, int R, int sk,
                        int dk, int dv, double scale)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, sk, dk, scale, q, dk, k, dk, 0.0, s, sk);
    for (int r = 0; r < R; r++) {
        double *row = s + (long)r * sk, m = -INFINITY, l = 0;
        for (int j = 0; j < sk; j++)
            m = row[j] > m ? row[j] : m;
        for (int j = 0; j < sk; j++)
            l += row[j] = exp(row[j] - m);
        for (int j = 0; j < sk; j++)
            row[j] /= l;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, dv, sk, 1.0, s, sk, v, dv, 0.0, o, dv);
}

static void blas_attn32(float *o, const float *q, const float *k, const float *v, float *s, int R, int sk, int dk,
                        int dv, float scale)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, sk, dk, scale, q, dk, k, dk, 0.0f, s, sk);
    for (int r = 0; r < R; r++) {
        float *row = s + (long)r * sk, m = -INFINITY, l = 0;
        for (int j = 0; j < sk; j++)
            m = row[j] > m ? row[j] : m;
        for (int j = 0; j < sk; j++)
            l += row[j] = expf(row[j] - m);
        for (int j = 0; j < sk; j++)
            row[j] /= l;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, dv, sk, 1.0f, s, sk, v, dv, 0.0f, o, dv);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    long R = 128, sk = 8192, dk = 576, dv = 512;
    attn_input_t in = {{R, 1, 1, sk, dk, dv, 0}, NULL, NULL, NULL};
    gen_cfg_t g = {GEN_NORMAL, 0, 1, -1, 1, 0, FMT_BF16, {64, 0, 0, 0, 0, 0}};
    err_t e = {0};
    gen_sample(&in, &g, 1, 0, &e);
    double scale = 1.0 / sqrt((double)dk);
    double *o = malloc(sizeof(double) * (size_t)(R * dv)), *s64 = malloc(sizeof(double) * (size_t)(R * sk));
    float *q32 = malloc(sizeof(float) * (size_t)(R * dk)), *k32 = malloc(sizeof(float) * (size_t)(sk * dk)),
          *v32 = malloc(sizeof(float) * (size_t)(sk * dv)), *o32 = malloc(sizeof(float) * (size_t)(R * dv)),
          *s32 = malloc(sizeof(float) * (size_t)(R * sk));
    for (long i = 0; i < R * dk; i++)
        q32[i] = (float)in.q[i];
    for (long i = 0; i < sk * dk; i++)
        k32[i] = (float)in.k[i];
    for (long i = 0; i < sk * dv; i++)
        v32[i] = (float)in.v[i];
    double t[16];
    openblas_set_num_threads(threads);
    printf("# one MLA decode sample: G %ld, ctx %ld, Dk %ld, Dv %ld, BF16 inputs; medians of %d runs\n", R, sk, dk, dv,
           reps);
    printf("# BLAS references use %d threads; the lab runs one sample per thread (samples in parallel), so its\n"
           "# per-sample cost on %d cores is the single-thread time / %d ('effective')\n", threads, threads, threads);
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        blas_attn64(o, in.q, in.k, in.v, s64, (int)R, (int)sk, (int)dk, (int)dv, scale);
        t[i] = now() - t0;
    }
    double b64 = median(t, reps);
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        blas_attn32(o32, q32, k32, v32, s32, (int)R, (int)sk, (int)dk, (int)dv, (float)scale);
        t[i] = now() - t0;
    }
    double b32 = median(t, reps);
    printf("%-24s %10s %12s %10s %8s %s\n", "stage", "s (1 thr)", "effective s", "ratio", "target", "met");
    printf("%-24s %10s %12.4f %10s\n", "blas fp64 attention", "-", b64, "1");
    printf("%-24s %10s %12.4f %10s\n", "blas fp32 attention", "-", b32, "1");
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        golden_attention(o, &in, 0);
        t[i] = now() - t0;
    }
    double gt = median(t, reps);
    printf("%-24s %10.4f %12.4f %10.2f %8s %s\n", "golden", gt, gt / threads, gt / threads / b64, "<= 4", gt / threads / b64 <= 4 ? "yes" : "no");
    static const char *const vs[] = {"standard", "base", "amla", "seesaw", "etap", "fastattn", "snapmla",
                                     "flashmla-fp8", "fa3-fp8", "base:acc=tc-hopper"};
    for (size_t vi = 0; vi < sizeof vs / sizeof vs[0]; vi++) {
        attn_cfg_t c;
        memset(&c, 0, sizeof c);
        c.in_format = c.out_format = FMT_BF16;
        c.block = 512;
        c.acc_qk = c.acc_pv = ACC_FP32_FMA;
        c.scale = scale;
        c.rope_dims = 64;
        c.fa3_block = c.fa3_hadamard = 1;
        int tc = strchr(vs[vi], ':') != NULL;
        if (tc)
            c.acc_qk = c.acc_pv = ACC_TC_HOPPER;
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(vs[vi], ":"), vs[vi]);
        int id = attn_find(name);
        int n = reps;
        for (int i = 0; i < n; i++) {
            attn_stats_t st = {0};
            attn_ctx_t ctx;
            attn_ctx_init(&ctx, id, &c, &st, &e);
            double t0 = now();
            attn_run(o, id, &in, &ctx);
            t[i] = now() - t0;
        }
        double vt = median(t, n), r = vt / threads / b32, target = tc ? 10 : 3;
        printf("%-24s %10.4f %12.4f %10.2f %8s %s\n", vs[vi], vt, vt / threads, r, tc ? "<= 10" : "<= 3",
               r <= target ? "yes" : "no");
    }
    /* cast: binary32 arrays to each narrow format, RNE (fmt_cast_f32, what `cast --in` runs),
     * values per second on one core; 2^24 values, output pages touched before timing */
    long nv = 1L << 24;
    float *xs = malloc(sizeof(float) * (size_t)nv);
    uint32_t *codes = calloc((size_t)nv, sizeof(uint32_t));
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 3);
    for (long i = 0; i < nv; i++)
        xs[i] = (float)(ldexp((double)(fmt_rng_next(&rng) >> 11), -53) * 8 - 4);
    const fmt_id_t fs[] = {FMT_BF16, FMT_FP16, FMT_E4M3, FMT_E5M2};
    for (int fi = 0; fi < 4; fi++) {
        for (int i = 0; i < reps; i++) {
            double t0 = now();
            fmt_cast_f32(codes, xs, nv, fs[fi], 0);
            t[i] = now() - t0;
        }
        double rate = (double)nv / median(t, reps);
        char what[32];
        snprintf(what, sizeof what, "cast fp32->%s", fmt_table[fs[fi]].name);
        printf("%-24s %10.3g values/s/core %17s %s\n", what, rate, ">= 1e9", rate >= 1e9 ? "yes" : "no");
    }
    free(xs);
    free(codes);
    free(o);
    free(s64);
    free(q32);
    free(k32);
    free(v32);
    free(o32);
    free(s32);
    gen_free(&in);
    return 0;
}
