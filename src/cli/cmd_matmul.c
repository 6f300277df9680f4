/* cmd_matmul -- `amla-lab matmul`: C = A B^T under a number format and an accumulation model */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "data/npy.h"
#include "num/acc.h"
#include "num/fmt.h"

static const char MATMUL_USAGE[] =
    "usage: amla-lab matmul A.npy B.npy [--in-format F] [--b-format F] [--acc MODEL] -o C.npy\n"
    "C = A B^T with A [M, K] and B [N, K] rounded to F (RNE; default bf16; B to --b-format if\n"
    "given, e.g. e5m2 x e4m3), each element\n"
    "accumulated under MODEL (default fp32-fma; see 'amla-lab list'); C is written as float32.\n";


int cmd_matmul(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *out = NULL;
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
        } else if (strcmp(opt, "--in-format") == 0 || strcmp(opt, "--acc") == 0 ||
                   strcmp(opt, "--b-format") == 0 || strcmp(opt, "-o") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("%s: missing value%s", opt, "");
            const char *val = argv[++i];
            if (strcmp(opt, "-o") == 0) {
                out = val;
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
    io_npy_t a, b;
    if (io_npy_read(&a, paths[0], &e))
        return cli_fail(&e);
    if (io_npy_read(&b, paths[1], &e)) {
        io_npy_free(&a);
        return cli_fail(&e);
    }
    /* codes (uint8/uint16 bit patterns) are decoded in the formats they are given in */
    int rc = io_npy_decode(&a, f, paths[0], &e);
    if (!rc)
        rc = io_npy_decode(&b, fb < 0 ? f : (fmt_id_t)fb, paths[1], &e);
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
        acc_gemm_f(c, N, a.data, K, b.data, K, 1, M, N, K, acc, f, bf);
        long shape[2] = {M, N};
        rc = io_npy_write(out, c, shape, 2, 1, &e);
        free(c);
    }
    io_npy_free(&a);
    io_npy_free(&b);
    if (rc)
        return cli_fail(&e);
    return cli_finish_stdout(0);
}

