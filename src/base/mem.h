/* mem -- how the lab's processes hold memory between samples */
#ifndef AMLA_MEM_H
#define AMLA_MEM_H

/* Keep freed memory for the next sample: every allocation from the allocator's heaps (none by
 * mmap of its own, which would be unmapped again at free) and nothing trimmed back to the
 * system. A sample's large arrays (Golden's Ozaki slices of K, fa3-fp8's rotated K, 30-40 MB)
 * would otherwise be faulted in anew every sample: 7000-10000 page faults, a third of the
 * sample's time on a virtual machine. The resident size stays at the peak of one sample per
 * thread, which run_sample_bytes already counts. glibc only; elsewhere a no-op. */
void mem_reuse_freed(void);

#endif
