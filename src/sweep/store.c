/* store -- the sample store of a resumable sweep: checksummed records appended as samples
 * finish, read back whole on resume, gathered from MPI ranks; one writer at a time (a lock) */
#include "sweep/sweep_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/progress.h"
#include "report/csv.h"
#include "sweep/par.h"

/* FNV-1a 64 of a record's rows: a record whose rows do not hash to its header's checksum was
 * torn (a kill during the write) or damaged, and is never copied into the CSV. */
uint64_t sweep_checksum(const char *t, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)t[i]) * 0x100000001b3ull;
    return h;
}
void sweep_progress(sweep_state_t *s)
{
    if (s->progress)
        progress_draw(stderr, s->x->name, s->done, s->total, s->fresh, progress_now() - s->t0);
}

int sweep_on_sample(void *arg, long sample, const run_row_t *rows, err_t *e)
{
    sweep_state_t *s = arg;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    run_write_csv_sample(m, s->c, sample, rows);
    fclose(m);
    int nrows = 0;
    for (size_t i = 0; i < len; i++)
        nrows += buf[i] == '\n';
    double secs = 0;
    for (int v = 0; v <= s->c->nvariants; v++)
        secs += rows[v].seconds;
    FILE *out = s->store ? s->store : s->outbox;
    fprintf(out, "@ %ld %ld %d %.3f %016llx\n%s", s->g, sample, nrows, secs,
            (unsigned long long)sweep_checksum(buf, len), buf);
    if (fflush(out) != 0 || ferror(out)) {
        free(buf);
        return err_set(e, ERR_IO, "cannot write the partial results of %s: %s", s->x->name, strerror(errno));
    }
    s->text[s->g * s->maxs + sample] = buf;
    s->secs += secs;
    s->done++;
    s->fresh++;
    sweep_progress(s);
    if (s->kill_after > 0 && s->fresh >= s->kill_after)
        raise(SIGKILL); /* test hook: AMLA_SWEEP_KILL_AFTER simulates kill -9 */
    return ERR_OK;
}

/* Columns of a CSV row, counted as commas + 1 (no field holds a comma). */
static int sweep_columns(const char *row, size_t n)
{
    int c = 1;
    for (size_t i = 0; i < n; i++)
        c += row[i] == ',';
    return c;
}

/* Read complete, valid "@ g s n secs checksum" records (each followed by its n CSV rows) from
 * f into s->text: g and s in range, n the rows point g writes per sample, every row with the
 * CSV's columns, the checksum right. Stops at the first record that is not; returns the byte
 * length of the valid records, counts them in *blocks, and sets *damaged when bytes remain
 * after them. */
long sweep_read_blocks(sweep_state_t *s, FILE *f, long *blocks, int *damaged)
{
    char *line = NULL;
    size_t cap = 0;
    long valid = 0;
    *damaged = 0;
    for (;;) {
        long g, smp;
        int nrows, used = 0;
        unsigned long long sum;
        double secs = 0;
        ssize_t n = getline(&line, &cap, f);
        if (n <= 0)
            break;
        *damaged = 1;
        if (line[n - 1] != '\n' || (size_t)n != strlen(line) ||
            sscanf(line, "@ %ld %ld %d %lf %16llx%n", &g, &smp, &nrows, &secs, &sum, &used) != 5 ||
            used != n - 1 || g < 0 || g >= s->x->npoints || smp < 0 || smp >= s->samples_at[g] ||
            nrows != s->rows_at[g] || !isfinite(secs) || secs < 0)
            break;
        long blen = (long)n;
        char *buf = NULL;
        size_t blen_text = 0;
        FILE *m = open_memstream(&buf, &blen_text);
        int ok = 1;
        for (int i = 0; i < nrows && ok; i++) {
            n = getline(&line, &cap, f);
            ok = n > 0 && line[n - 1] == '\n' && (size_t)n == strlen(line) &&
                 sweep_columns(line, (size_t)n) == run_csv_columns();
            if (ok) {
                fputs(line, m);
                blen += (long)n;
            }
        }
        fclose(m);
        if (!ok || sweep_checksum(buf, blen_text) != sum) {
            free(buf);
            break;
        }
        *damaged = 0;
        free(s->text[g * s->maxs + smp]);
        s->text[g * s->maxs + smp] = buf;
        s->secs += secs;
        valid += blen;
        ++*blocks;
    }
    free(line);
    return valid;
}

/* Read OUTDIR/.NAME.samples: valid records only; returns the byte length of the valid prefix
 * (the file is cut there so appends continue cleanly), or -1 when the file is missing or
 * belongs to another version of the experiment file. A damaged tail is dropped with a
 * warning (its samples are computed again). */
long sweep_read_store(sweep_state_t *s, const char *path, const char *header)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    long valid = -1, blocks = 0;
    int damaged = 0;
    if (n > 0 && strcmp(line, header) == 0)
        valid = (long)n + sweep_read_blocks(s, f, &blocks, &damaged);
    if (valid < 0 && par_rank() == 0) {
        /* another version of the experiment file (its hash), or a damaged header: the store is not read, and not
         * lost either; it is set aside under a name that says so, with a word of how much it held */
        size_t pre = strlen(header) - 18; /* "# amla-lab sweep store 2 NAME " before the hash */
        int other = n > 0 && (size_t)n == strlen(header) && strncmp(line, header, pre) == 0;
        long records = 0;
        rewind(f);
        while (getline(&line, &cap, f) > 0)
            records += line[0] == '@' && line[1] == ' ';
        char aside[4200];
        snprintf(aside, sizeof aside, "%s.set-aside", path);
        int moved = rename(path, aside) == 0;
        fprintf(stderr, "amla-lab: warning: %s: %s; its %ld stored sample%s %s%s and computed again\n", path,
                other ? "written by another version of the experiment file" : "its header is damaged", records,
                records == 1 ? " is" : "s are", moved ? "set aside in " : "not read", moved ? aside : "");
    }
    free(line);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    if (damaged && par_rank() == 0)
        fprintf(stderr, "amla-lab: warning: %s: dropped a damaged or torn record at byte %ld and the %ld bytes "
                        "after it; those samples are computed again\n",
                path, valid, size - valid);
    return valid;
}

