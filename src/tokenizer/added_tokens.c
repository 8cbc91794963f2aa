/* Added tokens: Hugging Face's id assignment, the special set, and trie-based splitting. */
#include "tokenizer/added_tokens.h"

#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "io/json.h"
#include "tokenizer/tok_json.h"

typedef struct tnode {
    int32_t child;   /* first child node, -1 none */
    int32_t sibling; /* next sibling, -1 none */
    int32_t tok;     /* id of the token ending here, -1 none */
    unsigned char b;
} tnode;

typedef struct trie {
    int32_t root[256]; /* node for each first byte, -1 none */
    tnode *n;          /* owned, [cap] */
    size_t nn;
    size_t cap;
    bool any;
} trie;

/* One parsed added_tokens entry (content in the vocabulary's pool). */
typedef struct ptok {
    size_t off;
    size_t len;
    uint8_t flags; /* bit 0 special, 1 single_word, 2 lstrip, 3 rstrip, 4 normalized */
} ptok;

enum { F_SPECIAL = 1, F_SINGLE = 2, F_LSTRIP = 4, F_RSTRIP = 8, F_NORM = 16 };

struct omnic__added_vocab {
    omnic__tbuf pool;        /* token contents, each NUL-terminated */
    omnic__strmap map;       /* content -> id (added_tokens_map) */
    omnic__strmap special;   /* special_tokens_set */
    omnic__u64map by_id;     /* id -> index into ent (added_tokens_map_r) */
    omnic__added_token *ent; /* owned, [n] */
    ptok *ent_src;           /* owned, [n]: pool offsets behind ent */
    size_t n;
    trie raw, norm;
};

static void trie_free(trie *t)
{
    omnic_free(t->n);
}

static void trie_init(trie *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < 256; i++)
        t->root[i] = -1;
}

static omnic_status trie_node(trie *t, unsigned char b, int32_t *out, omnic_err *err)
{
    if (t->nn == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        tnode *n = omnic_realloc(t->n, cap * sizeof *n);
        if (!n)
            return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory building the added-token trie");
        t->n = n;
        t->cap = cap;
    }
    t->n[t->nn] = (tnode){.child = -1, .sibling = -1, .tok = -1, .b = b};
    *out = (int32_t)t->nn++;
    return OMNIC_OK;
}

static omnic_status trie_add(trie *t, const char *s, size_t len, int32_t id, omnic_err *err)
{
    if (len == 0) return OMNIC_OK;
    const unsigned char *u = (const unsigned char *)s;
    int32_t node = t->root[u[0]];
    if (node < 0) {
        OMNIC_TRY(trie_node(t, u[0], &node, err));
        t->root[u[0]] = node;
    }
    for (size_t i = 1; i < len; i++) {
        int32_t c = t->n[node].child, last = -1;
        while (c >= 0 && t->n[c].b != u[i]) {
            last = c;
            c = t->n[c].sibling;
        }
        if (c < 0) {
            OMNIC_TRY(trie_node(t, u[i], &c, err));
            if (last < 0)
                t->n[node].child = c;
            else
                t->n[last].sibling = c;
        }
        node = c;
    }
    if (t->n[node].tok < 0) t->n[node].tok = id;
    t->any = true;
    return OMNIC_OK;
}

/* Longest token starting at p: its id (and *end), or -1. */
static int32_t trie_longest(const trie *t, const unsigned char *s, size_t len, size_t p, size_t *end)
{
    int32_t node = t->root[s[p]];
    int32_t best = -1;
    size_t i = p + 1;
    while (node >= 0) {
        if (t->n[node].tok >= 0) {
            best = t->n[node].tok;
            *end = i;
        }
        if (i >= len) break;
        int32_t c = t->n[node].child;
        while (c >= 0 && t->n[c].b != s[i])
            c = t->n[c].sibling;
        node = c;
        i++;
    }
    return best;
}

void omnic__added_vocab_free(omnic__added_vocab *av)
{
    if (!av) return;
    omnic__tbuf_free(&av->pool);
    omnic__strmap_deinit(&av->map);
    omnic__strmap_deinit(&av->special);
    omnic__u64map_deinit(&av->by_id);
    omnic_free(av->ent);
    omnic_free(av->ent_src);
    trie_free(&av->raw);
    trie_free(&av->norm);
    omnic_free(av);
}

