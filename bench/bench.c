/* bench -- seconds per sample of Golden, every registered variant and every accumulation model,
 * per core and on all cores, against a plain BLAS attention of the same shape measured in the
 * same run (the lab's speed targets); writes results/bench.md with --md */
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

#include "attn/attn.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/opts.h"
#include "data/gen.h"
#include "num/acc/acc.h"
#include "num/vec/cpu.h"
#include "num/fmt/fmt.h"
#include "num/acc/gemm_u8.h"
#include "ref/golden.h"

#include "floors.h"
#include "machine.h"

void openblas_set_num_threads(int);

/* The targets: stage time over the reference's, per core. */
#define BENCH_TARGET_GOLDEN 2.0   /* Golden against FP64 BLAS attention */
#define BENCH_TARGET_PLAIN 2.0    /* a variant on its default arithmetic, against FP32 BLAS */
#define BENCH_TARGET_TC 4.0       /* a tensor-core accumulation model (a variant's own, or --acc) */
#define BENCH_TARGET_FLASHMLA 3.0 /* flashmla and flashmla-sparse against base, per sample */
#define BENCH_TARGET_CAST 1e9     /* array casts, values per second per core */
#define BENCH_TARGET_NUMPY 0.5    /* the lab's Golden + base against bench/numpy_ref.py's */
#define BENCH_MAX_REPS 64
#define BENCH_MAX_STAGES 64

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

/* The reference: plain attention through BLAS (S = Q K^T, row softmax with exp, O = P V), in
 * binary64 for Golden and binary32 for the variants. */
typedef struct {
    int R, sk, dk, dv;
    double scale, *q, *k, *v, *o, *s;
    float *q32, *k32, *v32, *o32, *s32;
} bench_ref_t;

static void ref_attn(bench_ref_t *b, int fp64)
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
static double ref_time(bench_ref_t *b, int fp64, int threads)
{
    openblas_set_num_threads(threads);
    double t0 = 0;
    for (int warm = 0; warm < 2; warm++) {
        t0 = now();
        ref_attn(b, fp64);
    }
    return now() - t0;
}

/* One stage on one sample: slot 0 is Golden, slot v > 0 the run configuration's variant v. */
static void run_stage(const run_cfg_t *c, int slot, double *o, const attn_input_t *in)
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
static double stage_memory(const run_cfg_t *c, int slot, double *o, const attn_input_t *in)
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
        run_stage(c, slot, o, in);
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

typedef struct {
    const char *name;
    int slot;
    double target, t1, r1, tn, rn, eff, mem;
    double phase[GOLDEN_T_N]; /* Golden: each phase's time over the BLAS run's, medians (golden_times) */
} bench_stage_t;

/* Time every stage: per core (one sample on one thread against BLAS on one thread) and on all
 * cores (one sample per thread, against BLAS on every thread), alternating with the reference. */
static void bench_time(bench_stage_t *st, const run_cfg_t *c, const attn_input_t *in, bench_ref_t *b, int reps,
                       int threads)
{
    double t[BENCH_MAX_REPS], q[BENCH_MAX_REPS], ph[GOLDEN_T_N][BENCH_MAX_REPS];
    long per = in->s.hq * in->s.sq * in->s.dv;
    double *ot = malloc(sizeof(double) * (size_t)(per * threads));
    int fp64 = st->slot == 0;
    /* the ratio: the median of each run's time over the BLAS run just before it, so that a
     * machine whose speed drifts over minutes (a shared VM) is compared with itself */
    for (int i = 0; i < reps; i++) {
        double tr = ref_time(b, fp64, 1), g0[GOLDEN_T_N], g1[GOLDEN_T_N];
        golden_times(g0);
        double t0 = now();
        run_stage(c, st->slot, ot, in);
        t[i] = now() - t0;
        q[i] = t[i] / tr;
        golden_times(g1);
        for (int p = 0; p < GOLDEN_T_N; p++)
            ph[p][i] = (g1[p] - g0[p]) / tr;
    }
    st->t1 = median(t, reps);
    st->r1 = median(q, reps);
    for (int p = 0; p < GOLDEN_T_N; p++)
        st->phase[p] = median(ph[p], reps);
    for (int i = 0; i < reps; i++) {
        double tr = ref_time(b, fp64, threads), t0 = now();
#pragma omp parallel num_threads(threads)
        run_stage(c, st->slot, ot + (long)omp_get_thread_num() * per, in);
        t[i] = (now() - t0) / threads;
        q[i] = t[i] / tr;
    }
    st->tn = median(t, reps);
    st->rn = median(q, reps);
    st->eff = st->t1 / (st->tn * threads);
    free(ot);
}

/* A stage's time over base's, one core: the median over reps pairs of runs, each pair the two stages back to
 * back (in turn which one first), so that both are timed on the machine as it is at that moment. */
static double paired_ratio(const run_cfg_t *c, int slot, int base_slot, const attn_input_t *in, int reps)
{
    double q[BENCH_MAX_REPS];
    long per = in->s.hq * in->s.sq * in->s.dv;
    double *ot = malloc(sizeof(double) * (size_t)per);
    for (int i = 0; i < reps; i++) {
        double t[2];
        for (int j = 0; j < 2; j++) {
            int which = (i + j) % 2; /* 0: the stage, 1: base */
            double t0 = now();
            run_stage(c, which ? base_slot : slot, ot, in);
            t[which] = now() - t0;
        }
        q[i] = t[0] / t[1];
    }
    free(ot);
    return median(q, reps);
}

