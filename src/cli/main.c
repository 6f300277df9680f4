/* main -- amla-lab's command line: argument parsing and dispatch */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "num/cast.h"
#include "base/err.h"
#include "num/fmt.h"
#include "data/gen.h"
#include "data/files.h"
#include "data/npy.h"
#include "run/metric.h"
#include "config/opts.h"
#include "run/run.h"
#include "report/csv.h"
#include "report/json.h"
#include "report/table.h"
#include "sweep/par.h"
#include "sweep/sweep.h"

#define AMLA_VERSION "0.1.0"
#define AMLA_STR2(x) #x
#define AMLA_STR(x) AMLA_STR2(x)

static const char USAGE[] =
    "usage: amla-lab COMMAND [options]\n"
    "\n"
    "  run [options]                  one configuration, N samples, every selected variant\n"
    "  sweep EXPERIMENT_FILE          a whole experiment (resumable); writes under results/\n"
    "  cast --to FMT [options]        round numbers read from stdin\n"
    "  compare A.npy B.npy            metrics of A against reference B\n"
    "  matmul A.npy B.npy --in-format F --acc MODEL -o C.npy   C = A.B^T under a format and model\n"
    "  list [--sites VARIANT]         variants, formats, rounding modes, distributions, models\n"
    "  --help | --version | COMMAND --help\n";

static const char RUN_USAGE[] =
    "usage: amla-lab run [options]\n"
    "inputs:\n"
    "  --dist normal|uniform|fa3-outlier|mla  [normal]   --mean M [0]  --sigma S [1]\n"
    "  --layer-profile 1..8  --rope-dims N [64]  --rope-scale X  --outlier-rate P  --outlier-scale X  --token-spread X\n"
    "  --low A --high B [-1, 1]           --samples N [10]  --seed N [1]\n"
    "  --ctx S2 [8192]  --heads G [128]  --kv-heads H [1]  --sq N [1]  --dk D [576]  --dv D [512]\n"
    "  --kv shared|separate [shared: V = K[..., :dv]]   --causal\n"
    "  --load DIR       read DIR/q.npy, DIR/k.npy and optionally DIR/v.npy (without it V = K[..., :dv],\n"
    "                   --dv as given [512]); read once; one sample unless --samples is given\n"
    "arithmetic:\n"
    "  --in-format F [bf16]  --out-format F [bf16]  --block B [512]  --scale X [1/sqrt(dk)]\n"
    "  --acc MODEL | --acc-qk MODEL --acc-pv MODEL [fp32-fma]\n"
    "  --variants a,b,c [standard,base; golden is always the reference; 'all' for every one]\n"
    "  --exact SITE[,SITE...]  compute these rounding sites in fp64 ('all' for every site)\n"
    "  --only SITE[,SITE...]   round only at these sites; every other site is exact\n"
    "  --attribute             per site: error with only it rounded, error removed when it is exact\n"
    "  --amla-form cann|paper [cann]  AMLA's compensation as the CANN kernel runs it (what the paper\n"
    "                          measured), or as Algorithm 2 prints it\n"
    "  --row-block N  --sub-block N  fastattn's Cube / Vector row tiles   --fa3-block yes|no  --fa3-hadamard yes|no\n"
    "output:\n"
    "  --format table|csv|json [table]  --csv FILE (per-sample rows)  --dump DIR (arrays of sample 0)\n"
    "  --threads N [all cores; at most 1024, and no more than --samples]\n"
    "Options also take the form --opt=value.\n";

static const char CAST_USAGE[] =
    "usage: amla-lab cast --to FMT [--rounding MODE] [--saturate] [--bits] [--seed N]\n"
    "       amla-lab cast --to FMT --in X.npy --out Y.npy [--values] [--rounding MODE] [--saturate]\n"
    "Reads whitespace-separated numbers (decimal, hex float, nan, inf) from stdin, or with\n"
    "--bits binary32 patterns as 0x + 8 hex digits; each is taken as a binary32 value, then\n"
    "rounded to FMT. Prints the target bit pattern and the value (%.9g), one line each.\n"
    "With --in, the whole array (float16/32: vectorized for RNE; float64: one rounding of\n"
    "each double) goes to Y.npy as codes (uint8 for e4m3/e5m2, uint16 for bf16/fp16, uint32\n"
    "for tf32/fp32), or with --values as the rounded values in float32.\n";