static omnic_status parse_entry(const json_t *e, const char *path, omnic__tbuf *pool, ptok *out,
                                omnic_err *err)
{
    if (!json_is_object(e))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s is %s, expected an object", path,
                          omnic__json_type_phrase(e));
    int64_t id;
    OMNIC_TRY(omnic__json_get_i64(e, "id", true, 0, 0, OMNIC_MAX_VOCAB - 1, path, &id, err));
    const char *c;
    size_t cl;
    OMNIC_TRY(omnic__tj_strn(e, "content", true, path, &c, &cl, err));
    bool special, single, l, r, norm;
    OMNIC_TRY(omnic__json_get_bool(e, "special", false, false, path, &special, err));
    OMNIC_TRY(omnic__json_get_bool(e, "single_word", false, false, path, &single, err));
    OMNIC_TRY(omnic__json_get_bool(e, "lstrip", false, false, path, &l, err));
    OMNIC_TRY(omnic__json_get_bool(e, "rstrip", false, false, path, &r, err));
    OMNIC_TRY(omnic__json_get_bool(e, "normalized", false, !special, path, &norm, err));
    out->off = pool->len;
    out->len = cl;
    out->flags = (uint8_t)((special ? F_SPECIAL : 0) | (single ? F_SINGLE : 0) | (l ? F_LSTRIP : 0) |
                           (r ? F_RSTRIP : 0) | (norm ? F_NORM : 0));
    OMNIC_TRY(omnic__tbuf_put(pool, c, cl, err));
    return omnic__tbuf_put(pool, "", 1, err);
}

/* Key of a whole AddedToken (content + flags) for Hugging Face's equality test. */
static omnic_status eq_key(const omnic__tbuf *pool, const ptok *p, omnic__tbuf *key, omnic_err *err)
{
    key->len = 0;
    OMNIC_TRY(omnic__tbuf_put(key, pool->p + p->off, p->len, err));
    return omnic__tbuf_put(key, &p->flags, 1, err);
}

static omnic_status eq_adjust(omnic__strmap *eq, const omnic__tbuf *key, int32_t delta, omnic_err *err)
{
    int32_t c = 0;
    omnic__strmap_get(eq, key->p, key->len, &c);
    return omnic__strmap_put(eq, key->p, key->len, c + delta, NULL, NULL, err);
}

