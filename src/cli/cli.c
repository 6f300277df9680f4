/* cli -- error reporting and standard output, shared by the commands */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sweep/par.h"

/* Under MPI every rank sees the same arguments and files, so a usage error is said once, by
 * rank 0; a rank's own failure is said by that rank, and the others stay quiet (empty msg). */
int cli_say_error(int code)
{
    return code != ERR_USAGE || par_rank() == 0;
}

int cli_fail(const err_t *e)
{
    if (e->msg[0] && cli_say_error(e->code ? e->code : ERR_USAGE))
        fprintf(stderr, "amla-lab: error: %s\n", e->msg);
    return e->code ? e->code : ERR_USAGE;
}

int cli_usage_error(const char *fmt, const char *a, const char *b)
{
    if (!cli_say_error(ERR_USAGE))
        return ERR_USAGE;
    fprintf(stderr, "amla-lab: error: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return ERR_USAGE;
}

/* Finish stdout: a failed write is an error (exit 1). */
int cli_finish_stdout(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "amla-lab: error: writing standard output: %s\n", strerror(errno));
        return rc ? rc : ERR_IO;
    }
    return rc;
}

