/* BPE model: loading vocab and merges from tokenizer.json, Hugging Face's merge_word, the merge
 * loop and the per-thread word cache. */
#include "tokenizer/bpe.h"

#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "io/json.h"

#define NONE_RANK UINT32_MAX
#define CHAR_TABLE 0x800 /* single-character lookups below this code point go through a table */

/* Word cache bounds (per work state). When full it is emptied and starts over. */
#define OMNIC__BPE_CACHE_SLOTS 32768u
#define CACHE_MAX_ENTRIES 16384u
#define CACHE_MAX_WORD 256u
#define CACHE_MAX_KEY_BYTES ((size_t)2 << 20)
/* Words with more symbols than this merge through a heap instead of rescanning the pairs. */
#define SCAN_MAX_SYMBOLS 192u

struct omnic__bpe_cache_ent {
    uint64_t h;
    uint32_t koff;
    uint32_t klen; /* 0: empty slot */
    uint32_t ioff;
    uint32_t nids;
};

struct omnic__bpe {
    omnic__strmap vocab;
    omnic__u64map merges; /* (left id << 32 | right id) -> (rank << 32 | merged id) */
    char *unk;            /* owned unk_token, or NULL */
    size_t unk_len;
    int32_t unk_id; /* -1: unk_token not in the vocabulary */
    char *prefix;   /* continuing_subword_prefix (NULL when absent or empty) */
    size_t prefix_len;
    char *suffix; /* end_of_word_suffix (NULL when absent or empty) */
    size_t suffix_len;
    bool fuse_unk, byte_fallback, ignore_merges;
    int32_t byte_ids[256];        /* "<0xNN>" token ids, -1 when absent */
    int32_t char_ids[CHAR_TABLE]; /* id of the one-character token for small code points, -1 when absent */
};

void omnic__bpe_free(omnic__bpe *m)
{
    if (!m) return;
    omnic__strmap_deinit(&m->vocab);
    omnic__u64map_deinit(&m->merges);
    omnic_free(m->unk);
    omnic_free(m->prefix);
    omnic_free(m->suffix);
    omnic_free(m);
}

const omnic__strmap *omnic__bpe_vocab(const omnic__bpe *m)
{
    return &m->vocab;
}

static char *dup_n(const char *s, size_t n)
{
    char *p = omnic_malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* Optional string field (null/absent -> *out NULL); an empty string also yields NULL when
 * empty_is_none (a "" prefix or suffix changes nothing). */
static omnic_status opt_str(const json_t *o, const char *key, const char *what, bool empty_is_none,
                            char **out, size_t *len, omnic_err *err)
{
    const char *s = NULL;
    OMNIC_TRY(omnic__json_get_str(o, key, false, NULL, what, &s, err));
    *out = NULL;
    *len = 0;
    if (!s) return OMNIC_OK;
    size_t n = json_string_length(json_object_get(o, key));
    if (n > OMNIC_MAX_TOKEN_BYTES)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: field '%s' is %zu bytes, over the %d byte limit", what,
                          key, n, OMNIC_MAX_TOKEN_BYTES);
    if (n == 0 && empty_is_none) return OMNIC_OK;
    *out = dup_n(s, n);
    if (!*out) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", what);
    *len = n;
    return OMNIC_OK;
}

static omnic_status load_vocab(omnic__bpe *m, const json_t *vocab, const char *what, omnic_err *err)
{
    size_t n = json_object_size(vocab);
    if (n > OMNIC_MAX_VOCAB)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s.vocab: %zu entries, over the %d limit", what, n,
                          OMNIC_MAX_VOCAB);
    const char *key;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach((json_t *)(uintptr_t)vocab, key, klen, v)
    {
        if (!json_is_integer(v))
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "%s.vocab: the id of token '%.*s' is %s, expected an integer", what,
                              klen > 64 ? 64 : (int)klen, key, omnic__json_type_phrase(v));
        json_int_t id = json_integer_value(v);
        if (id < 0 || id >= OMNIC_MAX_VOCAB)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s.vocab: token '%.*s' has id %lld, outside 0..%d", what,
                              klen > 64 ? 64 : (int)klen, key, (long long)id, OMNIC_MAX_VOCAB - 1);
        if (klen > OMNIC_MAX_TOKEN_BYTES)
            return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                              "%s.vocab: token with id %lld is %zu bytes, over the %d limit", what,
                              (long long)id, klen, OMNIC_MAX_TOKEN_BYTES);
        OMNIC_TRY(omnic__strmap_put(&m->vocab, key, klen, (int32_t)id, NULL, NULL, err));
    }
    return OMNIC_OK;
}

