/* fuzz.h -- what every libFuzzer harness of amla-lab declares */
#ifndef AMLA_FUZZ_H
#define AMLA_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (malloc'd). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    return text;
}

/* The defaults on a tiny shape, one sample (malloc'd: run_cfg_t is large). */
static inline run_cfg_t *fuzz_small_cfg(void)
{
    run_cfg_t *c = malloc(sizeof *c);
    run_cfg_default(c);
    c->shape = (attn_shape_t){2, 1, 1, 64, 32, 16, 0};
    c->samples = 1;
    return c;
}

#endif
