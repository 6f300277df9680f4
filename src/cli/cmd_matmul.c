/* cmd_matmul -- `amla-lab matmul`: C = A B^T under a number format and an accumulation model */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "data/npy.h"
#include "num/acc/acc.h"
#include "num/acc/acc_split.h"
#include "num/fmt/fmt.h"

static const char MATMUL_USAGE[] =
    "usage: amla-lab matmul A.npy B.npy [--in-format F] [--b-format F] [--acc MODEL] [--split-k N|search]\n"
    "                       [--ref C_GPU.npy] -o C.npy\n"
    "C = A B^T with A [M, K] and B [N, K] rounded to F (RNE; default bf16; B to --b-format if\n"
    "given, e.g. e5m2 x e4m3), each element\n"
    "accumulated under MODEL (default fp32-fma; see 'amla-lab list'); C is written as float32.\n"
    "--split-k N: as cuBLAS's split-K kernels compute it (K in tiles of 128 bytes: 64 bf16/fp16 or 128 e4m3\n"
    "values; ceil(tiles / N) per split, each split under MODEL from zero, the partials added in fp32 in split\n"
    "order; default 1: no split).\n"
    "--split-k search --ref C_GPU.npy: every split count from 1 to 32 against the GPU's float32 C; prints\n"
    "each count that matches every element (or the best) and writes C with the first of them.\n";

#define MATMUL_MAX_SEARCH 32 /* split counts --split-k search tries */

/* Elements of c [n] whose binary32 bits equal ref's. */
static long matmul_identical(const double *c, const double *ref, long n)
{
    long same = 0;
    for (long i = 0; i < n; i++) {
        float x = (float)c[i], y = (float)ref[i];
        same += memcmp(&x, &y, sizeof x) == 0;
    }
    return same;
}


