/* t-sweep -- experiment files refused where they are ambiguous, and the sample store's reader:
 * whole records kept, torn, miscounted or mis-summed ones dropped with what follows them */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "report/csv.h"
#include "sweep/sweep.h"

static const char EXP[] = "name t\nset ctx 64\nset heads 2\nset dk 32\nset dv 16\nset samples 2\n"
                          "set variants golden,base\ngrid sigma 1 2\n";

/* FNV-1a 64, written here from its definition (offset basis 0xcbf29ce484222325, prime
 * 0x100000001b3), to build records independently of the writer. */
static unsigned long long fnv1a(const char *t)
{
    unsigned long long h = 0xcbf29ce484222325ull;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 0x100000001b3ull;
    return h;
}

/* A record of point g, sample s with `rows` CSV rows of the header's columns each (the settings
 * as "0", then sample, variant, the metrics, events and lse_max_abs). */
static void record(char *out, size_t n, int g, int s, int rows, int declared, int bad_sum)
{
    char body[4096] = "";
    for (int r = 0; r < rows; r++) {
        char row[1024] = "";
        for (int k = 0; k < run_csv_columns() - 10; k++)
            strcat(row, "0,");
        snprintf(row + strlen(row), sizeof row - strlen(row), "%d,%s,0.1,0.2,0.9,0.01,0.3,0,0,\n", s, r ? "base" : "golden");
        strcat(body, row);
    }
    snprintf(out, n, "@ %d %d %d 0.001 %016llx\n%s", g, s, declared, fnv1a(body) ^ (unsigned long long)bad_sum, body);
}

static int exp_ok(const char *text)
{
    err_t e = {0};
    return sweep_check_text("t.exp", text, strlen(text), &e) == ERR_OK;
}

int main(void)
{
    err_t e = {0};
    sweep_store_reader_t *r = sweep_store_reader(EXP, sizeof EXP - 1, &e);
    CHECK(r != NULL, "reader: %s", e.msg);
    char a[4096], b[4096], store[16384];
    long valid;
    int damaged;
    record(a, sizeof a, 0, 0, 2, 2, 0);
    record(b, sizeof b, 1, 1, 2, 2, 0);
    snprintf(store, sizeof store, "%s%s", a, b);
    CHECK(sweep_store_read(r, store, strlen(store), &valid, &damaged) == 2 && !damaged && valid == (long)strlen(store),
          "two whole records: valid %ld damaged %d", valid, damaged);
    /* torn: the second record cut in a row */
    CHECK(sweep_store_read(r, store, strlen(store) - 9, &valid, &damaged) == 1 && damaged && valid == (long)strlen(a),
          "torn tail kept");
    /* a cut-off record followed by another line must not become a row */
    snprintf(store, sizeof store, "%.*sxyz\n", (int)strlen(a) - 30, a);
    CHECK(sweep_store_read(r, store, strlen(store), &valid, &damaged) == 0 && damaged && valid == 0, "cut + xyz");
    /* a record claiming fewer rows than the point writes, or one whose sum is wrong */
    record(b, sizeof b, 0, 1, 1, 1, 0);
    snprintf(store, sizeof store, "%s%s", a, b);
    CHECK(sweep_store_read(r, store, strlen(store), &valid, &damaged) == 1 && damaged, "short record kept");
    record(b, sizeof b, 0, 1, 2, 2, 1);
    snprintf(store, sizeof store, "%s%s%s", a, b, a);
    CHECK(sweep_store_read(r, store, strlen(store), &valid, &damaged) == 1 && damaged && valid == (long)strlen(a),
          "bad checksum: it and what follows dropped");
    /* out-of-range point or sample */
    record(b, sizeof b, 2, 0, 2, 2, 0);
    CHECK(sweep_store_read(r, b, strlen(b), &valid, &damaged) == 0 && damaged, "point 2 of 2 kept");
    record(b, sizeof b, 0, 2, 2, 2, 0);
    CHECK(sweep_store_read(r, b, strlen(b), &valid, &damaged) == 0 && damaged, "sample 2 of 2 kept");
    sweep_store_reader_free(r);

    /* experiment files: ambiguous or inapplicable lines are refused */
    CHECK(exp_ok(EXP), "the base experiment: %s", EXP);
    static const char *const refused[] = {
        "grid sigma 3\n", "set samples 3\n", "set ctx 128\n", "name u\n", "set csv x.csv\n", "set threads 2\n",
        "set load d\n", "title a\ntitle b\n", "grid mean,mean 0,1\n",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char t[1024];
        snprintf(t, sizeof t, "%s%s", EXP, refused[i]);
        CHECK(!exp_ok(t), "accepted: ...%s", refused[i]);
    }
    CHECK(!exp_ok("name .\nset samples 1\n") && !exp_ok("name ..\n") && !exp_ok("name .x\n"), "hidden name accepted");
    static const char nul[] = "name x\n\0set ctx 5\n";
    CHECK(sweep_check_text("t.exp", nul, sizeof nul - 1, &e) == ERR_USAGE, "NUL byte accepted");
    return check_done("t-sweep");
}
