/* bench.h -- what the bench's files share: the targets, the BLAS reference attention, the stages' records and
 * the functions each file gives the others (stages.c: timing; report.c: the markdown report; gemm.c: --gemm) */
#ifndef AMLA_BENCH_H
#define AMLA_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include "attn/attn.h"
#include "config/config.h"
#include "data/problem.h"
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

#define BENCH_FALLBACK_ENV "AMLA_BENCH_BLAS_FALLBACK"

/* The reference: plain attention through BLAS (S = Q K^T, row softmax with exp, O = P V), in
 * binary64 for Golden and binary32 for the variants. */
typedef struct {
    int R, sk, dk, dv;
    double scale, *q, *k, *v, *o, *s;
    float *q32, *k32, *v32, *o32, *s32;
} bench_ref_t;

typedef struct {
    const char *name;
    int slot;
    double target, t1, r1, tn, rn, eff, mem;
    double phase[GOLDEN_T_N]; /* Golden: each phase's time over the BLAS run's, medians (golden_times) */
} bench_stage_t;

double bench_now(void);
double bench_median(double *x, int n);
void bench_ref_attn(bench_ref_t *b, int fp64);
double bench_ref_time(bench_ref_t *b, int fp64, int threads);
void bench_run_stage(const run_cfg_t *c, int slot, double *o, const attn_input_t *in);
double bench_stage_memory(const run_cfg_t *c, int slot, double *o, const attn_input_t *in);
void bench_time(bench_stage_t *st, const run_cfg_t *c, const attn_input_t *in, bench_ref_t *b, int reps,
                       int threads);
double bench_paired_ratio(const run_cfg_t *c, int slot, int base_slot, const attn_input_t *in, int reps);
double bench_bandwidth(void);
const char *bench_met(double r, double target);
int bench_numpy_time(const char *script, long R, long sk, long dk, long dv, int reps, double t[2], char *why,
                      size_t nwhy);
int bench_blas_time_with(const char *self, const char *core, int reps, double t[3]);
void bench_md_machine(FILE *f, const machine_t *m, const char *self, int reps, const double ref1[2]);
void bench_md_floors(FILE *f, const floors_t *fl, double rbase);
double bench_ref32_time(void *b);
void bench_gemm(const double *q, const double *k, const double *v, long R, long sk, long dk, long dv, int reps);

/* `amla-lab check` on a case made in memory (checkspeed.c): a kernel variant's output on generated inputs of the
 * shape, checked with check's default candidates and screening on `threads` threads, against the one-thread FP32
 * BLAS attention of that shape; medians of reps runs. */
#define BENCH_TARGET_CHECK 10.0 /* check against the one-thread FP32 BLAS attention of its case's shape */
typedef struct {
    const char *name, *kernel; /* the case, and the variant whose output stands for the kernel's */
    long hq, hkv, sq, sk, dk, dv;
    int separate;
    double t, ref, ratio;      /* check's seconds, the BLAS attention's, their ratio */
    int ncand, nscreened, named; /* candidates, those screened out, whether the verdict named the kernel */
    double target;               /* the ratio asked (0: a figure without a target) */
} bench_check_t;
int bench_check_case(bench_check_t *bc, int reps, int threads);
/* Every case of checks[0..n) through bench_check_case, a printed row each; 1 where one failed. */
int bench_check_rows(bench_check_t *checks, int n, int reps, int threads);
/* The report's section on them (report.c). */
void bench_md_check(FILE *f, const bench_check_t *checks, int n, int threads);
/* The FP32 BLAS attention of every KV-head group of in, one thread: the median of reps runs after a warm one. */
double bench_shape_ref_time(const attn_input_t *in, double scale, int reps);

/* A kernel variant on a shape of its own (shapes.c: FA3's 192/128 prefill, the sparse prefill's top-k), one sample
 * on one thread, against the one-thread FP32 BLAS attention of the shape; medians of reps runs. */
typedef struct {
    const char *name, *variants; /* the shape, and the variants timed on it ("a,b") */
    long hq, hkv, sq, sk, dk, dv;
    double t[4], ref, ratio[4]; /* each variant's seconds and ratio (at most 4) */
} bench_shape_t;
int bench_shape_rows(bench_shape_t *rows, int n, int reps);
/* DeepGEMM's lightning indexer (index.h) on S x H x D queries over Skv keys against the FP32 BLAS logits */
typedef struct {
    long S, H, D, Skv;
    double t, ref, ratio;
} bench_indexer_t;
int bench_indexer_row(bench_indexer_t *bi, int reps);
void bench_md_shapes(FILE *f, const bench_shape_t *rows, int n, const bench_indexer_t *bi);

#endif
