/* cmd_run -- `amla-lab run`: one configuration, N samples, every selected variant */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "base/progress.h"
#include "config/opts.h"
#include "data/files.h"
#include "report/csv.h"
#include "report/json.h"
#include "report/table.h"
#include "run/run.h"



/* The progress line of a long run on a terminal: drawn from the first sample finished after
 * RUN_PROGRESS_AFTER seconds, so that a short run prints nothing but its results. */
#define RUN_PROGRESS_AFTER 2.0
typedef struct {
    long done, total;
    double t0;
    int tty, shown;
} run_progress_t;

static int run_progress_hook(void *arg, long sample, const run_row_t *rows, err_t *e)
{
    run_progress_t *p = arg;
    (void)sample;
    (void)rows;
    (void)e;
    p->done++;
    double el = progress_now() - p->t0;
    if (p->tty && (p->shown || el >= RUN_PROGRESS_AFTER)) {
        p->shown = 1;
        progress_draw(stderr, "run", p->done, p->total, p->done, el);
    }
    return ERR_OK;
}

int cmd_run(int argc, char **argv)
{
    run_cfg_t c;
    run_cfg_default(&c);
    err_t e = {0};
    int samples_given = 0;
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            opts_write_help(stdout);
            return cli_finish_stdout(0);
        }
        if (strncmp(opt, "--", 2) != 0)
            return cli_usage_error("run: unexpected argument '%s'%s", opt, "");
        const char *fval;
        const opts_def_t *d = opts_find_flag(opt + 2, &fval);
        if (d) {
            if (opts_set(&c, d->name, fval, &e))
                return cli_fail(&e);
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error("%s: missing value%s", opt, "");
        samples_given |= strcmp(opt, "--samples") == 0;
        if (opts_run_option(&c, opt, argv[++i], &e))
            return cli_fail(&e);
    }
    /* a loaded case is one sample unless --samples says otherwise (stochastic rounding
     * draws anew per sample); it is read once and shared by every sample */
    attn_batch_t loaded = {0};
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
    run_progress_t pr = {0, c.samples, progress_now(), isatty(2) && c.samples > 1, 0};
    run_hooks_t hooks = {NULL, run_progress_hook, &pr};
    if (!rc)
        rc = run_execute_hooked(&r, &c, &hooks, &e);
    if (pr.shown && pr.done < pr.total) /* stopped early: end the progress line */
        fputc('\n', stderr);
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
    attn_batch_free(&loaded);
    return rc ? cli_fail(&e) : cli_finish_stdout(0);
}

