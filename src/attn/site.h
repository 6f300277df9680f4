/* site -- named rounding sites: where a variant rounds, to which format, in which mode */
#ifndef AMLA_SITE_H
#define AMLA_SITE_H

#include "num/acc/acc.h"
#include "base/err.h"
#include "num/fmt/fmt.h"

#define SITE_MAX 24

/* Where a site's format comes from. */
typedef enum {
    SITE_FMT_FIXED, /* the format named in the definition (e.g. fp32 for vector-unit math) */
    SITE_FMT_IN,    /* --in-format */
    SITE_FMT_OUT,   /* --out-format */
    SITE_ACC_QK,    /* an accumulation site using the Q.K^T model (--acc-qk) */
    SITE_ACC_PV,    /* an accumulation site using the P.V model (--acc-pv) */
    SITE_ACC_FP16,  /* an accumulation site fixed to the fp16-acc model (a variant's own hardware) */
    SITE_ACC_HOPPER, /* an accumulation site fixed to the tc-hopper model (a Hopper kernel's WGMMA) */
    SITE_ACC_HOPPER_K8, /* fixed to tc-hopper-k8 (a kernel's mma.sync m16n8k8 on Hopper) */
    SITE_ACC_HOPPER_FP8, /* fixed to tc-hopper-fp8-fast (a kernel's FP8 WGMMA chain, no promotion) */
    SITE_ACC_FFMA    /* an accumulation site fixed to fp32-fma (a CUDA-core FFMA GEMM: cuBLAS's SGEMM) */
} site_src_t;

typedef struct {
    const char *name; /* e.g. "p_cast" */
    const char *what; /* one line: what this site rounds */
    site_src_t src;
    fmt_id_t fmt;     /* for SITE_FMT_FIXED; for an accumulation site the operands' format as
                         the tensor-core models see it (FMT_FP32: the input format) */
    fmt_round_t mode;
    int sat;
} site_def_t;

/* Is the site an accumulation site (its rounding is an accumulation model's)? */
static inline int site_is_acc(const site_def_t *d)
{
    return d->src >= SITE_ACC_QK; /* the accumulation sources close the list */
}

/* A variant declares its sites once, as a list X(ID, "name", "what", source, format, mode,
 * saturating); its enum of site indices and its table are both made from that list, so the
 * two cannot drift apart:
 *     #define BASE_SITES(X) X(QK_ACC, "qk_acc", "S = Q K^T", SITE_ACC_QK, FMT_FP32, FMT_RNE, 0) ...
 *     enum { BASE_SITES(SITE_ENUM) BASE_NSITES };
 *     const site_def_t attn_base_sites[] = {BASE_SITES(SITE_ROW) SITE_END}; */
#define SITE_ENUM(id, name, what, src, fmt, mode, sat) id,
#define SITE_ROW(id, name, what, src, fmt, mode, sat) {name, what, src, fmt, mode, sat},
#define SITE_END                                                                                                 \
    {                                                                                                          \
        NULL, NULL, 0, 0, 0, 0                                                                                 \
    }

/* A site resolved against a configuration. */
typedef struct {
    const site_def_t *def;
    fmt_id_t fmt;
    fmt_round_t mode;
    int sat;
    acc_model_t acc; /* accumulation sites */
    int exact;       /* computed in FP64 without rounding (--exact) */
} site_t;

/* Is `name` in the comma-separated list (NULL: empty; "all" matches every site)? */
int site_listed(const char *list, const char *name);

/* Check that every name in the list is one of defs (or "all"); ERR_USAGE naming opt otherwise. */
int site_check_list(const char *list, const site_def_t *defs, const char *variant, const char *opt, err_t *e);

/* One line describing the site as resolved (for `list --sites`). */
void site_describe(char *buf, int n, const site_t *s);

#endif
