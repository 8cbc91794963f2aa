/* safetensors reader: mmap of single and sharded checkpoints, header validation (dtypes,
 * shapes, spans, overlaps, duplicates, limits), name-sorted lookup and tensor views.
 * Nothing read from a file becomes a pointer before it is checked against the file size. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/dtype.h"
#include "io/file.h"
#include "io/json.h"
#include "io/safetensors.h"

typedef struct st_shard {
    char *path;            /* owned; as opened */
    const char *file_name; /* points into path: the last component */
    const uint8_t *base;   /* whole file: mapping (mapped) or the caller's buffer */
    size_t size;           /* bytes */
    bool mapped;
    char *names; /* owned blob holding this shard's tensor names */
} st_shard;

typedef struct st_meta {
    char *key;   /* owned */
    char *value; /* owned */
} st_meta;

static int meta_cmp(const void *a, const void *b)
{
    return strcmp(((const st_meta *)a)->key, ((const st_meta *)b)->key);
}

/* The entry for key among meta[0..n) (sorted by key), or NULL: O(log n). */
static const st_meta *meta_find(const st_meta *meta, size_t n, const char *key)
{
    st_meta probe = {.key = (char *)(uintptr_t)key};
    return n ? bsearch(&probe, meta, n, sizeof *meta, meta_cmp) : NULL;
}

struct omnic__safetensors {
    st_shard *shards; /* [n_shards] */
    size_t n_shards;
    omnic__st_tensor *tensors; /* [n], sorted by name once loading finishes */
    size_t n;
    st_meta *meta; /* [n_meta] */
    size_t n_meta;
    omnic__st_rename_fn rename; /* names also tried (omnic__st_set_rename), or NULL */
};

/* safetensors dtypes omnic recognizes but does not read (E_UNSUPPORTED, not E_CORRUPT). */
static const char *const known_unsupported[] = {
    "F64",     "I8",      "I16",  "U16",     "U32",     "U64", "F8_E4M3",
    "F8_E5M2", "F8_E8M0", "E8M0", "F6_E2M3", "F6_E3M2", "F4",  "C64",
};

/* A tensor's byte span inside its shard's data region, for the overlap check. */
typedef struct st_span {
    uint64_t begin, end;
    const char *name;
} st_span;

static int span_cmp(const void *a, const void *b)
{
    const st_span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int tensor_cmp(const void *a, const void *b)
{
    return strcmp(((const omnic__st_tensor *)a)->name, ((const omnic__st_tensor *)b)->name);
}

static omnic__safetensors *st_new(void)
{
    return omnic_alloc_array(1, sizeof(omnic__safetensors));
}

/* Appends a shard slot (path copied); returns its index through *idx. */
static omnic_status add_shard(omnic__safetensors *st, const char *path, size_t *idx, omnic_err *err)
{
    size_t n;
    if (!omnic_size_add(&n, st->n_shards, 1))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: too many shards", path);
    size_t bytes;
    if (!omnic_size_mul(&bytes, n, sizeof(st_shard)))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: too many shards (%zu)", path, n);
    st_shard *s = omnic_realloc(st->shards, bytes);
    if (!s) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory for %zu shards", path, n);
    st->shards = s;
    st_shard *sh = &s[st->n_shards];
    memset(sh, 0, sizeof *sh);
    sh->path = omnic_strdup(path);
    if (!sh->path) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", path);
    const char *slash = strrchr(sh->path, '/');
    sh->file_name = slash ? slash + 1 : sh->path;
    st->n_shards = n;
    *idx = n - 1;
    return OMNIC_OK;
}

/* Maps the file of shard `idx` read-only. An empty file is left unmapped (base NULL). */
static omnic_status map_shard(st_shard *sh, omnic_err *err)
{
    omnic_status st = OMNIC_OK;
    int fd = open(sh->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return OMNIC_FAIL(err, e == ENOENT ? OMNIC_E_NOT_FOUND : OMNIC_E_IO, "%s: cannot open: %s", sh->path,
                          strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = OMNIC_FAIL(err, OMNIC_E_IO, "%s: cannot stat: %s", sh->path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = OMNIC_FAIL(err, OMNIC_E_IO, "%s: not a regular file", sh->path);
        goto out;
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > SIZE_MAX) {
        st = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: file size %lld cannot be mapped", sh->path,
                        (long long)sb.st_size);
        goto out;
    }
    sh->size = (size_t)sb.st_size;
    if (sh->size == 0) goto out; /* the header check reports it */
    void *p = mmap(NULL, sh->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        st = OMNIC_FAIL(err, e == ENOMEM ? OMNIC_E_NOMEM : OMNIC_E_IO, "%s: cannot map %zu bytes: %s",
                        sh->path, sh->size, strerror(e));
        goto out;
    }
    sh->base = p;
    sh->mapped = true;
out:
    close(fd);
    return st;
}

static omnic_status read_u64_field(const json_t *v, const char *path, const char *tname, const char *field,
                                   size_t i, uint64_t *out, omnic_err *err)
{
    if (!json_is_integer(v))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "%s: tensor '%s': %s[%zu] is %s, expected a non-negative integer", path, tname,
                          field, i, omnic__json_type_phrase(v));
    json_int_t x = json_integer_value(v);
    if (x < 0)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: tensor '%s': %s[%zu] = %lld is negative", path, tname,
                          field, i, (long long)x);
    *out = (uint64_t)x;
    return OMNIC_OK;
}

