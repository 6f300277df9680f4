/* main -- amla-lab's command line: split --opt=value, then dispatch to a command */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "cli/cli.h"
#include "config/opts.h"
#include "data/files.h"
#include "sweep/par.h"

static const char USAGE[] =
    "usage: amla-lab COMMAND [options]\n"
    "\n"
    "  run [options]                  one configuration, N samples, every selected variant\n"
    "  sweep EXPERIMENT_FILE          a whole experiment (resumable); writes under results/\n"
    "  cast --to FMT [options]        round numbers read from stdin\n"
    "  compare A.npy B.npy            metrics of A against reference B\n"
    "  matmul A.npy B.npy --in-format F --acc MODEL -o C.npy   C = A.B^T under a format and model\n"
    "  check DIR [options]            a kernel's captured output (DIR/out.npy) against Golden and\n"
    "                                 every candidate emulation, ranked by bit-identity\n"
    "  list [--sites VARIANT]         variants, formats, rounding modes, distributions, models\n"
    "  --help | --version | COMMAND --help\n";


static int dispatch(int argc, char **argv);

/* "--opt=value" as two arguments, "--opt" "value", for every command; a flag's "--causal=top-left" stays whole
 * (a flag takes no separate value: its commands read it with opts_find_flag). */
static char **split_eq_args(int *argc, char **argv)
{
    int argc0 = *argc;
    char **out = err_malloc((size_t)(2 * argc0 + 1), sizeof(char *));
    int n = 0;
    for (int i = 0; i < argc0; i++) {
        char *eq = strncmp(argv[i], "--", 2) == 0 ? strchr(argv[i], '=') : NULL;
        const char *fval;
        if (eq && eq > argv[i] + 2 && !opts_find_flag(argv[i] + 2, &fval)) {
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
    mem_reuse_freed();
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
        return cli_finish_stdout(0);
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("amla-lab %s\n", AMLA_VERSION);
        return cli_finish_stdout(0);
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
    if (strcmp(cmd, "check") == 0)
        return cmd_check(argc - 2, argv + 2);
    if (strcmp(cmd, "list") == 0)
        return cmd_list(argc - 2, argv + 2);
    fprintf(stderr, "amla-lab: error: unknown command '%s' (see 'amla-lab --help')\n", cmd);
    return ERR_USAGE;
}

