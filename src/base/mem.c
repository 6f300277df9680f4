/* mem -- how the lab's processes hold memory between samples */
#include "base/mem.h"

#include <stdlib.h> /* defines __GLIBC__ where it is glibc */

#ifdef __GLIBC__
#include <malloc.h>
#endif

void mem_reuse_freed(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_MAX, 0);                /* a thread's heap still maps what exceeds it (64 MB) */
    mallopt(M_TRIM_THRESHOLD, 0x7fffffff); /* the largest value mallopt takes */
#endif
}