static omnic_status add_merge(omnic__bpe *m, const char *a, size_t al, const char *b, size_t bl,
                              uint32_t rank, size_t index, const char *what, omnic__tbuf *tmp, omnic_err *err)
{
    int32_t ia, ib, inew;
    if (!omnic__strmap_get(&m->vocab, a, al, &ia))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s.merges[%zu]: token '%.*s' is not in the vocabulary", what,
                          index, al > 64 ? 64 : (int)al, a);
    if (!omnic__strmap_get(&m->vocab, b, bl, &ib))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s.merges[%zu]: token '%.*s' is not in the vocabulary", what,
                          index, bl > 64 ? 64 : (int)bl, b);
    size_t skip = m->prefix_len;
    if (skip > bl)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s.merges[%zu]: token '%.*s' is shorter than the continuing_subword_prefix", what,
                          index, bl > 64 ? 64 : (int)bl, b);
    tmp->len = 0;
    OMNIC_TRY(omnic__tbuf_put(tmp, a, al, err));
    OMNIC_TRY(omnic__tbuf_put(tmp, b + skip, bl - skip, err));
    if (!omnic__strmap_get(&m->vocab, tmp->p, tmp->len, &inew))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s.merges[%zu]: merged token '%.*s' is not in the vocabulary", what, index,
                          tmp->len > 64 ? 64 : (int)tmp->len, tmp->p);
    uint64_t key = ((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib;
    uint64_t val = ((uint64_t)rank << 32) | (uint32_t)inew;
    return omnic__u64map_put(&m->merges, key, val, err);
}

static omnic_status load_merges(omnic__bpe *m, const json_t *merges, const char *what, omnic_err *err)
{
    size_t n = json_array_size(merges);
    if (n > OMNIC_MAX_MERGES)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s.merges: %zu entries, over the %d limit", what, n,
                          OMNIC_MAX_MERGES);
    OMNIC_TRY(omnic__u64map_reserve(&m->merges, n, err));
    omnic__tbuf tmp = {0};
    omnic_status st = OMNIC_OK;
    bool legacy = n > 0 && json_is_string(json_array_get(merges, 0));
    uint32_t rank = 0;
    for (size_t i = 0; i < n && st == OMNIC_OK; i++) {
        const json_t *e = json_array_get(merges, i);
        if (legacy) {
            if (!json_is_string(e)) {
                st =
                    OMNIC_FAIL(err, OMNIC_E_INVALID, "%s.merges[%zu] is %s, expected a string like merges[0]",
                               what, i, omnic__json_type_phrase(e));
                break;
            }
            const char *s = json_string_value(e);
            size_t sl = json_string_length(e);
            if (sl >= 8 && !memcmp(s, "#version", 8)) continue;
            const char *sp = memchr(s, ' ', sl);
            if (!sp || memchr(sp + 1, ' ', sl - (size_t)(sp + 1 - s))) {
                st = OMNIC_FAIL(err, OMNIC_E_INVALID,
                                "%s.merges[%zu]: '%.*s' is not two tokens separated by one space", what, i,
                                sl > 64 ? 64 : (int)sl, s);
                break;
            }
            st = add_merge(m, s, (size_t)(sp - s), sp + 1, sl - (size_t)(sp + 1 - s), rank++, i, what, &tmp,
                           err);
        } else {
            if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(json_array_get(e, 0)) ||
                !json_is_string(json_array_get(e, 1))) {
                st = OMNIC_FAIL(err, OMNIC_E_INVALID,
                                "%s.merges[%zu] is %s, expected a pair of strings [\"a\", \"b\"]", what, i,
                                json_is_array(e) ? "an array that is not two strings"
                                                 : omnic__json_type_phrase(e));
                break;
            }
            const json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
            st = add_merge(m, json_string_value(a), json_string_length(a), json_string_value(b),
                           json_string_length(b), rank++, i, what, &tmp, err);
        }
    }
    omnic__tbuf_free(&tmp);
    return st;
}