static omnic_status parse_dtype(const json_t *v, const char *path, const char *tname, omnic_dtype *out,
                                omnic_err *err)
{
    if (!json_is_string(v))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: tensor '%s': dtype is %s, expected a string", path,
                          tname, omnic__json_type_phrase(v));
    const char *s = json_string_value(v);
    if (omnic__dtype_from_st(s, out)) return OMNIC_OK;
    for (size_t i = 0; i < sizeof known_unsupported / sizeof known_unsupported[0]; i++)
        if (!strcmp(s, known_unsupported[i]))
            return OMNIC_FAIL(
                err, OMNIC_E_UNSUPPORTED,
                "%s: tensor '%s': dtype %s is not supported (omnic reads F32 F16 BF16 I32 I64 U8 BOOL)", path,
                tname, s);
    return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: tensor '%s': unknown dtype '%.32s'", path, tname, s);
}

/* Validates one header entry and fills *t (except name/shard). data_base/data_size: the
 * shard's data region. *span receives the byte span. */
static omnic_status parse_entry(const json_t *e, const char *path, const char *tname,
                                const uint8_t *data_base, size_t data_size, omnic__st_tensor *t,
                                st_span *span, omnic_err *err)
{
    if (!json_is_object(e))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: tensor '%s': entry is %s, expected an object", path,
                          tname, omnic__json_type_phrase(e));
    const json_t *jd = json_object_get(e, "dtype"), *js = json_object_get(e, "shape"),
                 *jo = json_object_get(e, "data_offsets");
    if (!jd || !js || !jo)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: tensor '%s': missing field '%s'", path, tname,
                          !jd   ? "dtype"
                          : !js ? "shape"
                                : "data_offsets");
    OMNIC_TRY(parse_dtype(jd, path, tname, &t->dtype, err));

    if (!json_is_array(js))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: tensor '%s': shape is %s, expected an array", path,
                          tname, omnic__json_type_phrase(js));
    size_t rank = json_array_size(js);
    if (rank > OMNIC_MAX_DIMS)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: tensor '%s': rank %zu is over the limit of %d dims",
                          path, tname, rank, OMNIC_MAX_DIMS);
    t->ndim = (int)rank;
    for (int d = 0; d < OMNIC_MAX_DIMS; d++)
        t->dims[d] = 1;
    size_t nbytes = omnic_dtype_size(t->dtype);
    bool overflow = false;
    for (size_t d = 0; d < rank; d++) {
        uint64_t dim;
        OMNIC_TRY(read_u64_field(json_array_get(js, d), path, tname, "shape", d, &dim, err));
        t->dims[d] = (int64_t)dim; /* <= INT64_MAX: it came from a non-negative json_int_t */
        if (!omnic_size_mul(&nbytes, nbytes, (size_t)dim)) overflow = true;
    }
    if (overflow) {
        char ds[160];
        omnic__dims_str(ds, sizeof ds, t->ndim, t->dims);
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "%s: tensor '%s': shape %s x %zu bytes (%s) overflows size_t", path, tname, ds,
                          omnic_dtype_size(t->dtype), omnic__dtype_table[t->dtype].st_name);
    }

    if (!json_is_array(jo))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: tensor '%s': data_offsets is %s, expected [begin, end]",
                          path, tname, omnic__json_type_phrase(jo));
    if (json_array_size(jo) != 2)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "%s: tensor '%s': data_offsets has %zu items, expected [begin, end]", path, tname,
                          json_array_size(jo));
    uint64_t begin, end;
    OMNIC_TRY(read_u64_field(json_array_get(jo, 0), path, tname, "data_offsets", 0, &begin, err));
    OMNIC_TRY(read_u64_field(json_array_get(jo, 1), path, tname, "data_offsets", 1, &end, err));
    if (begin > end)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin",
                          path, tname, begin, end);
    if ((uint64_t)nbytes != end - begin) {
        char ds[160];
        omnic__dims_str(ds, sizeof ds, t->ndim, t->dims);
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "%s: tensor '%s': shape %s %s needs %zu bytes but data_offsets [%" PRIu64
                          ", %" PRIu64 "] span %" PRIu64 " bytes",
                          path, tname, ds, omnic__dtype_table[t->dtype].st_name, nbytes, begin, end,
                          end - begin);
    }
    if (end > (uint64_t)data_size)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                          "] run past the end of the data region (%zu bytes)",
                          path, tname, begin, end, data_size);
    t->nbytes = nbytes;
    /* begin <= end <= data_size: the pointer stays within (or one past) the region. */
    t->data = data_base ? data_base + begin : NULL;
    span->begin = begin;
    span->end = end;
    return OMNIC_OK;
}

