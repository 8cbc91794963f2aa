/* Bump arena over one owned block: allocations are aligned to OMNIC_ARENA_ALIGN,
 * freed all at once by reset. A full arena returns NULL (never grows), so memory
 * planned at load is the most a call can use. */
#ifndef OMNIC_CORE_ARENA_H
#define OMNIC_CORE_ARENA_H

#include "core/err.h"

#define OMNIC_ARENA_ALIGN 64

typedef struct omnic__arena {
    uint8_t *base; /* owned, OMNIC_ARENA_ALIGN-aligned */
    size_t cap;    /* bytes */
    size_t used;   /* bytes */
    size_t peak;   /* high-water mark since init */
} omnic__arena;

omnic_status omnic__arena_init(omnic__arena *a, size_t cap, omnic_err *err);
void omnic__arena_deinit(omnic__arena *a);
/* Returns NULL when n (rounded up to the alignment) does not fit. Memory is not zeroed. */
void *omnic__arena_alloc(omnic__arena *a, size_t n);
void omnic__arena_reset(omnic__arena *a);

/* Rounds n up to a multiple of OMNIC_ARENA_ALIGN; false on overflow. */
bool omnic__align_up(size_t *out, size_t n);

#endif
