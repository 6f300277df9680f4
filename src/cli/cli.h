/* cli -- what the commands share: error reporting, standard output, and the commands */
#ifndef AMLA_CLI_H
#define AMLA_CLI_H

#include "base/err.h"
#include "base/version.h"

#define AMLA_STR2(x) #x
#define AMLA_STR(x) AMLA_STR2(x)

/* "amla-lab: error: MSG" for e (once under MPI for usage errors); returns the exit code. */
int cli_fail(const err_t *e);
/* The same for a message built from fmt with two string arguments; returns ERR_USAGE. */
int cli_usage_error(const char *fmt, const char *a, const char *b);
/* Flush standard output: a failed write is an error (exit 1); returns rc otherwise. */
int cli_finish_stdout(int rc);
int cli_say_error(int code);

/* The commands: argv holds the arguments after the command's name. */
int cmd_run(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_cast(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_matmul(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_check(int argc, char **argv);
/* check on a lightning-indexer case (cmd_index.c): DIR and check's arguments (DIR among them) */
int cmd_index_check(const char *dir, int argc, char **argv);

#endif
