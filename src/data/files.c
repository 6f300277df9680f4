/* files -- opening inputs safely, writing outputs atomically, and removing temporaries on
 * signals: the file handling every command shares */
#include "data/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
static void io_dir_clear(const char *tmp);

/* Temporaries of path left by a process that no longer runs (killed with -9, where no handler runs):
 * PATH.tmp.PID.XXXXXX whose PID is gone are removed (a file, or a dump's temporary directory with its files).
 * A live writer's are left alone. */
static void io_atomic_clean_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path)
        snprintf(dir, sizeof dir, "/");
    const char *base = slash ? slash + 1 : path;
    size_t bl = strlen(base);
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        const char *nm = de->d_name;
        long pid;
        char rest[16];
        int used = 0;
        if (strncmp(nm, base, bl) != 0 || strncmp(nm + bl, ".tmp.", 5) != 0 ||
            sscanf(nm + bl + 5, "%ld.%15s%n", &pid, rest, &used) != 2 || nm[bl + 5 + used] != 0 || strlen(rest) != 6 ||
            pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, nm);
        if (unlink(p) != 0 && (errno == EISDIR || errno == EPERM))
            io_dir_clear(p);
    }
    closedir(dp);
}

int io_atomic_open(io_atomic_t *a, const char *path, err_t *e)
{
    memset(a, 0, sizeof *a);
    if (io_check_output(path, e))
        return ERR_USAGE;
    size_t n = strlen(path);
    a->path = malloc(n + 1);
    a->tmp = malloc(n + 40);
    if (!a->path || !a->tmp) {
        free(a->path);
        free(a->tmp);
        return err_set(e, ERR_IO, "out of memory");
    }
    memcpy(a->path, path, n + 1);
    io_atomic_clean_stale(path);
    snprintf(a->tmp, n + 40, "%s.tmp.%ld.XXXXXX", path, (long)getpid()); /* the writer's pid: io_atomic_clean_stale */
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

/* What stands at dir: IO_DIR_NONE (nothing, or an empty directory), IO_DIR_EARLIER (an earlier set: golden.npy
 * beside nothing but regular .npy files, which a commit replaces whole) or IO_DIR_OTHER (anything else; odd names
 * the first entry that no set writes). */
enum { IO_DIR_NONE, IO_DIR_EARLIER, IO_DIR_OTHER };
static int io_dir_state(const char *dir, char *odd, size_t n)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return IO_DIR_NONE;
    int files = 0, golden = 0, other = 0;
    struct dirent *de;
    while (!other && (de = readdir(dp)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char p[4096];
        struct stat st;
        size_t len = strlen(de->d_name);
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        files++;
        golden |= strcmp(de->d_name, "golden.npy") == 0;
        if (len < 5 || strcmp(de->d_name + len - 4, ".npy") != 0 || lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
            other = 1;
            snprintf(odd, n, "it holds %s", de->d_name);
        }
    }
    closedir(dp);
    if (files && !golden && !other)
        snprintf(odd, n, "%s", "it has no golden.npy");
    return !files ? IO_DIR_NONE : golden && !other ? IO_DIR_EARLIER : IO_DIR_OTHER;
}

int io_dir_begin(io_dir_t *d, const char *dir, err_t *e)
{
    memset(d, 0, sizeof *d);
    if (!dir || !*dir)
        return err_set(e, ERR_USAGE, "empty directory name");
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return err_set(e, ERR_USAGE, "%s is not a directory", dir);
    char odd[256];
    if (io_dir_state(dir, odd, sizeof odd) == IO_DIR_OTHER)
        return err_set(e, ERR_USAGE, "%s is not an earlier dump (%s): name a new or empty folder, or an earlier "
                                     "dump (replaced whole)", dir, odd);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    d->dir = malloc(n + 1);
    d->tmp = malloc(n + 48);
    if (!d->dir || !d->tmp) {
        io_dir_abort(d);
        return err_set(e, ERR_IO, "out of memory");
    }
    memcpy(d->dir, dir, n);
    d->dir[n] = 0;
    /* the temporary directory sits beside the target, so that renames stay on one filesystem: .NAME.tmp.PID.XXXXXX,
     * so that one a killed run left is known as such and removed by the next */
    const char *slash = strrchr(d->dir, '/');
    size_t plen = slash ? (size_t)(slash - d->dir) + 1 : 0;
    snprintf(d->tmp, n + 48, "%.*s.%s", (int)plen, d->dir, d->dir + plen);
    io_atomic_clean_stale(d->tmp);
    snprintf(d->tmp, n + 48, "%.*s.%s.tmp.%ld.XXXXXX", (int)plen, d->dir, d->dir + plen, (long)getpid());
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
    char odd[256], *old = NULL;
    int state = io_dir_state(d->dir, odd, sizeof odd);
    if (state == IO_DIR_OTHER) {
        rc = err_set(e, ERR_USAGE, "%s is no longer an earlier dump (%s): nothing replaced", d->dir, odd);
    } else if (state == IO_DIR_EARLIER) {
        /* the earlier set moves aside (renamed over an empty directory made for it), the new one into its place,
         * then the earlier one is removed: DIR is always one whole set, never a merge of two */
        size_t n = strlen(d->tmp);
        old = malloc(n + 8);
        if (old) /* .NAME.tmp.XXXXXX beside it: .NAME.old.XXXXXX */
            snprintf(old, n + 8, "%.*s.old.XXXXXX", (int)(strstr(d->tmp, ".tmp.") - d->tmp), d->tmp);
        if (!old || !mkdtemp(old) || rename(d->dir, old) != 0)
            rc = err_set(e, ERR_IO, "cannot move the earlier %s aside: %s", d->dir, strerror(errno));
    }
    if (!rc) {
        io_dir_forget(d->tmp);
        if (rename(d->tmp, d->dir) != 0) {
            rc = err_set(e, ERR_IO, "cannot write %s: %s", d->dir, strerror(errno));
            if (state == IO_DIR_EARLIER)
                rename(old, d->dir); /* the earlier set back where it was */
        } else if (state == IO_DIR_EARLIER) {
            io_dir_clear(old);
        }
    }
    if (old && !rc)
        free(old);
    else if (old) {
        rmdir(old); /* the empty place made for the earlier set, where it did not move */
        free(old);
    }
    if (rc) {
        io_dir_abort(d);
        return rc;
    }
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

