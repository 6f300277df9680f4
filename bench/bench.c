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

#include "bench.h"

/* 1 when name is one of the comma-separated list's items */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* Where OpenBLAS fell back to a pre-AVX kernel on a processor it does not know, the bench runs
 * itself again on OpenBLAS's widest kernels for the processor's extensions (OpenBLAS reads
 * OPENBLAS_CORETYPE when it is loaded), noting the fallback in BENCH_BLAS_FALLBACK; returns
 * only where no new run is needed (or it could not be started). */
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
    int gemm = 0, check_only = 0;
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
        else if (strcmp(argv[i], "--check") == 0)
            check_only = 1; /* check's speed on its two cases alone (bench_check_case) */
        else if (strcmp(argv[i], "--shapes") == 0)
            check_only = 2; /* the kernels on shapes of their own alone (bench_shape_rows) */
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
                            "[--numpy SCRIPT] [--gemm] [--check] [--shapes] [--kind]\n");
            return 2;
        }
    }
    bench_native_blas(argv);
    mem_reuse_freed(); /* as amla-lab does */
    /* check's speed: a prefill of 32 heads x 2048 queries x 2048 keys x head dim 128 (sdpa-efficient's output stands
     * for the kernel's) and an MLA decode (flashmla's), against the one-thread FP32 BLAS attention of each shape */
    bench_check_t checks[2] = {{"prefill 32 x 2048 x 2048 x 128", "sdpa-efficient", 32, 32, 2048, 2048, 128, 128, 1, 0, 0, 0, 0, 0, 0, BENCH_TARGET_CHECK},
                               {"MLA decode 128 x 8192 x 576/512", "flashmla", 128, 1, 1, 8192, 576, 512, 0, 0, 0, 0, 0, 0, 0, 0}};
    /* kernels on shapes of their own: FA3 on DeepSeek's MLA prefill (16 heads x 512 tokens, q/k 192, v 128) and
     * FlashMLA's sparse prefill on one token's top-k (64 heads x 8 tokens x 2048 keys, 576/512), both builds */
    bench_shape_t shapes[2] = {{"FA3 prefill 16 x 512 x 512 x 192/128", "fa3:sm-parts=1", 16, 1, 512, 512, 192, 128,
                                {0}, 0, {0}},
                               {"sparse prefill 64 x 8 x 2048 x 576/512", "flashmla-sparse-prefill,flashmla-sparse-prefill:build=ieee",
                                64, 1, 8, 2048, 576, 512, {0}, 0, {0}}};
    bench_indexer_t indexer = {64, 64, 128, 8192, 0, 0, 0}; /* the indexer sample */
    int nchecks = 0, nshapes = 0;
    if (check_only || (!stages && !only && !gemm)) {
        if (check_only != 2 && bench_check_rows(checks, 2, reps > 3 ? 3 : reps, threads))
            return 1;
        nchecks = 2;
        if (check_only != 1 && (bench_shape_rows(shapes, 2, reps > 5 ? 5 : reps) ||
                                bench_indexer_row(&indexer, reps > 5 ? 5 : reps)))
            return 1;
        nshapes = 2;
        if (check_only)
            return 0;
    }

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
                 strcmp(name, "flashmla-etap") == 0 || strcmp(name, "flashmla-sparse") == 0 || strcmp(name, "fa2") == 0 ||
                 strcmp(name, "fa3") == 0 || strcmp(name, "flashmla-sparse-prefill") == 0;
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
                    bench_run_stage(c, st[i].slot, o, &in);
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
        st[i].mem = bench_stage_memory(c, st[i].slot, o, &in);
    double ref1[2], refn[2], tr[BENCH_MAX_REPS];
    for (int prec = 0; prec < 2; prec++) {
        for (int i = 0; i < reps; i++)
            tr[i] = bench_ref_time(&b, prec == 0, 1);
        ref1[prec] = bench_median(tr, reps);
        for (int i = 0; i < reps; i++)
            tr[i] = bench_ref_time(&b, prec == 0, threads);
        refn[prec] = bench_median(tr, reps);
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
               bench_met(st[i].r1, st[i].target), st[i].tn, st[i].rn, st[i].eff, st[i].mem);
        if (st[i].slot == 0) /* Golden's phases, the same way (golden_times) */
            printf("%-26s Q K^T %.2f, softmax %.2f, P V %.2f (its FP64 GEMM %.2f), division %.2f\n", "  its phases",
                   st[i].phase[GOLDEN_T_SCORES], st[i].phase[GOLDEN_T_SOFTMAX], st[i].phase[GOLDEN_T_PV],
                   st[i].phase[GOLDEN_T_PV_FP64], st[i].phase[GOLDEN_T_DIVIDE]);
        fflush(stdout);
    }
    double fr = flashmla_i >= 0 && base_i >= 0 ? bench_paired_ratio(c, st[flashmla_i].slot, st[base_i].slot, &in, reps) : NAN;
    if (!isnan(fr)) { /* --stages without flashmla or base: no ratio */
        nmet += fr <= BENCH_TARGET_FLASHMLA;
        total++;
        printf("%-26s %9s %7.2f %7.1f %4s\n", "flashmla / base", "", fr, BENCH_TARGET_FLASHMLA, bench_met(fr, BENCH_TARGET_FLASHMLA));
    }
    double sr = sparse_i >= 0 && base_i >= 0 ? bench_paired_ratio(c, st[sparse_i].slot, st[base_i].slot, &in, reps) : NAN;
    if (!isnan(sr)) {
        nmet += sr <= BENCH_TARGET_FLASHMLA;
        total++;
        printf("%-26s %9s %7.2f %7.1f %4s\n", "flashmla-sparse / base", "", sr, BENCH_TARGET_FLASHMLA,
               bench_met(sr, BENCH_TARGET_FLASHMLA));
    }
    /* the lab's Golden + base (one sample, one core) against the same two in numpy (--stages:
     * where both are listed) */
    double tnp[2] = {NAN, NAN}, rnp = NAN;
    char npwhy[512] = "";
    int numpy_row = numpy && base_i >= 0 && strcmp(st[0].name, "golden") == 0;
    if (numpy_row) {
        if (bench_numpy_time(numpy, R, sk, dk, dv, reps, tnp, npwhy, sizeof npwhy) == 0)
            rnp = (st[0].t1 + st[base_i].t1) / (tnp[0] + tnp[1]);
        nmet += rnp <= BENCH_TARGET_NUMPY;
        total++;
        printf("%-26s %9.4f %7.2f %7.1f %4s  numpy %.4f + %.4f s %s\n", "golden + base / numpy", st[0].t1 + st[base_i].t1,
               rnp, BENCH_TARGET_NUMPY, bench_met(rnp, BENCH_TARGET_NUMPY), tnp[0], tnp[1], npwhy);
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
            double t0 = bench_now();
            fmt_cast_f32(codes, xs, nv, fs[fi], 0);
            t[i] = bench_now() - t0;
        }
        rates[fi] = (double)nv / bench_median(t, reps);
        printf("cast fp32->%-15s %9.3g values/s/core (target >= %.0e) %s\n", fmt_table[fs[fi]].name, rates[fi],
               BENCH_TARGET_CAST, bench_met(BENCH_TARGET_CAST / rates[fi], 1.0));
        nmet += rates[fi] >= BENCH_TARGET_CAST;
        total++;
    }
    for (int i = 0; i < nchecks; i++)
        if (checks[i].target > 0) {
            nmet += checks[i].ratio <= checks[i].target;
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
                    st[i].r1, st[i].target, bench_met(st[i].r1, st[i].target), st[i].tn, st[i].rn, st[i].eff, st[i].mem);
        fprintf(f, "| flashmla / base | | %.2f | ≤ %.0f | %s | | | | |\n", fr, BENCH_TARGET_FLASHMLA,
                bench_met(fr, BENCH_TARGET_FLASHMLA));
        if (!isnan(sr))
            fprintf(f, "| flashmla-sparse / base | | %.2f | ≤ %.0f | %s | | | | |\n", sr, BENCH_TARGET_FLASHMLA,
                    bench_met(sr, BENCH_TARGET_FLASHMLA));
        if (numpy_row)
            fprintf(f, "| golden + base against %s | %.4f | %.2f | ≤ %.1f | %s | numpy: %.4f + %.4f | | | |\n", numpy,
                    st[0].t1 + st[base_i].t1, rnp, BENCH_TARGET_NUMPY, bench_met(rnp, BENCH_TARGET_NUMPY), tnp[0], tnp[1]);
        for (int fi = 0; fi < 4; fi++)
            fprintf(f, "| cast fp32 → %s | %.3g values/s/core | | ≥ 1e9 | %s | | | | |\n", fmt_table[fs[fi]].name,
                    rates[fi], bench_met(BENCH_TARGET_CAST / rates[fi], 1.0));
        fprintf(f, "\n%d of %d speed targets met.\n\n", nmet, total);
        double wide[3]; /* the reference on OpenBLAS's widest kernels, where it did not choose them */
        const char *forced = getenv("OPENBLAS_CORETYPE");
        if (cpu_has_avx512() && strstr(openblas_get_corename(), "Haswell") && bench_blas_time_with(argv[0], "SkylakeX", reps, wide) == 0) {
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
        if (floors_measure(&fl, in.q, in.k, in.v, R, sk, dk, dv, bench_ref32_time, &b) == 0)
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
        bench_md_check(f, checks, nchecks, threads);
        bench_md_shapes(f, shapes, nshapes, &indexer);
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