static omnic_status parse_metadata(omnic__safetensors *st, const json_t *m, const char *path, omnic_err *err)
{
    if (!json_is_object(m))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: __metadata__ is %s, expected an object of strings", path,
                          omnic__json_type_phrase(m));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)(uintptr_t)m, key, v)
    {
        if (!json_is_string(v))
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: __metadata__ entry '%s' is %s, expected a string",
                              path, key, omnic__json_type_phrase(v));
    }
    size_t add = json_object_size(m), total, bytes;
    if (add == 0) return OMNIC_OK;
    if (!omnic_size_add(&total, st->n_meta, add) || !omnic_size_mul(&bytes, total, sizeof(st_meta)))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: __metadata__ has too many entries (%zu)", path, add);
    st_meta *nm = omnic_realloc(st->meta, bytes);
    if (!nm) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory for %zu metadata entries", path, total);
    st->meta = nm;
    const size_t n_prev = st->n_meta; /* earlier shards' entries, sorted; this shard's keys are unique */
    json_object_foreach((json_t *)(uintptr_t)m, key, v)
    {
        if (meta_find(st->meta, n_prev, key)) continue; /* first shard wins */
        st_meta *e = &st->meta[st->n_meta];
        e->key = omnic_strdup(key);
        e->value = omnic_strdup(json_string_value(v));
        if (!e->key || !e->value) {
            omnic_free(e->key);
            omnic_free(e->value);
            return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory copying __metadata__", path);
        }
        st->n_meta++;
    }
    qsort(st->meta, st->n_meta, sizeof *st->meta, meta_cmp); /* lookups bisect: O(n log n) in all */
    return OMNIC_OK;
}

/* Validates shard `si` (its bytes are in place) and appends its tensors to st->tensors.
 * On failure st may hold a partial shard; the caller closes st. */
