/* t-io -- .npy round trips and every malformed-file class the reader must reject */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "data/files.h"
#include "data/npy.h"

/* Build a .npy in memory: version 1 header from a dict string, then raw data. */
static size_t build(unsigned char *buf, const char *dict, const void *data, size_t dlen)
{
    size_t n = strlen(dict);
    size_t hl = n + 1;
    while ((10 + hl) % 64)
        hl++;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hl & 0xFF);
    buf[9] = (unsigned char)(hl >> 8);
    memcpy(buf + 10, dict, n);
    memset(buf + 10 + n, ' ', hl - n - 1);
    buf[10 + hl - 1] = '\n';
    memcpy(buf + 10 + hl, data, dlen);
    return 10 + hl + dlen;
}

static int parse_rc(const unsigned char *buf, size_t len, const char *want_msg)
{
    io_npy_t a;
    err_t e = {0};
    int rc = io_npy_parse(&a, buf, len, &e);
    if (rc == 0)
        io_npy_free(&a);
    else if (want_msg)
        CHECK(strstr(e.msg, want_msg) != NULL, "message '%s' lacks '%s'", e.msg, want_msg);
    return rc;
}

int main(void)
{
    unsigned char buf[4096];
    float f4[6] = {1, -2, 3.5f, 0x1p-140f, 65504, -0.0f};
    size_t len = build(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f4, sizeof f4);
    io_npy_t a;
    err_t e = {0};
    CHECK(io_npy_parse(&a, buf, len, &e) == 0, "valid <f4: %s", e.msg);
    CHECK(a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3 && a.n == 6, "shape");
    for (int i = 0; i < 6; i++)
        CHECK(a.data[i] == (double)f4[i] && !!signbit(a.data[i]) == !!signbit(f4[i]), "value %d: %a", i, a.data[i]);
    io_npy_free(&a);

    /* float16 data: 0x3C00 = 1, 0xC000 = -2, 0x0001 = 2^-24, 0x7BFF = 65504 */
    uint16_t h[4] = {0x3C00, 0xC000, 0x0001, 0x7BFF};
    len = build(buf, "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", h, sizeof h);
    CHECK(io_npy_parse(&a, buf, len, &e) == 0, "valid <f2");
    CHECK(a.data[0] == 1 && a.data[1] == -2 && a.data[2] == 0x1p-24 && a.data[3] == 65504, "f2 values");
    io_npy_free(&a);

    /* rejects, each with its reason */
    double d[2] = {1, 2};
    /* Fortran order: read into C order. A [2, 3] array A[i][j] = 10 i + j stored column by
     * column is 0 10 1 11 2 12 in the file (a hand layout); a [2, 2, 2] one, A = 4i + 2j + k,
     * is 0 4 2 6 1 5 3 7 */
    double fo[6] = {0, 10, 1, 11, 2, 12}, fo3[8] = {0, 4, 2, 6, 1, 5, 3, 7};
    len = build(buf, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", fo, sizeof fo);
    CHECK(io_npy_parse(&a, buf, len, &e) == 0 && a.fortran, "Fortran order read: %s", e.msg);
    for (int i = 0; i < 6; i++)
        CHECK(a.data[i] == 10 * (i / 3) + i % 3, "Fortran [2, 3] element %d: %g", i, a.data[i]);
    io_npy_free(&a);
    len = build(buf, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2, 2), }", fo3, sizeof fo3);
    CHECK(io_npy_parse(&a, buf, len, &e) == 0, "Fortran [2, 2, 2] read: %s", e.msg);
    for (int i = 0; i < 8; i++)
        CHECK(a.data[i] == i, "Fortran [2, 2, 2] element %d: %g", i, a.data[i]);
    io_npy_free(&a);
    len = build(buf, "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2,), }", d, sizeof d);
    CHECK(parse_rc(buf, len, "fortran_order") == ERR_USAGE, "bad fortran_order rejected");
    len = build(buf, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", d, sizeof d);
    CHECK(parse_rc(buf, len, "big-endian") == ERR_USAGE, "big-endian rejected");
    len = build(buf, "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", d, 4);
    CHECK(parse_rc(buf, len, "dtype") == ERR_USAGE, "int16 dtype rejected");
    /* int32 (seqlens.npy): the integers, marked as such; -1 is 0xFFFFFFFF little-endian */
    int32_t iv[2] = {4096, -1};
    len = build(buf, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", iv, sizeof iv);
    CHECK(io_npy_parse(&a, buf, len, &e) == 0 && a.integer && !a.codes && a.data[0] == 4096 && a.data[1] == -1,
          "int32 values");
    io_npy_free(&a);
    /* ml_dtypes' bfloat16 saved by numpy: void '<V2', read as codes; 0x3F80 is bf16 1.0 */
    uint16_t vb[2] = {0x3F80, 0xC000};
    len = build(buf, "{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }", vb, sizeof vb);
    CHECK(io_npy_parse(&a, buf, len, &e) == 0 && a.codes && io_npy_decode(&a, FMT_BF16, "x", "--in-format", &e) == 0 &&
              a.data[0] == 1 && a.data[1] == -2,
          "V2 codes as bf16");
    io_npy_free(&a);
    len = build(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", d, sizeof d);
    CHECK(parse_rc(buf, len, "truncated") == ERR_USAGE, "truncated data rejected");
    len = build(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", d, sizeof d);
    CHECK(parse_rc(buf, len, "trailing") == ERR_USAGE, "trailing data rejected");
    len = build(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", d, 0);
    CHECK(parse_rc(buf, len, "too large") == ERR_USAGE, "absurd size rejected");
    len = build(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", d, sizeof d);
    CHECK(parse_rc(buf, len - 20, NULL) == ERR_USAGE, "cut in the data rejected");
    CHECK(parse_rc(buf, 40, "truncated header") == ERR_USAGE, "cut in the header rejected");
    buf[1] = 'X';
    CHECK(parse_rc(buf, len, "magic") == ERR_USAGE, "bad magic rejected");
    len = build(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,x), }", d, sizeof d);
    CHECK(parse_rc(buf, len, "shape") == ERR_USAGE, "malformed shape rejected");
    len = build(buf, "{'fortran_order': False, 'shape': (2,), }", d, sizeof d);
    CHECK(parse_rc(buf, len, "descr") == ERR_USAGE, "missing descr rejected");

    /* write + read round trip, atomically: no temporary file left behind */
    char dir[] = "/tmp/amla-t-io-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/x.npy", dir);
    double x[6] = {1.0 / 3, -2, 1e-300, 0x1.fffffffffffffp1023, -0.0, 42};
    long shape[3] = {1, 2, 3};
    CHECK(io_npy_write(path, x, shape, 3, 0, &e) == 0, "write: %s", e.msg);
    CHECK(io_npy_read(&a, path, &e) == 0, "read back: %s", e.msg);
    CHECK(a.ndim == 3 && a.n == 6 && memcmp(a.data, x, sizeof x) == 0, "f8 round trip bit for bit");
    io_npy_free(&a);
    CHECK(io_npy_write(path, x, shape, 3, 1, &e) == 0, "write f4");
    CHECK(io_npy_read(&a, path, &e) == 0 && a.data[0] == (double)(float)(1.0 / 3), "f4 round trip");
    io_npy_free(&a);
    unlink(path);
    CHECK(rmdir(dir) == 0, "no temporary file left in %s", dir);

    err_t e2 = {0};
    CHECK(io_npy_write("/nonexistent-dir/x.npy", x, shape, 3, 0, &e2) == ERR_USAGE, "unwritable path");
    CHECK(strstr(e2.msg, "/nonexistent-dir/x.npy") != NULL, "message names the path: %s", e2.msg);
    return check_done("t-io");
}
