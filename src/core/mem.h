/* Process memory statistics (Linux /proc/self), for reports and memory tests. */
#ifndef OMNIC_CORE_MEM_H
#define OMNIC_CORE_MEM_H

#include <stdbool.h>
#include <stddef.h>

/* Resident set size now (/proc/self/statm) and its peak (VmHWM of /proc/self/status), bytes.
 * false (outputs unchanged) when /proc is unavailable. */
bool omnic__mem_rss(size_t *current, size_t *peak);

#endif
