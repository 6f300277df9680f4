/* fmt -- rounding binary64 values to narrow binary formats under every rounding mode */
#include "num/fmt/fmt.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Each format: name, summary, container bits, precision, emin, emax, bias, has_inf,
 * max_code, nan_code, inf_code (magnitude codes, without the tf32 padding), max_finite. */
const fmt_t fmt_table[FMT_COUNT] = {
    {"bf16", "bfloat16: 8-bit significand, binary32 exponent range", 16, 8, -126, 127, 127, 1,
     0x7F7F, 0x7FC0, 0x7F80, 0x1.FEp127},
    {"fp16", "IEEE binary16: 11-bit significand, max 65504", 16, 11, -14, 15, 15, 1,
     0x7BFF, 0x7E00, 0x7C00, 65504.0},
    {"e4m3", "OCP E4M3FN: 4-bit significand, max 448, no infinity, NaN 0x7F/0xFF", 8, 4, -6, 8, 7, 0,
     0x7E, 0x7F, 0x7F, 448.0},
    {"e5m2", "OCP E5M2: 3-bit significand, max 57344, has infinity", 8, 3, -14, 15, 15, 1,
     0x7B, 0x7E, 0x7C, 57344.0},
    {"tf32", "TensorFloat-32: 11-bit significand, binary32 range, in a binary32 container", 32, 11,
     -126, 127, 127, 1, 0x3FBFF, 0x3FE00, 0x3FC00, 0x1.FFCp127},
    {"fp32", "IEEE binary32", 32, 24, -126, 127, 127, 1,
     0x7F7FFFFF, 0x7FC00000, 0x7F800000, 0x1.FFFFFEp127},
    {"fp64", "IEEE binary64 (no rounding: the exact reference format of the lab)", 64, 53, -1022, 1023,
     1023, 1, 0, 0, 0, 0x1.FFFFFFFFFFFFFp1023},
};

const char *const fmt_round_names[FMT_ROUND_COUNT] = {
    "rne", "rna", "rz", "ru", "rd", "odd", "stochastic"};

const char *const fmt_round_summaries[FMT_ROUND_COUNT] = {
    "round to nearest, ties to even (IEEE default)",
    "round to nearest, ties away from zero",
    "round toward zero (truncation)",
    "round toward +infinity",
    "round toward -infinity",
    "round to odd: truncate, then set the last bit if inexact",
    "stochastic: round up with probability equal to the discarded fraction (seeded)",
};

/* tf32 keeps its 19 bits at the top of a binary32 container. */
static int fmt_pad(fmt_id_t f) { return f == FMT_TF32 ? 13 : 0; }

/* The spellings users already type (PyTorch's and ml_dtypes' dtype names) beside the lab's. */
static const struct {
    const char *alias;
    fmt_id_t f;
} fmt_aliases[] = {{"bfloat16", FMT_BF16},       {"half", FMT_FP16},          {"float16", FMT_FP16},
                   {"float32", FMT_FP32},        {"float", FMT_FP32},         {"float64", FMT_FP64},
                   {"double", FMT_FP64},         {"float8_e4m3fn", FMT_E4M3}, {"float8_e4m3", FMT_E4M3},
                   {"float8_e5m2", FMT_E5M2},    {"tensorfloat32", FMT_TF32}};

int fmt_from_name(const char *name)
{
    for (int i = 0; i < FMT_COUNT; i++)
        if (strcmp(name, fmt_table[i].name) == 0)
            return i;
    for (size_t i = 0; i < sizeof fmt_aliases / sizeof fmt_aliases[0]; i++)
        if (strcmp(name, fmt_aliases[i].alias) == 0)
            return (int)fmt_aliases[i].f;
    return -1;
}

const char *fmt_alias_list(fmt_id_t f)
{
    static char buf[FMT_COUNT][64];
    if (!buf[f][0] && f < FMT_COUNT) {
        size_t off = 0;
        for (size_t i = 0; i < sizeof fmt_aliases / sizeof fmt_aliases[0]; i++)
            if (fmt_aliases[i].f == f && off < sizeof buf[f])
                off += (size_t)snprintf(buf[f] + off, sizeof buf[f] - off, "%s%s", off ? ", " : "", fmt_aliases[i].alias);
    }
    return buf[f];
}

int fmt_round_from_name(const char *name)
{
    for (int i = 0; i < FMT_ROUND_COUNT; i++)
        if (strcmp(name, fmt_round_names[i]) == 0)
            return i;
    /* common spellings */
    if (strcmp(name, "rn") == 0)
        return FMT_RNE;
    if (strcmp(name, "rs") == 0 || strcmp(name, "sr") == 0)
        return FMT_RSTOCH;
    return -1;
}

void fmt_rng_seed(fmt_rng_t *rng, uint64_t seed) { rng->state = seed ^ 0x9E3779B97F4A7C15ull; }

