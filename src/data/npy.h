/* npy -- .npy files: parsing, reading and writing */
#ifndef AMLA_NPY_H
#define AMLA_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "num/fmt/fmt.h"

#define IO_NPY_MAX_DIMS 8
/* Largest array the lab accepts from a file: 2^32 elements (32 GiB as float64). */
#define IO_NPY_MAX_ELEMS (1L << 32)

typedef struct {
    int ndim;
    long shape[IO_NPY_MAX_DIMS];
    long n;       /* number of elements */
    int elsize;   /* 2, 4 or 8 (float16, float32, float64), 1 or 2 with codes, 4 or 8 with integers */
    int codes;    /* uint8/uint16 (or void V1/V2): data holds the codes, to be decoded by io_npy_decode */
    int integer;  /* int32/int64: data holds the integers */
    int fortran;  /* the file was in Fortran order (data has been put in C order) */
    double *data; /* values converted to double, C order */
} io_npy_t;

/* Parse an in-memory .npy file. Returns ERR_OK or ERR_USAGE with e->msg naming the problem
 * (the caller prefixes the file name). On success out->data is malloc'd. */
int io_npy_parse(io_npy_t *out, const unsigned char *buf, size_t len, err_t *e);

/* Read a .npy file; errors name the path. */
int io_npy_read(io_npy_t *out, const char *path, err_t *e);
void io_npy_free(io_npy_t *a);

/* Codes (uint8/uint16 bit patterns) decoded as values of format f, in place; ERR_USAGE when
 * the code width is not f's, naming opt (the option that names f: "--out-format"). Values are left as they are. */
int io_npy_decode(io_npy_t *a, fmt_id_t f, const char *path, const char *opt, err_t *e);

/* The array's shape as "[2, 3]" (for messages). */
void io_npy_shape_text(char *buf, size_t n, const io_npy_t *a);

/* Write data (n = product of shape) as little-endian float64 ('<f8') or float32 ('<f4'),
 * atomically (temporary name, then rename). */
int io_npy_write(const char *path, const double *data, const long *shape, int ndim, int as_f32,
                 err_t *e);

/* Write unsigned integer codes of width 1, 2 or 4 bytes ('|u1', '<u2', '<u4'), atomically. */
int io_npy_write_uint(const char *path, const void *codes, int width, const long *shape, int ndim, err_t *e);

/* Write int32 values ('<i4'), atomically (seqlens.npy). */
int io_npy_write_i32(const char *path, const int32_t *v, const long *shape, int ndim, err_t *e);

#endif