/* Copy rate: the best of a few copies of 256 MB (one thread). */
static double bench_bandwidth(void)
{
    size_t n = (size_t)1 << 25;
    double *a = malloc(n * sizeof *a), *b2 = malloc(n * sizeof *b2), best = INFINITY;
    memset(a, 1, n * sizeof *a);
    memset(b2, 0, n * sizeof *b2);
    for (int i = 0; i < 4; i++) {
        double t0 = now();
        memcpy(b2, a, n * sizeof *a);
        best = fmin(best, now() - t0);
    }
    free(a);
    free(b2);
    return (double)(n * sizeof(double)) / best; /* bytes copied per second */
}

static const char *met(double r, double target)
{
    return r <= target ? "yes" : "no";
}

/* 1 when name is one of the comma-separated list's items */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* bench/numpy_ref.py's Golden and base (t[0], t[1]: medians of reps runs, one BLAS thread) on
 * the bench's shape; 0 when it ran, else why not in why */
static int numpy_time(const char *script, long R, long sk, long dk, long dv, int reps, double t[2], char *why,
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
static int blas_time_with(const char *self, const char *core, int reps, double t[3])
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

/* Where OpenBLAS fell back to a pre-AVX kernel on a processor it does not know, the bench runs
 * itself again on OpenBLAS's widest kernels for the processor's extensions (OpenBLAS reads
 * OPENBLAS_CORETYPE when it is loaded), noting the fallback in BENCH_BLAS_FALLBACK; returns
 * only where no new run is needed (or it could not be started). */
#define BENCH_FALLBACK_ENV "AMLA_BENCH_BLAS_FALLBACK"
static void bench_native_blas(char **argv)
{
    if (getenv(BENCH_FALLBACK_ENV))
        return;
    machine_t m;
    machine_describe(&m);
    const char *native = machine_blas_native(&m, openblas_get_corename());
    if (!native)
        return;
    fprintf(stderr, "bench: OpenBLAS took its %s kernels on this processor (family %d model %d, which it does not "
                    "know); running on its %s kernels instead\n",
            openblas_get_corename(), m.family, m.model, native);
    if (setenv(BENCH_FALLBACK_ENV, openblas_get_corename(), 1) || setenv("OPENBLAS_CORETYPE", native, 1))
        return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    perror("bench: execv");
}

/* The report's lines on the processor: its extensions, its FMA rate at both widths, and the BLAS
 * kernels the table is against (where OpenBLAS fell back, what the fallback takes: ref1 is the
 * table's FP64 and FP32 attention) */
static void bench_md_machine(FILE *f, const machine_t *m, const char *self, int reps, const double ref1[2])
{
    char isa[256];
    double r512, r256;
    machine_isa(isa, sizeof isa, m);
    machine_fma_rates(&r512, &r256);
    fprintf(f, "- Processor: %s, %s family %d model %d stepping %d; %s.", m->name, m->vendor, m->family, m->model,
            m->stepping, isa);
    if (r512 > 0 && r256 > 0)
        fprintf(f, " Binary32 FMAs measured on one core (twelve independent chains): %.3g per second in 512-bit vectors, "
                   "%.3g in 256-bit ones, %.2f times as many: %s.",
                r512, r256, r512 / r256,
                r512 > 1.6 * r256 ? "512-bit vectors at full rate (two 512-bit FMA units)"
                : r512 < 1.2 * r256 ? "512-bit vectors at half rate (no more multiply-adds per second than 256-bit ones)"
                                    : "512-bit vectors between half and full rate");
    else if (r256 > 0)
        fprintf(f, " Binary32 FMAs measured on one core (twelve independent chains): %.3g per second in 256-bit vectors.",
                r256);
    const char *fell = getenv(BENCH_FALLBACK_ENV);
    fprintf(f, "\n- BLAS: %s ran its %s kernels for the reference (numpy's too)", openblas_get_config(),
            openblas_get_corename());
    double t[3];
    if (fell && blas_time_with(self, fell, reps, t) == 0)
        fprintf(f, ". On its own it took its %s kernels here, the fallback it runs on a processor it does not know "
                   "(this model is newer than its tables), so the bench ran itself with `OPENBLAS_CORETYPE=%s`, the "
                   "kernels it picks for a processor of these extensions that it knows; on %s the FP64 attention takes "
                   "%.4f s (%.2f× this table's) and the FP32 one %.4f s (%.2f×), so every ratio against them would "
                   "read that much lower",
                fell, openblas_get_corename(), fell, t[0], t[0] / ref1[0], t[1], t[1] / ref1[1]);
    fprintf(f, ". The lab's GEMM and tensor-core models run their %s kernels (the widest this processor has; every "
               "width gives the same bits).\n\n",
            cpu_has_avx512() ? "AVX-512" : cpu_has_avx2_fma() ? "AVX2" : "scalar");
}

/* The report's floors (floors.c): each kernel's time for the sample's two products alone and its ratio to the
 * FP32 BLAS attention timed just before it, and for each kind of stage whether its target leaves room for the rest
 * of its work; flashmla's products alone against base's whole time (rbase: base's ratio in the table, NAN where
 * base did not run). */
static void bench_md_floors(FILE *f, const floors_t *fl, double rbase)
{
    const struct {
        const char *what;
        double t, r, target;
    } k[] = {
        {"FP32 fma chains (base's products, and those of every variant on fp32-fma)", fl->fp32, fl->r_fp32,
         BENCH_TARGET_PLAIN},
        {"FP16 accumulator (fastattn-fp16acc, base with fp16-acc)", fl->fp16acc, fl->r_fp16acc, BENCH_TARGET_PLAIN},
        {"tensor-core block model, tc-hopper (flashmla, fa2, the SDPA kernels, base with tc-*)", fl->tc, fl->r_tc,
         BENCH_TARGET_TC},
        {"its terms alone, on operands in cache: a product, its scaling, truncating conversion and integer "
         "addition per product, nothing of a block's exponent maximum or normalization (the tensor-core models' "
         "formulation)",
         fl->terms, fl->r_terms, BENCH_TARGET_TC},
    };
    fprintf(f, "- Floors (bench/floors.c): the sample's two products alone (Q K^T, then P V with P BF16 values in "
               "(0, 1]), through the lab's GEMM as base makes them under each model (blocks of 512 keys, Q held), K "
               "and V read from memory as a stage reads them; one core, three runs, each after an FP32 BLAS attention "
               "(the ratio: the median of each run's time over the BLAS run's before it). A stage is no faster than "
               "its products:\n\n"
               "| kernel | the two products, s | × FP32 BLAS attention | target of its stages |\n"
               "| --- | ---: | ---: | ---: |\n");
    for (int i = 0; i < 4; i++)
        if (k[i].t > 0)
            fprintf(f, "| %s | %.4f | %.2f | ≤ %.0f |\n", k[i].what, k[i].t, k[i].r, k[i].target);
    /* a floor this far above a target puts the target out of this kernel's reach whatever the drift of the
     * machine's speed between runs (about 15%, README); nearer, only "above" */
    const double sure = 1.15;
    fprintf(f, "\n  The FP16 accumulator's products alone take %.2f× the FP32 BLAS attention here, %s its stages' "
               "target of %.0f%s. The tensor-core model's take %.2f×",
            fl->r_fp16acc, fl->r_fp16acc > BENCH_TARGET_PLAIN ? "above" : "within", BENCH_TARGET_PLAIN,
            fl->r_fp16acc > sure * BENCH_TARGET_PLAIN
                ? ": out of reach of this kernel on this processor (binary64 lanes: four multiply-adds and a "
                  "five-operation rounding per four products, eight lanes a vector, where the reference does sixteen "
                  "products a fused multiply-add)"
                : "",
            fl->r_tc);
    if (fl->r_tc < BENCH_TARGET_TC)
        fprintf(f, ": a stage on it meets %.0f× only where the rest of its work (the softmax, the combination of "
                   "blocks, its operands' conversion beyond these) takes less than %.2f FP32 BLAS attentions.",
                BENCH_TARGET_TC, BENCH_TARGET_TC - fl->r_tc);
    else
        fprintf(f, ", above its stages' target of %.0f%s.", BENCH_TARGET_TC,
                fl->r_tc > sure * BENCH_TARGET_TC ? ": out of reach of this kernel on this processor" : "");
    if (!isnan(rbase)) {
        double r = fl->r_tc / rbase;
        fprintf(f, " flashmla's products alone take %.2f× base's whole time in this run, %s the target of flashmla / "
                   "base, %.0f%s.",
                r, r > BENCH_TARGET_FLASHMLA ? "above" : "within", BENCH_TARGET_FLASHMLA,
                r > sure * BENCH_TARGET_FLASHMLA ? ": out of reach of this kernel on this processor" : "");
    }
    fprintf(f, "\n");
}

/* the FP32 BLAS attention once more, for floors_measure's pairs */
static double ref32_time(void *b)
{
    return ref_time(b, 0, 1);
}

/* --gemm: the lab's GEMMs against OpenBLAS's on the attention's two products, one thread, the same
 * operands (BF16 values; P: exp(-|N(0,1)|) rounded to BF16): Q K^T of R x sk x dk (K transposed) and
 * P V of R x dv x sk, fp32-fma against sgemm and fp64 against dgemm, each the best of reps runs, the
 * two alternated; the ratio is the lab's time over BLAS's. */
static void bench_gemm(const double *q, const double *k, const double *v, long R, long sk, long dk, long dv, int reps)
{
    double *p = malloc(sizeof(double) * (size_t)(R * sk)), *c = malloc(sizeof(double) * (size_t)(R * (sk > dv ? sk : dv)));
    float *qf = malloc(sizeof(float) * (size_t)(R * dk)), *kf = malloc(sizeof(float) * (size_t)(sk * dk));
    float *vf = malloc(sizeof(float) * (size_t)(sk * dv)), *pf = malloc(sizeof(float) * (size_t)(R * sk));
    float *cf = malloc(sizeof(float) * (size_t)(R * (sk > dv ? sk : dv)));
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 7);
    for (long i = 0; i < R * sk; i++) {
        double u1 = ((double)(fmt_rng_next(&rng) >> 11) + 0.5) * 0x1p-53, u2 = (double)(fmt_rng_next(&rng) >> 11) * 0x1p-53;
        p[i] = fmt_round(exp(-fabs(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2))), FMT_BF16, FMT_RNE, 0, NULL);
        pf[i] = (float)p[i];
    }
    for (long i = 0; i < R * dk; i++)
        qf[i] = (float)q[i];
    for (long i = 0; i < sk * dk; i++)
        kf[i] = (float)k[i];
    for (long i = 0; i < sk * dv; i++)
        vf[i] = (float)v[i];
    printf("# the lab's GEMMs against OpenBLAS (%s kernels), one thread, best of %d; ratio = lab / BLAS\n",
           openblas_get_corename(), reps);
    printf("%-28s %-12s %10s %10s %7s\n", "product", "model", "blas s", "lab s", "ratio");
    for (int prod = 0; prod < 2; prod++)
        for (int f64 = 0; f64 < 2; f64++) {
            double tb = 1e9, tl = 1e9;
            for (int r = 0; r < reps; r++) {
                double t0 = now();
                if (prod == 0 && f64)
                    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)sk, (int)dk, 1.0, q, (int)dk, k,
                                (int)dk, 0.0, c, (int)sk);
                else if (prod == 0)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)sk, (int)dk, 1.0f, qf, (int)dk, kf,
                                (int)dk, 0.0f, cf, (int)sk);
                else if (f64)
                    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)dv, (int)sk, 1.0, p, (int)sk, v,
                                (int)dv, 0.0, c, (int)dv);
                else
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)dv, (int)sk, 1.0f, pf, (int)sk,
                                vf, (int)dv, 0.0f, cf, (int)dv);
                double t1 = now();
                acc_model_t m = f64 ? ACC_FP64 : ACC_FP32_FMA;
                if (prod == 0)
                    acc_gemm(c, sk, q, dk, k, dk, 1, R, sk, dk, m);
                else
                    acc_gemm(c, dv, p, sk, v, dv, 0, R, dv, sk, m);
                double t2 = now();
                tb = t1 - t0 < tb ? t1 - t0 : tb;
                tl = t2 - t1 < tl ? t2 - t1 : tl;
            }
            char name[64];
            if (prod == 0)
                snprintf(name, sizeof name, "Q K^T %ld x %ld x %ld", R, sk, dk);
            else
                snprintf(name, sizeof name, "P V %ld x %ld x %ld", R, dv, sk);
            printf("%-28s %-12s %10.4f %10.4f %7.2f\n", name, f64 ? "fp64" : "fp32-fma", tb, tl, tl / tb);
        }
    free(p), free(c), free(qf), free(kf), free(vf), free(pf), free(cf);
}