int cmd_matmul(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *out = NULL, *refp = NULL;
    long splits = 1; /* 0: search */
    int np = 0;
    fmt_id_t f = FMT_BF16;
    int fb = -1;
    acc_model_t acc = ACC_FP32_FMA;
    err_t e = {0};
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(MATMUL_USAGE, stdout);
            return cli_finish_stdout(0);
        } else if (strcmp(opt, "--format") == 0) { /* one meaning per option name in every command */
            return cli_usage_error("matmul: --format is how results are printed elsewhere; the number format of A and B "
                                   "is --in-format (and --b-format)%s%s", "", "");
        } else if (strcmp(opt, "--in-format") == 0 || strcmp(opt, "--acc") == 0 || strcmp(opt, "--b-format") == 0 ||
                   strcmp(opt, "-o") == 0 || strcmp(opt, "--split-k") == 0 || strcmp(opt, "--ref") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("%s: missing value%s", opt, "");
            const char *val = argv[++i];
            if (strcmp(opt, "-o") == 0) {
                out = val;
            } else if (strcmp(opt, "--ref") == 0) {
                refp = val;
            } else if (strcmp(opt, "--split-k") == 0) {
                char *end;
                errno = 0;
                long v = strcmp(val, "search") == 0 ? 0 : strtol(val, &end, 10);
                if (strcmp(val, "search") != 0 && (errno || end == val || *end || v < 1 || v > 1024))
                    return cli_usage_error("--split-k: '%s' is not a split count from 1 to 1024 or 'search'%s", val, "");
                splits = v;
            } else if (strcmp(opt, "--acc") == 0) {
                int a = acc_from_name(val);
                if (a < 0)
                    return cli_usage_error("--acc: unknown accumulation model '%s'%s", val, " (see 'amla-lab list')");
                acc = (acc_model_t)a;
            } else {
                int ff = fmt_from_name(val);
                if (ff < 0)
                    return cli_usage_error("%s: unknown format '%s'", opt, val);
                if (strcmp(opt, "--b-format") == 0)
                    fb = ff;
                else
                    f = (fmt_id_t)ff;
            }
        } else if (strncmp(opt, "-", 1) == 0) {
            return cli_usage_error("matmul: unknown option '%s'%s", opt, " (see 'amla-lab matmul --help')");
        } else if (np < 2) {
            paths[np++] = opt;
        } else {
            return cli_usage_error("matmul: unexpected argument '%s'%s", opt, "");
        }
    }
    if (np != 2 || !out)
        return cli_usage_error("matmul: need A.npy, B.npy and -o C.npy%s%s", "", "");
    if ((splits == 0) != (refp != NULL))
        return cli_usage_error("matmul: --split-k search and --ref go together%s%s", "", "");
    io_npy_t a, b;
    if (io_npy_read(&a, paths[0], &e))
        return cli_fail(&e);
    if (io_npy_read(&b, paths[1], &e)) {
        io_npy_free(&a);
        return cli_fail(&e);
    }
    /* codes (uint8/uint16 bit patterns) are decoded in the formats they are given in */
    int rc = io_npy_decode(&a, f, paths[0], "--in-format", &e);
    if (!rc)
        rc = io_npy_decode(&b, fb < 0 ? f : (fmt_id_t)fb, paths[1], fb < 0 ? "--in-format" : "--b-format", &e);
    if (rc) {
    } else if (a.ndim != 2 || b.ndim != 2)
        rc = err_set(&e, ERR_USAGE, "matmul: A and B must be 2-D, got %d-D and %d-D", a.ndim, b.ndim);
    else if (a.shape[1] != b.shape[1])
        rc = err_set(&e, ERR_USAGE, "matmul: A is [%ld, %ld] and B is [%ld, %ld]: K differs", a.shape[0], a.shape[1],
                     b.shape[0], b.shape[1]);
    else if (a.n > 0 && b.shape[0] > (1L << 40) / (a.shape[0] > 0 ? a.shape[0] : 1))
        rc = err_set(&e, ERR_USAGE, "matmul: C would be too large");
    for (long i = 0; !rc && i < a.n; i++)
        if (!isfinite(a.data[i]))
            rc = err_set(&e, ERR_USAGE, "%s: element %ld is not finite", paths[0], i);
    for (long i = 0; !rc && i < b.n; i++)
        if (!isfinite(b.data[i]))
            rc = err_set(&e, ERR_USAGE, "%s: element %ld is not finite", paths[1], i);
    if (!rc) {
        long M = a.shape[0], N = b.shape[0], K = a.shape[1];
        fmt_id_t bf = fb < 0 ? f : (fmt_id_t)fb;
        fmt_round_array(a.data, a.n, f);
        fmt_round_array(b.data, b.n, bf);
        double *c = err_malloc((size_t)(M * N > 0 ? M * N : 1), sizeof(double));
        io_npy_t ref = {0};
        if (refp && !(rc = io_npy_read(&ref, refp, &e)) && (ref.codes || ref.integer))
            rc = err_set(&e, ERR_USAGE, "%s: integers or codes, but --ref is the GPU's float32 C", refp);
        else if (refp && !rc && (ref.ndim != 2 || ref.shape[0] != M || ref.shape[1] != N))
            rc = err_set(&e, ERR_USAGE, "%s: not [%ld, %ld] (A's rows by B's rows)", refp, M, N);
        if (!rc && splits == 0) { /* every split count against the GPU's C: the first that matches every bit */
            long best = 1, best_same = -1;
            for (long s = 1; s <= MATMUL_MAX_SEARCH; s++) {
                acc_gemm_split(c, N, a.data, K, b.data, K, 1, M, N, K, acc, f, bf, s);
                long same = matmul_identical(c, ref.data, M * N);
                if (same == M * N)
                    printf("split-k %ld: %ld of %ld elements bit-identical to %s\n", s, same, M * N, refp);
                if (same > best_same)
                    best = s, best_same = same;
            }
            if (best_same < M * N)
                printf("split-k %ld: %ld of %ld elements bit-identical to %s (the best of 1 to %d)\n", best, best_same,
                       M * N, refp, MATMUL_MAX_SEARCH);
            splits = best;
        }
        if (!rc)
            acc_gemm_split(c, N, a.data, K, b.data, K, 1, M, N, K, acc, f, bf, splits);
        long shape[2] = {M, N};
        if (!rc)
            rc = io_npy_write(out, c, shape, 2, 1, &e);
        io_npy_free(&ref);
        free(c);
    }
    io_npy_free(&a);
    io_npy_free(&b);
    if (rc)
        return cli_fail(&e);
    return cli_finish_stdout(0);
}

