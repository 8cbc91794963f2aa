/* Process memory statistics from /proc/self (see core/mem.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/mem.h"

#include <stdint.h>
#include <sys/mman.h>

bool omnic__mem_rss(size_t *current, size_t *peak)
{
    unsigned long long size = 0, resident = 0, hwm_kb = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return false;
    int n = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    if (n != 2) return false;
    f = fopen("/proc/self/status", "r");
    if (!f) return false;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) sscanf(line + 6, "%llu", &hwm_kb);
    fclose(f);
    long pg = sysconf(_SC_PAGESIZE);
    *current = (size_t)resident * (size_t)(pg > 0 ? pg : 4096);
    *peak = (size_t)hwm_kb * 1024u;
    return true;
}

bool omnic__mem_advise_huge(void *p, size_t n)
{
    const uintptr_t huge = (uintptr_t)2 << 20, a0 = ((uintptr_t)p + huge - 1) & ~(huge - 1),
                    a1 = ((uintptr_t)p + n) & ~(huge - 1);
    return a1 > a0 && madvise((void *)a0, a1 - a0, MADV_HUGEPAGE) == 0;
}
