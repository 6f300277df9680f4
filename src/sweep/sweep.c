/* sweep -- running an experiment: every grid point resumably (MPI ranks sharing the samples),
 * then the CSV, the report and the plots */
#include "sweep/sweep_int.h"

#include "base/progress.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "data/files.h"
#include "report/csv.h"
#include "sweep/par.h"

int sweep_run(const char *path, const sweep_opts_t *o, err_t *e)
{
    sweep_t *x = err_calloc(1, sizeof *x);
    int rc = sweep_parse(x, path, &o->ov, e);
    if (rc) {
        sweep_free(x);
        free(x);
        return rc;
    }
    int quick = o->ov.samples > 0 || o->ov.nsets > 0;
    const char *outdir = o->outdir ? o->outdir : quick ? "results/quick" : "results";
    if (quick && !o->outdir)
        rc = io_ensure_dir("results", e);
    rc = io_ensure_dir(outdir, e);
    run_cfg_t *c = err_malloc(1, sizeof *c), *c0 = err_malloc(1, sizeof *c0);
    sweep_state_t s = {0};
    if (!rc)
        rc = sweep_state_init(&s, x, c, e);
    char store[4096], csv[4096], md[4096], header[128], lock[4096];
    snprintf(store, sizeof store, "%s/.%s.samples", outdir, x->name);
    snprintf(lock, sizeof lock, "%s/.%s.lock", outdir, x->name);
    snprintf(csv, sizeof csv, "%s/%s.csv", outdir, x->name);
    snprintf(md, sizeof md, "%s/%s.md", outdir, x->name);
    snprintf(header, sizeof header, "# amla-lab sweep store 2 %s %016llx\n", x->name, (unsigned long long)x->hash);
    int rank = par_rank(), ranks = par_size();
    /* one writer per experiment and directory: rank 0 holds an exclusive lock until the
     * reports are written (released by the kernel however the process ends) */
    int lockfd = -1;
    if (!rc && rank == 0)
        rc = sweep_lock(&lockfd, lock, x->name, outdir, e);
    char *outbox = NULL;
    size_t outlen = 0;
    if (!rc) {
        if (rank == 0) {
            long valid = sweep_read_store(&s, store, header);
            if (valid < 0) {
                s.store = fopen(store, "w");
                if (s.store)
                    fputs(header, s.store);
            } else {
                if (truncate(store, valid) != 0)
                    rc = err_set(e, ERR_IO, "cannot truncate %s: %s", store, strerror(errno));
                s.store = fopen(store, "a");
            }
            if (!s.store && !rc)
                rc = err_set(e, ERR_USAGE, "cannot write %s: %s", store, strerror(errno));
        } else {
            s.outbox = open_memstream(&outbox, &outlen);
        }
    }
    /* Under MPI every rank learns from rank 0 which samples are stored, then takes every
     * ranks-th of the missing ones (counted across grid points). */
    int any = par_max(rc);
    if (any && !rc)
        rc = err_set(e, any, "%s", ""); /* the failing rank says why */
    long nslots = x->npoints * s.maxs;
    char *done = err_calloc((size_t)(nslots > 0 ? nslots : 1), 1);
    for (long i = 0; i < nslots && s.text; i++)
        done[i] = s.text[i] != NULL;
    if (!rc)
        par_bcast(done, (size_t)nslots);
    for (long i = 0; i < nslots; i++)
        s.done += done[i];
    const char *ka = getenv("AMLA_SWEEP_KILL_AFTER");
    s.kill_after = ka ? atol(ka) : 0;
    s.progress = rank > 0 ? 0 : o->progress < 0 ? isatty(2) : o->progress;
    s.t0 = progress_now();
    if (!rc && s.done > 0 && s.progress)
        fprintf(stderr, "%s: resuming, %ld of %ld samples already done\n", x->name, s.done, s.total);
    long turn = 0;
    for (long g = 0; g < x->npoints && !rc; g++) {
        *c = s.cfg[g]; /* resolved once by sweep_state_init; its site lists point into s.cfg */
        if (g == 0)
            *c0 = *c;
        c->threads = o->threads;
        if (ranks > 1 && c->threads == 0) { /* share this machine's cores among its ranks */
#ifdef _OPENMP
            c->threads = omp_get_num_procs() / par_local_size();
#else
            c->threads = 1;
#endif
            c->threads = c->threads > 0 ? c->threads : 1;
        }
        char *skip = err_calloc((size_t)c->samples, 1);
        long todo = 0;
        for (long i = 0; i < c->samples; i++) {
            skip[i] = done[g * s.maxs + i] || turn++ % ranks != rank;
            todo += !skip[i];
        }
        if (todo) {
            s.c = c;
            s.g = g;
            run_hooks_t h = {skip, sweep_on_sample, &s};
            run_result_t r;
            rc = run_execute_hooked(&r, c, &h, e);
            run_result_free(&r);
        }
        free(skip);
        if (ranks > 1) {
            int all = par_max(rc);
            if (all && !rc)
                rc = err_set(e, all, "%s", ""); /* the failing rank says why */
            if (!rc)
                rc = sweep_gather(&s, &outbox, &outlen, e);
            rc = par_max(rc) ? (rc ? rc : err_set(e, ERR_IO, "%s", "")) : rc; /* rank 0 says why */
        }
    }
    free(done);
    if (s.outbox)
        fclose(s.outbox);
    free(outbox);
    if (s.store)
        fclose(s.store);
    double secs = progress_now() - s.t0;
    if (!rc && rank == 0) {
        io_atomic_t a;
        rc = io_atomic_open(&a, csv, e);
        if (!rc) {
            run_write_csv_header(a.f);
            for (long g = 0; g < x->npoints; g++)
                for (long i = 0; i < s.maxs; i++)
                    if (s.text[g * s.maxs + i])
                        fputs(s.text[g * s.maxs + i], a.f);
            rc = io_atomic_commit(&a, e);
        }
    }
    if (!rc && rank == 0)
        rc = sweep_write_md(&s, c0, md, secs, e);
    if (!rc && rank == 0 && !o->no_plot) {
        rc = sweep_write_png(&s, c0, outdir, e);
        sweep_write_attr_png(&s, c0, outdir);
    }
    if (!rc && rank == 0) { /* the last line says what was written */
        char png[4096];
        struct stat st;
        snprintf(png, sizeof png, "%s/%s.png", outdir, x->name);
        int has_png = !o->no_plot && stat(png, &st) == 0;
        printf("%s: wrote %s, %s%s%s (%ld samples, %.1f s)\n", x->name, csv, md, has_png ? ", " : "",
               has_png ? png : "", s.total, secs);
    }
    if (s.x)
        sweep_state_free(&s);
    if (lockfd >= 0)
        close(lockfd);
    free(c);
    free(c0);
    sweep_free(x);
    free(x);
    return rc;
}

