/* Process memory statistics from /proc/self and huge-page advice (see core/mem.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/limits.h"
#include "core/mem.h"
#include "omnic/omnic.h"

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

void *omnic__mem_huge_alloc(size_t n)
{
    const size_t huge = (size_t)2 << 20;
    if (n == 0 || n > OMNIC_MAX_ALLOC) return NULL;
    void *probe = omnic_malloc(1); /* aligned_alloc is outside omnic_malloc's hook: consult it */
    if (!probe) return NULL;
    omnic_free(probe);
    const size_t r = (n + huge - 1) / huge * huge;
    void *p = aligned_alloc(huge, r);
    if (p) (void)omnic__mem_advise_huge(p, r);
    return p;
}