static const char COMPARE_USAGE[] =
    "usage: amla-lab compare A.npy B.npy [--format table|csv|json]\n"
    "Prints rel_fro, rmse, cos_sim, cos_diff, max_abs, nonfinite of A against reference B.\n";

static const char SWEEP_USAGE[] =
    "usage: amla-lab sweep EXPERIMENT_FILE [--out DIR] [--threads N] [--progress|--quiet] [--no-plot] [--check]\n"
    "Runs every grid point of the experiment (format: experiments/README.md), resuming from\n"
    "DIR/.NAME.samples if an earlier run stopped; writes DIR/NAME.csv, DIR/NAME.md and DIR/NAME.png\n"
    "(DIR defaults to results). --check only parses the file.\n";

static const char MATMUL_USAGE[] =
    "usage: amla-lab matmul A.npy B.npy [--in-format F] [--b-format F] [--acc MODEL] -o C.npy\n"
    "C = A B^T with A [M, K] and B [N, K] rounded to F (RNE; default bf16; B to --b-format if\n"
    "given, e.g. e5m2 x e4m3), each element\n"
    "accumulated under MODEL (default fp32-fma; see 'amla-lab list'); C is written as float32.\n";

static const char LIST_USAGE[] = "usage: amla-lab list [--sites VARIANT]\n";

/* Under MPI every rank sees the same arguments and files, so a usage error is said once, by
 * rank 0; a rank's own failure is said by that rank, and the others stay quiet (empty msg). */
static int say_error(int code)
{
    return code != ERR_USAGE || par_rank() == 0;
}

static int fail(const err_t *e)
{
    if (e->msg[0] && say_error(e->code ? e->code : ERR_USAGE))
        fprintf(stderr, "amla-lab: error: %s\n", e->msg);
    return e->code ? e->code : ERR_USAGE;
}

static int usage_error(const char *fmt, const char *a, const char *b)
{
    if (!say_error(ERR_USAGE))
        return ERR_USAGE;
    fprintf(stderr, "amla-lab: error: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return ERR_USAGE;
}

/* Finish stdout: a failed write is an error (exit 1). */
static int finish_stdout(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "amla-lab: error: writing standard output: %s\n", strerror(errno));
        return rc ? rc : ERR_IO;
    }
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    run_cfg_t c;
    run_cfg_default(&c);
    err_t e = {0};
    int samples_given = 0;
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(RUN_USAGE, stdout);
            return finish_stdout(0);
        }
        if (strcmp(opt, "--causal") == 0) {
            c.shape.causal = 1;
            continue;
        }
        if (strcmp(opt, "--attribute") == 0) {
            c.attribute = 1;
            continue;
        }
        if (strncmp(opt, "--", 2) != 0)
            return usage_error("run: unexpected argument '%s'%s", opt, "");
        if (i + 1 >= argc)
            return usage_error("%s: missing value%s", opt, "");
        samples_given |= strcmp(opt, "--samples") == 0;
        if (opts_run_option(&c, opt, argv[++i], &e))
            return fail(&e);
    }
    /* a loaded case is one sample unless --samples says otherwise (stochastic rounding
     * draws anew per sample); it is read once and shared by every sample */
    attn_input_t loaded = {c.shape, NULL, NULL, NULL};
    io_atomic_t csv = {0};
    io_dir_t dump = {0};
    run_result_t r = {0};
    const char *dump_dir = c.dump_dir;
    int rc = ERR_OK;
    if (c.load_dir && !samples_given)
        c.samples = 1;
    if (c.load_dir)
        rc = run_load_input(&c, &loaded, &e);
    if (!rc)
        rc = run_validate(&c, &e);
    if (!rc && c.csv_path)
        rc = io_atomic_open(&csv, c.csv_path, &e);
    /* --dump writes the set into a temporary directory beside DIR, moved into place whole */
    if (!rc && dump_dir && !(rc = io_dir_begin(&dump, dump_dir, &e)))
        c.dump_dir = dump.tmp;
    if (!rc)
        rc = run_execute(&r, &c, &e);
    if (!rc && c.csv_path) {
        run_write_csv_header(csv.f);
        run_write_csv_rows(csv.f, &c, &r);
        rc = io_atomic_commit(&csv, &e);
    }
    if (!rc && dump_dir)
        rc = io_dir_commit(&dump, &e);
    if (!rc) {
        if (c.out == RUN_OUT_TABLE)
            run_write_table(stdout, &c, &r);
        else if (c.out == RUN_OUT_CSV) {
            run_write_csv_header(stdout);
            run_write_csv_rows(stdout, &c, &r);
        } else
            run_write_json(stdout, &c, &r);
    }
    if (csv.f)
        io_atomic_abort(&csv);
    if (dump.tmp)
        io_dir_abort(&dump);
    run_result_free(&r);
    gen_free(&loaded);
    return rc ? fail(&e) : finish_stdout(0);
}