omnic_status omnic__bpe_load(const json_t *model, const char *what, omnic__bpe **out, omnic_err *err)
{
    omnic__bpe *m = omnic_alloc_array(1, sizeof *m);
    if (!m) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", what);
    omnic_status st;
    const json_t *vocab, *merges;
    st = omnic__json_get_obj(model, "vocab", true, what, &vocab, err);
    if (st != OMNIC_OK) goto fail;
    st = omnic__json_get_array(model, "merges", true, what, &merges, err);
    if (st != OMNIC_OK) goto fail;
    const json_t *dj = json_object_get(model, "dropout");
    if (dj && !json_is_null(dj)) {
        double d;
        st = omnic__json_get_f64(model, "dropout", false, 0, 0, 1, what, &d, err);
        if (st != OMNIC_OK) goto fail;
        if (d != 0) {
            st = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                            "%s: dropout %g is not supported (BPE dropout is random; it must be null or 0)",
                            what, d);
            goto fail;
        }
    }
    st = omnic__json_get_bool(model, "fuse_unk", false, false, what, &m->fuse_unk, err);
    if (st != OMNIC_OK) goto fail;
    st = omnic__json_get_bool(model, "byte_fallback", false, false, what, &m->byte_fallback, err);
    if (st != OMNIC_OK) goto fail;
    st = omnic__json_get_bool(model, "ignore_merges", false, false, what, &m->ignore_merges, err);
    if (st != OMNIC_OK) goto fail;
    st = opt_str(model, "unk_token", what, false, &m->unk, &m->unk_len, err);
    if (st != OMNIC_OK) goto fail;
    st = opt_str(model, "continuing_subword_prefix", what, true, &m->prefix, &m->prefix_len, err);
    if (st != OMNIC_OK) goto fail;
    st = opt_str(model, "end_of_word_suffix", what, true, &m->suffix, &m->suffix_len, err);
    if (st != OMNIC_OK) goto fail;

    st = load_vocab(m, vocab, what, err);
    if (st != OMNIC_OK) goto fail;
    st = load_merges(m, merges, what, err);
    if (st != OMNIC_OK) goto fail;

    m->unk_id = -1;
    if (m->unk) omnic__strmap_get(&m->vocab, m->unk, m->unk_len, &m->unk_id);
    for (int b = 0; b < 256; b++) {
        char code[8];
        snprintf(code, sizeof code, "<0x%02X>", b);
        if (!omnic__strmap_get(&m->vocab, code, 6, &m->byte_ids[b])) m->byte_ids[b] = -1;
    }
    for (uint32_t cp = 0; cp < CHAR_TABLE; cp++) {
        char c[4];
        size_t cl = omnic__utf8_encode(cp, c);
        if (!omnic__strmap_get(&m->vocab, c, cl, &m->char_ids[cp])) m->char_ids[cp] = -1;
    }
    *out = m;
    return OMNIC_OK;
fail:
    omnic__bpe_free(m);
    return st;
}

/* ---- work state ---- */

void omnic__bpe_work_deinit(omnic__bpe_work *w)
{
    if (!w) return;
    omnic_free(w->sym_id);
    omnic_free(w->prev);
    omnic_free(w->next);
    omnic_free(w->rank);
    omnic_free(w->pnew);
    omnic_free(w->heap);
    omnic__tbuf_free(&w->word);
    omnic_free(w->cache);
    omnic__tbuf_free(&w->cache_keys);
    omnic__ivec_free(&w->cache_ids);
    memset(w, 0, sizeof *w);
}

void omnic__bpe_work_trim(omnic__bpe_work *w, size_t keep)
{
    if (w->sym_cap * (4 * sizeof(int32_t) + sizeof(uint32_t)) > keep) {
        omnic_free(w->sym_id);
        omnic_free(w->prev);
        omnic_free(w->next);
        omnic_free(w->rank);
        omnic_free(w->pnew);
        w->sym_id = w->prev = w->next = w->pnew = NULL;
        w->rank = NULL;
        w->sym_cap = 0;
    }
    if (w->heap_cap * sizeof *w->heap > keep) {
        omnic_free(w->heap);
        w->heap = NULL;
        w->heap_cap = 0;
    }
    if (w->word.cap > keep) omnic__tbuf_free(&w->word);
}

