/* t-gpu -- the tensor-core models against H100 captures (tests/data/gpu, scripts/device/capture_gpu.py):
 * GEMM outputs bit for bit, and Base's attention RMSE against the flash kernel's */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "num/acc/acc.h"
#include "attn/attn.h"
#include "check.h"
#include "ref/golden.h"
#include "data/files.h"
#include "data/npy.h"
#include "run/metric.h"

#define GPU_DIR "tests/data/gpu"
/* The bar: at least 99.9% of the captured elements bit for bit, per model. */
#define GPU_MIN_MATCH 0.999

typedef struct {
    long same, total;
} tally_t;

static int load(io_npy_t *a, const char *name, const char *part)
{
    char path[512];
    err_t e = {0};
    snprintf(path, sizeof path, "%s/%s.%s.npy", GPU_DIR, name, part);
    return io_npy_read(a, path, &e);
}

/* One capture gemm-DTYPE-KIND-K: C = A B^T under the model for the dtype. */
static void check_gemm(const char *name, tally_t *tc16, tally_t *tc8, tally_t *tc8fast)
{
    char dtype[16];
    if (sscanf(name, "gemm-%15[^-]", dtype) != 1)
        return;
    io_npy_t a, b, c;
    if (load(&a, name, "a") || load(&b, name, "b") || load(&c, name, "c")) {
        CHECK(0, "%s: capture files missing", name);
        return;
    }
    for (long i = 0; i < a.n; i++)
        if (!isfinite(a.data[i])) { /* fp16 'wide' inputs overflow to inf: not a GEMM test */
            io_npy_free(&a);
            io_npy_free(&b);
            io_npy_free(&c);
            return;
        }
    int fp8 = strcmp(dtype, "e4m3") == 0 || strcmp(dtype, "e5m2") == 0;
    fmt_id_t fa = (fmt_id_t)fmt_from_name(dtype), fb = fp8 ? FMT_E4M3 : fa; /* e5m2 captures use e4m3 B */
    long M = a.shape[0], K = a.shape[1], N = b.shape[0];
    double *out = malloc(sizeof(double) * (size_t)(M * N));
    for (int pass = 0; pass < (fp8 ? 2 : 1); pass++) {
        io_npy_t *ref = &c, fast;
        if (pass == 1) {
            if (load(&fast, name, "cfast"))
                break;
            ref = &fast;
        }
        acc_model_t model = !fp8 ? ACC_TC_HOPPER : pass ? ACC_TC_HOPPER_FP8_FAST : ACC_TC_HOPPER_FP8;
        acc_gemm_f(out, N, a.data, K, b.data, K, 1, M, N, K, model, fa, fb);
        tally_t *t = !fp8 ? tc16 : pass ? tc8fast : tc8;
        long same = 0;
        for (long i = 0; i < M * N; i++)
            same += out[i] == ref->data[i];
        t->same += same;
        t->total += M * N;
        if (same < M * N)
            fprintf(stderr, "t-gpu: %s (%s): %ld of %ld bit-identical\n", name, acc_table[model].name, same, M * N);
        if (pass == 1)
            io_npy_free(&fast);
    }
    free(out);
    io_npy_free(&a);
    io_npy_free(&b);
    io_npy_free(&c);
}

/* FA2 settings (head dim 128, prefill, FP16): Base with 64-token KV tiles and the Hopper
 * model against the GPU flash kernel, both measured against Golden. */
static void check_attention(void)
{
    io_npy_t q, k, v, flash;
    if (load(&q, "attn", "q") || load(&k, "attn", "k") || load(&v, "attn", "v") || load(&flash, "attn", "flash")) {
        CHECK(0, "attention capture missing");
        return;
    }
    attn_input_t in = {.s = {q.shape[0], k.shape[0], q.shape[1], k.shape[1], q.shape[2], v.shape[2], 0},
                       .q = q.data, .k = k.data, .v = v.data};
    long n = flash.n;
    double *gold = malloc(sizeof(double) * (size_t)n), *o = malloc(sizeof(double) * (size_t)n);
    golden_attention(gold, &in, 0);
    attn_cfg_t c;
    memset(&c, 0, sizeof c);
    c.in_format = c.out_format = FMT_FP16;
    c.block = 64;
    c.acc_qk = c.acc_pv = ACC_TC_HOPPER;
    c.scale = 1.0 / sqrt((double)in.s.dk);
    attn_stats_t st = {0};
    attn_ctx_t ctx;
    err_t e = {0};
    attn_ctx_init(&ctx, attn_find("base"), &c, &st, &e);
    attn_run(o, attn_find("base"), &in, &ctx);
    double mg[METRIC_COUNT], ml[METRIC_COUNT];
    metric_all(mg, flash.data, gold, n);
    metric_all(ml, o, gold, n);
    long same = 0;
    for (long i = 0; i < n; i++)
        same += o[i] == flash.data[i];
    printf("t-gpu: attention RMSE against Golden: GPU flash %.4e, lab base (block 64, tc-hopper) %.4e (ratio %.3f); "
           "%.1f%% of the elements bit-identical\n",
           mg[METRIC_RMSE], ml[METRIC_RMSE], ml[METRIC_RMSE] / mg[METRIC_RMSE], 100.0 * (double)same / (double)n);
    CHECK(fabs(ml[METRIC_RMSE] / mg[METRIC_RMSE] - 1) <= 0.05, "attention RMSE ratio %g outside +-5%%",
          ml[METRIC_RMSE] / mg[METRIC_RMSE]);
    free(gold);
    free(o);
    io_npy_free(&q);
    io_npy_free(&k);
    io_npy_free(&v);
    io_npy_free(&flash);
}

int main(void)
{
    DIR *d = opendir(GPU_DIR);
    if (!d) {
        CHECK(0, "no %s", GPU_DIR);
        return check_done("t-gpu");
    }
    tally_t tc16 = {0, 0}, tc8 = {0, 0}, tc8fast = {0, 0};
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t l = strlen(ent->d_name);
        if (strncmp(ent->d_name, "gemm-", 5) == 0 && l > 6 && strcmp(ent->d_name + l - 6, ".c.npy") == 0) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(l - 6), ent->d_name);
            check_gemm(name, &tc16, &tc8, &tc8fast);
        }
    }
    closedir(d);
    const struct {
        const char *what;
        tally_t *t;
    } rows[] = {{"tc-hopper (bf16, fp16)", &tc16}, {"tc-hopper-fp8 (e4m3, e5m2 x e4m3)", &tc8},
                {"tc-hopper-fp8-fast", &tc8fast}};
    for (int i = 0; i < 3; i++) {
        double f = rows[i].t->total ? (double)rows[i].t->same / (double)rows[i].t->total : 0;
        printf("t-gpu: %-36s %ld of %ld captured H100 elements bit-identical (%.4f%%)\n", rows[i].what,
               rows[i].t->same, rows[i].t->total, 100 * f);
        CHECK(rows[i].t->total > 0 && f >= GPU_MIN_MATCH, "%s: %.4f%% below 99.9%%", rows[i].what, 100 * f);
    }
    check_attention();
    return check_done("t-gpu");
}
