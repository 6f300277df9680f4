/* cmd_sweep -- `amla-lab sweep`: a whole experiment file */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/opts.h"
#include "sweep/sweep.h"

static const char SWEEP_USAGE[] =
    "usage: amla-lab sweep EXPERIMENT_FILE [--out DIR] [--threads N] [--progress|--quiet] [--no-plot] [--check]\n"
    "                      [--samples N] [--set OPTION=VALUE ...]\n"
    "Runs every grid point of the experiment (format: experiments/README.md), resuming from\n"
    "DIR/.NAME.samples if an earlier run stopped; writes DIR/NAME.csv, DIR/NAME.md and DIR/NAME.png\n"
    "(DIR defaults to results) and says so in its last line. --check only parses the file.\n"
    "A quick try: --samples N and --set OPTION=VALUE (any run option without its dashes, not a\n"
    "grid option) replace the file's own settings; the report notes them, and DIR defaults to\n"
    "results/quick so the experiment's own results stay as they are.\n";


int cmd_sweep(int argc, char **argv)
{
    sweep_opts_t o = {NULL, 0, -1, 0, {0, 0, {NULL}}};
    const char *file = NULL;
    int check = 0;
    err_t e = {0};
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(SWEEP_USAGE, stdout);
            return cli_finish_stdout(0);
        } else if (strcmp(opt, "--check") == 0) {
            check = 1;
        } else if (strcmp(opt, "--progress") == 0) {
            o.progress = 1;
        } else if (strcmp(opt, "--quiet") == 0) {
            o.progress = 0;
        } else if (strcmp(opt, "--no-plot") == 0) {
            o.no_plot = 1;
        } else if (strcmp(opt, "--out") == 0 || strcmp(opt, "--threads") == 0 || strcmp(opt, "--samples") == 0 ||
                   strcmp(opt, "--set") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("%s: missing value%s", opt, "");
            if (strcmp(opt, "--set") == 0) {
                if (o.ov.nsets == SWEEP_MAX_SETS)
                    return cli_usage_error("--set: more than %s%s", AMLA_STR(SWEEP_MAX_SETS), "");
                o.ov.sets[o.ov.nsets++] = argv[++i];
            } else if (strcmp(opt, "--samples") == 0) {
                if (opts_parse_long(opt, argv[++i], &o.ov.samples, &e))
                    return cli_fail(&e);
                if (o.ov.samples < 1)
                    return cli_usage_error("--samples must be at least 1, got %s%s", argv[i], "");
            } else if (strcmp(opt, "--out") == 0) {
                o.outdir = argv[++i];
            } else {
                long t;
                if (opts_parse_long(opt, argv[++i], &t, &e))
                    return cli_fail(&e);
                if (t <= 0 || t > OPTS_MAX_THREADS)
                    return cli_usage_error("--threads must be 1 to " AMLA_STR(OPTS_MAX_THREADS) ", got %s%s", argv[i], "");
                o.threads = (int)t;
            }
        } else if (strncmp(opt, "--", 2) == 0) {
            return cli_usage_error("sweep: unknown option '%s'%s", opt, " (see 'amla-lab sweep --help')");
        } else if (!file) {
            file = opt;
        } else {
            return cli_usage_error("sweep: unexpected argument '%s'%s", opt, "");
        }
    }
    if (!file)
        return cli_usage_error("sweep: an experiment file is required%s%s", "", "");
    int rc = check ? sweep_check(file, &o.ov, &e) : sweep_run(file, &o, &e);
    if (rc)
        return cli_fail(&e);
    return cli_finish_stdout(0);
}

