/* ozaki_slices -- what every Ozaki product file shares (ozaki.c, ozaki_one.c, ozaki_one_pv.c): the slice buffer's
 * keys, the bits of P kept exact, the growth of a K-term sum */
#ifndef AMLA_OZAKI_SLICES_H
#define AMLA_OZAKI_SLICES_H

#define OZAKI_CHUNK 1024     /* keys per slice buffer: bounds the working set */
#define OZAKI_MIN_P_BITS 20  /* bits of P kept exact in P V; the rest goes through plain FP64 */

/* Bits of the largest k-term sum's growth: the least b with 2^b >= k. */
static inline int ozaki_ceil_log2(long k)
{
    int b = 0;
    while ((1L << b) < k)
        b++;
    return b;
}

#endif
