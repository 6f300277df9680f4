/* npy -- .npy files: parsing (the header dict checked key by key), reading and writing */
#include "data/npy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/files.h"
#include "num/fmt/fmt.h"

static const unsigned char NPY_MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

static const char *npy_skip(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* A quoted string ('...' or "...") into out (at most n - 1 characters); NULL if malformed. */
static const char *npy_string(const char *p, char *out, size_t n)
{
    char q = *p;
    if (q != '\'' && q != '"')
        return NULL;
    size_t k = 0;
    for (p++; *p && *p != q; p++) {
        if (k + 1 >= n)
            return NULL;
        out[k++] = *p;
    }
    out[k] = 0;
    return *p == q ? p + 1 : NULL;
}

static int npy_parse_descr(io_npy_t *out, const char *descr, err_t *e)
{
    /* float16/32/64 values; uint8/uint16 codes (bit patterns of a number format), or the one-
     * and two-byte void types ml_dtypes' float8 and bfloat16 arrays are saved as; int32/int64
     * integers (seqlens.npy) */
    int kind = strlen(descr) == 3 ? descr[1] : 0, size = kind ? descr[2] - '0' : 0;
    int ok = (kind == 'f' && (size == 2 || size == 4 || size == 8)) || ((kind == 'u' || kind == 'V') && (size == 1 || size == 2)) ||
             (kind == 'i' && (size == 4 || size == 8));
    if (!ok)
        return err_set(e, ERR_USAGE,
                       "unsupported dtype '%s' (need little-endian float16, float32, float64, uint8/uint16 bit "
                       "patterns (or ml_dtypes' void V1/V2), or int32/int64 for seqlens)",
                       descr);
    if (descr[0] == '>' && size != 1)
        return err_set(e, ERR_USAGE, "big-endian dtype '%s' is not supported", descr);
    if (descr[0] != '<' && descr[0] != '=' && descr[0] != '|')
        return err_set(e, ERR_USAGE, "unsupported dtype '%s'", descr);
    out->elsize = size;
    out->codes = kind == 'u' || kind == 'V';
    out->integer = kind == 'i';
    return ERR_OK;
}

/* The shape tuple "(a, b, )" at p; returns the position after ')' or NULL (e says why). */
static const char *npy_parse_shape(io_npy_t *out, const char *s, err_t *e)
{
    if (*s != '(')
        return err_set(e, ERR_USAGE, "malformed header: bad 'shape'"), NULL;
    s++;
    out->ndim = 0;
    long n = 1;
    for (;;) {
        s = npy_skip(s);
        if (*s == ')')
            break;
        if (*s < '0' || *s > '9')
            return err_set(e, ERR_USAGE, "malformed header: bad 'shape'"), NULL;
        long dim = 0;
        while (*s >= '0' && *s <= '9') {
            if (dim > IO_NPY_MAX_ELEMS)
                return err_set(e, ERR_USAGE, "shape dimension too large"), NULL;
            dim = dim * 10 + (*s - '0');
            s++;
        }
        if (out->ndim == IO_NPY_MAX_DIMS)
            return err_set(e, ERR_USAGE, "more than %d dimensions", IO_NPY_MAX_DIMS), NULL;
        out->shape[out->ndim++] = dim;
        if (dim > 0 && n > IO_NPY_MAX_ELEMS / dim)
            return err_set(e, ERR_USAGE, "array too large (more than %ld elements)", (long)IO_NPY_MAX_ELEMS), NULL;
        n *= dim;
        s = npy_skip(s);
        if (*s == ',')
            s++;
        else if (*s != ')')
            return err_set(e, ERR_USAGE, "malformed header: bad 'shape'"), NULL;
    }
    out->n = n;
    return s + 1;
}

/* The header is a Python dict literal with exactly the keys 'descr', 'fortran_order' and
 * 'shape', each once (the .npy format, version 1-3); anything else is refused. */
static int npy_parse_header(io_npy_t *out, const char *h, err_t *e)
{
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    int seen[3] = {0, 0, 0};
    const char *p = npy_skip(h);
    if (*p != '{')
        return err_set(e, ERR_USAGE, "malformed header: not a dict");
    p = npy_skip(p + 1);
    while (*p != '}') {
        char key[32], val[16];
        p = npy_string(p, key, sizeof key);
        if (!p)
            return err_set(e, ERR_USAGE, "malformed header: bad key");
        int k = 0;
        while (k < 3 && strcmp(key, keys[k]) != 0)
            k++;
        if (k == 3)
            return err_set(e, ERR_USAGE, "malformed header: unexpected key '%s'", key);
        if (seen[k]++)
            return err_set(e, ERR_USAGE, "malformed header: key '%s' given twice", key);
        p = npy_skip(p);
        if (*p != ':')
            return err_set(e, ERR_USAGE, "malformed header: no ':' after '%s'", key);
        p = npy_skip(p + 1);
        if (k == 0) {
            p = npy_string(p, val, sizeof val);
            if (!p)
                return err_set(e, ERR_USAGE, "malformed header: bad 'descr'");
            int rc = npy_parse_descr(out, val, e);
            if (rc)
                return rc;
        } else if (k == 1) {
            if (strncmp(p, "True", 4) == 0) {
                out->fortran = 1;
                p += 4;
            } else if (strncmp(p, "False", 5) == 0) {
                p += 5;
            } else {
                return err_set(e, ERR_USAGE, "malformed header: bad 'fortran_order'");
            }
        } else if (!(p = npy_parse_shape(out, p, e))) {
            return e->code;
        }
        p = npy_skip(p);
        if (*p == ',')
            p = npy_skip(p + 1);
        else if (*p != '}')
            return err_set(e, ERR_USAGE, "malformed header: expected ',' or '}' after '%s'", key);
    }
    for (int k = 0; k < 3; k++)
        if (!seen[k])
            return err_set(e, ERR_USAGE, "malformed header: no '%s'", keys[k]);
    for (p = npy_skip(p + 1); *p == ' ' || *p == '\n'; p++)
        ;
    if (*p)
        return err_set(e, ERR_USAGE, "malformed header: text after the dict");
    return ERR_OK;
}

/* A Fortran-order array's elements into C order (what a transposed view such as torch's
 * log-sum-exp for s_q > 1 gives when numpy saves it): element (i0, ..., i_{n-1}) sits at
 * i0 + s0 (i1 + s1 (i2 + ...)) in the file. */
static void npy_to_c_order(io_npy_t *a)
{
    if (a->ndim < 2 || a->n < 2)
        return;
    double *c = err_malloc((size_t)a->n, sizeof(double));
    long idx[IO_NPY_MAX_DIMS] = {0};
    for (long i = 0; i < a->n; i++) {
        long f = 0;
        for (int d = a->ndim - 1; d >= 0; d--)
            f = f * a->shape[d] + idx[d];
        c[i] = a->data[f];
        for (int d = a->ndim - 1; d >= 0 && ++idx[d] == a->shape[d]; d--)
            idx[d] = 0; /* the C-order index, last dimension fastest */
    }
    memcpy(a->data, c, sizeof(double) * (size_t)a->n);
    free(c);
}

int io_npy_parse(io_npy_t *out, const unsigned char *buf, size_t len, err_t *e)
{
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(buf, NPY_MAGIC, 6) != 0)
        return err_set(e, ERR_USAGE, "not a .npy file (bad magic)");
    int major = buf[6];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return err_set(e, ERR_USAGE, "truncated header");
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hoff = 12;
    } else {
        return err_set(e, ERR_USAGE, "unsupported .npy version %d", major);
    }
    if (hlen > len - hoff)
        return err_set(e, ERR_USAGE, "truncated header");
    if (hlen > 1 << 20)
        return err_set(e, ERR_USAGE, "header too large");
    char *h = malloc(hlen + 1);
    if (!h)
        return err_set(e, ERR_IO, "out of memory");
    memcpy(h, buf + hoff, hlen);
    h[hlen] = 0;
    if (strlen(h) != hlen) {
        free(h);
        return err_set(e, ERR_USAGE, "malformed header: NUL byte");
    }
    int rc = npy_parse_header(out, h, e);
    free(h);
    if (rc)
        return rc;

    size_t doff = hoff + hlen;
    size_t need = (size_t)out->n * (size_t)out->elsize;
    if (len - doff < need)
        return err_set(e, ERR_USAGE, "truncated data: %zu bytes for %ld elements of %d bytes",
                       len - doff, out->n, out->elsize);
    if (len - doff > need)
        return err_set(e, ERR_USAGE, "%zu bytes of trailing data after the array", len - doff - need);
    out->data = malloc(((size_t)out->n + 1) * sizeof(double));
    if (!out->data)
        return err_set(e, ERR_USAGE, "array of %ld elements does not fit in memory", out->n);
    const unsigned char *p = buf + doff;
    for (long i = 0; i < out->n; i++, p += out->elsize) {
        if (out->elsize == 8) {
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--)
                u = u << 8 | p[b];
            if (out->integer)
                out->data[i] = (double)(int64_t)u;
            else
                memcpy(&out->data[i], &u, 8);
        } else if (out->elsize == 4) {
            uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24;
            float f;
            memcpy(&f, &u, 4);
            out->data[i] = out->integer ? (double)(int32_t)u : (double)f;
        } else if (out->codes) { /* the code itself; its format decodes it (io_npy_decode) */
            out->data[i] = out->elsize == 1 ? (double)p[0] : (double)((uint32_t)p[0] | (uint32_t)p[1] << 8);
        } else {
            out->data[i] = fmt_decode((uint32_t)p[0] | (uint32_t)p[1] << 8, FMT_FP16);
        }
    }
    if (out->fortran)
        npy_to_c_order(out);
    return ERR_OK;
}

