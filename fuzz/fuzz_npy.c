/* fuzz_npy -- libFuzzer target: the .npy parser must reject or accept, never crash or leak */
#include "fuzz.h"
#include "data/files.h"
#include "data/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    io_npy_t a;
    err_t e = {0};
    if (io_npy_parse(&a, data, size, &e) == ERR_OK) {
        volatile double sink = 0;
        for (long i = 0; i < a.n; i++)
            sink += a.data[i];
        (void)sink;
        io_npy_free(&a);
    }
    return 0;
}
