/* stages -- the bench's timing: the BLAS reference attention, Golden and each variant on one sample per core and on
 * every core, paired ratios, peak memory, copy bandwidth, and the numpy and other-BLAS-kernel runs */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include "base/mem.h"
#include "config/opts.h"
#include "data/gen.h"
#include "num/acc/acc.h"
#include "num/acc/gemm_u8.h"
#include "num/fmt/fmt.h"
#include "num/vec/cpu.h"

#include "bench.h"

double bench_now(void)
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

double bench_median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

void bench_ref_attn(bench_ref_t *b, int fp64)
{
    int R = b->R, sk = b->sk, dk = b->dk, dv = b->dv;
    if (fp64) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, sk, dk, b->scale, b->q, dk, b->k, dk, 0.0, b->s, sk);
        for (int r = 0; r < R; r++) {
            double *row = b->s + (long)r * sk, m = -INFINITY, l = 0;
            for (int j = 0; j < sk; j++)
                m = row[j] > m ? row[j] : m;
            for (int j = 0; j < sk; j++)
                l += row[j] = exp(row[j] - m);
            for (int j = 0; j < sk; j++)
                row[j] /= l;
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, dv, sk, 1.0, b->s, sk, b->v, dv, 0.0, b->o, dv);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, sk, dk, (float)b->scale, b->q32, dk, b->k32, dk, 0.0f,
                b->s32, sk);
    for (int r = 0; r < R; r++) {
        float *row = b->s32 + (long)r * sk, m = -INFINITY, l = 0;
        for (int j = 0; j < sk; j++)
            m = row[j] > m ? row[j] : m;
        for (int j = 0; j < sk; j++)
            l += row[j] = expf(row[j] - m);
        for (int j = 0; j < sk; j++)
            row[j] /= l;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, dv, sk, 1.0f, b->s32, sk, b->v32, dv, 0.0f, b->o32, dv);
}

/* The reference at its best: the second of two back-to-back calls, on `threads` BLAS threads. */
double bench_ref_time(bench_ref_t *b, int fp64, int threads)
{
    openblas_set_num_threads(threads);
    double t0 = 0;
    for (int warm = 0; warm < 2; warm++) {
        t0 = bench_now();
        bench_ref_attn(b, fp64);
    }
    return bench_now() - t0;
}

/* One stage on one sample: slot 0 is Golden, slot v > 0 the run configuration's variant v. */
void bench_run_stage(const run_cfg_t *c, int slot, double *o, const attn_input_t *in)
{
    if (slot == 0) {
        golden_attention(o, in, 0);
        return;
    }
    attn_cfg_t acfg = c->vcfg[slot - 1];
    attn_stats_t st = {0};
    attn_ctx_t ctx;
    err_t e = {0};
    if (attn_ctx_init(&ctx, c->variants[slot - 1], &acfg, &st, &e) == ERR_OK)
        attn_run(o, c->variants[slot - 1], in, &ctx);
}

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0)
            v = atol(line + n + 1);
    if (f)
        fclose(f);
    return v;
}

/* Peak resident growth of one run of a stage, over the sample's inputs and outputs: in a
 * child forked while only the inputs exist, with the peak (VmHWM) reset first. */