static omnic_status parse_shard(omnic__safetensors *st, size_t si, omnic_err *err)
{
    st_shard *sh = &st->shards[si];
    const char *path = sh->path;
    omnic_status rc = OMNIC_OK;
    json_t *hdr = NULL;
    st_span *spans = NULL;

    if (sh->size < 8)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "%s: file is %zu bytes, shorter than the 8-byte header length", path, sh->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | (uint64_t)sh->base[i];
    if (hlen > (uint64_t)OMNIC_MAX_SAFETENSORS_HEADER)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "%s: header length %" PRIu64 " is over the limit of %zu bytes (file is %zu bytes)",
                          path, hlen, OMNIC_MAX_SAFETENSORS_HEADER, sh->size);
    if (hlen > (uint64_t)(sh->size - 8))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "%s: header length %" PRIu64
                          " runs past the end of the file (%zu bytes, so at most %zu)",
                          path, hlen, sh->size, sh->size - 8);
    const size_t header_len = (size_t)hlen;
    const uint8_t *data_base = sh->base + 8 + header_len;
    const size_t data_size = sh->size - 8 - header_len;

    rc = omnic__json_parse_nodup((const char *)(sh->base + 8), header_len, path, &hdr, err);
    if (rc != OMNIC_OK) goto out;

    size_t entries = json_object_size(hdr);
    if (entries > OMNIC_MAX_TENSORS || st->n + entries > OMNIC_MAX_TENSORS) {
        rc = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                        "%s: %zu header entries (plus %zu tensors before) are over the limit of %d tensors",
                        path, entries, st->n, OMNIC_MAX_TENSORS);
        goto out;
    }

    /* Names: one blob per shard. Sizes are bounded by the header length. */
    size_t blob = 0;
    const char *key;
    json_t *val;
    json_object_foreach(hdr, key, val)
    {
        size_t kl = strlen(key);
        if (kl > OMNIC_MAX_TENSOR_NAME) {
            rc = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                            "%s: tensor name of %zu bytes is over the limit of %d ('%.48s...')", path, kl,
                            OMNIC_MAX_TENSOR_NAME, key);
            goto out;
        }
        blob += kl + 1;
    }
    if (entries > 0) {
        size_t total, bytes;
        if (!omnic_size_add(&total, st->n, entries) ||
            !omnic_size_mul(&bytes, total, sizeof(omnic__st_tensor))) {
            rc = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: %zu tensors overflow the table", path, entries);
            goto out;
        }
        omnic__st_tensor *nt = omnic_realloc(st->tensors, bytes);
        sh->names = omnic_malloc(blob);
        spans = omnic_alloc_array(entries, sizeof(st_span));
        if (nt) st->tensors = nt;
        if (!nt || !sh->names || !spans) {
            rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory for %zu tensors", path, entries);
            goto out;
        }
    }

    size_t n_spans = 0, name_off = 0;
    json_object_foreach(hdr, key, val)
    {
        if (!strcmp(key, "__metadata__")) {
            rc = parse_metadata(st, val, path, err);
            if (rc != OMNIC_OK) goto out;
            continue;
        }
        omnic__st_tensor *t = &st->tensors[st->n];
        memset(t, 0, sizeof *t);
        rc = parse_entry(val, path, key, data_base, data_size, t, &spans[n_spans], err);
        if (rc != OMNIC_OK) goto out;
        size_t kl = strlen(key);
        memcpy(sh->names + name_off, key, kl + 1);
        t->name = sh->names + name_off;
        name_off += kl + 1;
        t->shard = (int)si; /* si < OMNIC_MAX_SHARDS + 1 */
        spans[n_spans].name = t->name;
        n_spans++;
        st->n++;
    }

    /* No two non-empty spans may share a byte. Sorted by begin, a span overlaps an earlier
     * one exactly when it begins before the furthest end seen so far. */
    if (n_spans > 1) {
        qsort(spans, n_spans, sizeof *spans, span_cmp);
        const st_span *far = NULL;
        for (size_t i = 0; i < n_spans; i++) {
            const st_span *s = &spans[i];
            if (s->begin == s->end) continue;
            if (far && s->begin < far->end) {
                rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                                "%s: tensors '%s' [%" PRIu64 ", %" PRIu64 ") and '%s' [%" PRIu64 ", %" PRIu64
                                ") overlap",
                                path, far->name, far->begin, far->end, s->name, s->begin, s->end);
                goto out;
            }
            if (!far || s->end > far->end) far = s;
        }
    }