/* MPI: ranks > 0 send this grid point's finished samples to rank 0, which appends them to
 * the store (so that an interrupted sweep keeps them) and to its table of rows. */
int sweep_gather(sweep_state_t *s, char **outbox, size_t *outlen, err_t *e)
{
    if (par_rank() > 0) {
        fflush(s->outbox);
        par_send(*outbox, *outlen);
        fclose(s->outbox);
        free(*outbox);
        *outbox = NULL;
        s->outbox = open_memstream(outbox, outlen);
        return ERR_OK;
    }
    int rc = ERR_OK;
    for (int r = 1; r < par_size(); r++) {
        size_t len;
        char *blob = par_recv(r, &len);
        long blocks = 0;
        if (len > 0) {
            FILE *m = fmemopen(blob, len, "r");
            int damaged;
            len = (size_t)sweep_read_blocks(s, m, &blocks, &damaged);
            fclose(m);
            if (!rc && damaged)
                rc = err_set(e, ERR_IO, "rank %d sent damaged results", r);
            if (!rc && (fwrite(blob, 1, len, s->store) != len || fflush(s->store) != 0))
                rc = err_set(e, ERR_IO, "cannot write the partial results of %s: %s", s->x->name, strerror(errno));
        }
        s->done += blocks;
        s->fresh += blocks;
        free(blob);
    }
    sweep_progress(s);
    return rc;
}

/* The per-point sizes a store record is checked against, and the empty table of rows. */
int sweep_state_init(sweep_state_t *s, sweep_t *x, run_cfg_t *c, err_t *e)
{
    int rc = ERR_OK;
    s->x = x;
    s->maxs = 1;
    s->samples_at = err_calloc((size_t)x->npoints, sizeof(long));
    s->rows_at = err_calloc((size_t)x->npoints, sizeof(int));
    s->cfg = err_malloc((size_t)x->npoints, sizeof *s->cfg);
    for (long g = 0; g < x->npoints && !rc; g++) {
        rc = sweep_point(&s->cfg[g], x, g, e);
        const run_cfg_t *p = &s->cfg[g];
        s->maxs = p->samples > s->maxs ? p->samples : s->maxs;
        s->total += p->samples;
        s->samples_at[g] = p->samples;
        s->rows_at[g] = p->nvariants + (p->show_golden != 0);
    }
    if (!rc && x->npoints > 0) /* the caller's c as the last point left it (its site lists point into s->cfg) */
        *c = s->cfg[x->npoints - 1];
    s->text = err_calloc((size_t)(x->npoints * s->maxs), sizeof(char *));
    return rc;
}

void sweep_state_free(sweep_state_t *s)
{
    for (long i = 0; s->text && i < s->x->npoints * s->maxs; i++)
        free(s->text[i]);
    free(s->text);
    free(s->samples_at);
    free(s->rows_at);
    free(s->cfg);
    s->cfg = NULL;
    s->text = NULL;
    s->samples_at = NULL;
    s->rows_at = NULL;
}

struct sweep_store_reader {
    sweep_t x;
    run_cfg_t c;
    sweep_state_t s;
};

sweep_store_reader_t *sweep_store_reader(const char *exp_text, size_t exp_len, err_t *e)
{
    sweep_store_reader_t *r = err_calloc(1, sizeof *r);
    int rc = sweep_parse_text(&r->x, "experiment", exp_text, exp_len, e);
    if (!rc)
        rc = sweep_state_init(&r->s, &r->x, &r->c, e);
    if (rc) {
        sweep_store_reader_free(r);
        return NULL;
    }
    return r;
}

long sweep_store_read(sweep_store_reader_t *r, const char *store, size_t len, long *valid, int *damaged)
{
    long blocks = 0;
    *valid = 0;
    *damaged = 0;
    for (long i = 0; i < r->x.npoints * r->s.maxs; i++) {
        free(r->s.text[i]);
        r->s.text[i] = NULL;
    }
    if (len == 0)
        return 0;
    FILE *m = fmemopen((void *)store, len, "r");
    if (!m)
        return 0;
    *valid = sweep_read_blocks(&r->s, m, &blocks, damaged);
    fclose(m);
    return blocks;
}

void sweep_store_reader_free(sweep_store_reader_t *r)
{
    if (!r)
        return;
    if (r->s.x)
        sweep_state_free(&r->s);
    sweep_free(&r->x);
    free(r);
}

/* Take OUTDIR/.NAME.lock (flock, exclusive, not waiting): a second sweep of the same
 * experiment into the same directory exits 2 naming the lock instead of interleaving its
 * records with the first's. */
int sweep_lock(int *fd, const char *lock, const char *name, const char *outdir, err_t *e)
{
    *fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
        return err_set(e, ERR_USAGE, "cannot write %s: %s", lock, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int busy = errno == EWOULDBLOCK;
        int saved = errno;
        close(*fd);
        *fd = -1;
        if (busy)
            return err_set(e, ERR_USAGE, "another sweep of %s is writing to %s (it holds %s); wait for it or use --out",
                           name, outdir, lock);
        return err_set(e, ERR_IO, "cannot lock %s: %s", lock, strerror(saved));
    }
    return ERR_OK;
}