static omnic_status build(omnic__added_vocab *av, const json_t *arr, const char *path,
                          const omnic__strmap *model_vocab, size_t model_size, const omnic__normalizer *norm,
                          omnic__tok_scratch *sc, ptok *pt, size_t cnt, omnic_err *err)
{
    omnic_status st = OMNIC_OK;
    omnic__strmap eq = {0}; /* AddedToken (content+flags) -> number of ids mapped to it */
    size_t *special_list = NULL, *added_list = NULL, ns = 0, na = 0;
    omnic__tbuf key = {0}, pat = {0};
    for (size_t i = 0; i < cnt; i++) {
        char sub[160];
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        st = parse_entry(json_array_get(arr, i), sub, &av->pool, &pt[i], err);
        if (st != OMNIC_OK) goto out;
    }
    special_list = omnic_alloc_array(cnt ? cnt : 1, sizeof *special_list);
    added_list = omnic_alloc_array(cnt ? cnt : 1, sizeof *added_list);
    av->ent = omnic_alloc_array(cnt ? cnt : 1, sizeof *av->ent);
    av->ent_src = omnic_alloc_array(cnt ? cnt : 1, sizeof *av->ent_src);
    if (!special_list || !added_list || !av->ent || !av->ent_src) {
        st = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory for %zu added tokens", path, cnt);
        goto out;
    }
    /* 1. the special set, in order of first appearance */
    for (size_t i = 0; i < cnt; i++) {
        const char *c = av->pool.p + pt[i].off;
        if (!(pt[i].flags & F_SPECIAL) || !pt[i].len) continue;
        bool existed;
        st = omnic__strmap_put(&av->special, c, pt[i].len, 1, &existed, NULL, err);
        if (st != OMNIC_OK) goto out;
        if (!existed) special_list[ns++] = i;
    }
    /* 2. ids: the existing added id, else the model's id, else the next free id */
    int64_t max_id = -1;
    for (size_t i = 0; i < cnt; i++) {
        const char *c = av->pool.p + pt[i].off;
        if (!pt[i].len) continue;
        st = eq_key(&av->pool, &pt[i], &key, err);
        if (st != OMNIC_OK) goto out;
        int32_t same = 0;
        if (omnic__strmap_get(&eq, key.p, key.len, &same) && same > 0) continue;
        int32_t id;
        if (!omnic__strmap_get(&av->map, c, pt[i].len, &id) &&
            !omnic__strmap_get(model_vocab, c, pt[i].len, &id)) {
            int64_t next =
                max_id < 0
                    ? (int64_t)model_size
                    : (max_id >= (int64_t)model_size || model_size == 0 ? max_id + 1 : (int64_t)model_size);
            if (next >= OMNIC_MAX_VOCAB) {
                st = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s[%zu]: assigned id %lld is over the %d limit",
                                path, i, (long long)next, OMNIC_MAX_VOCAB);
                goto out;
            }
            id = (int32_t)next;
        }
        st = omnic__strmap_put(&av->map, c, pt[i].len, id, NULL, NULL, err);
        if (st != OMNIC_OK) goto out;
        if (id > max_id) max_id = id;
        uint64_t idx;
        if (omnic__u64map_get(&av->by_id, (uint64_t)id, &idx)) {
            st = eq_key(&av->pool, &av->ent_src[idx], &key, err);
            if (st == OMNIC_OK) st = eq_adjust(&eq, &key, -1, err);
            if (st != OMNIC_OK) goto out;
        } else {
            idx = av->n++;
            st = omnic__u64map_put(&av->by_id, (uint64_t)id, idx, err);
            if (st != OMNIC_OK) goto out;
        }
        av->ent_src[idx] = pt[i];
        av->ent[idx].id = id;
        st = eq_key(&av->pool, &pt[i], &key, err);
        if (st == OMNIC_OK) st = eq_adjust(&eq, &key, 1, err);
        if (st != OMNIC_OK) goto out;
        if (!omnic__added_vocab_is_special(av, c, pt[i].len)) added_list[na++] = i;
    }
    for (size_t k = 0; k < av->n; k++) {
        const ptok *p = &av->ent_src[k];
        av->ent[k].content = av->pool.p + p->off;
        av->ent[k].len = p->len;
        av->ent[k].special = p->flags & F_SPECIAL;
        av->ent[k].single_word = p->flags & F_SINGLE;
        av->ent[k].lstrip = p->flags & F_LSTRIP;
        av->ent[k].rstrip = p->flags & F_RSTRIP;
        av->ent[k].normalized = p->flags & F_NORM;
    }
    /* 3. the tries: specials then the others, split by their `normalized` flag */
    for (size_t k = 0; k < ns + na; k++) {
        const ptok *p = &pt[k < ns ? special_list[k] : added_list[k - ns]];
        const char *c = av->pool.p + p->off;
        int32_t id = -1;
        omnic__strmap_get(&av->map, c, p->len, &id);
        if (!(p->flags & F_NORM)) {
            st = trie_add(&av->raw, c, p->len, id, err);
        } else {
            pat.len = 0;
            st = norm ? omnic__normalizer_run(norm, c, p->len, &pat, NULL, sc, err)
                      : omnic__tbuf_put(&pat, c, p->len, err);
            if (st == OMNIC_OK) st = trie_add(&av->norm, pat.p, pat.len, id, err);
        }
        if (st != OMNIC_OK) goto out;
    }
out:
    omnic__strmap_deinit(&eq);
    omnic_free(special_list);
    omnic_free(added_list);
    omnic__tbuf_free(&key);
    omnic__tbuf_free(&pat);
    return st;
}

omnic_status omnic__added_vocab_load(const json_t *arr, const char *path, const omnic__strmap *model_vocab,
                                     size_t model_size, const omnic__normalizer *norm, omnic__tok_scratch *sc,
                                     omnic__added_vocab **out, omnic_err *err)
{
    size_t cnt = arr ? json_array_size(arr) : 0;
    if (cnt > OMNIC_MAX_ADDED_TOKENS)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: %zu entries, over the %d limit", path, cnt,
                          OMNIC_MAX_ADDED_TOKENS);
    omnic__added_vocab *av = omnic_alloc_array(1, sizeof *av);
    ptok *pt = omnic_alloc_array(cnt ? cnt : 1, sizeof *pt);
    if (!av || !pt) {
        omnic_free(av);
        omnic_free(pt);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", path);
    }
    trie_init(&av->raw);
    trie_init(&av->norm);
    omnic_status st = build(av, arr, path, model_vocab, model_size, norm, sc, pt, cnt, err);
    omnic_free(pt);
    if (st != OMNIC_OK) {
        omnic__added_vocab_free(av);
        return st;
    }
    *out = av;
    return OMNIC_OK;
}