out:
    omnic_free(spans);
    json_decref(hdr);
    return rc;
}

/* Sorts all tensors by name and rejects a name held by two shards. */
static omnic_status finish(omnic__safetensors *st, omnic_err *err)
{
    if (st->n > 1) qsort(st->tensors, st->n, sizeof *st->tensors, tensor_cmp);
    for (size_t i = 1; i < st->n; i++) {
        const omnic__st_tensor *a = &st->tensors[i - 1], *b = &st->tensors[i];
        if (!strcmp(a->name, b->name))
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: tensor '%s' is also in %s",
                              st->shards[b->shard].path, a->name, st->shards[a->shard].path);
    }
    return OMNIC_OK;
}

omnic_status omnic__st_parse_header(const uint8_t *buf, size_t len, const char *what,
                                    omnic__safetensors **out, omnic_err *err)
{
    if (!what) what = "safetensors";
    omnic__safetensors *st = st_new();
    if (!st) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", what);
    size_t si;
    omnic_status rc = add_shard(st, what, &si, err);
    if (rc != OMNIC_OK) goto fail;
    st->shards[si].base = buf;
    st->shards[si].size = buf ? len : 0;
    rc = parse_shard(st, si, err);
    if (rc != OMNIC_OK) goto fail;
    rc = finish(st, err);
    if (rc != OMNIC_OK) goto fail;
    *out = st;
    return OMNIC_OK;
fail:
    omnic__st_close(st);
    return rc;
}

omnic_status omnic__st_open_file(const char *path, omnic__safetensors **out, omnic_err *err)
{
    omnic__safetensors *st = st_new();
    if (!st) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", path);
    size_t si;
    omnic_status rc = add_shard(st, path, &si, err);
    if (rc == OMNIC_OK) rc = map_shard(&st->shards[si], err);
    if (rc == OMNIC_OK) rc = parse_shard(st, si, err);
    if (rc == OMNIC_OK) rc = finish(st, err);
    if (rc != OMNIC_OK) {
        omnic__st_close(st);
        return rc;
    }
    *out = st;
    return OMNIC_OK;
}

