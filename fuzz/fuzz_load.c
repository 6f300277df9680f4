/* fuzz_load -- libFuzzer target: `run --load DIR` as files on disk: q.npy as a regular file, a
 * FIFO, a directory, a link to a device or missing; v.npy present or not; the q/k/v shape
 * checks; with seqlens.npy, the batch in FlashMLA's layout; or, by (kind byte / 20) % 4, a sparse FP8
 * case (the same bytes named kcache.npy, indices.npy and topk_length.npy), a sparse prefill case (kv.npy,
 * indices.npy, topk_length.npy) or a lightning-indexer case (k.npy, then the rest in quarters: k_scale.npy,
 * weights.npy, ks.npy, ke.npy; idx_load). Layout of an input: kind byte, format byte, dv byte, two 16-bit
 * lengths, then the bytes of q.npy, k.npy and the rest: v.npy, or split in halves between v.npy and seqlens.npy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "data/gen.h"
#include "index/index.h"

static char dir[64];

static void put(const char *name, const uint8_t *p, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(p, 1, n, f);
        fclose(f);
    }
}

static void clear(void)
{
    static const char *const names[] = {"q.npy",       "k.npy",      "v.npy",          "seqlens.npy", "kcache.npy",
                                        "indices.npy", "topk_length.npy", "kv.npy",    "k_scale.npy", "weights.npy",
                                        "ks.npy",      "ke.npy"};
    for (int i = 0; i < 12; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (rmdir(path) != 0)
            unlink(path);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/amla-fuzz-load.XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    if (size < 7)
        return 0;
    int kind = data[0] % 5, have_v = (data[0] / 5) & 1, have_sl = (data[0] / 10) & 1, mode = (data[0] / 20) % 4;
    fmt_id_t f = (fmt_id_t)(data[1] % FMT_COUNT);
    long dv = data[2];
    size_t nq = (size_t)data[3] | (size_t)data[4] << 8, nk = (size_t)data[5] | (size_t)data[6] << 8;
    const uint8_t *p = data + 7;
    size_t rest = size - 7;
    nq = nq < rest ? nq : rest;
    nk = nk < rest - nq ? nk : rest - nq;
    clear();
    char qpath[128];
    snprintf(qpath, sizeof qpath, "%s/q.npy", dir);
    if (kind == 0)
        put("q.npy", p, nq);
    else if (kind == 1)
        mkfifo(qpath, 0600);
    else if (kind == 2)
        mkdir(qpath, 0700);
    else if (kind == 3)
        symlink("/dev/zero", qpath);
    static const char *const kname[4] = {"k.npy", "kcache.npy", "kv.npy", "k.npy"};
    put(kname[mode], p + nq, nk);
    size_t nv = rest - nq - nk, ns = have_sl ? nv / 2 : 0;
    err_t e = {0};
    if (mode == 3) { /* the indexer's four small files in quarters of the rest */
        static const char *const small[4] = {"k_scale.npy", "weights.npy", "ks.npy", "ke.npy"};
        for (int i = 0; i < 4; i++)
            put(small[i], p + nq + nk + (size_t)i * (nv / 4), i < 3 ? nv / 4 : nv - 3 * (nv / 4));
        idx_case_t c;
        if (idx_load(&c, dir, &e) == ERR_OK)
            idx_free(&c);
        return 0;
    }
    if (have_v)
        put(mode ? "indices.npy" : "v.npy", p + nq + nk, nv - ns);
    if (have_sl)
        put(mode ? "topk_length.npy" : "seqlens.npy", p + nq + nk + nv - ns, ns);
    attn_batch_t in;
    if (gen_load(&in, dir, f, dv, &e) == ERR_OK)
        attn_batch_free(&in);
    return 0;
}
