/* Process memory statistics (Linux /proc/self), for reports and memory tests. */
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

#endif
