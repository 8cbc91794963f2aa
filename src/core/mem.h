/* Process memory statistics (Linux /proc/self), for reports and memory tests, and memory on
 * transparent huge pages for the weights made at load. */
#ifndef OMNIC_CORE_MEM_H
#define OMNIC_CORE_MEM_H

#include <stdbool.h>
#include <stddef.h>

/* Resident set size now (/proc/self/statm) and its peak (VmHWM of /proc/self/status), bytes.
 * false (outputs unchanged) when /proc is unavailable. */
bool omnic__mem_rss(size_t *current, size_t *peak);

/* Asks the kernel to back the whole 2 MiB pages inside [p, p + n) with transparent huge pages
 * (madvise MADV_HUGEPAGE) before they are first touched: large weights streamed by the decode
 * kernels then cost fewer TLB misses and page walks. Advisory: false when refused or n is too
 * small to hold one huge page; nothing else changes. */
bool omnic__mem_advise_huge(void *p, size_t n);

/* n bytes (not zeroed) starting on a 2 MiB boundary, the whole 2 MiB pages that cover them
 * advised onto huge pages before the first touch (the block is rounded up to them): for
 * weights made at load that the decode kernels stream. NULL when n is 0 or over
 * OMNIC_MAX_ALLOC, or out of memory (omnic_malloc's failure hook is consulted). Freed with
 * omnic_free. */
void *omnic__mem_huge_alloc(size_t n);

#endif