double bench_stage_memory(const run_cfg_t *c, int slot, double *o, const attn_input_t *in)
{
    int fd[2];
    if (pipe(fd) != 0)
        return NAN;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        FILE *cr = fopen("/proc/self/clear_refs", "w");
        if (cr) {
            fputs("5", cr); /* reset VmHWM to the current resident size */
            fclose(cr);
        }
        long before = status_kb("VmRSS:");
        bench_run_stage(c, slot, o, in);
        double grow = (double)(status_kb("VmHWM:") - before) * 1024.0;
        const attn_shape_t *s = &in->s;
        double io = (double)(s->hq * s->sq * s->dk + s->hkv * s->sk * (s->dk + s->dv) + s->hq * s->sq * s->dv) * 8;
        double r = grow / io;
        ssize_t w = write(fd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    double r = NAN;
    if (read(fd[0], &r, sizeof r) != (ssize_t)sizeof r)
        r = NAN;
    close(fd[0]);
    waitpid(pid, NULL, 0);
    return r;
}

/* Time every stage: per core (one sample on one thread against BLAS on one thread) and on all
 * cores (one sample per thread, against BLAS on every thread), alternating with the reference. */
void bench_time(bench_stage_t *st, const run_cfg_t *c, const attn_input_t *in, bench_ref_t *b, int reps,
                       int threads)
{
    double t[BENCH_MAX_REPS], q[BENCH_MAX_REPS], ph[GOLDEN_T_N][BENCH_MAX_REPS];
    long per = in->s.hq * in->s.sq * in->s.dv;
    double *ot = malloc(sizeof(double) * (size_t)(per * threads));
    int fp64 = st->slot == 0;
    /* the ratio: the median of each run's time over the BLAS run just before it, so that a
     * machine whose speed drifts over minutes (a shared VM) is compared with itself */
    for (int i = 0; i < reps; i++) {
        double tr = bench_ref_time(b, fp64, 1), g0[GOLDEN_T_N], g1[GOLDEN_T_N];
        golden_times(g0);
        double t0 = bench_now();
        bench_run_stage(c, st->slot, ot, in);
        t[i] = bench_now() - t0;
        q[i] = t[i] / tr;
        golden_times(g1);
        for (int p = 0; p < GOLDEN_T_N; p++)
            ph[p][i] = (g1[p] - g0[p]) / tr;
    }
    st->t1 = bench_median(t, reps);
    st->r1 = bench_median(q, reps);
    for (int p = 0; p < GOLDEN_T_N; p++)
        st->phase[p] = bench_median(ph[p], reps);
    for (int i = 0; i < reps; i++) {
        double tr = bench_ref_time(b, fp64, threads), t0 = bench_now();
#pragma omp parallel num_threads(threads)
        bench_run_stage(c, st->slot, ot + (long)omp_get_thread_num() * per, in);
        t[i] = (bench_now() - t0) / threads;
        q[i] = t[i] / tr;
    }
    st->tn = bench_median(t, reps);
    st->rn = bench_median(q, reps);
    st->eff = st->t1 / (st->tn * threads);
    free(ot);
}

/* A stage's time over base's, one core: the median over reps pairs of runs, each pair the two stages back to
 * back (in turn which one first), so that both are timed on the machine as it is at that moment. */
double bench_paired_ratio(const run_cfg_t *c, int slot, int base_slot, const attn_input_t *in, int reps)
{
    double q[BENCH_MAX_REPS];
    long per = in->s.hq * in->s.sq * in->s.dv;
    double *ot = malloc(sizeof(double) * (size_t)per);
    for (int i = 0; i < reps; i++) {
        double t[2];
        for (int j = 0; j < 2; j++) {
            int which = (i + j) % 2; /* 0: the stage, 1: base */
            double t0 = bench_now();
            bench_run_stage(c, which ? base_slot : slot, ot, in);
            t[which] = bench_now() - t0;
        }
        q[i] = t[0] / t[1];
    }
    free(ot);
    return bench_median(q, reps);
}

/* Copy rate: the best of a few copies of 256 MB (one thread). */
double bench_bandwidth(void)
{
    size_t n = (size_t)1 << 25;
    double *a = malloc(n * sizeof *a), *b2 = malloc(n * sizeof *b2), best = INFINITY;
    memset(a, 1, n * sizeof *a);
    memset(b2, 0, n * sizeof *b2);
    for (int i = 0; i < 4; i++) {
        double t0 = bench_now();
        memcpy(b2, a, n * sizeof *a);
        best = fmin(best, bench_now() - t0);
    }
    free(a);
    free(b2);
    return (double)(n * sizeof(double)) / best; /* bytes copied per second */
}

/* bench/numpy_ref.py's Golden and base (t[0], t[1]: medians of reps runs, one BLAS thread) on
 * the bench's shape; 0 when it ran, else why not in why */
int bench_numpy_time(const char *script, long R, long sk, long dk, long dv, int reps, double t[2], char *why,
                      size_t nwhy)
{
    char cmd[1024]; /* Debian's interpreter first (it has python3-numpy), as tests/run.sh */
    snprintf(cmd, sizeof cmd,
             "for p in /usr/bin/python3 python3; do \"$p\" -c 'import numpy' 2>/dev/null && "
             "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 exec \"$p\" '%s' --reps %d --heads %ld --ctx %ld --dk %ld "
             "--dv %ld; done; exit 1",
             script, reps, R, sk, dk, dv);
    FILE *p = popen(cmd, "r");
    int n = p ? fscanf(p, "%lf %lf", &t[0], &t[1]) : 0;
    int rc = p ? pclose(p) : -1;
    if (n == 2 && rc == 0)
        return 0;
    snprintf(why, nwhy, "not timed: %s failed (python3 with numpy needed)", script);
    return 1;
}

/* The reference on another of OpenBLAS's kernels: this bench run again with OPENBLAS_CORETYPE=core
 * for Golden alone; t: BLAS FP64 attention, BLAS FP32 attention, Golden, per core. 0 when it ran */
int bench_blas_time_with(const char *self, const char *core, int reps, double t[3])
{
    char cmd[1024], line[512];
    snprintf(cmd, sizeof cmd, "OPENBLAS_CORETYPE=%s '%s' --reps %d --stages golden", core, self, reps);
    FILE *p = popen(cmd, "r");
    int got = 0;
    while (p && fgets(line, sizeof line, p))
        got |= (sscanf(line, "blas fp64 attention %lf", &t[0]) == 1) | (sscanf(line, "blas fp32 attention %lf", &t[1]) == 1) << 1 |
               (sscanf(line, "golden %lf", &t[2]) == 1) << 2;
    int rc = p ? pclose(p) : -1;
    return got == 7 && rc == 0 ? 0 : 1;
}
