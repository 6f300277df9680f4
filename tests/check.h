/* check -- the tiny harness of amla-lab's unit tests: counts checks, prints failures */
#ifndef AMLA_CHECK_H
#define AMLA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static long check_pass, check_fail;

/* Record one check; on failure print where and a message (inputs in %a / hex). */
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            check_pass++;                                                  \
        } else {                                                           \
            check_fail++;                                                  \
            if (check_fail <= 20) {                                        \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
                fprintf(stderr, __VA_ARGS__);                              \
                fputc('\n', stderr);                                       \
            }                                                              \
        }                                                                  \
    } while (0)

/* Print the summary line the test runner adds up, exit non-zero on any failure. */
static inline int check_done(const char *name)
{
    printf("%s: %ld passed, %ld failed\n", name, check_pass, check_fail);
    return check_fail ? 1 : 0;
}

/* AMLA_QUICK=1 (sanitizer and valgrind runs) scales the exhaustive loops down. */
static inline int check_quick(void)
{
    const char *q = getenv("AMLA_QUICK");
    return q && *q && *q != '0';
}

#endif