/* cast --in X.npy --out Y.npy: the whole array; RNE from float16/float32 takes the vectorized
 * path, anything else one fmt_encode per element. */
static int cast_array(const char *in, const char *out, fmt_id_t to, fmt_round_t mode, int sat, int values,
                      fmt_rng_t *rng)
{
    err_t e = {0};
    io_npy_t a;
    if (io_npy_read(&a, in, &e))
        return fail(&e);
    int w = fmt_cast_width(to), rc;
    void *codes = err_malloc((size_t)(a.n > 0 ? a.n : 1) * (size_t)w, 1);
    if (mode == FMT_RNE && a.elsize <= 4) {
        float *x = err_malloc((size_t)(a.n > 0 ? a.n : 1), sizeof(float));
        for (long i = 0; i < a.n; i++)
            x[i] = (float)a.data[i]; /* exact: the file held binary16 or binary32 values */
        fmt_cast_f32(codes, x, a.n, to, sat);
        free(x);
    } else {
        for (long i = 0; i < a.n; i++) {
            uint32_t c = fmt_encode(a.data[i], to, mode, sat, rng);
            if (w == 1)
                ((uint8_t *)codes)[i] = (uint8_t)c;
            else if (w == 2)
                ((uint16_t *)codes)[i] = (uint16_t)c;
            else
                ((uint32_t *)codes)[i] = c;
        }
    }
    if (values) {
        for (long i = 0; i < a.n; i++) {
            uint32_t c = w == 1 ? ((uint8_t *)codes)[i] : w == 2 ? ((uint16_t *)codes)[i] : ((uint32_t *)codes)[i];
            a.data[i] = fmt_decode(c, to);
        }
        rc = io_npy_write(out, a.data, a.shape, a.ndim, 1, &e);
    } else {
        rc = io_npy_write_uint(out, codes, w, a.shape, a.ndim, &e);
    }
    free(codes);
    io_npy_free(&a);
    return rc ? fail(&e) : 0;
}

static int cmd_cast(int argc, char **argv)
{
    int to = -1, mode = FMT_RNE, sat = 0, bits = 0, values = 0;
    long seed = 1;
    const char *in = NULL, *out = NULL;
    err_t e = {0};
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(CAST_USAGE, stdout);
            return finish_stdout(0);
        } else if (strcmp(opt, "--saturate") == 0) {
            sat = 1;
        } else if (strcmp(opt, "--bits") == 0) {
            bits = 1;
        } else if (strcmp(opt, "--values") == 0) {
            values = 1;
        } else if (strcmp(opt, "--to") == 0 || strcmp(opt, "--rounding") == 0 || strcmp(opt, "--seed") == 0 ||
                   strcmp(opt, "--in") == 0 || strcmp(opt, "--out") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s: missing value%s", opt, "");
            const char *val = argv[++i];
            if (strcmp(opt, "--in") == 0)
                in = val;
            if (strcmp(opt, "--out") == 0)
                out = val;
            if (strcmp(opt, "--to") == 0 && (to = fmt_from_name(val)) < 0)
                return usage_error("--to: unknown format '%s'%s", val, " (see 'amla-lab list')");
            if (strcmp(opt, "--rounding") == 0 && (mode = fmt_round_from_name(val)) < 0)
                return usage_error("--rounding: unknown mode '%s'%s", val, " (see 'amla-lab list')");
            if (strcmp(opt, "--seed") == 0 && opts_parse_long(opt, val, &seed, &e))
                return fail(&e);
            if (strcmp(opt, "--seed") == 0 && seed < 0)
                return usage_error("--seed must be non-negative, got %s%s", val, "");
        } else {
            return usage_error("cast: unknown option '%s'%s", opt, " (see 'amla-lab cast --help')");
        }
    }
    if (to < 0)
        return usage_error("cast: --to FMT is required%s%s", "", "");
    if (to == FMT_FP64)
        return usage_error("cast: --to %s is not a target (inputs are binary32)%s", "fp64", "");
    fmt_rng_t rng;
    fmt_rng_seed(&rng, (uint64_t)seed);
    if (in || out) {
        if (!in || !out)
            return usage_error("cast: --in and --out go together%s%s", "", "");
        if (bits)
            return usage_error("cast: --bits is for numbers read from stdin, not with --in%s%s", "", "");
        return cast_array(in, out, (fmt_id_t)to, (fmt_round_t)mode, sat, values, &rng);
    } else if (values) {
        return usage_error("cast: --values needs --in and --out%s%s", "", "");
    }
    err_t ce = {0};
    int crc = cast_stream(stdin, stdout, (fmt_id_t)to, (fmt_round_t)mode, sat, bits, &rng, &ce);
    return finish_stdout(crc ? fail(&ce) : 0);
}

