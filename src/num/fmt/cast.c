/* cast -- rounding numbers read as text: `amla-lab cast`'s stream of tokens */
#include "num/fmt/cast.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* tok (n bytes) as it may be shown in a one-line message: printable ASCII kept, other bytes
 * as \\xHH, cut with "..." when long (the input may be binary). */
static void cast_printable(char *out, size_t size, const char *tok, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)tok[i];
        if (k + 8 >= size) {
            memcpy(out + k, "...", 4);
            return;
        }
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            out[k++] = (char)ch;
        else
            k += (size_t)snprintf(out + k, size - k, "\\x%02x", ch);
    }
    out[k] = 0;
}

/* One token (n bytes, NUL-terminated) as a binary32 value; -1 if it is not one. */
static int cast_token(const char *tok, size_t n, int bits, float *out)
{
    char *end;
    if (strlen(tok) != n) /* a NUL byte inside */
        return -1;
    if (bits) {
        if (n != 10 || tok[0] != '0' || (tok[1] != 'x' && tok[1] != 'X'))
            return -1;
        for (int i = 2; i < 10; i++)
            if (!strchr("0123456789abcdefABCDEF", tok[i]))
                return -1;
        uint32_t w = (uint32_t)strtoul(tok + 2, &end, 16);
        memcpy(out, &w, sizeof w);
        return 0;
    }
    errno = 0;
    *out = strtof(tok, &end); /* correctly rounded decimal -> binary32 */
    return (n == 0 || *end != 0) ? -1 : 0;
}

static int cast_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int cast_stream(FILE *in, FILE *out, fmt_id_t to, fmt_round_t mode, int sat, int bits, fmt_rng_t *rng, err_t *e)
{
    int digits = fmt_table[to].bits / 4;
    char tok[CAST_MAX_TOKEN + 1];
    long count = 0;
    int c;
    for (;;) {
        size_t n = 0, len = 0;
        while ((c = getc(in)) != EOF && cast_space(c))
            ;
        if (c == EOF)
            break;
        do {
            if (n < CAST_MAX_TOKEN)
                tok[n++] = (char)c;
            len++;
        } while ((c = getc(in)) != EOF && !cast_space(c));
        tok[n] = 0;
        count++;
        float x;
        if (len > CAST_MAX_TOKEN || cast_token(tok, n, bits, &x) != 0) {
            char shown[64];
            cast_printable(shown, sizeof shown, tok, n);
            if (len > CAST_MAX_TOKEN)
                return err_set(e, ERR_USAGE, "cast: input %ld, '%s', is longer than %d characters", count, shown,
                               CAST_MAX_TOKEN);
            return err_set(e, ERR_USAGE, "cast: input %ld, '%s', is not %s", count, shown,
                           bits ? "a binary32 bit pattern 0xHHHHHHHH" : "a number");
        }
        uint32_t code = fmt_encode((double)x, to, mode, sat, rng);
        fprintf(out, "0x%0*x %.9g\n", digits, (unsigned)code, fmt_decode(code, to));
    }
    return ERR_OK;
}