size_t omnic__added_vocab_count(const omnic__added_vocab *av)
{
    return av->n;
}

const omnic__added_token *omnic__added_vocab_at(const omnic__added_vocab *av, size_t i)
{
    return &av->ent[i];
}

bool omnic__added_vocab_id(const omnic__added_vocab *av, const char *s, size_t n, int32_t *id)
{
    return omnic__strmap_get(&av->map, s, n, id);
}

bool omnic__added_vocab_is_special(const omnic__added_vocab *av, const char *s, size_t n)
{
    int32_t v;
    return omnic__strmap_get(&av->special, s, n, &v);
}

bool omnic__added_vocab_has(const omnic__added_vocab *av, bool normalized)
{
    return normalized ? av->norm.any : av->raw.any;
}

/* ---- splitting ---- */

static bool ends_with_word(const char *t, size_t end)
{
    if (end == 0) return false;
    size_t k = end - 1;
    while (k > 0 && ((unsigned char)t[k] & 0xC0) == 0x80)
        k--;
    size_t cl;
    return omnic__uc_is_word(omnic__utf8_decode(t + k, &cl));
}

static bool starts_with_word(const char *t, size_t start, size_t len)
{
    if (start >= len) return false;
    size_t cl;
    return omnic__uc_is_word(omnic__utf8_decode(t + start, &cl));
}

omnic_status omnic__added_vocab_split(const omnic__added_vocab *av, bool normalized, const char *t,
                                      size_t len, size_t base, uint32_t flags, omnic__tsplits *dst,
                                      omnic_err *err)
{
    const trie *tr = normalized ? &av->norm : &av->raw;
    const unsigned char *u = (const unsigned char *)t;
    size_t start_offset = 0, pos = 0;
    if (tr->any) {
        while (pos < len) {
            size_t p = pos, mend = 0;
            int32_t id = -1;
            for (; p < len; p++) {
                if (tr->root[u[p]] < 0) continue;
                id = trie_longest(tr, u, len, p, &mend);
                if (id >= 0) break;
            }
            if (id < 0) break;
            size_t mstart = p;
            pos = mend;
            uint64_t idx;
            if (!omnic__u64map_get(&av->by_id, (uint64_t)id, &idx)) continue;
            const omnic__added_token *tok = &av->ent[idx];
            if (tok->single_word) {
                bool start_space = mstart == 0 || !ends_with_word(t, mstart);
                bool stop_space = mend == len || !starts_with_word(t, mend, len);
                if (!start_space || !stop_space) continue;
            }
            size_t start = mstart, stop = mend;
            if (tok->lstrip) {
                size_t ns = start;
                while (ns > 0) {
                    size_t k = ns - 1;
                    while (k > 0 && (u[k] & 0xC0) == 0x80)
                        k--;
                    size_t cl;
                    if (!omnic__uc_is_whitespace(omnic__utf8_decode(t + k, &cl))) break;
                    ns = k;
                }
                start = ns > start_offset ? ns : start_offset;
            }
            if (tok->rstrip)
                while (stop < len) {
                    size_t cl;
                    if (!omnic__uc_is_whitespace(omnic__utf8_decode(t + stop, &cl))) break;
                    stop += cl;
                }
            if (start_offset < start)
                OMNIC_TRY(omnic__tsplits_push(dst, base + start_offset, start - start_offset, -1,
                                              start_offset == 0 ? flags : 0, err));
            OMNIC_TRY(omnic__tsplits_push(dst, base + start, stop - start, id, 0, err));
            start_offset = stop;
        }
    }
    if (start_offset < len)
        OMNIC_TRY(omnic__tsplits_push(dst, base + start_offset, len - start_offset, -1,
                                      start_offset == 0 ? flags : 0, err));
    return OMNIC_OK;
}
