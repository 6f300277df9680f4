/* fuzz_exp -- libFuzzer target: the experiment-file parser (every grid point validated as a
 * run configuration) accepts or names the line, never crashes or leaks */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sweep/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    err_t e = {0};
    sweep_check_text("fuzz.exp", text, size, &e);
    free(text);
    return 0;
}
