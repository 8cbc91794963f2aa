/* The media memo: prepared media items (the processor's output) under the hash of the bytes
 * they came from and of everything else that shaped them (the processor and its request
 * kwargs, the decode limits), least recently used first out past a budget in bytes. A
 * repeated image skips decode and preprocessing here; its encoding then comes from the
 * engine's encoder cache (engine/blob_cache.h), so a repeat runs nothing from bytes to rows.
 * One per engine (per loaded bundle). Thread-safe: the server's media workers share it. */
#ifndef OMNIC_ENGINE_MEDIA_MEMO_H
#define OMNIC_ENGINE_MEDIA_MEMO_H

#include <stdatomic.h>

#include "engine/blob_cache.h"
#include "engine/media.h"

typedef struct omnic__media_memo omnic__media_memo;

/* A memo of at most max_bytes (> 0) of items. Returns owned *out. E_NOMEM. */
omnic_status omnic__media_memo_create(size_t max_bytes, omnic__media_memo **out, omnic_err *err);
/* NULL ok. */
void omnic__media_memo_destroy(omnic__media_memo *m);

/* omnic__media_prepare_timed through memo (NULL: straight through): a hit copies the item
 * (times zero, *hit true); a miss prepares it and keeps a copy. Items of a processor without
 * an identity (omnic__media_proc.has_ident) are never kept. */
omnic_status omnic__media_prepare_memo(omnic__media_memo *memo, const omnic__media_proc *p,
                                       const uint8_t *bytes, size_t len, const omnic__image_limits *limits,
                                       const atomic_bool *cancel, omnic__media_item *out,
                                       omnic__media_times *times, bool *hit, omnic_err *err);

void omnic__media_memo_stats(omnic__media_memo *m, omnic__blob_cache_stats *out);

#endif
