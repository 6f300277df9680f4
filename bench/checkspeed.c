/* checkspeed -- `amla-lab check`'s speed: a kernel's output made in memory (the real kernel's emulation on generated
 * inputs) checked as `amla-lab check DIR` checks a capture, default candidates and screening, on every thread, against
 * the one-thread FP32 BLAS attention of the same shape timed beside it */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/opts.h"
#include "data/gen.h"
#include "run/check.h"
#include "run/run.h"

#include "bench.h"

double bench_shape_ref_time(const attn_input_t *in, double scale, int reps)
{
    const attn_shape_t *s = &in->s;
    long R = s->hq / s->hkv * s->sq, nq = s->hq * s->sq * s->dk, nk = s->hkv * s->sk * s->dk, nv = s->hkv * s->sk * s->dv;
    float *q = malloc(sizeof(float) * (size_t)nq), *k = malloc(sizeof(float) * (size_t)nk),
          *v = malloc(sizeof(float) * (size_t)nv), *sc = malloc(sizeof(float) * (size_t)(R * s->sk)),
          *o = malloc(sizeof(float) * (size_t)(R * s->dv));
    for (long i = 0; i < nq; i++)
        q[i] = (float)in->q[i];
    for (long i = 0; i < nk; i++)
        k[i] = (float)in->k[i];
    for (long i = 0; i < nv; i++)
        v[i] = (float)in->v[i];
    openblas_set_num_threads(1);
    double t[BENCH_MAX_REPS];
    for (int rep = -1; rep < reps; rep++) {
        double t0 = bench_now();
        for (long h = 0; h < s->hkv; h++) {
            bench_ref_t b = {(int)R, (int)s->sk, (int)s->dk, (int)s->dv, scale, NULL, NULL, NULL, NULL, NULL,
                             q + h * R * s->dk, k + h * s->sk * s->dk, v + h * s->sk * s->dv, o, sc};
            bench_ref_attn(&b, 0);
        }
        if (rep >= 0)
            t[rep] = bench_now() - t0;
    }
    free(q), free(k), free(v), free(sc), free(o);
    return bench_median(t, reps);
}

int bench_check_case(bench_check_t *bc, int reps, int threads)
{
    run_cfg_t *c = malloc(sizeof *c), *t = malloc(sizeof *t);
    check_skip_t *skip = calloc(CHECK_MAX_CAND, sizeof *skip);
    err_t e = {0};
    run_cfg_default(c);
    c->shape = (attn_shape_t){bc->hq, bc->hkv, bc->sq, bc->sk, bc->dk, bc->dv, 0};
    c->gen.kv_separate = bc->separate;
    c->samples = 1;
    c->threads = threads;
    int rc = opts_parse_variants(c, bc->kernel, &e) || run_validate(c, &e);
    attn_input_t in = {.s = c->shape};
    long sk = bc->sk;
    attn_batch_t bt = {.n = 1, .entry = &in, .seqlens = &sk, .smax = sk};
    if (!rc)
        rc = gen_sample(&in, &c->gen, c->seed, 0, &e);
    long n = bc->hq * bc->sq * bc->dv, nl = bc->hq * bc->sq;
    double *kout = malloc(sizeof(double) * (size_t)n), *klse = malloc(sizeof(double) * (size_t)nl);
    if (!rc) { /* the kernel's output: its emulation, bit for bit what the real kernel gives */
        double *outs[2] = {NULL, kout}, *lses[2] = {NULL, klse};
        run_row_t rows[2];
        memset(rows, 0, sizeof rows);
        c->input = &bt;
        rc = run_outputs(c, &bt, 0, outs, lses, NULL, rows, threads, &e);
    }
    double tc[BENCH_MAX_REPS];
    for (int rep = 0; rep < reps && !rc; rep++) {
        double t0 = bench_now();
        *t = *c;
        int nskip = 0;
        check_result_t r = {0};
        rc = check_candidates(t, NULL, skip, &nskip, &e);
        if (!rc)
            rc = check_run(&r, t, kout, klse, 1, &e);
        tc[rep] = bench_now() - t0;
        bc->ncand = t->nvariants;
        bc->nscreened = r.nscreened;
        bc->named = !rc && r.ncand > 0 && r.cand[0].identical == r.cand[0].n &&
                    strcmp(run_slot_name(t, r.cand[0].slot), bc->kernel) == 0;
        check_free(&r);
    }
    if (!rc) {
        bc->t = bench_median(tc, reps);
        bc->ref = bench_shape_ref_time(&in, c->attn.scale, reps);
        bc->ratio = bc->t / bc->ref;
    }
    if (rc)
        fprintf(stderr, "bench: check %s: %s\n", bc->name, e.msg);
    attn_input_free(&in);
    free(kout), free(klse), free(c), free(t), free(skip);
    return rc;
}

int bench_check_rows(bench_check_t *checks, int n, int reps, int threads)
{
    for (int i = 0; i < n; i++) {
        if (bench_check_case(&checks[i], reps, threads))
            return 1;
        char tgt[64] = "no target";
        if (checks[i].target > 0)
            snprintf(tgt, sizeof tgt, "target %.0f: %s", checks[i].target, bench_met(checks[i].ratio, checks[i].target));
        printf("check %-32s %8.3f s %7.2f x the FP32 BLAS attention (%.3f s, 1 thread), %s; %d candidates, %d "
               "screened out, the kernel %s\n",
               checks[i].name, checks[i].t, checks[i].ratio, checks[i].ref, tgt, checks[i].ncand, checks[i].nscreened,
               checks[i].named ? "named" : "NOT NAMED");
    }
    return 0;
}