uint64_t fmt_rng_next(fmt_rng_t *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Should the truncated magnitude `kept` be incremented, given the discarded bits
 * rem (out of 2^shift) and the sign?  shift >= 1. */
static int fmt_round_up(uint64_t kept, uint64_t rem, int shift, int sign, fmt_round_t mode,
                        fmt_rng_t *rng)
{
    if (rem == 0)
        return 0;
    int big = shift > 63; /* rem < 2^53 <= half: strictly below the midpoint */
    uint64_t half = big ? 0 : (uint64_t)1 << (shift - 1);
    switch (mode) {
    case FMT_RNE:
        return !big && (rem > half || (rem == half && (kept & 1)));
    case FMT_RNA:
        return !big && rem >= half;
    case FMT_RZ:
        return 0;
    case FMT_RU:
        return !sign;
    case FMT_RD:
        return sign;
    case FMT_RODD:
        return !(kept & 1);
    case FMT_RSTOCH: {
        uint64_t u = fmt_rng_next(rng);
        if (shift <= 64)
            return (rem << (64 - shift)) > u;
        return shift < 117 && (rem >> (shift - 64)) > u;
    }
    default:
        return 0;
    }
}

/* Overflow result for a magnitude beyond max_finite: max_code, or inf/NaN code. */
static uint32_t fmt_overflow_code(const fmt_t *F, fmt_round_t mode, int sign, int sat)
{
    int to_max = sat || mode == FMT_RZ || mode == FMT_RODD || (mode == FMT_RU && sign) ||
                 (mode == FMT_RD && !sign);
    if (to_max)
        return F->max_code;
    return F->has_inf ? F->inf_code : F->nan_code;
}

uint32_t fmt_encode(double x, fmt_id_t f, fmt_round_t mode, int sat, fmt_rng_t *rng)
{
    const fmt_t *F = &fmt_table[f];
    int pad = fmt_pad(f);
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int sign = (int)(u >> 63);
    uint32_t sbit = (uint32_t)sign << (F->bits - 1);
    int E = (int)((u >> 52) & 0x7FF);
    uint64_t m = u & ((1ull << 52) - 1);

    if (E == 0x7FF) {
        if (m != 0) /* NaN: canonical quiet NaN, sign kept */
            return sbit | (F->nan_code << pad);
        if (sat)
            return sbit | (F->max_code << pad);
        return sbit | ((F->has_inf ? F->inf_code : F->nan_code) << pad);
    }
    if (E == 0 && m == 0)
        return sbit;

    int e = E ? E - 1023 : -1022;
    uint64_t M = E ? m | (1ull << 52) : m;
    /* Quantum of the target at this magnitude: subnormal doubles lie far below every
     * target's emin, so max(e, emin) is the target exponent. */
    int qe = (e > F->emin ? e : F->emin) - (F->prec - 1);
    int shift = qe - (e - 52); /* >= 53 - prec >= 29 */
    uint64_t kept = shift > 63 ? 0 : M >> shift;
    uint64_t rem = shift > 63 ? M : M & (((uint64_t)1 << shift) - 1);
    kept += (uint64_t)fmt_round_up(kept, rem, shift, sign, mode, rng);

    if (kept == 0)
        return sbit;
    if (kept == (uint64_t)1 << F->prec) { /* carry into the next binade */
        kept >>= 1;
        qe++;
    }
    uint64_t code;
    if (kept >= (uint64_t)1 << (F->prec - 1)) {
        uint64_t expfield = (uint64_t)(qe + F->prec - 1 + F->bias);
        code = (expfield << (F->prec - 1)) | (kept - ((uint64_t)1 << (F->prec - 1)));
    } else {
        code = kept; /* subnormal: qe is the minimum quantum */
    }
    if (code > F->max_code)
        code = fmt_overflow_code(F, mode, sign, sat);
    return sbit | ((uint32_t)code << pad);
}

double fmt_decode(uint32_t code, fmt_id_t f)
{
    const fmt_t *F = &fmt_table[f];
    int pad = fmt_pad(f);
    uint32_t sbit = (uint32_t)1 << (F->bits - 1);
    double s = (code & sbit) ? -1.0 : 1.0;
    uint32_t mag = (code & ~sbit) >> pad;
    if (F->has_inf && mag == F->inf_code)
        return s * INFINITY;
    if (mag > F->max_code)
        return NAN;
    uint32_t expfield = mag >> (F->prec - 1);
    uint32_t mant = mag & ((1u << (F->prec - 1)) - 1);
    if (expfield == 0)
        return s * ldexp((double)mant, F->emin - (F->prec - 1));
    return s * ldexp((double)(mant | (1u << (F->prec - 1))),
                     (int)expfield - F->bias - (F->prec - 1));
}

double fmt_round_general(double x, fmt_id_t f, fmt_round_t mode, int sat, fmt_rng_t *rng)
{
    return fmt_decode(fmt_encode(x, f, mode, sat, rng), f);
}



/* Values of every 8-bit code of e4m3 and e5m2, made once per process. */
static double fmt_table8[2][256];
static pthread_once_t fmt_table8_once = PTHREAD_ONCE_INIT;

static void fmt_table8_init(void)
{
    for (int code = 0; code < 256; code++) {
        fmt_table8[0][code] = fmt_decode((uint32_t)code, FMT_E4M3);
        fmt_table8[1][code] = fmt_decode((uint32_t)code, FMT_E5M2);
    }
}

const double *fmt_decode_table8(fmt_id_t f)
{
    pthread_once(&fmt_table8_once, fmt_table8_init);
    return f == FMT_E4M3 ? fmt_table8[0] : f == FMT_E5M2 ? fmt_table8[1] : NULL;
}

int64_t fmt_ordinal(double x, fmt_id_t f)
{
    if (f == FMT_FP64) {
        int64_t u;
        memcpy(&u, &x, sizeof u);
        return u < 0 ? -(u & INT64_MAX) : u;
    }
    uint32_t code = fmt_encode(x, f, FMT_RNE, 0, NULL);
    uint32_t sign = 1u << (8 * fmt_cast_width(f) - 1);
    int64_t mag = code & (sign - 1);
    return code & sign ? -mag : mag;
}
