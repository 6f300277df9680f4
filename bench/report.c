/* report -- the bench's markdown report: the processor and its BLAS kernels, the floors against their targets */
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

const char *bench_met(double r, double target)
{
    return r <= target ? "yes" : "no";
}

/* The report's lines on the processor: its extensions, its FMA rate at both widths, and the BLAS
 * kernels the table is against (where OpenBLAS fell back, what the fallback takes: ref1 is the
 * table's FP64 and FP32 attention) */
void bench_md_machine(FILE *f, const machine_t *m, const char *self, int reps, const double ref1[2])
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
    if (fell && bench_blas_time_with(self, fell, reps, t) == 0)
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
void bench_md_floors(FILE *f, const floors_t *fl, double rbase)
{
    const struct {
        const char *what;
        double t, r, target;
    } k[] = {
        {"FP32 fma chains (base's products, and those of every variant on fp32-fma)", fl->fp32, fl->r_fp32,
         BENCH_TARGET_PLAIN},
        {"FP16 accumulator (fastattn-fp16acc, base with fp16-acc)", fl->fp16acc, fl->r_fp16acc, BENCH_TARGET_PLAIN},
        {"tensor-core block model, tc-hopper (flashmla, fa2, fa3, the SDPA kernels, base with tc-*)", fl->tc, fl->r_tc,
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

void bench_md_check(FILE *f, const bench_check_t *checks, int n, int threads)
{
    fprintf(f, "## check\n\n`amla-lab check` on a case made in memory (the named variant's output standing for the "
               "kernel's, bit for bit what the real kernel gives), with its default candidates and screening on "
               "%d threads, against the one-thread FP32 BLAS attention of the same shape (target %.0f for the "
               "prefill; the MLA decode case is one KV head of one entry, which the screening cannot cut, so "
               "every candidate runs in full):\n\n"
               "| case | kernel | check s | BLAS s | ratio | met | candidates | screened out | verdict |\n"
               "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n", threads, BENCH_TARGET_CHECK);
    for (int i = 0; i < n; i++)
        fprintf(f, "| %s | %s | %.3f | %.3f | %.2f | %s | %d | %d | %s |\n", checks[i].name, checks[i].kernel,
                checks[i].t, checks[i].ref, checks[i].ratio,
                checks[i].target > 0 ? bench_met(checks[i].ratio, checks[i].target) : "-",
                checks[i].ncand, checks[i].nscreened, checks[i].named ? "names it" : "does not name it");
    fputc('\n', f);
}
