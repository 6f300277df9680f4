/* io -- .npy reading and writing, atomic file replacement */
#include "io.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt.h"

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
    if (strlen(descr) != 3 || descr[1] != 'f' || !strchr("248", descr[2])) {
        if (strlen(descr) == 3 && descr[1] == 'f' && descr[2] == '1')
            return err_set(e, ERR_USAGE, "unsupported dtype '%s'", descr);
        return err_set(e, ERR_USAGE, "unsupported dtype '%s' (need little-endian float16, float32 or float64)",
                       descr);
    }
    if (descr[0] == '>')
        return err_set(e, ERR_USAGE, "big-endian dtype '%s' is not supported", descr);
    if (descr[0] != '<' && descr[0] != '=')
        return err_set(e, ERR_USAGE, "unsupported dtype '%s'", descr);
    out->elsize = descr[2] - '0';
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
            if (strncmp(p, "True", 4) == 0)
                return err_set(e, ERR_USAGE, "Fortran-order arrays are not supported (save in C order)");
            if (strncmp(p, "False", 5) != 0)
                return err_set(e, ERR_USAGE, "malformed header: bad 'fortran_order'");
            p += 5;
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

int io_open_regular(const char *path, err_t *e)
{
    if (!path || !*path)
        return err_set(e, ERR_USAGE, "empty file name"), -1;
    /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return err_set(e, errno == ENOENT || errno == EACCES || errno == ENOTDIR ? ERR_USAGE : ERR_IO,
                       "cannot open %s: %s", path, strerror(errno)),
               -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int dir = S_ISDIR(st.st_mode);
        close(fd);
        return err_set(e, ERR_USAGE, dir ? "%s is a directory, not a file" : "%s is not a regular file", path), -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

int io_read_file(const char *path, unsigned char **buf, size_t *len, err_t *e)
{
    *buf = NULL;
    *len = 0;
    int fd = io_open_regular(path, e);
    if (fd < 0)
        return e->code;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return err_set(e, ERR_IO, "cannot read %s: %s", path, strerror(errno));
    }
    size_t n = (size_t)st.st_size;
    unsigned char *b = malloc(n + 1);
    if (!b) {
        close(fd);
        return err_set(e, ERR_USAGE, "%s: file of %zu bytes does not fit in memory", path, n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        free(b);
        return err_set(e, ERR_IO, "cannot read %s: %s", path, got < n ? "file shrank while read" : strerror(errno));
    }
    b[n] = 0;
    *buf = b;
    *len = n;
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

int io_check_output(const char *path, err_t *e)
{
    if (!path || !*path)
        return err_set(e, ERR_USAGE, "empty output file name");
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return err_set(e, ERR_USAGE, "cannot write %s: it is a directory", path);
        /* renaming over a device or FIFO (/dev/null as root) would replace it */
        if (!S_ISREG(st.st_mode))
            return err_set(e, ERR_USAGE, "cannot write %s: it exists and is not a regular file", path);
    }
    size_t n = strlen(path);
    if (path[n - 1] == '/')
        return err_set(e, ERR_USAGE, "cannot write %s: names a directory", path);
    return ERR_OK;
}

static void io_cleanup_in_temp_dir(const char *path);

int io_atomic_open(io_atomic_t *a, const char *path, err_t *e)
{
    memset(a, 0, sizeof *a);
    if (io_check_output(path, e))
        return ERR_USAGE;
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
    io_cleanup_add(a->tmp, 0);
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
    io_cleanup_remove(a->tmp);
    io_cleanup_in_temp_dir(a->path);
    free(a->tmp);
    free(a->path);
    a->tmp = a->path = NULL;
    return ERR_OK;
}

void io_atomic_abort(io_atomic_t *a)
{
    if (a->f)
        fclose(a->f);
    if (a->tmp) {
        unlink(a->tmp);
        io_cleanup_remove(a->tmp);
    }
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

/* ---- temporaries removed on SIGINT, SIGTERM and SIGHUP ----
 * Each registered path is malloc'd when registered; the handler only reads the table and
 * calls unlink and rmdir (both async-signal-safe): files first, then directories. */
#define IO_CLEANUP_SLOTS 1024
static char *io_cleanup_path[IO_CLEANUP_SLOTS];
static volatile sig_atomic_t io_cleanup_kind[IO_CLEANUP_SLOTS]; /* 0 free, 1 file, 2 directory */
static pthread_mutex_t io_cleanup_lock = PTHREAD_MUTEX_INITIALIZER;

void io_cleanup_add(const char *path, int is_dir)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    pthread_mutex_lock(&io_cleanup_lock);
    for (int i = 0; i < IO_CLEANUP_SLOTS; i++)
        if (io_cleanup_kind[i] == 0) {
            free(io_cleanup_path[i]);
            io_cleanup_path[i] = copy;
            copy = NULL;
            io_cleanup_kind[i] = is_dir ? 2 : 1;
            break;
        }
    pthread_mutex_unlock(&io_cleanup_lock);
    free(copy);
}

void io_cleanup_remove(const char *path)
{
    pthread_mutex_lock(&io_cleanup_lock);
    for (int i = 0; i < IO_CLEANUP_SLOTS; i++)
        if (io_cleanup_kind[i] && strcmp(io_cleanup_path[i], path) == 0) {
            io_cleanup_kind[i] = 0;
            break;
        }
    pthread_mutex_unlock(&io_cleanup_lock);
}

/* Remove every registered temporary (async-signal-safe: unlink and rmdir only). */
static void io_cleanup_now(void)
{
    for (int kind = 1; kind <= 2; kind++)
        for (int i = IO_CLEANUP_SLOTS - 1; i >= 0; i--)
            if (io_cleanup_kind[i] == kind) {
                if (kind == 1)
                    unlink(io_cleanup_path[i]);
                else
                    rmdir(io_cleanup_path[i]);
            }
}

/* A file committed inside a registered temporary directory (a dump being written) is removed
 * with it if the process is stopped. */
static void io_cleanup_in_temp_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return;
    size_t n = (size_t)(slash - path);
    int inside = 0;
    pthread_mutex_lock(&io_cleanup_lock);
    for (int i = 0; i < IO_CLEANUP_SLOTS && !inside; i++)
        inside = io_cleanup_kind[i] == 2 && strlen(io_cleanup_path[i]) == n && strncmp(io_cleanup_path[i], path, n) == 0;
    pthread_mutex_unlock(&io_cleanup_lock);
    if (inside)
        io_cleanup_add(path, 0);
}