int io_npy_read(io_npy_t *out, const char *path, err_t *e)
{
    memset(out, 0, sizeof *out);
    unsigned char *buf;
    size_t len;
    int rc = io_read_file(path, &buf, &len, e);
    if (rc)
        return rc;
    err_t pe = {0};
    rc = io_npy_parse(out, buf, len, &pe);
    free(buf);
    if (rc)
        return err_set(e, rc, "%s: %s", path, pe.msg);
    return ERR_OK;
}

int io_npy_decode(io_npy_t *a, fmt_id_t f, const char *path, const char *opt, err_t *e)
{
    if (!a->codes)
        return ERR_OK;
    int width = fmt_cast_width(f);
    if (width != a->elsize)
        return err_set(e, ERR_USAGE, "%s holds %d-byte codes, but %s codes are %d bytes (see %s)", path,
                       a->elsize, fmt_table[f].name, width, opt);
    for (long i = 0; i < a->n; i++)
        a->data[i] = fmt_decode((uint32_t)a->data[i], f);
    a->codes = 0;
    return ERR_OK;
}

void io_npy_shape_text(char *buf, size_t n, const io_npy_t *a)
{
    size_t off = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < a->ndim && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%ld", i ? ", " : "", a->shape[i]);
    if (off < n)
        snprintf(buf + off, n - off, "]");
}

