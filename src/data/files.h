/* files -- safe input opening, atomic output files and directories, temporaries on signals */
#ifndef AMLA_FILES_H
#define AMLA_FILES_H

#include <stdio.h>

#include "base/err.h"

/* Open path for reading after checking it is a regular file (a FIFO is refused, not waited
 * on; a directory is named as one); returns the descriptor, or -1 with e set. */
int io_open_regular(const char *path, err_t *e);

/* The whole regular file at path into a malloc'd buffer (NUL-terminated beyond len). */
int io_read_file(const char *path, unsigned char **buf, size_t *len, err_t *e);

/* A file written under a temporary name in the same directory and renamed on commit, so a
 * reader never sees it half-written. */
typedef struct {
    FILE *f;
    char *tmp;
    char *path;
} io_atomic_t;

/* ERR_USAGE unless path can name an output file: not empty, not a directory, not an existing
 * non-regular file (a device or FIFO that renaming would replace). */
int io_check_output(const char *path, err_t *e);

int io_atomic_open(io_atomic_t *a, const char *path, err_t *e);
int io_atomic_commit(io_atomic_t *a, err_t *e);
void io_atomic_abort(io_atomic_t *a);

/* A directory of files written under a temporary directory beside it (.NAME.tmp.XXXXXX) and
 * moved into place whole on commit: over a missing or empty target, or in place of an earlier set
 * (golden.npy beside only regular .npy files), which is removed; a target holding anything else is
 * refused by io_dir_begin. Abort removes the temporary directory and everything in it. */
typedef struct {
    char *dir, *tmp;
} io_dir_t;

int io_dir_begin(io_dir_t *d, const char *dir, err_t *e);
int io_dir_commit(io_dir_t *d, err_t *e);
void io_dir_abort(io_dir_t *d);

/* Temporaries to remove if the process is stopped by SIGINT, SIGTERM or SIGHUP (the signal
 * is then re-raised); io_atomic_* and io_dir_* register theirs. */
void io_cleanup_on_signals(void);
void io_cleanup_add(const char *path, int is_dir);
void io_cleanup_remove(const char *path);

/* Check that a directory exists and is writable, creating it if needed. */
int io_ensure_dir(const char *dir, err_t *e);

#endif