static void io_cleanup_signal(int sig)
{
    io_cleanup_now();
    signal(sig, SIG_DFL);
    raise(sig);
}

void io_cleanup_on_signals(void)
{
    err_fatal_hook = io_cleanup_now;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = io_cleanup_signal;
    sigemptyset(&sa.sa_mask);
    int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        struct sigaction old;
        /* a signal the caller ignores (nohup) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* ---- a directory of files that appears whole ---- */

int io_dir_begin(io_dir_t *d, const char *dir, err_t *e)
{
    memset(d, 0, sizeof *d);
    if (!dir || !*dir)
        return err_set(e, ERR_USAGE, "empty directory name");
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return err_set(e, ERR_USAGE, "%s is not a directory", dir);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    d->dir = malloc(n + 1);
    d->tmp = malloc(n + 32);
    if (!d->dir || !d->tmp) {
        io_dir_abort(d);
        return err_set(e, ERR_IO, "out of memory");
    }
    memcpy(d->dir, dir, n);
    d->dir[n] = 0;
    /* the temporary directory sits beside the target, so that renames stay on one filesystem */
    const char *slash = strrchr(d->dir, '/');
    size_t plen = slash ? (size_t)(slash - d->dir) + 1 : 0;
    snprintf(d->tmp, n + 32, "%.*s.%s.tmp.XXXXXX", (int)plen, d->dir, d->dir + plen);
    if (!mkdtemp(d->tmp)) {
        int saved = errno;
        io_dir_abort(d);
        return err_set(e, ERR_USAGE, "cannot write %s: %s", dir, strerror(saved));
    }
    io_cleanup_add(d->tmp, 1);
    return ERR_OK;
}

/* Remove every file in d->tmp, then the directory itself. */
static void io_dir_clear(const char *tmp)
{
    DIR *dp = opendir(tmp);
    if (dp) {
        struct dirent *de;
        while ((de = readdir(dp)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", tmp, de->d_name);
            unlink(p);
            io_cleanup_remove(p);
        }
        closedir(dp);
    }
    rmdir(tmp);
}

/* Drop the cleanup registrations of the files in tmp (they are about to move with it). */
static void io_dir_forget(const char *tmp)
{
    DIR *dp = opendir(tmp);
    if (!dp)
        return;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", tmp, de->d_name);
        io_cleanup_remove(p);
    }
    closedir(dp);
}

int io_dir_commit(io_dir_t *d, err_t *e)
{
    int rc = ERR_OK;
    struct stat st;
    if (stat(d->dir, &st) != 0) {
        io_dir_forget(d->tmp);
        if (rename(d->tmp, d->dir) != 0)
            rc = err_set(e, ERR_IO, "cannot write %s: %s", d->dir, strerror(errno));
    } else {
        /* the directory exists: move the files in, one rename each (each appears whole) */
        DIR *dp = opendir(d->tmp);
        struct dirent *de;
        while (dp && !rc && (de = readdir(dp)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char from[4096], to[4096];
            snprintf(from, sizeof from, "%s/%s", d->tmp, de->d_name);
            snprintf(to, sizeof to, "%s/%s", d->dir, de->d_name);
            if (rename(from, to) != 0)
                rc = err_set(e, ERR_IO, "cannot write %s: %s", to, strerror(errno));
            else
                io_cleanup_remove(from);
        }
        if (!dp)
            rc = err_set(e, ERR_IO, "cannot read %s: %s", d->tmp, strerror(errno));
        else
            closedir(dp);
    }
    if (rc) {
        io_dir_abort(d);
        return rc;
    }
    if (stat(d->tmp, &st) == 0)
        io_dir_clear(d->tmp);
    io_cleanup_remove(d->tmp);
    free(d->dir);
    free(d->tmp);
    memset(d, 0, sizeof *d);
    return ERR_OK;
}

void io_dir_abort(io_dir_t *d)
{
    if (d->tmp && d->tmp[0] && strstr(d->tmp, ".tmp.") && !strstr(d->tmp, "XXXXXX")) {
        io_dir_clear(d->tmp);
        io_cleanup_remove(d->tmp);
    }
    free(d->dir);
    free(d->tmp);
    memset(d, 0, sizeof *d);
}
