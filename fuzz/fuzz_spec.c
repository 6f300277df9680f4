/* fuzz_spec -- libFuzzer target: --variants lists and their per-variant settings
 * ("amla:amla-form=paper:block=64,base") are resolved or refused, never crash or leak */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "config/opts.h"
#include "run/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    run_cfg_t *c = fuzz_small_cfg();
    err_t e = {0};
    if (opts_run_option(c, "--variants", text, &e) == ERR_OK)
        run_validate(c, &e);
    free(c);
    free(text);
    return 0;
}