static omnic_status work_reserve(omnic__bpe_work *w, size_t n, omnic_err *err)
{
    if (n <= w->sym_cap) return OMNIC_OK;
    size_t cap = w->sym_cap ? w->sym_cap : 64;
    while (cap < n)
        cap *= 2;
    int32_t *a = omnic_realloc(w->sym_id, cap * sizeof *a);
    if (a) w->sym_id = a;
    int32_t *b = a ? omnic_realloc(w->prev, cap * sizeof *b) : NULL;
    if (b) w->prev = b;
    int32_t *c = b ? omnic_realloc(w->next, cap * sizeof *c) : NULL;
    if (c) w->next = c;
    uint32_t *d = c ? omnic_realloc(w->rank, cap * sizeof *d) : NULL;
    if (d) w->rank = d;
    int32_t *e = d ? omnic_realloc(w->pnew, cap * sizeof *e) : NULL;
    if (e) w->pnew = e;
    if (!e) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory for a word of %zu symbols", n);
    w->sym_cap = cap;
    return OMNIC_OK;
}

static inline bool pair_lookup(const omnic__bpe *m, int32_t a, int32_t b, uint32_t *rank, int32_t *nid)
{
    uint64_t v;
    if (!omnic__u64map_get(&m->merges, ((uint64_t)(uint32_t)a << 32) | (uint32_t)b, &v)) return false;
    *rank = (uint32_t)(v >> 32);
    *nid = (int32_t)(uint32_t)v;
    return true;
}

/* Merges by rescanning the live pairs: cheap for the short words that dominate text. */
static void merge_scan(const omnic__bpe *m, omnic__bpe_work *w, size_t ns)
{
    int32_t *sym = w->sym_id, *next = w->next, *prev = w->prev, *pnew = w->pnew;
    uint32_t *rank = w->rank;
    for (size_t i = 0; i < ns; i++) {
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < ns ? (int32_t)(i + 1) : -1;
        if (i + 1 < ns) {
            if (!pair_lookup(m, sym[i], sym[i + 1], &rank[i], &pnew[i])) rank[i] = NONE_RANK;
        } else
            rank[i] = NONE_RANK;
    }
    for (;;) {
        uint32_t best = NONE_RANK;
        int32_t bi = -1;
        for (int32_t i = 0; i >= 0; i = next[i])
            if (rank[i] < best) {
                best = rank[i];
                bi = i;
            }
        if (bi < 0) break;
        int32_t j = next[bi];
        sym[bi] = pnew[bi];
        next[bi] = next[j];
        if (next[j] >= 0) prev[next[j]] = bi;
        if (next[bi] < 0 || !pair_lookup(m, sym[bi], sym[next[bi]], &rank[bi], &pnew[bi]))
            rank[bi] = NONE_RANK;
        int32_t p = prev[bi];
        if (p >= 0 && !pair_lookup(m, sym[p], sym[bi], &rank[p], &pnew[p])) rank[p] = NONE_RANK;
    }
}

static void heap_push(uint64_t *h, size_t *n, uint64_t x)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= x) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], x = h[--*n];
    size_t i = 0, len = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= len) break;
        if (c + 1 < len && h[c + 1] < h[c]) c++;
        if (h[c] >= x) break;
        h[i] = h[c];
        i = c;
    }
    if (len) h[i] = x;
    return top;
}

/* Merges through a min-heap of (rank, position) with lazy invalidation (Hugging Face's
 * Word::merge_all): O(n log n) for long words. */
static omnic_status merge_heap(const omnic__bpe *m, omnic__bpe_work *w, size_t ns, omnic_err *err)
{
    /* every merge pushes at most two entries, and there are fewer than ns merges */
    size_t need = 3 * ns;
    if (need > w->heap_cap) {
        uint64_t *h = omnic_realloc(w->heap, need * sizeof *h);
        if (!h)
            return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory merging a word of %zu symbols",
                              ns);
        w->heap = h;
        w->heap_cap = need;
    }
    int32_t *sym = w->sym_id, *next = w->next, *prev = w->prev;
    uint64_t *h = w->heap;
    size_t hn = 0;
    for (size_t i = 0; i < ns; i++) {
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < ns ? (int32_t)(i + 1) : -1;
        uint32_t r;
        int32_t nid;
        if (i + 1 < ns && pair_lookup(m, sym[i], sym[i + 1], &r, &nid))
            heap_push(h, &hn, ((uint64_t)r << 32) | i);
    }
    /* sym[i] == -1 marks a symbol merged into its left neighbour */
    while (hn) {
        uint64_t top = heap_pop(h, &hn);
        uint32_t r = (uint32_t)(top >> 32);
        int32_t pos = (int32_t)(uint32_t)top;
        if (sym[pos] < 0 || next[pos] < 0) continue;
        int32_t j = next[pos];
        uint32_t cr;
        int32_t nid;
        if (!pair_lookup(m, sym[pos], sym[j], &cr, &nid) || cr != r) continue; /* stale entry */
        sym[pos] = nid;
        sym[j] = -1;
        next[pos] = next[j];
        if (next[j] >= 0) prev[next[j]] = pos;
        if (prev[pos] >= 0 && pair_lookup(m, sym[prev[pos]], sym[pos], &cr, &nid))
            heap_push(h, &hn, ((uint64_t)cr << 32) | (uint32_t)prev[pos]);
        if (next[pos] >= 0 && pair_lookup(m, sym[pos], sym[next[pos]], &cr, &nid))
            heap_push(h, &hn, ((uint64_t)cr << 32) | (uint32_t)pos);
    }
    return OMNIC_OK;
}

