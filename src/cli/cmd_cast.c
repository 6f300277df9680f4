/* cmd_cast -- `amla-lab cast`: round numbers from stdin, or a whole .npy array */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/opts.h"
#include "data/npy.h"
#include "num/fmt/cast.h"
#include "num/fmt/fmt.h"

static const char CAST_USAGE[] =
    "usage: amla-lab cast --to FMT [--rounding MODE] [--saturate] [--bits] [--seed N]\n"
    "       amla-lab cast --to FMT --in X.npy --out Y.npy [--values] [--rounding MODE] [--saturate]\n"
    "Reads whitespace-separated numbers (decimal, hex float, nan, inf) from stdin, or with\n"
    "--bits binary32 patterns as 0x + 8 hex digits; each is taken as a binary32 value, then\n"
    "rounded to FMT. Prints the target bit pattern and the value (%.9g), one line each.\n"
    "With --in, the whole array (float16/32: vectorized for RNE; float64: one rounding of\n"
    "each double) goes to Y.npy as codes (uint8 for e4m3/e5m2, uint16 for bf16/fp16, uint32\n"
    "for tf32/fp32), or with --values as the rounded values in float32.\n";


/* cast --in X.npy --out Y.npy: the whole array; RNE from float16/float32 takes the vectorized
 * path, anything else one fmt_encode per element. */
static int cast_array(const char *in, const char *out, fmt_id_t to, fmt_round_t mode, int sat, int values,
                      fmt_rng_t *rng)
{
    err_t e = {0};
    io_npy_t a;
    if (io_npy_read(&a, in, &e))
        return cli_fail(&e);
    if (a.codes) {
        io_npy_free(&a);
        err_set(&e, ERR_USAGE, "cast --in %s: holds integer codes; cast reads values (float16/32/64)", in);
        return cli_fail(&e);
    }
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
    return rc ? cli_fail(&e) : 0;
}

int cmd_cast(int argc, char **argv)
{
    int to = -1, mode = FMT_RNE, sat = 0, bits = 0, values = 0;
    long seed = 1;
    const char *in = NULL, *out = NULL;
    err_t e = {0};
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(CAST_USAGE, stdout);
            return cli_finish_stdout(0);
        } else if (strcmp(opt, "--saturate") == 0) {
            sat = 1;
        } else if (strcmp(opt, "--bits") == 0) {
            bits = 1;
        } else if (strcmp(opt, "--values") == 0) {
            values = 1;
        } else if (strcmp(opt, "--to") == 0 || strcmp(opt, "--rounding") == 0 || strcmp(opt, "--seed") == 0 ||
                   strcmp(opt, "--in") == 0 || strcmp(opt, "--out") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("%s: missing value%s", opt, "");
            const char *val = argv[++i];
            if (strcmp(opt, "--in") == 0)
                in = val;
            if (strcmp(opt, "--out") == 0)
                out = val;
            if (strcmp(opt, "--to") == 0 && (to = fmt_from_name(val)) < 0)
                return cli_usage_error("--to: unknown format '%s'%s", val, " (see 'amla-lab list')");
            if (strcmp(opt, "--rounding") == 0 && (mode = fmt_round_from_name(val)) < 0)
                return cli_usage_error("--rounding: unknown mode '%s'%s", val, " (see 'amla-lab list')");
            if (strcmp(opt, "--seed") == 0 && opts_parse_long(opt, val, &seed, &e))
                return cli_fail(&e);
            if (strcmp(opt, "--seed") == 0 && seed < 0)
                return cli_usage_error("--seed must be non-negative, got %s%s", val, "");
        } else {
            return cli_usage_error("cast: unknown option '%s'%s", opt, " (see 'amla-lab cast --help')");
        }
    }
    if (to < 0)
        return cli_usage_error("cast: --to FMT is required%s%s", "", "");
    if (to == FMT_FP64)
        return cli_usage_error("cast: --to %s is not a target (inputs are binary32)%s", "fp64", "");
    fmt_rng_t rng;
    fmt_rng_seed(&rng, (uint64_t)seed);
    if (in || out) {
        if (!in || !out)
            return cli_usage_error("cast: --in and --out go together%s%s", "", "");
        if (bits)
            return cli_usage_error("cast: --bits is for numbers read from stdin, not with --in%s%s", "", "");
        return cast_array(in, out, (fmt_id_t)to, (fmt_round_t)mode, sat, values, &rng);
    } else if (values) {
        return cli_usage_error("cast: --values needs --in and --out%s%s", "", "");
    }
    err_t ce = {0};
    int crc = cast_stream(stdin, stdout, (fmt_id_t)to, (fmt_round_t)mode, sat, bits, &rng, &ce);
    return cli_finish_stdout(crc ? cli_fail(&ce) : 0);
}

