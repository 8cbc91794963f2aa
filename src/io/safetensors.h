/* safetensors reader: maps single files or sharded checkpoints (model.safetensors.index.json)
 * read-only, validates every header field against the file before a pointer is formed, and
 * serves the tensors of all shards sorted by name.
 * Format: u64 little-endian header length N, N bytes of JSON header, then the data region. */
#ifndef OMNIC_IO_SAFETENSORS_H
#define OMNIC_IO_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/limits.h"
#include "core/tensor.h"

#define OMNIC_ST_INDEX_NAME "model.safetensors.index.json"
#define OMNIC_ST_SINGLE_NAME "model.safetensors"

/* One tensor of a checkpoint. Everything points into the owning omnic__safetensors. */
typedef struct omnic__st_tensor {
    const char *name; /* NUL-terminated, <= OMNIC_MAX_TENSOR_NAME bytes */
    omnic_dtype dtype;
    int ndim;                     /* 0..OMNIC_MAX_DIMS; 0 is a scalar (1 element) */
    int64_t dims[OMNIC_MAX_DIMS]; /* dims[0] outermost; unused trailing entries are 1 */
    const void *data;             /* read-only mapped bytes; NOT necessarily aligned to the
                                   * dtype size (the format does not require it) */
    size_t nbytes;                /* product(dims) * dtype size; may be 0 */
    int shard;                    /* index into the shard list */
} omnic__st_tensor;

/* Opaque: the mapped shards, their tensors sorted by name, and the merged __metadata__. */
typedef struct omnic__safetensors omnic__safetensors;

/* Maps one .safetensors file (borrows path) and validates it. Returns owned *out
 * (omnic__st_close); *out unchanged on failure. Errors start with the path and name the
 * tensor and the offending numbers: E_NOT_FOUND / E_IO (open, stat, mmap), E_CORRUPT (bad
 * header, spans, overlaps, duplicates), E_TOO_LARGE (header, name, tensor count or shape
 * over a limit), E_UNSUPPORTED (a known safetensors dtype omnic does not read). */
omnic_status omnic__st_open_file(const char *path, omnic__safetensors **out, omnic_err *err);

/* Opens the weights of a checkpoint directory (borrows dir): dir/model.safetensors.index.json
 * when present (every shard it names is mapped; shard names must be plain file names; each
 * listed tensor must be in the shard the index names), else dir/model.safetensors, else
 * E_NOT_FOUND naming dir. Tensors of all shards share one name space (a name in two shards is
 * E_CORRUPT). __metadata__ of the shards is merged; the first shard wins on a conflict.
 * The index file is capped at OMNIC_MAX_SAFETENSORS_HEADER bytes and must not repeat a key. */
omnic_status omnic__st_open_dir(const char *dir, omnic__safetensors **out, omnic_err *err);

/* Parses and validates a whole in-memory safetensors file (header length, header, data) of
 * len bytes. No mmap. `what` names it in messages. Data pointers point into buf, which the
 * caller keeps alive (and unchanged) while the result lives. Returns owned *out. */
omnic_status omnic__st_parse_header(const uint8_t *buf, size_t len, const char *what,
                                    omnic__safetensors **out, omnic_err *err);

/* Number of tensors over all shards. */
size_t omnic__st_count(const omnic__safetensors *st);
/* i-th tensor in name order (strcmp); NULL when i >= count. Borrowed. */
const omnic__st_tensor *omnic__st_at(const omnic__safetensors *st, size_t i);
/* Binary search by exact name, then (when a rename is set and gives one) by the name it gives;
 * NULL if absent. Borrowed. */
const omnic__st_tensor *omnic__st_find(const omnic__safetensors *st, const char *name);
/* The name a checkpoint of another layout stores name under: true with it in out[0..cap) (a
 * family's map from the names it asks for to an original layout's, e.g. Phi-4-multimodal's
 * remote-code checkpoints), false when the layouts agree on name. */
typedef bool (*omnic__st_rename_fn)(const char *name, char *out, size_t cap);
/* Sets st's rename (NULL: none): omnic__st_find tries it when a name is absent. */
void omnic__st_set_rename(omnic__safetensors *st, omnic__st_rename_fn fn);
/* Value of a __metadata__ key; NULL if absent. Borrowed. */
const char *omnic__st_metadata(const omnic__safetensors *st, const char *key);
/* Number of __metadata__ entries, and the i-th (in key order); false when i is out of range. */
size_t omnic__st_metadata_count(const omnic__safetensors *st);
bool omnic__st_metadata_at(const omnic__safetensors *st, size_t i, const char **key, const char **value);

/* Shards: for a single file 1; paths as opened (the `what` of omnic__st_parse_header). */
size_t omnic__st_shard_count(const omnic__safetensors *st);
/* NULL when i is out of range. Borrowed. */
const char *omnic__st_shard_path(const omnic__safetensors *st, size_t i);
/* File size in bytes; 0 when i is out of range. */
uint64_t omnic__st_shard_size(const omnic__safetensors *st, size_t i);

/* Fills *out as a non-owning view (owns_data = false) of src's mapped bytes. The data is
 * read-only by contract: writing through out->data faults (PROT_READ mapping). The name is
 * copied, truncated to fit out->name. */
void omnic__st_tensor_view(const omnic__st_tensor *src, omnic__tensor *out);

/* Drops the resident pages that lie wholly inside bytes [p, p + n) of a mapped shard
 * (madvise MADV_DONTNEED on the page-aligned interior), after a loader has copied or
 * converted them: RSS falls while the data stays readable (a later read faults the pages
 * back in from the file). Ranges outside every mapped shard (caller buffers, copies) are
 * ignored. Returns the bytes released (0 when none or on error). */
size_t omnic__st_release(const omnic__safetensors *st, const void *p, size_t n);

/* True when bytes [p, p + n) lie inside one mapped shard of st (not a copy, not a read file). */
bool omnic__st_mapped(const omnic__safetensors *st, const void *p, size_t n);

/* Unmaps every shard and frees everything; NULL is a no-op. Pointers obtained from st
 * (tensors, data, names, metadata, paths) die with it. */
void omnic__st_close(omnic__safetensors *st);

#endif
