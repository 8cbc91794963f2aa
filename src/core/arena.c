/* Bump arena over one aligned block; never grows. */
#include <stdlib.h>

#include "core/arena.h"
#include "core/limits.h"

bool omnic__align_up(size_t *out, size_t n)
{
    size_t r;
    if (!omnic_size_add(&r, n, OMNIC_ARENA_ALIGN - 1)) return false;
    *out = r & ~(size_t)(OMNIC_ARENA_ALIGN - 1);
    return true;
}

omnic_status omnic__arena_init(omnic__arena *a, size_t cap, omnic_err *err)
{
    a->base = NULL;
    a->cap = a->used = a->peak = 0;
    if (cap == 0) return OMNIC_OK;
    size_t rounded;
    if (!omnic__align_up(&rounded, cap) || rounded > OMNIC_MAX_ALLOC)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "arena of %zu bytes is over the %zu-byte allocation limit",
                          cap, (size_t)OMNIC_MAX_ALLOC);
    /* aligned_alloc is outside omnic_malloc's hook; consult the hook with a probe first. */
    void *probe = omnic_malloc(1);
    if (!probe) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an arena of %zu bytes", rounded);
    omnic_free(probe);
    a->base = aligned_alloc(OMNIC_ARENA_ALIGN, rounded);
    if (!a->base) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an arena of %zu bytes", rounded);
    a->cap = rounded;
    return OMNIC_OK;
}

void omnic__arena_deinit(omnic__arena *a)
{
    free(a->base);
    a->base = NULL;
    a->cap = a->used = a->peak = 0;
}

void *omnic__arena_alloc(omnic__arena *a, size_t n)
{
    size_t r, end;
    if (!a->base) return NULL; /* empty arena: base + 0 would be NULL + 0 (UB) */
    if (!omnic__align_up(&r, n) || !omnic_size_add(&end, a->used, r) || end > a->cap) return NULL;
    void *p = a->base + a->used;
    a->used = end;
    if (end > a->peak) a->peak = end;
    return p;
}

void omnic__arena_reset(omnic__arena *a)
{
    a->used = 0;
}
