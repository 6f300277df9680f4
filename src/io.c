/* io -- .npy reading and writing, atomic file replacement */
#include "io.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt.h"

static const unsigned char NPY_MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Find `'key':` in the header dict and return a pointer just past the colon. */
static const char *npy_find_key(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(h, pat);
    }
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

static int npy_parse_header(io_npy_t *out, const char *h, int *big_endian, err_t *e)
{
    const char *d = npy_find_key(h, "descr");
    if (!d || (*d != '\'' && *d != '"'))
        return err_set(e, ERR_USAGE, "malformed header: no 'descr'");
    char q = *d++;
    char descr[16];
    size_t k = 0;
    while (*d && *d != q && k + 1 < sizeof descr)
        descr[k++] = *d++;
    descr[k] = 0;
    if (*d != q)
        return err_set(e, ERR_USAGE, "malformed header: bad 'descr'");
    if (strlen(descr) != 3 || descr[1] != 'f' || !strchr("248", descr[2])) {
        if (strlen(descr) == 3 && descr[1] == 'f' && descr[2] == '1')
            return err_set(e, ERR_USAGE, "unsupported dtype '%s'", descr);
        return err_set(e, ERR_USAGE,
                       "unsupported dtype '%s' (need little-endian float16, float32 or float64)",
                       descr);
    }
    if (descr[0] == '>') {
        *big_endian = 1;
        return err_set(e, ERR_USAGE, "big-endian dtype '%s' is not supported", descr);
    }
    if (descr[0] != '<' && descr[0] != '=')
        return err_set(e, ERR_USAGE, "unsupported dtype '%s'", descr);
    out->elsize = descr[2] - '0';

    const char *fo = npy_find_key(h, "fortran_order");
    if (!fo)
        return err_set(e, ERR_USAGE, "malformed header: no 'fortran_order'");
    if (strncmp(fo, "True", 4) == 0)
        return err_set(e, ERR_USAGE, "Fortran-order arrays are not supported (save in C order)");
    if (strncmp(fo, "False", 5) != 0)
        return err_set(e, ERR_USAGE, "malformed header: bad 'fortran_order'");

    const char *s = npy_find_key(h, "shape");
    if (!s || *s != '(')
        return err_set(e, ERR_USAGE, "malformed header: no 'shape'");
    s++;
    out->ndim = 0;
    long n = 1;
    for (;;) {
        while (*s == ' ')
            s++;
        if (*s == ')')
            break;
        if (*s < '0' || *s > '9')
            return err_set(e, ERR_USAGE, "malformed header: bad 'shape'");
        long dim = 0;
        while (*s >= '0' && *s <= '9') {
            if (dim > IO_NPY_MAX_ELEMS)
                return err_set(e, ERR_USAGE, "shape dimension too large");
            dim = dim * 10 + (*s - '0');
            s++;
        }
        if (out->ndim == IO_NPY_MAX_DIMS)
            return err_set(e, ERR_USAGE, "more than %d dimensions", IO_NPY_MAX_DIMS);
        out->shape[out->ndim++] = dim;
        if (dim > 0 && n > IO_NPY_MAX_ELEMS / dim)
            return err_set(e, ERR_USAGE, "array too large (more than %ld elements)",
                           (long)IO_NPY_MAX_ELEMS);
        n *= dim;
        while (*s == ' ')
            s++;
        if (*s == ',')
            s++;
        else if (*s != ')')
            return err_set(e, ERR_USAGE, "malformed header: bad 'shape'");
    }
    out->n = n;
    return ERR_OK;
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
    int big = 0;
    int rc = npy_parse_header(out, h, &big, e);
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
            memcpy(&out->data[i], &u, 8);
        } else if (out->elsize == 4) {
            uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24;
            float f;
            memcpy(&f, &u, 4);
            out->data[i] = f;
        } else {
            out->data[i] = fmt_decode((uint32_t)p[0] | (uint32_t)p[1] << 8, FMT_FP16);
        }
    }
    return ERR_OK;
}

int io_npy_read(io_npy_t *out, const char *path, err_t *e)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(e, errno == ENOENT ? ERR_USAGE : ERR_IO, "cannot open %s: %s", path,
                       strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return err_set(e, ERR_USAGE, "%s: not a regular file", path);
    }
    size_t len = (size_t)st.st_size;
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf) {
        fclose(f);
        return err_set(e, ERR_USAGE, "%s: file of %zu bytes does not fit in memory", path, len);
    }
    size_t got = fread(buf, 1, len, f);
    int rerr = ferror(f);
    fclose(f);
    if (rerr || got != len) {
        free(buf);
        return err_set(e, ERR_IO, "cannot read %s", path);
    }
    err_t pe = {0};
    int rc = io_npy_parse(out, buf, len, &pe);
    free(buf);
    if (rc)
        return err_set(e, rc, "%s: %s", path, pe.msg);
    return ERR_OK;
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

int io_npy_write_uint(const char *path, const void *codes, int width, const long *shape, int ndim, err_t *e)
{
    long n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    io_atomic_t a;
    int rc = npy_begin(&a, path, width == 1 ? "|u1" : width == 2 ? "<u2" : "<u4", shape, ndim, e);
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

int io_atomic_open(io_atomic_t *a, const char *path, err_t *e)
{
    memset(a, 0, sizeof *a);
    size_t n = strlen(path);
    a->path = malloc(n + 1);
    a->tmp = malloc(n + 16);
    if (!a->path || !a->tmp) {
        free(a->path);
        free(a->tmp);
        return err_set(e, ERR_IO, "out of memory");
    }
    memcpy(a->path, path, n + 1);
    snprintf(a->tmp, n + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(a->tmp);
    if (fd < 0) {
        int saved = errno;
        free(a->path);
        free(a->tmp);
        a->path = a->tmp = NULL;
        return err_set(e, ERR_USAGE, "cannot write %s: %s", path, strerror(saved));
    }
    fchmod(fd, 0644);
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        close(fd);
        io_atomic_abort(a);
        return err_set(e, ERR_IO, "cannot write %s", path);
    }
    return ERR_OK;
}

int io_atomic_commit(io_atomic_t *a, err_t *e)
{
    int bad = ferror(a->f);
    bad |= fflush(a->f) != 0;
    bad |= fclose(a->f) != 0;
    a->f = NULL;
    if (bad || rename(a->tmp, a->path) != 0) {
        int saved = errno;
        err_set(e, ERR_IO, "cannot write %s: %s", a->path, strerror(saved));
        io_atomic_abort(a);
        return ERR_IO;
    }
    free(a->tmp);
    free(a->path);
    a->tmp = a->path = NULL;
    return ERR_OK;
}

void io_atomic_abort(io_atomic_t *a)
{
    if (a->f)
        fclose(a->f);
    if (a->tmp)
        unlink(a->tmp);
    free(a->tmp);
    free(a->path);
    memset(a, 0, sizeof *a);
}

int io_ensure_dir(const char *dir, err_t *e)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        /* EEXIST: another process (an MPI rank) made it in between */
        if (mkdir(dir, 0755) != 0 && (errno != EEXIST || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
            return err_set(e, ERR_USAGE, "cannot create directory %s: %s", dir, strerror(errno));
    } else if (!S_ISDIR(st.st_mode)) {
        return err_set(e, ERR_USAGE, "%s is not a directory", dir);
    }
    if (access(dir, W_OK) != 0)
        return err_set(e, ERR_USAGE, "directory %s is not writable", dir);
    return ERR_OK;
}