static int cmd_compare(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    int np = 0;
    run_out_t out = RUN_OUT_TABLE;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            fputs(COMPARE_USAGE, stdout);
            return finish_stdout(0);
        } else if (strcmp(argv[i], "--format") == 0) {
            if (i + 1 >= argc)
                return usage_error("--format: missing value%s%s", "", "");
            const char *v = argv[++i];
            if (strcmp(v, "table") == 0)
                out = RUN_OUT_TABLE;
            else if (strcmp(v, "csv") == 0)
                out = RUN_OUT_CSV;
            else if (strcmp(v, "json") == 0)
                out = RUN_OUT_JSON;
            else
                return usage_error("--format: expected table, csv or json, got '%s'%s", v, "");
        } else if (strncmp(argv[i], "--", 2) == 0) {
            return usage_error("compare: unknown option '%s'%s", argv[i], "");
        } else if (np < 2) {
            paths[np++] = argv[i];
        } else {
            return usage_error("compare: unexpected argument '%s'%s", argv[i], "");
        }
    }
    if (np != 2)
        return usage_error("compare: need two files, A.npy and the reference B.npy%s%s", "", "");
    io_npy_t a, b;
    err_t e = {0};
    if (io_npy_read(&a, paths[0], &e))
        return fail(&e);
    if (io_npy_read(&b, paths[1], &e)) {
        io_npy_free(&a);
        return fail(&e);
    }
    int same = a.ndim == b.ndim;
    for (int i = 0; same && i < a.ndim; i++)
        same = a.shape[i] == b.shape[i];
    if (!same) {
        io_npy_free(&a);
        io_npy_free(&b);
        return usage_error("compare: %s and %s have different shapes", paths[0], paths[1]);
    }
    double m[METRIC_COUNT];
    metric_all(m, a.data, b.data, a.n);
    long ident = 0;
    for (long i = 0; i < a.n; i++)
        ident += a.data[i] == b.data[i] && signbit(a.data[i]) == signbit(b.data[i]);
    if (out == RUN_OUT_TABLE) {
        for (int k = 0; k < METRIC_COUNT; k++)
            printf("%-10s %.17g\n", metric_names[k], m[k]);
        printf("%-10s %ld of %ld\n", "identical", ident, a.n);
    } else if (out == RUN_OUT_CSV) {
        printf("a,b,n");
        for (int k = 0; k < METRIC_COUNT; k++)
            printf(",%s", metric_names[k]);
        printf(",identical\n%s,%s,%ld", paths[0], paths[1], a.n);
        for (int k = 0; k < METRIC_COUNT; k++)
            printf(",%.17g", m[k]);
        printf(",%ld\n", ident);
    } else {
        printf("{\"n\": %ld", a.n);
        for (int k = 0; k < METRIC_COUNT; k++) {
            if (isfinite(m[k]))
                printf(", \"%s\": %.17g", metric_names[k], m[k]);
            else
                printf(", \"%s\": null", metric_names[k]);
        }
        printf(", \"identical\": %ld}\n", ident);
    }
    io_npy_free(&a);
    io_npy_free(&b);
    return finish_stdout(0);
}

