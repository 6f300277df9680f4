/* err -- recording the first error of an operation */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

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
