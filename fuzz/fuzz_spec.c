/* fuzz_spec -- libFuzzer target: --variants lists and their per-variant settings
 * ("amla:amla-form=paper:block=64,base") are resolved or refused, never crash or leak */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "config/opts.h"
#include "run/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    run_cfg_t *c = malloc(sizeof *c);
    run_cfg_default(c);
    c->shape = (attn_shape_t){2, 1, 1, 64, 32, 16, 0};
    c->samples = 1;
    err_t e = {0};
    if (opts_run_option(c, "--variants", text, &e) == ERR_OK)
        run_validate(c, &e);
    free(c);
    free(text);
    return 0;
}