static int cmd_sweep(int argc, char **argv)
{
    sweep_opts_t o = {NULL, 0, -1, 0};
    const char *file = NULL;
    int check = 0;
    err_t e = {0};
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(SWEEP_USAGE, stdout);
            return finish_stdout(0);
        } else if (strcmp(opt, "--check") == 0) {
            check = 1;
        } else if (strcmp(opt, "--progress") == 0) {
            o.progress = 1;
        } else if (strcmp(opt, "--quiet") == 0) {
            o.progress = 0;
        } else if (strcmp(opt, "--no-plot") == 0) {
            o.no_plot = 1;
        } else if (strcmp(opt, "--out") == 0 || strcmp(opt, "--threads") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s: missing value%s", opt, "");
            if (strcmp(opt, "--out") == 0) {
                o.outdir = argv[++i];
            } else {
                long t;
                if (opts_parse_long(opt, argv[++i], &t, &e))
                    return fail(&e);
                if (t <= 0 || t > OPTS_MAX_THREADS)
                    return usage_error("--threads must be 1 to " AMLA_STR(OPTS_MAX_THREADS) ", got %s%s", argv[i], "");
                o.threads = (int)t;
            }
        } else if (strncmp(opt, "--", 2) == 0) {
            return usage_error("sweep: unknown option '%s'%s", opt, " (see 'amla-lab sweep --help')");
        } else if (!file) {
            file = opt;
        } else {
            return usage_error("sweep: unexpected argument '%s'%s", opt, "");
        }
    }
    if (!file)
        return usage_error("sweep: an experiment file is required%s%s", "", "");
    int rc = check ? sweep_check(file, &e) : sweep_run(file, &o, &e);
    if (rc)
        return fail(&e);
    return finish_stdout(0);
}

static int cmd_matmul(int argc, char **argv)
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
            return finish_stdout(0);
        } else if (strcmp(opt, "--in-format") == 0 || strcmp(opt, "--format") == 0 || strcmp(opt, "--acc") == 0 ||
                   strcmp(opt, "--b-format") == 0 || strcmp(opt, "-o") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s: missing value%s", opt, "");
            const char *val = argv[++i];
            if (strcmp(opt, "-o") == 0) {
                out = val;
            } else if (strcmp(opt, "--acc") == 0) {
                int a = acc_from_name(val);
                if (a < 0)
                    return usage_error("--acc: unknown accumulation model '%s'%s", val, " (see 'amla-lab list')");
                acc = (acc_model_t)a;
            } else {
                int ff = fmt_from_name(val);
                if (ff < 0)
                    return usage_error("%s: unknown format '%s'", opt, val);
                if (strcmp(opt, "--b-format") == 0)
                    fb = ff;
                else
                    f = (fmt_id_t)ff;
            }
        } else if (strncmp(opt, "-", 1) == 0) {
            return usage_error("matmul: unknown option '%s'%s", opt, " (see 'amla-lab matmul --help')");
        } else if (np < 2) {
            paths[np++] = opt;
        } else {
            return usage_error("matmul: unexpected argument '%s'%s", opt, "");
        }
    }
    if (np != 2 || !out)
        return usage_error("matmul: need A.npy, B.npy and -o C.npy%s%s", "", "");
    io_npy_t a, b;
    if (io_npy_read(&a, paths[0], &e))
        return fail(&e);
    if (io_npy_read(&b, paths[1], &e)) {
        io_npy_free(&a);
        return fail(&e);
    }
    int rc = ERR_OK;
    if (a.ndim != 2 || b.ndim != 2)
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
        return fail(&e);
    return finish_stdout(0);
}

