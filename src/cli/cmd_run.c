/* cmd_run -- `amla-lab run`: one configuration, N samples, every selected variant */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/opts.h"
#include "data/files.h"
#include "report/csv.h"
#include "report/json.h"
#include "report/table.h"
#include "run/run.h"

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


int cmd_run(int argc, char **argv)
{
    run_cfg_t c;
    run_cfg_default(&c);
    err_t e = {0};
    int samples_given = 0;
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(RUN_USAGE, stdout);
            return cli_finish_stdout(0);
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
            return cli_usage_error("run: unexpected argument '%s'%s", opt, "");
        if (i + 1 >= argc)
            return cli_usage_error("%s: missing value%s", opt, "");
        samples_given |= strcmp(opt, "--samples") == 0;
        if (opts_run_option(&c, opt, argv[++i], &e))
            return cli_fail(&e);
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
    return rc ? cli_fail(&e) : cli_finish_stdout(0);
}

