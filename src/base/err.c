/* err -- recording the first error of an operation */
#include "base/err.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int err_set(err_t *e, int code, const char *fmt, ...)
{
    if (e && e->code == ERR_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

void (*err_fatal_hook)(void);

static void err_out_of_memory(size_t count, size_t size)
{
    if (err_fatal_hook)
        err_fatal_hook();
    fprintf(stderr, "amla-lab: error: out of memory (allocating %zu x %zu bytes)\n", count, size);
    fflush(stderr);
    _exit(ERR_IO);
}

void *err_malloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        err_out_of_memory(count, size);
    size_t n = count * size;
    void *p = malloc(n ? n : 1);
    if (!p)
        err_out_of_memory(count, size);
    return p;
}

void *err_malloc64(size_t count, size_t size)
{
    if (size && count > (SIZE_MAX - 64) / size)
        err_out_of_memory(count, size);
    size_t n = (count * size + 63) / 64 * 64;
    void *p = aligned_alloc(64, n ? n : 64);
    if (!p)
        err_out_of_memory(count, size);
    return p;
}

void *err_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        err_out_of_memory(count, size);
    return p;
}

void *err_realloc(void *p, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        err_out_of_memory(count, size);
    size_t n = count * size;
    void *q = realloc(p, n ? n : 1);
    if (!q)
        err_out_of_memory(count, size);
    return q;
}
