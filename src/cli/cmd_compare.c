/* cmd_compare -- `amla-lab compare`: the metrics of one array against a reference */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "data/npy.h"
#include "run/metric.h"
#include "config/opts.h"
#include "report/compare.h"

static const char COMPARE_USAGE[] =
    "usage: amla-lab compare A.npy B.npy [--in-format F] [--format table|csv|json]\n"
    "Prints rel_fro, rmse, cos_sim, cos_diff, max_abs, nonfinite of A against reference B, and the\n"
    "elements identical in both. --in-format F: a file of uint16/uint8 bit patterns holds codes of\n"
    "number format F (a kernel's captured bf16 output); float16/32/64 files are values.\n";


int cmd_compare(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    int np = 0;
    run_out_t out = RUN_OUT_TABLE;
    int f = -1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            fputs(COMPARE_USAGE, stdout);
            return cli_finish_stdout(0);
        } else if (strcmp(argv[i], "--format") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("--format: missing value%s%s", "", "");
            err_t fe = {0};
            if (opts_parse_format("--format", argv[++i], &out, &fe))
                return cli_fail(&fe);
        } else if (strcmp(argv[i], "--in-format") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("--in-format: missing value%s%s", "", "");
            f = fmt_from_name(argv[++i]);
            if (f < 0)
                return cli_usage_error("--in-format: unknown format '%s'%s", argv[i], " (see 'amla-lab list')");
        } else if (strncmp(argv[i], "--", 2) == 0) {
            return cli_usage_error("compare: unknown option '%s'%s", argv[i], "");
        } else if (np < 2) {
            paths[np++] = argv[i];
        } else {
            return cli_usage_error("compare: unexpected argument '%s'%s", argv[i], "");
        }
    }
    if (np != 2)
        return cli_usage_error("compare: need two files, A.npy and the reference B.npy%s%s", "", "");
    io_npy_t a, b;
    err_t e = {0};
    if (io_npy_read(&a, paths[0], &e))
        return cli_fail(&e);
    if (io_npy_read(&b, paths[1], &e)) {
        io_npy_free(&a);
        return cli_fail(&e);
    }
    int rc = ERR_OK;
    for (int i = 0; i < 2 && !rc; i++) {
        io_npy_t *x = i ? &b : &a;
        if (x->codes && f < 0)
            rc = err_set(&e, ERR_USAGE, "compare: %s holds bit patterns: name their format with --in-format", paths[i]);
        else if (x->codes)
            rc = io_npy_decode(x, (fmt_id_t)f, paths[i], "--in-format", &e);
    }
    if (rc) {
        io_npy_free(&a);
        io_npy_free(&b);
        return cli_fail(&e);
    }
    int same = a.ndim == b.ndim;
    for (int i = 0; same && i < a.ndim; i++)
        same = a.shape[i] == b.shape[i];
    if (!same) {
        char sa[128], sb[128];
        io_npy_shape_text(sa, sizeof sa, &a);
        io_npy_shape_text(sb, sizeof sb, &b);
        io_npy_free(&a);
        io_npy_free(&b);
        e = (err_t){0};
        err_set(&e, ERR_USAGE, "compare: %s is %s but %s is %s", paths[0], sa, paths[1], sb);
        return cli_fail(&e);
    }
    double m[METRIC_COUNT];
    metric_all(m, a.data, b.data, a.n);
    long ident = 0;
    for (long i = 0; i < a.n; i++)
        ident += a.data[i] == b.data[i] && signbit(a.data[i]) == signbit(b.data[i]);
    report_compare(stdout, out, paths, a.n, m, ident);
    io_npy_free(&a);
    io_npy_free(&b);
    return cli_finish_stdout(0);
}