static omnic_status unk_missing(const omnic__bpe *m, omnic_err *err)
{
    return OMNIC_FAIL(err, OMNIC_E_INVALID,
                      "tokenizer: unk_token '%.*s' is needed but is not in the vocabulary",
                      m->unk_len > 64 ? 64 : (int)m->unk_len, m->unk);
}

/* Hugging Face BPE::merge_word up to merge_all: the initial symbols of w. */
static omnic_status initial_symbols(const omnic__bpe *m, const char *w, size_t n, omnic__bpe_work *wk,
                                    size_t *ns_out, omnic_err *err)
{
    size_t ns = 0;
    int32_t *sym = wk->sym_id;
    bool have_unk = false;
    for (size_t i = 0; i < n;) {
        size_t cl;
        uint32_t cp = omnic__utf8_decode(w + i, &cl);
        bool first = i == 0, last = i + cl >= n;
        const char *s = w + i;
        size_t sl = cl;
        int32_t id = -1;
        bool decorated = (m->prefix && !first) || (m->suffix && last);
        if (!decorated && cp < CHAR_TABLE)
            id = m->char_ids[cp];
        else {
            if (decorated) {
                wk->word.len = 0;
                if (m->prefix && !first) OMNIC_TRY(omnic__tbuf_put(&wk->word, m->prefix, m->prefix_len, err));
                OMNIC_TRY(omnic__tbuf_put(&wk->word, w + i, cl, err));
                if (m->suffix && last) OMNIC_TRY(omnic__tbuf_put(&wk->word, m->suffix, m->suffix_len, err));
                s = wk->word.p;
                sl = wk->word.len;
            }
            if (!omnic__strmap_get(&m->vocab, s, sl, &id)) id = -1;
        }
        i += cl;
        if (id >= 0) {
            if (have_unk) {
                sym[ns++] = m->unk_id;
                have_unk = false;
            }
            sym[ns++] = id;
            continue;
        }
        if (m->byte_fallback) {
            bool all = true;
            for (size_t k = 0; k < sl && all; k++)
                all = m->byte_ids[(unsigned char)s[k]] >= 0;
            if (all) {
                /* Hugging Face adds the bytes without flushing a pending unk first */
                if (ns + sl + 1 > wk->sym_cap) {
                    OMNIC_TRY(work_reserve(wk, ns + sl + (n - i) + 2, err));
                    sym = wk->sym_id;
                }
                for (size_t k = 0; k < sl; k++)
                    sym[ns++] = m->byte_ids[(unsigned char)s[k]];
                continue;
            }
        }
        if (m->unk) {
            if (m->unk_id < 0) return unk_missing(m, err);
            if (have_unk && !m->fuse_unk) sym[ns++] = m->unk_id;
            have_unk = true;
        }
    }
    if (have_unk) sym[ns++] = m->unk_id;
    *ns_out = ns;
    return OMNIC_OK;
}

/* ---- word cache ---- */

static void cache_clear(omnic__bpe_work *w, const omnic__bpe *owner)
{
    if (w->cache) memset(w->cache, 0, OMNIC__BPE_CACHE_SLOTS * sizeof *w->cache);
    w->cache_n = 0;
    w->cache_keys.len = 0;
    w->cache_ids.n = 0;
    w->cache_owner = owner;
}