static int cstr_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A shard named by an index must be a plain file name inside the checkpoint directory. */
static bool plain_file_name(const char *s)
{
    return s[0] != '\0' && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static omnic_status open_sharded(const char *dir, const char *index_path, omnic__safetensors **out,
                                 omnic_err *err)
{
    omnic_status rc = OMNIC_OK;
    char *text = NULL;
    size_t text_len = 0;
    json_t *index = NULL;
    const char **names = NULL;
    char *shard_path = NULL;
    omnic__safetensors *st = NULL;

    rc = omnic__read_file(index_path, OMNIC_MAX_SAFETENSORS_HEADER, &text, &text_len, err);
    if (rc != OMNIC_OK) goto fail;
    rc = omnic__json_parse_nodup(text, text_len, index_path, &index, err);
    if (rc != OMNIC_OK) goto fail;
    const json_t *wm = json_object_get(index, "weight_map");
    if (!wm || !json_is_object(wm)) {
        rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                        "%s: 'weight_map' is %s, expected an object of tensor name -> shard file", index_path,
                        omnic__json_type_phrase(wm));
        goto fail;
    }
    size_t n_entries = json_object_size(wm);
    if (n_entries > OMNIC_MAX_TENSORS) {
        rc =
            OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: weight_map has %zu entries, over the limit of %d tensors",
                       index_path, n_entries, OMNIC_MAX_TENSORS);
        goto fail;
    }

    /* Distinct shard file names, sorted: shard i of the result is names[i]. */
    size_t n_names = 0;
    if (n_entries > 0) {
        names = omnic_alloc_array(n_entries, sizeof *names);
        if (!names) {
            rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory for %zu entries", index_path, n_entries);
            goto fail;
        }
    }
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)(uintptr_t)wm, key, val)
    {
        if (!json_is_string(val)) {
            rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: weight_map['%s'] is %s, expected a shard file name",
                            index_path, key, omnic__json_type_phrase(val));
            goto fail;
        }
        const char *f = json_string_value(val);
        if (!plain_file_name(f)) {
            rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                            "%s: weight_map['%s'] names shard '%s', which is not a plain file name",
                            index_path, key, f);
            goto fail;
        }
        names[n_names++] = f;
    }
    if (n_names > 1) qsort(names, n_names, sizeof *names, cstr_cmp);
    size_t n_uniq = 0;
    for (size_t i = 0; i < n_names; i++)
        if (n_uniq == 0 || strcmp(names[n_uniq - 1], names[i]) != 0) names[n_uniq++] = names[i];
    if (n_uniq > OMNIC_MAX_SHARDS) {
        rc = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: %zu shards, over the limit of %d", index_path, n_uniq,
                        OMNIC_MAX_SHARDS);
        goto fail;
    }

    st = st_new();
    if (!st) {
        rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", index_path);
        goto fail;
    }
    for (size_t i = 0; i < n_uniq; i++) {
        shard_path = omnic__path_join(dir, names[i]);
        if (!shard_path) {
            rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", index_path);
            goto fail;
        }
        size_t si;
        rc = add_shard(st, shard_path, &si, err);
        if (rc != OMNIC_OK) goto fail;
        rc = map_shard(&st->shards[si], err);
        if (rc == OMNIC_E_NOT_FOUND) {
            rc = OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s: shard '%s' does not exist (%s)", index_path,
                            names[i], shard_path);
            goto fail;
        }
        if (rc != OMNIC_OK) goto fail;
        rc = parse_shard(st, si, err);
        if (rc != OMNIC_OK) goto fail;
        omnic_free(shard_path);
        shard_path = NULL;
    }
    rc = finish(st, err);
    if (rc != OMNIC_OK) goto fail;

    /* Every tensor the index lists is in the shard it names. */
    json_object_foreach((json_t *)(uintptr_t)wm, key, val)
    {
        const char *f = json_string_value(val);
        const omnic__st_tensor *t = omnic__st_find(st, key);
        if (!t) {
            rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                            "%s: tensor '%s' is listed in shard '%s' but that shard does not hold it",
                            index_path, key, f);
            goto fail;
        }
        const char *actual = st->shards[t->shard].file_name;
        if (strcmp(actual, f) != 0) {
            rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                            "%s: tensor '%s' is listed in shard '%s' but found in shard '%s'", index_path,
                            key, f, actual);
            goto fail;
        }
    }
    *out = st;
    st = NULL;
fail:
    omnic__st_close(st);
    omnic_free(shard_path);
    omnic_free(names);
    json_decref(index);
    omnic_free(text);
    return rc;
}

omnic_status omnic__st_open_dir(const char *dir, omnic__safetensors **out, omnic_err *err)
{
    omnic_status rc = OMNIC_OK;
    char *index_path = omnic__path_join(dir, OMNIC_ST_INDEX_NAME);
    char *single_path = omnic__path_join(dir, OMNIC_ST_SINGLE_NAME);
    if (!index_path || !single_path) {
        rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", dir);
        goto out;
    }
    bool has_index, has_single;
    rc = omnic__path_stat(index_path, &has_index, NULL, NULL, NULL, err);
    if (rc == OMNIC_OK) rc = omnic__path_stat(single_path, &has_single, NULL, NULL, NULL, err);
    if (rc != OMNIC_OK) goto out;
    if (has_index)
        rc = open_sharded(dir, index_path, out, err);
    else if (has_single)
        rc = omnic__st_open_file(single_path, out, err);
    else
        rc = OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s: no %s or %s (no weights)", dir, OMNIC_ST_INDEX_NAME,
                        OMNIC_ST_SINGLE_NAME);
out:
    omnic_free(index_path);
    omnic_free(single_path);
    return rc;
}

size_t omnic__st_count(const omnic__safetensors *st)
{
    return st ? st->n : 0;
}

const omnic__st_tensor *omnic__st_at(const omnic__safetensors *st, size_t i)
{
    return st && i < st->n ? &st->tensors[i] : NULL;
}