static int cmd_list(int argc, char **argv)
{
    if (argc == 1 && strcmp(argv[0], "--help") == 0) {
        fputs(LIST_USAGE, stdout);
        return finish_stdout(0);
    }
    if (argc == 2 && strcmp(argv[0], "--sites") == 0) {
        int vi = attn_find(argv[1]);
        if (vi < 0)
            return usage_error("list --sites: unknown variant '%s'%s", argv[1], "");
        run_cfg_t c;
        run_cfg_default(&c);
        attn_stats_t st;
        attn_ctx_t ctx;
        err_t e = {0};
        attn_ctx_init(&ctx, vi, &c.attn, &st, &e);
        printf("# sites of %s (with the defaults: --in-format %s --out-format %s --acc %s)\n", argv[1],
               fmt_table[c.attn.in_format].name, fmt_table[c.attn.out_format].name,
               acc_table[c.attn.acc_qk].name);
        for (int i = 0; i < ctx.nsites; i++) {
            char buf[256];
            site_describe(buf, sizeof buf, &ctx.site[i]);
            printf("%s\n", buf);
        }
        return finish_stdout(0);
    }
    if (argc != 0)
        return usage_error("list: unexpected argument '%s'%s", argv[0], " (see 'amla-lab list --help')");
    printf("variants:\n  %-18s %s\n", "golden", "reference: exact Q.K^T (Ozaki slices in FP64 GEMM, or Dot2), double-double softmax (MPFR-checked bound)");
    for (int i = 0; i < attn_variant_count; i++)
        printf("  %-18s %s\n", attn_variants[i].name, attn_variants[i].summary);
    printf("formats:\n");
    for (int i = 0; i < FMT_COUNT; i++)
        printf("  %-18s %s\n", fmt_table[i].name, fmt_table[i].summary);
    printf("rounding modes:\n");
    for (int i = 0; i < FMT_ROUND_COUNT; i++)
        printf("  %-18s %s\n", fmt_round_names[i], fmt_round_summaries[i]);
    printf("distributions:\n");
    for (int i = 0; i < GEN_COUNT; i++)
        printf("  %-18s %s\n", gen_table[i].name, gen_table[i].summary);
    printf("accumulation models (default for both products: fp32-fma):\n");
    for (int i = 0; i < ACC_COUNT; i++)
        printf("  %-18s %s\n", acc_table[i].name, acc_table[i].summary);
    printf("metrics:\n");
    for (int i = 0; i < METRIC_COUNT; i++)
        printf("  %s\n", metric_names[i]);
    return finish_stdout(0);
}

static int dispatch(int argc, char **argv);

/* "--opt=value" as two arguments, "--opt" "value", for every command. */
static char **split_eq_args(int *argc, char **argv)
{
    int argc0 = *argc;
    char **out = err_malloc((size_t)(2 * argc0 + 1), sizeof(char *));
    int n = 0;
    for (int i = 0; i < argc0; i++) {
        char *eq = strncmp(argv[i], "--", 2) == 0 ? strchr(argv[i], '=') : NULL;
        if (eq && eq > argv[i] + 2) {
            *eq = 0; /* argv's strings are ours to modify */
            out[n++] = argv[i];
            out[n++] = eq + 1;
        } else {
            out[n++] = argv[i];
        }
    }
    out[n] = NULL;
    *argc = n;
    return out;
}

int main(int argc, char **argv)
{
    par_init(&argc, &argv);
    io_cleanup_on_signals();
    int rc;
    char **args = split_eq_args(&argc, argv);
    argv = args;
    if (par_size() > 1 && (argc < 2 || strcmp(argv[1], "sweep") != 0)) {
        if (par_rank() == 0)
            fprintf(stderr, "amla-lab: error: under mpirun or srun only 'sweep' splits its work among ranks; "
                            "start other commands without a launcher\n");
        rc = ERR_USAGE;
    } else {
        rc = dispatch(argc, argv);
    }
    par_finalize();
    free(args);
    return rc;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "amla-lab: error: no command given (see 'amla-lab --help')\n");
        return ERR_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(USAGE, stdout);
        return finish_stdout(0);
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("amla-lab %s\n", AMLA_VERSION);
        return finish_stdout(0);
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "sweep") == 0)
        return cmd_sweep(argc - 2, argv + 2);
    if (strcmp(cmd, "cast") == 0)
        return cmd_cast(argc - 2, argv + 2);
    if (strcmp(cmd, "compare") == 0)
        return cmd_compare(argc - 2, argv + 2);
    if (strcmp(cmd, "matmul") == 0)
        return cmd_matmul(argc - 2, argv + 2);
    if (strcmp(cmd, "list") == 0)
        return cmd_list(argc - 2, argv + 2);
    fprintf(stderr, "amla-lab: error: unknown command '%s' (see 'amla-lab --help')\n", cmd);
    return ERR_USAGE;
}