static bool cache_get(const omnic__bpe_work *w, const char *key, size_t n, uint64_t h, omnic__ivec *out,
                      omnic_err *err, omnic_status *st)
{
    size_t mask = OMNIC__BPE_CACHE_SLOTS - 1, i = (size_t)h & mask;
    for (;;) {
        const struct omnic__bpe_cache_ent *e = &w->cache[i];
        if (!e->klen) return false;
        if (e->h == h && e->klen == n && !memcmp(w->cache_keys.p + e->koff, key, n)) {
            if (!e->nids) return true;
            *st = omnic__ivec_reserve(out, e->nids, err);
            if (*st != OMNIC_OK) return true;
            memcpy(out->v + out->n, w->cache_ids.v + e->ioff, e->nids * sizeof *out->v);
            out->n += e->nids;
            return true;
        }
        i = (i + 1) & mask;
    }
}

static void cache_put(omnic__bpe_work *w, const char *key, size_t n, uint64_t h, const int32_t *ids,
                      size_t nids)
{
    if (w->cache_n >= CACHE_MAX_ENTRIES || w->cache_keys.len + n > CACHE_MAX_KEY_BYTES)
        cache_clear(w, w->cache_owner);
    omnic_err scratch;
    size_t koff = w->cache_keys.len, ioff = w->cache_ids.n;
    if (omnic__tbuf_put(&w->cache_keys, key, n, &scratch) != OMNIC_OK) return;
    if (omnic__ivec_reserve(&w->cache_ids, nids, &scratch) != OMNIC_OK) return;
    if (nids) memcpy(w->cache_ids.v + ioff, ids, nids * sizeof *ids);
    w->cache_ids.n += nids;
    size_t mask = OMNIC__BPE_CACHE_SLOTS - 1, i = (size_t)h & mask;
    while (w->cache[i].klen)
        i = (i + 1) & mask;
    w->cache[i] = (struct omnic__bpe_cache_ent){
        .h = h, .koff = (uint32_t)koff, .klen = (uint32_t)n, .ioff = (uint32_t)ioff, .nids = (uint32_t)nids};
    w->cache_n++;
}

omnic_status omnic__bpe_tokenize(const omnic__bpe *m, const char *w, size_t n, omnic__bpe_work *wk,
                                 omnic__ivec *out, omnic_err *err)
{
    int32_t id;
    if (m->ignore_merges && omnic__strmap_get(&m->vocab, w, n, &id)) return omnic__ivec_push(out, id, err);
    bool cacheable = n <= CACHE_MAX_WORD;
    uint64_t h = 0;
    if (cacheable) {
        if (!wk->cache) {
            wk->cache = omnic_alloc_array(OMNIC__BPE_CACHE_SLOTS, sizeof *wk->cache);
            if (!wk->cache) cacheable = false;
            wk->cache_owner = m;
        }
        if (cacheable && wk->cache_owner != m) cache_clear(wk, m);
    }
    if (cacheable) {
        h = omnic__hash_bytes(w, n);
        omnic_status st = OMNIC_OK;
        if (cache_get(wk, w, n, h, out, err, &st)) return st;
    }
    /* n bytes give at most n symbols, or 4n with byte fallback of decorated symbols */
    size_t cap = n + 2;
    if (m->byte_fallback && !omnic_size_mul(&cap, n + m->prefix_len + m->suffix_len + 2, 4))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: word of %zu bytes is too long", n);
    OMNIC_TRY(work_reserve(wk, cap, err));
    size_t ns = 0;
    OMNIC_TRY(initial_symbols(m, w, n, wk, &ns, err));
    if (ns >= 2) {
        if (ns <= SCAN_MAX_SYMBOLS)
            merge_scan(m, wk, ns);
        else
            OMNIC_TRY(merge_heap(m, wk, ns, err));
    }
    size_t start = out->n;
    OMNIC_TRY(omnic__ivec_reserve(out, ns, err));
    if (ns <= SCAN_MAX_SYMBOLS && ns >= 2) {
        for (int32_t i = 0; i >= 0; i = wk->next[i])
            out->v[out->n++] = wk->sym_id[i];
    } else {
        for (size_t i = 0; i < ns; i++)
            if (wk->sym_id[i] >= 0) out->v[out->n++] = wk->sym_id[i];
    }
    if (cacheable) cache_put(wk, w, n, h, out->n > start ? out->v + start : NULL, out->n - start);
    return OMNIC_OK;
}