void io_npy_free(io_npy_t *a)
{
    free(a->data);
    a->data = NULL;
}

/* Open path atomically and write a .npy header for dtype descr and this shape. */
static int npy_begin(io_atomic_t *a, const char *path, const char *descr, const long *shape, int ndim, err_t *e)
{
    char dict[256];
    int off = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        off += snprintf(dict + off, sizeof dict - (size_t)off, "%ld%s", shape[i],
                        ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
    off += snprintf(dict + off, sizeof dict - (size_t)off, "), }");
    /* pad so that magic + 4 + header is a multiple of 64, ending in a newline */
    int total = 10 + off + 1;
    int padn = (64 - total % 64) % 64;
    int rc = io_atomic_open(a, path, e);
    if (rc)
        return rc;
    unsigned hl = (unsigned)(off + padn + 1);
    fwrite(NPY_MAGIC, 1, 6, a->f);
    unsigned char ver[4] = {1, 0, (unsigned char)(hl & 0xFF), (unsigned char)(hl >> 8)};
    fwrite(ver, 1, 4, a->f);
    fwrite(dict, 1, (size_t)off, a->f);
    for (int i = 0; i < padn; i++)
        fputc(' ', a->f);
    fputc('\n', a->f);
    return ERR_OK;
}

int io_npy_write(const char *path, const double *data, const long *shape, int ndim, int as_f32,
                 err_t *e)
{
    long n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    io_atomic_t a;
    int rc = npy_begin(&a, path, as_f32 ? "<f4" : "<f8", shape, ndim, e);
    if (rc)
        return rc;
    for (long i = 0; i < n; i++) {
        unsigned char b[8];
        if (as_f32) {
            float f = (float)data[i];
            uint32_t u;
            memcpy(&u, &f, 4);
            for (int k = 0; k < 4; k++)
                b[k] = (unsigned char)(u >> (8 * k));
            fwrite(b, 1, 4, a.f);
        } else {
            uint64_t u;
            memcpy(&u, &data[i], 8);
            for (int k = 0; k < 8; k++)
                b[k] = (unsigned char)(u >> (8 * k));
            fwrite(b, 1, 8, a.f);
        }
    }
    return io_atomic_commit(&a, e);
}

/* Integers of width 1, 2 or 4 bytes under dtype descr. */
static int npy_write_ints(const char *path, const char *descr, const void *codes, int width, const long *shape, int ndim,
                          err_t *e)
{
    long n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    io_atomic_t a;
    int rc = npy_begin(&a, path, descr, shape, ndim, e);
    if (rc)
        return rc;
    const unsigned char *c = codes;
    for (long i = 0; i < n; i++) {
        uint32_t u = width == 1 ? c[i] : width == 2 ? ((const uint16_t *)codes)[i] : ((const uint32_t *)codes)[i];
        for (int k = 0; k < width; k++)
            fputc((int)(u >> (8 * k) & 0xFF), a.f);
    }
    return io_atomic_commit(&a, e);
}

int io_npy_write_uint(const char *path, const void *codes, int width, const long *shape, int ndim, err_t *e)
{
    return npy_write_ints(path, width == 1 ? "|u1" : width == 2 ? "<u2" : "<u4", codes, width, shape, ndim, e);
}

int io_npy_write_i32(const char *path, const int32_t *v, const long *shape, int ndim, err_t *e)
{
    return npy_write_ints(path, "<i4", v, 4, shape, ndim, e);
}
