/* err -- error codes and messages passed from modules to main */
#ifndef AMLA_ERR_H
#define AMLA_ERR_H

#include <stddef.h>

/* Exit codes (fixed): 0 success, 1 I/O or internal failure, 2 bad usage or bad input. */
enum { ERR_OK = 0, ERR_IO = 1, ERR_USAGE = 2 };

typedef struct {
    int code;
    char msg[512];
} err_t;

/* Record the first error; returns its code so callers can `return err_set(...)`. */
int err_set(err_t *e, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Checked allocation for work arrays deep inside the numerics, where no error can be passed
 * up: on failure (or a size that overflows) print "amla-lab: error: out of memory ..." and
 * exit 1, after err_fatal_hook (which removes temporaries). Sizes the user controls are
 * checked against memory before any work starts (run_validate), so this is the last guard. */
void *err_malloc(size_t count, size_t size);
/* The same, on a 64-byte boundary (a cache line; AMX tiles' rows); freed with free(). */
void *err_malloc64(size_t count, size_t size);
void *err_calloc(size_t count, size_t size);
void *err_realloc(void *p, size_t count, size_t size);
extern void (*err_fatal_hook)(void);

#endif