/* A count option's value: a whole number from 1 to max, else a one-line error and exit 2 */
static int count_arg(const char *opt, const char *v, int max)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < 1 || x > max) {
        fprintf(stderr, "bench: %s takes a whole number from 1 to %d, not '%s'\n", opt, max, v);
        exit(2);
    }
    return (int)x;
}

int main(int argc, char **argv)
{
    int reps = 5, threads = omp_get_num_procs();
    const char *md = NULL, *only = NULL, *stages = NULL, *numpy = NULL;
    int gemm = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = count_arg("--reps", argv[++i], BENCH_MAX_REPS);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = count_arg("--threads", argv[++i], 4096);
        else if (strcmp(argv[i], "--md") == 0 && i + 1 < argc && !stages)
            md = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i]; /* run one stage reps times on one thread (for a profiler), no table */
        else if (strcmp(argv[i], "--stages") == 0 && i + 1 < argc && !md)
            stages = argv[++i]; /* the table for these stages only (a,b,...), no file */
        else if (strcmp(argv[i], "--gemm") == 0)
            gemm = 1; /* the lab's GEMMs against OpenBLAS's on the two products (bench_gemm), no table */
        else if (strcmp(argv[i], "--numpy") == 0 && i + 1 < argc)
            numpy = argv[++i]; /* Golden + base against this numpy script's (bench/numpy_ref.py) */
        else if (strcmp(argv[i], "--kind") == 0) { /* the processor's short name, for the report's file name */
            machine_t m;
            char kind[96];
            machine_describe(&m);
            machine_kind(kind, sizeof kind, &m);
            puts(kind);
            return 0;
        }
        else {
            fprintf(stderr, "usage: bench [--reps N] [--threads N] [--md FILE | --stages A,B,...] [--only STAGE] "
                            "[--numpy SCRIPT] [--gemm] [--kind]\n");
            return 2;
        }
    }
    bench_native_blas(argv);
    mem_reuse_freed(); /* as amla-lab does */

    /* every registered variant (all), then base under every other accumulation model */
    run_cfg_t *c = malloc(sizeof *c);
    run_cfg_default(c);
    c->shape.hq = 128;
    c->shape.sk = 8192;
    c->shape.dk = 576;
    c->shape.dv = 512;
    char spec[4096] = "all";
    for (int m = 0; m < ACC_COUNT; m++)
        if (m != (int)c->attn.acc_qk)
            snprintf(spec + strlen(spec), sizeof spec - strlen(spec), ",base:acc=%s", acc_table[m].name);
    err_t e = {0};
    if (opts_parse_variants(c, spec, &e) || run_validate(c, &e)) {
        fprintf(stderr, "bench: %s\n", e.msg);
        return 1;
    }
    /* every --stages name (and --only's) a stage, before anything is made */
    for (const char *p = stages ? stages : only; p; p = stages && strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        size_t len = stages && strchr(p, ',') ? (size_t)(strchr(p, ',') - p) : strlen(p);
        int known = len == 6 && strncmp(p, "golden", 6) == 0;
        for (int v = 0; v < c->nvariants && !known; v++)
            known = strlen(c->vspec[v]) == len && strncmp(c->vspec[v], p, len) == 0;
        if (!known) {
            fprintf(stderr, "bench: %s: no stage '%.*s'\n", stages ? "--stages" : "--only", (int)len, p);
            free(c);
            return 2;
        }
        if (!stages)
            break;
    }
    attn_input_t in = {.s = c->shape, .q = NULL, .k = NULL, .v = NULL};
    if (gen_sample(&in, &c->gen, c->seed, 0, &e)) {
        fprintf(stderr, "bench: %s\n", e.msg);
        return 1;
    }
    long R = c->shape.hq, sk = c->shape.sk, dk = c->shape.dk, dv = c->shape.dv;
    if (gemm) {
        machine_t m;
        char kind[96];
        machine_describe(&m);
        machine_kind(kind, sizeof kind, &m);
        printf("# %s, %s family %d model %d (%s)\n", m.name, m.vendor, m.family, m.model, kind);
        omp_set_num_threads(1);
        openblas_set_num_threads(1);
        bench_gemm(in.q, in.k, in.v, R, sk, dk, dv, reps);
        return 0;
    }
    bench_ref_t b = {(int)R, (int)sk, (int)dk, (int)dv, c->attn.scale, in.q, in.k, in.v,
                     malloc(sizeof(double) * (size_t)(R * dv)), malloc(sizeof(double) * (size_t)(R * sk)),
                     malloc(sizeof(float) * (size_t)(R * dk)), malloc(sizeof(float) * (size_t)(sk * dk)),
                     malloc(sizeof(float) * (size_t)(sk * dv)), malloc(sizeof(float) * (size_t)(R * dv)),
                     malloc(sizeof(float) * (size_t)(R * sk))};
    for (long i = 0; i < R * dk; i++)
        b.q32[i] = (float)in.q[i];
    for (long i = 0; i < sk * dk; i++)
        b.k32[i] = (float)in.k[i];
    for (long i = 0; i < sk * dv; i++)
        b.v32[i] = (float)in.v[i];

    bench_stage_t st[BENCH_MAX_STAGES];
    int nst = 0, base_i = -1, flashmla_i = -1, sparse_i = -1;
    st[nst++] = (bench_stage_t){.name = "golden", .slot = 0, .target = BENCH_TARGET_GOLDEN};
    for (int v = 0; v < c->nvariants && nst < BENCH_MAX_STAGES; v++) {
        const attn_cfg_t *a = &c->vcfg[v];
        const char *name = c->vspec[v];
        /* a tensor-core model by --acc, or by the kernel's own hardware (its sites' fixed models) */
        int tc = attn_variant_acc(c->variants[v], a, 0) >= ACC_TC_VOLTA ||
                 attn_variant_acc(c->variants[v], a, 1) >= ACC_TC_VOLTA || strcmp(name, "flashmla") == 0 ||
                 strcmp(name, "flashmla-etap") == 0 || strcmp(name, "flashmla-sparse") == 0 || strcmp(name, "fa2") == 0;
        base_i = strcmp(name, "base") == 0 ? nst : base_i;
        flashmla_i = strcmp(name, "flashmla") == 0 ? nst : flashmla_i;
        sparse_i = strcmp(name, "flashmla-sparse") == 0 ? nst : sparse_i;
        st[nst++] = (bench_stage_t){.name = name, .slot = v + 1, .target = tc ? BENCH_TARGET_TC : BENCH_TARGET_PLAIN};
    }
    double *o = malloc(sizeof(double) * (size_t)(R * dv));
    if (only) {
        for (int i = 0; i < nst; i++)
            if (strcmp(st[i].name, only) == 0) {
                for (int r = 0; r < reps; r++)
                    run_stage(c, st[i].slot, o, &in);
                return 0;
            }
        fprintf(stderr, "bench: no stage %s\n", only);
        return 2;
    }

    if (stages) { /* keep the listed stages */
        int n = 0;
        for (int i = 0; i < nst; i++)
            if (listed(stages, st[i].name))
                st[n++] = st[i];
        nst = n;
        base_i = flashmla_i = sparse_i = -1;
        for (int i = 0; i < nst; i++) {
            base_i = strcmp(st[i].name, "base") == 0 ? i : base_i;
            flashmla_i = strcmp(st[i].name, "flashmla") == 0 ? i : flashmla_i;
            sparse_i = strcmp(st[i].name, "flashmla-sparse") == 0 ? i : sparse_i;
        }
    }
    for (int i = 0; i < nst; i++)
        st[i].mem = stage_memory(c, st[i].slot, o, &in);
    double ref1[2], refn[2], tr[BENCH_MAX_REPS];
    for (int prec = 0; prec < 2; prec++) {
        for (int i = 0; i < reps; i++)
            tr[i] = ref_time(&b, prec == 0, 1);
        ref1[prec] = median(tr, reps);
        for (int i = 0; i < reps; i++)
            tr[i] = ref_time(&b, prec == 0, threads);
        refn[prec] = median(tr, reps);
    }
    double bw = bench_bandwidth();
    machine_t mach;
    char cpu[320], kind[96];
    machine_describe(&mach);
    machine_kind(kind, sizeof kind, &mach);
    snprintf(cpu, sizeof cpu, "%s (%s family %d model %d stepping %d: %s)", mach.name, mach.vendor, mach.family,
             mach.model, mach.stepping, kind);
    printf("# one MLA decode sample: G %ld, ctx %ld, Dk %ld, Dv %ld, BF16 inputs N(0,1); medians of %d runs; %s, %d cores\n",
           R, sk, dk, dv, reps, cpu, threads);
    printf("%-26s %9s %7s %7s %4s %9s %7s %6s %7s\n", "stage", "s 1 core", "ratio", "target", "met", "s all", "ratio",
           "eff", "memory");
    printf("%-26s %9.4f\n%-26s %9.4f %7s %7s %4s %9.4f\n", "blas fp64 attention", ref1[0], "blas fp32 attention", ref1[1],
           "", "", "", refn[1]);
    int nmet = 0, total = 0;
    for (int i = 0; i < nst; i++) {
        bench_time(&st[i], c, &in, &b, reps, threads);
        nmet += st[i].r1 <= st[i].target;
        total++;
        printf("%-26s %9.4f %7.2f %7.1f %4s %9.4f %7.2f %6.2f %6.2fx\n", st[i].name, st[i].t1, st[i].r1, st[i].target,
               met(st[i].r1, st[i].target), st[i].tn, st[i].rn, st[i].eff, st[i].mem);
        if (st[i].slot == 0) /* Golden's phases, the same way (golden_times) */
            printf("%-26s Q K^T %.2f, softmax %.2f, P V %.2f (its FP64 GEMM %.2f), division %.2f\n", "  its phases",
                   st[i].phase[GOLDEN_T_SCORES], st[i].phase[GOLDEN_T_SOFTMAX], st[i].phase[GOLDEN_T_PV],
                   st[i].phase[GOLDEN_T_PV_FP64], st[i].phase[GOLDEN_T_DIVIDE]);
        fflush(stdout);
    }
    double fr = flashmla_i >= 0 && base_i >= 0 ? paired_ratio(c, st[flashmla_i].slot, st[base_i].slot, &in, reps) : NAN;
    if (!isnan(fr)) { /* --stages without flashmla or base: no ratio */
        nmet += fr <= BENCH_TARGET_FLASHMLA;
        total++;
        printf("%-26s %9s %7.2f %7.1f %4s\n", "flashmla / base", "", fr, BENCH_TARGET_FLASHMLA, met(fr, BENCH_TARGET_FLASHMLA));
    }
    double sr = sparse_i >= 0 && base_i >= 0 ? paired_ratio(c, st[sparse_i].slot, st[base_i].slot, &in, reps) : NAN;
    if (!isnan(sr)) {
        nmet += sr <= BENCH_TARGET_FLASHMLA;
        total++;
        printf("%-26s %9s %7.2f %7.1f %4s\n", "flashmla-sparse / base", "", sr, BENCH_TARGET_FLASHMLA,
               met(sr, BENCH_TARGET_FLASHMLA));
    }
    /* the lab's Golden + base (one sample, one core) against the same two in numpy (--stages:
     * where both are listed) */
    double tnp[2] = {NAN, NAN}, rnp = NAN;
    char npwhy[512] = "";
    int numpy_row = numpy && base_i >= 0 && strcmp(st[0].name, "golden") == 0;
    if (numpy_row) {
        if (numpy_time(numpy, R, sk, dk, dv, reps, tnp, npwhy, sizeof npwhy) == 0)
            rnp = (st[0].t1 + st[base_i].t1) / (tnp[0] + tnp[1]);
        nmet += rnp <= BENCH_TARGET_NUMPY;
        total++;
        printf("%-26s %9.4f %7.2f %7.1f %4s  numpy %.4f + %.4f s %s\n", "golden + base / numpy", st[0].t1 + st[base_i].t1,
               rnp, BENCH_TARGET_NUMPY, met(rnp, BENCH_TARGET_NUMPY), tnp[0], tnp[1], npwhy);
    }
    if (stages)
        return 0;

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
    double rates[4], t[BENCH_MAX_REPS];
    for (int fi = 0; fi < 4; fi++) {
        fmt_cast_f32(codes, xs, nv, fs[fi], 0); /* pages and caches warm */
        for (int i = 0; i < reps; i++) {
            double t0 = now();
            fmt_cast_f32(codes, xs, nv, fs[fi], 0);
            t[i] = now() - t0;
        }
        rates[fi] = (double)nv / median(t, reps);
        printf("cast fp32->%-15s %9.3g values/s/core (target >= %.0e) %s\n", fmt_table[fs[fi]].name, rates[fi],
               BENCH_TARGET_CAST, met(BENCH_TARGET_CAST / rates[fi], 1.0));
        nmet += rates[fi] >= BENCH_TARGET_CAST;
        total++;
    }
    printf("# %d of %d speed targets met\n", nmet, total);

    if (md) {
        /* what bounds a sample: reading K and V once as binary64 at the measured bandwidth, and
         * the products' multiply-adds at FP32 BLAS's measured rate on one core */
        double kv_bytes = (double)sk * (double)(dk + dv) * 8, macs = (double)R * (double)sk * (double)(dk + dv);
        double blas_rate = macs / ref1[1];
        FILE *f = fopen(md, "w");
        if (!f) {
            perror(md);
            return 1;
        }
        fprintf(f, "# Speed (`make bench`)\n\nWritten by `make bench` (bench/bench.c); do not edit. One MLA decode "
                   "sample: G %ld heads, ctx %ld, Dk %ld, Dv %ld, BF16 inputs N(0,1), every variant with its "
                   "defaults; medians of %d runs on %s, %d cores.\n\n",
                R, sk, dk, dv, reps, cpu, threads);
        fprintf(f, "- **1 core**: one sample on one thread, against OpenBLAS on one thread (FP64 attention for "
                   "Golden, FP32 for the variants), timed warm and alternately with the stage; **ratio**: the median over "
                   "the runs of each run's time over the BLAS run just before it (flashmla / base and flashmla-sparse "
                   "/ base: the median over as many pairs of runs of the two stages back to back), so that a machine "
                   "whose speed drifts over minutes is compared with itself.\n"
                   "- **all cores**: %d samples at once, one per thread as the lab runs them (time per sample = wall "
                   "time / %d), against OpenBLAS on %d threads; **efficiency** = 1-core time / all-core wall time.\n"
                   "- **memory**: peak resident growth while one sample runs, over its inputs and outputs (%.1f MB "
                   "as binary64).\n- Targets (issue 17, per core): Golden ≤ %.0f× FP64 BLAS; a tensor-core "
                   "accumulation model ≤ %.0f×; every other variant ≤ %.0f× FP32 BLAS; flashmla and flashmla-sparse ≤ %.0f× base; Golden + base ≤ %.1f× "
                   "the same two in numpy (bench/numpy_ref.py, one BLAS thread).\n"
                   "\n",
                threads, threads, threads, (double)(R * dk + sk * dk + sk * dv + R * dv) * 8 / 1e6,
                BENCH_TARGET_GOLDEN, BENCH_TARGET_TC, BENCH_TARGET_PLAIN, BENCH_TARGET_FLASHMLA,
                BENCH_TARGET_NUMPY);
        bench_md_machine(f, &mach, argv[0], reps, ref1);
        fprintf(f, "| stage | s/sample, 1 core | ratio | target | met | s/sample, all cores | ratio | efficiency | "
                   "memory |\n| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n");
        fprintf(f, "| BLAS FP64 attention | %.4f | | | | %.4f | | | |\n", ref1[0], refn[0]);
        fprintf(f, "| BLAS FP32 attention | %.4f | | | | %.4f | | | |\n", ref1[1], refn[1]);
        for (int i = 0; i < nst; i++)
            fprintf(f, "| %s | %.4f | %.2f | ≤ %.0f | %s | %.4f | %.2f | %.2f | %.2f× |\n", st[i].name, st[i].t1,
                    st[i].r1, st[i].target, met(st[i].r1, st[i].target), st[i].tn, st[i].rn, st[i].eff, st[i].mem);
        fprintf(f, "| flashmla / base | | %.2f | ≤ %.0f | %s | | | | |\n", fr, BENCH_TARGET_FLASHMLA,
                met(fr, BENCH_TARGET_FLASHMLA));
        if (!isnan(sr))
            fprintf(f, "| flashmla-sparse / base | | %.2f | ≤ %.0f | %s | | | | |\n", sr, BENCH_TARGET_FLASHMLA,
                    met(sr, BENCH_TARGET_FLASHMLA));
        if (numpy_row)
            fprintf(f, "| golden + base against %s | %.4f | %.2f | ≤ %.1f | %s | numpy: %.4f + %.4f | | | |\n", numpy,
                    st[0].t1 + st[base_i].t1, rnp, BENCH_TARGET_NUMPY, met(rnp, BENCH_TARGET_NUMPY), tnp[0], tnp[1]);
        for (int fi = 0; fi < 4; fi++)
            fprintf(f, "| cast fp32 → %s | %.3g values/s/core | | ≥ 1e9 | %s | | | | |\n", fmt_table[fs[fi]].name,
                    rates[fi], met(BENCH_TARGET_CAST / rates[fi], 1.0));
        fprintf(f, "\n%d of %d speed targets met.\n\n", nmet, total);
        double wide[3]; /* the reference on OpenBLAS's widest kernels, where it did not choose them */
        const char *forced = getenv("OPENBLAS_CORETYPE");
        if (cpu_has_avx512() && strstr(openblas_get_corename(), "Haswell") && blas_time_with(argv[0], "SkylakeX", reps, wide) == 0) {
            fprintf(f, "**OpenBLAS's kernels.** OpenBLAS ran its %s (AVX2) kernels on this AVX-512 processor%s%s%s, "
                       "for every caller (numpy too); the table is against them. With "
                       "`OPENBLAS_CORETYPE=SkylakeX` it runs its AVX-512 kernels: the FP64 attention then takes "
                       "%.4f s (%.2f× faster), the FP32 one %.4f s (%.2f× faster), so against that reference every "
                       "variant's ratio above is that much higher. Golden, whose GEMMs are OpenBLAS's, takes %.4f s "
                       "there (%.2f× the faster FP64 attention) with the same bits: its GEMM sums are exact, so set "
                       "the variable to run Golden faster on such a processor.\n\n",
                    openblas_get_corename(), forced ? " (`OPENBLAS_CORETYPE=" : "", forced ? forced : "",
                    forced ? "` in this machine's environment)" : "", wide[0], ref1[0] / wide[0], wide[1], ref1[1] / wide[1], wide[2],
                    wide[2] / wide[0]);
            int wmet = 0, nmiss = 0; /* the stage targets against that reference (Golden at its own time there) */
            for (int i = 0; i < nst; i++)
                wmet += (i == 0 ? wide[2] / wide[0] : st[i].t1 / wide[1]) <= st[i].target;
            fprintf(f, "Against it %d of %d stage targets are met", wmet, nst);
            for (int i = 0; i < nst; i++) {
                double r = i == 0 ? wide[2] / wide[0] : st[i].t1 / wide[1];
                if (r > st[i].target)
                    fprintf(f, "%s %s %.2f (≤ %.0f)", nmiss++ ? "," : "; missed:", st[i].name, r, st[i].target);
            }
            fprintf(f, ".\n\n");
        }
        fprintf(f, "## What bounds a sample on this machine\n\n"
                   "- Memory: K and V are %.1f MB as binary64; at the measured copy rate of %.1f GB/s (one "
                   "thread) one pass over them takes %.4f s.\n"
                   "- Arithmetic: the two products are %.3g multiply-adds; FP32 BLAS did them (with the softmax) in "
                   "%.4f s on one core, %.3g per second. A stage whose ratio is r spends about r times that: the "
                   "emulated roundings (a binary16 rounding per 4 products, a tensor-core block's exponent maximum "
                   "and truncation per product) are instructions per element that BLAS does not execute, so the "
                   "variants are bound by arithmetic, not by memory (a pass over K and V is %.0f%% of base's time).\n",
                kv_bytes / 1e6, bw / 1e9, kv_bytes / bw, macs, ref1[1], blas_rate,
                base_i >= 0 ? 100 * kv_bytes / bw / st[base_i].t1 : NAN);
        floors_t fl;
        if (floors_measure(&fl, in.q, in.k, in.v, R, sk, dk, dv, ref32_time, &b) == 0)
            bench_md_floors(f, &fl, base_i >= 0 ? st[base_i].r1 : NAN);
        fprintf(f, "- Golden computes Q K^T exactly through one FP64 GEMM of one Ozaki slice per row (the few BF16 "
                   "values below a row's slice are summed term by term), the softmax in double-double (an exp of about "
                   "ten double-double operations per score) and P V through one GEMM of twice the rows (P's exact leading "
                   "bits and its remainder, against V's slice): about 1.5 FP64 attentions of GEMM work, plus the "
                   "exps.%s\n",
                gemm_u8_has_amx() ? " Here, with AMX, the slices' exact products (Q K^T's, and P's leading bits times V) "
                                    "go through byte digit planes and AMX's int32 sums instead (the same integers), and "
                                    "P's remainder times V is the one FP64 GEMM left, of R rows: about 0.5 FP64 "
                                    "attentions of GEMM work, plus the byte products."
                                  : "");
        if (strcmp(st[0].name, "golden") == 0) { /* Golden's phases, and what of them its bits fix */
            const double *p = st[0].phase;
            double fixed = p[GOLDEN_T_PV_FP64] + p[GOLDEN_T_SOFTMAX], all = 0;
            for (int i = 0; i < GOLDEN_T_N; i++)
                all += i == GOLDEN_T_PV_FP64 ? 0 : p[i];
            fprintf(f, "- Golden's phases here (one core; each phase's time over the FP64 BLAS attention run just before "
                       "it, medians): Q K^T %.2f×, the softmax %.2f×, P V %.2f× (of which its FP64 GEMM %.2f×), the "
                       "division %.2f×; %.2f× in all. The FP64 GEMM of P's remainder (its rounding errors in "
                       "OpenBLAS's order) and the double-double softmax (its sequence of operations) stay as they are "
                       "for Golden's bits to stay: where an element lies near a rounding boundary they decide its last "
                       "bit. They take %.2f× between them; Golden ≤ 1× (issue 34) leaves %.2f× for the exact products, "
                       "the slices' cuts and the byte planes, which take %.2f× here%s.\n",
                    p[GOLDEN_T_SCORES], p[GOLDEN_T_SOFTMAX], p[GOLDEN_T_PV], p[GOLDEN_T_PV_FP64], p[GOLDEN_T_DIVIDE], all,
                    fixed, 1 - fixed, all - fixed,
                    all - fixed > 1 - fixed ? ": with Golden's bits unchanged, those would have to run in a fraction "
                                              "of their time"
                                            : "");
        }
        double gw = gemm_u8_has_amx() ? 0.5 : 1.5; /* Golden's FP64 GEMM work, in FP64 attentions */
        if (!isnan(rnp)) /* the floor of Golden + base in BLAS work, against numpy's */
            fprintf(f, "- Against numpy: bench/numpy_ref.py's Golden is one binary64 attention through BLAS (%.4f s, no "
                       "error bound) and its base one binary32 attention with P and O rounded to BF16 (%.4f s). The "
                       "lab's Golden does about %.1f FP64 attentions of GEMM work%s to be exact within its tested bound, "
                       "and its base rounds where the kernel does; at this run's BLAS times %.1f FP64 + 1 FP32 "
                       "attention take %.4f s, %.2f of numpy's time, so a ratio of %.1f is %s here. Issue 17's 0.79× "
                       "was measured against a numpy script that is not in the repository; bench/numpy_ref.py is the "
                       "plain version of what the issue names.\n",
                    tnp[0], tnp[1], gw, gw < 1 ? " (and its byte products)" : "", gw, gw * ref1[0] + ref1[1],
                    (gw * ref1[0] + ref1[1]) / (tnp[0] + tnp[1]), BENCH_TARGET_NUMPY,
                    (gw * ref1[0] + ref1[1]) / (tnp[0] + tnp[1]) > BENCH_TARGET_NUMPY
                        ? "out of this design's reach"
                        : "at the edge of what the GEMM work alone allows (the exps, the cuts and the byte products come "
                          "on top)");
        /* the vector widths: the lab's binary64 lanes, and the reference's (OpenBLAS's AVX-512 kernels by name) */
        const char *cn = openblas_get_corename();
        int lab512 = cpu_has_avx512(),
            ref512 = strstr(cn, "SkylakeX") || strstr(cn, "Cooperlake") || strstr(cn, "SapphireRapids");
        fprintf(f,
                   "- A tensor-core model does, per product, an exponent maximum and a scaled truncation besides the "
                   "product (binary32/int32 lanes where the operands allow, binary64 lanes otherwise), and per block of "
                   "4, 8, 16 or 32 products a normalization; flashmla and fa2 run it on 64-key blocks (each block's K and "
                   "V packed for the lanes, Q once per head group), plus the SFU model of ex2 per score (eight at a "
                   "time in AVX-512: a 17-step partial-product square and a gathered quadratic per lane).\n"
                   "- The FP16 accumulator rounds to binary16 after every 4 products: one vector rounding (five "
                   "operations, six where a bound on the row sums does not rule overflow out) per four fused "
                   "multiply-adds, in binary64 lanes (%s per %s vector, where the FP32 reference's %s kernels hold %s "
                   "binary32).\n"
                   "- fa3-fp8 rotates Q and K with a Hadamard transform (K a 64-key tile at a time, twice with a "
                   "per-tensor scale: for the scale, then to quantize) and quantizes Q, K and V (a binary32 division "
                   "and e4m3's rounding per element, sixteen at a time) before the products, and P to e4m3 after its "
                   "exp per score (eight at a time; libm's for the few lanes near a binary32 midpoint); "
                   "the SnapMLA configs and flashmla-fp8 quantize so and dequantize per element; base with fp64 does its "
                   "products in binary64, %s.\n\n",
                lab512 ? "eight" : "four", lab512 ? "AVX-512" : "AVX2", ref512 ? "AVX-512" : "AVX2",
                ref512 ? "sixteen" : "eight",
                lab512 == ref512 ? "half as many lanes a vector as the FP32 reference's binary32"
                : lab512         ? "as many lanes per AVX-512 vector as the FP32 reference has per AVX2 one"
                                 : "a quarter as many lanes a vector as the FP32 reference's binary32");
        fclose(f);
    }
    free(xs);
    free(codes);
    free(o);
    free(b.o);
    free(b.s);
    free(b.q32);
    free(b.k32);
    free(b.v32);
    free(b.o32);
    free(b.s32);
    attn_input_free(&in);
    free(c);
    return 0;
}