static const omnic__st_tensor *find_exact(const omnic__safetensors *st, const char *name)
{
    size_t lo = 0, hi = st->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->tensors[mid].name, name);
        if (c == 0) return &st->tensors[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const omnic__st_tensor *omnic__st_find(const omnic__safetensors *st, const char *name)
{
    if (!st || !name) return NULL;
    const omnic__st_tensor *t = find_exact(st, name);
    char other[OMNIC_MAX_TENSOR_NAME + 1];
    if (!t && st->rename && st->rename(name, other, sizeof other)) t = find_exact(st, other);
    return t;
}

void omnic__st_set_rename(omnic__safetensors *st, omnic__st_rename_fn fn)
{
    if (st) st->rename = fn;
}

const char *omnic__st_metadata(const omnic__safetensors *st, const char *key)
{
    if (!st || !key) return NULL;
    const st_meta *e = meta_find(st->meta, st->n_meta, key);
    return e ? e->value : NULL;
}

size_t omnic__st_metadata_count(const omnic__safetensors *st)
{
    return st ? st->n_meta : 0;
}

bool omnic__st_metadata_at(const omnic__safetensors *st, size_t i, const char **key, const char **value)
{
    if (!st || i >= st->n_meta) return false;
    if (key) *key = st->meta[i].key;
    if (value) *value = st->meta[i].value;
    return true;
}

size_t omnic__st_shard_count(const omnic__safetensors *st)
{
    return st ? st->n_shards : 0;
}

const char *omnic__st_shard_path(const omnic__safetensors *st, size_t i)
{
    return st && i < st->n_shards ? st->shards[i].path : NULL;
}

uint64_t omnic__st_shard_size(const omnic__safetensors *st, size_t i)
{
    return st && i < st->n_shards ? (uint64_t)st->shards[i].size : 0;
}

void omnic__st_tensor_view(const omnic__st_tensor *src, omnic__tensor *out)
{
    memset(out, 0, sizeof *out);
    out->dtype = src->dtype;
    out->ndim = src->ndim;
    for (int d = 0; d < OMNIC_MAX_DIMS; d++)
        out->dims[d] = d < src->ndim ? src->dims[d] : 1;
    out->data = (void *)(uintptr_t)src->data; /* read-only by contract (PROT_READ mapping) */
    out->owns_data = false;
    snprintf(out->name, sizeof out->name, "%s", src->name);
}

bool omnic__st_mapped(const omnic__safetensors *st, const void *p, size_t n)
{
    if (!st || !p) return false;
    const uintptr_t lo = (uintptr_t)p, hi = lo + n;
    for (size_t i = 0; i < st->n_shards; i++) {
        const st_shard *sh = &st->shards[i];
        const uintptr_t b = (uintptr_t)sh->base;
        if (sh->mapped && lo >= b && hi <= b + sh->size) return true;
    }
    return false;
}

size_t omnic__st_release(const omnic__safetensors *st, const void *p, size_t n)
{
    if (n == 0 || !omnic__st_mapped(st, p, n)) return 0;
    const long pg = sysconf(_SC_PAGESIZE);
    const uintptr_t page = pg > 0 ? (uintptr_t)pg : 4096u;
    const uintptr_t a0 = ((uintptr_t)p + page - 1) / page * page, a1 = ((uintptr_t)p + n) / page * page;
    if (a1 <= a0) return 0;
    return madvise((void *)a0, a1 - a0, MADV_DONTNEED) == 0 ? (size_t)(a1 - a0) : 0;
}

void omnic__st_close(omnic__safetensors *st)
{
    if (!st) return;
    for (size_t i = 0; i < st->n_shards; i++) {
        st_shard *sh = &st->shards[i];
        if (sh->mapped) munmap((void *)(uintptr_t)sh->base, sh->size);
        omnic_free(sh->path);
        omnic_free(sh->names);
    }
    for (size_t i = 0; i < st->n_meta; i++) {
        omnic_free(st->meta[i].key);
        omnic_free(st->meta[i].value);
    }
    omnic_free(st->meta);
    omnic_free(st->shards);
    omnic_free(st->tensors);
    omnic_free(st);
}
