/* tokenizer.json: loading the components, the encode pipeline, decoding and token lookups. */
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "io/file.h"
#include "io/json.h"
#include "tokenizer/tokenizer_impl.h"

/* ---- scratch pool ---- */

omnic_status omnic__tok_scratch_get(const omnic__tokenizer *t, omnic__tok_scratch **out, omnic_err *err)
{
    omnic__tok_pool *p = t->spool;
    pthread_mutex_lock(&p->mu);
    omnic__tok_scratch *s = p->n_idle ? p->idle[--p->n_idle] : NULL;
    pthread_mutex_unlock(&p->mu);
    if (!s) {
        s = omnic_malloc(sizeof *s);
        if (!s) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory for working state");
        omnic_status st = omnic__tok_scratch_init(s, err);
        if (st != OMNIC_OK) {
            omnic_free(s);
            return st;
        }
    }
    *out = s;
    return OMNIC_OK;
}

void omnic__tok_scratch_put(const omnic__tokenizer *t, omnic__tok_scratch *s)
{
    if (!s) return;
    omnic__tok_scratch_trim(s, (size_t)4 << 20); /* do not keep a huge call's buffers around */
    omnic__tok_pool *p = t->spool;
    pthread_mutex_lock(&p->mu);
    if (p->n_idle < OMNIC__TOK_POOL) {
        p->idle[p->n_idle++] = s;
        s = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    if (s) {
        omnic__tok_scratch_deinit(s);
        omnic_free(s);
    }
}

/* ---- loading ---- */

void omnic__tokenizer_free(omnic__tokenizer *t)
{
    if (!t) return;
    omnic__bpe_free(t->bpe);
    omnic__normalizer_free(t->norm);
    omnic__pretokenizer_free(t->pre);
    omnic__postprocessor_free(t->post);
    omnic__decoder_free(t->dec);
    omnic__added_vocab_free(t->added);
    omnic_free(t->ids);
    omnic__tbuf_free(&t->pool);
    omnic__tbuf_free(&t->special_names);
    if (t->spool) {
        for (int i = 0; i < t->spool->n_idle; i++) {
            omnic__tok_scratch_deinit(t->spool->idle[i]);
            omnic_free(t->spool->idle[i]);
        }
        pthread_mutex_destroy(&t->spool->mu);
        omnic_free(t->spool);
    }
    omnic_free(t);
}

/* An optional component: absent or null gives *present = false. */
static omnic_status component(const json_t *root, const char *key, const char *what, const json_t **out,
                              omnic_err *err)
{
    *out = NULL;
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) return OMNIC_OK;
    if (!json_is_object(v))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field '%s' is %s, expected an object or null", what, key,
                          omnic__json_type_phrase(v));
    *out = v;
    return OMNIC_OK;
}

static omnic_status load_model(omnic__tokenizer *t, const json_t *root, const char *what, omnic_err *err)
{
    char path[512];
    snprintf(path, sizeof path, "%s: model", what);
    const json_t *model;
    OMNIC_TRY(omnic__json_get_obj(root, "model", true, what, &model, err));
    const char *type = NULL;
    OMNIC_TRY(omnic__json_get_str(model, "type", false, NULL, path, &type, err));
    if (!type) {
        /* Hugging Face accepts an untagged model and tries each kind: a BPE has vocab and merges */
        if (!json_object_get(model, "merges"))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: missing field 'type'", path);
    } else if (strcmp(type, "BPE") != 0) {
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: model type '%s' is not supported (only BPE is)",
                          path, type);
    }
    return omnic__bpe_load(model, path, &t->bpe, err);
}

static omnic_status put_pool(omnic__tbuf *pool, const char *s, size_t n, uint64_t *off, omnic_err *err)
{
    *off = pool->len;
    OMNIC_TRY(omnic__tbuf_put(pool, s, n, err));
    return omnic__tbuf_put(pool, "", 1, err);
}

/* id -> token string: the added token's content, else the model's token. */
static omnic_status build_ids(omnic__tokenizer *t, const char *what, omnic_err *err)
{
    const omnic__strmap *v = omnic__bpe_vocab(t->bpe);
    int64_t max = -1;
    for (size_t i = 0; v->tab && i <= v->mask; i++)
        if (v->tab[i].len != UINT32_MAX && v->tab[i].val > max) max = v->tab[i].val;
    size_t na = omnic__added_vocab_count(t->added);
    for (size_t i = 0; i < na; i++)
        if (omnic__added_vocab_at(t->added, i)->id > max) max = omnic__added_vocab_at(t->added, i)->id;
    t->n_ids = (size_t)(max + 1);
    t->ids = omnic_alloc_array(t->n_ids ? t->n_ids : 1, sizeof *t->ids);
    if (!t->ids) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory for %zu token ids", what, t->n_ids);
    for (size_t i = 0; v->tab && i <= v->mask; i++) {
        const omnic__strmap_ent *e = &v->tab[i];
        if (e->len == UINT32_MAX) continue;
        omnic__tokid *d = &t->ids[e->val];
        OMNIC_TRY(put_pool(&t->pool, omnic__strmap_key(v, e), e->len, &d->off, err));
        d->len = e->len;
        d->flags = OMNIC__TOKID_PRESENT;
    }
    for (size_t i = 0; i < na; i++) {
        const omnic__added_token *a = omnic__added_vocab_at(t->added, i);
        omnic__tokid *d = &t->ids[a->id];
        OMNIC_TRY(put_pool(&t->pool, a->content, a->len, &d->off, err));
        d->len = (uint32_t)a->len;
        d->flags = OMNIC__TOKID_PRESENT;
    }
    for (size_t id = 0; id < t->n_ids; id++) {
        omnic__tokid *d = &t->ids[id];
        if (!(d->flags & OMNIC__TOKID_PRESENT)) continue;
        const char *s = t->pool.p + d->off;
        unsigned char b;
        if (omnic__added_vocab_is_special(t->added, s, d->len)) d->flags |= OMNIC__TOKID_SPECIAL;
        if (omnic__decoder_byte_token(s, d->len, &b)) d->flags |= OMNIC__TOKID_BYTE;
    }
    return OMNIC_OK;
}

/* bos_token and friends: a string, {"content": "..."} or null. */
static omnic_status config_token(const json_t *cfg, const char *key, const char *what, omnic__tbuf *names,
                                 uint64_t *off, bool *have, omnic_err *err)
{
    *have = false;
    const json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) return OMNIC_OK;
    if (json_is_object(v)) v = json_object_get(v, "content");
    if (!json_is_string(v))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: field '%s' is %s, expected a string or {\"content\": ...}", what, key,
                          omnic__json_type_phrase(v));
    *have = true;
    return put_pool(names, json_string_value(v), json_string_length(v), off, err);
}

static omnic_status load_config(omnic__tokenizer *t, const char *buf, size_t len, const char *what,
                                omnic_err *err)
{
    omnic__tokenizer_specials *sp = &t->specials;
    sp->bos_id = sp->eos_id = sp->pad_id = sp->unk_id = -1;
    if (!buf) return OMNIC_OK;
    json_t *cfg = NULL;
    OMNIC_TRY(omnic__json_parse(buf, len, what, &cfg, err));
    omnic_status st = OMNIC_OK;
    static const char *keys[4] = {"bos_token", "eos_token", "pad_token", "unk_token"};
    uint64_t off[4];
    bool have[4];
    for (int i = 0; i < 4 && st == OMNIC_OK; i++)
        st = config_token(cfg, keys[i], what, &t->special_names, &off[i], &have[i], err);
    if (st == OMNIC_OK)
        st = omnic__json_get_bool(cfg, "add_bos_token", false, false, what, &sp->add_bos, err);
    if (st == OMNIC_OK)
        st = omnic__json_get_bool(cfg, "add_eos_token", false, false, what, &sp->add_eos, err);
    json_decref(cfg);
    if (st != OMNIC_OK) return st;
    const char **names[4] = {&sp->bos_token, &sp->eos_token, &sp->pad_token, &sp->unk_token};
    int32_t *ids[4] = {&sp->bos_id, &sp->eos_id, &sp->pad_id, &sp->unk_id};
    for (int i = 0; i < 4; i++) {
        if (!have[i]) continue;
        *names[i] = t->special_names.p + off[i];
        if (!omnic__tokenizer_token_to_id(t, *names[i], strlen(*names[i]), ids[i])) *ids[i] = -1;
    }
    sp->have_config = true;
    return OMNIC_OK;
}

static omnic_status build(omnic__tokenizer *t, const json_t *root, const char *what, omnic_err *err)
{
    char path[512];
    const json_t *c;
    omnic_status st;
    OMNIC_TRY(load_model(t, root, what, err));
    OMNIC_TRY(component(root, "normalizer", what, &c, err));
    snprintf(path, sizeof path, "%s: normalizer", what);
    if (c) OMNIC_TRY(omnic__normalizer_load(c, path, &t->norm, err));
    OMNIC_TRY(component(root, "pre_tokenizer", what, &c, err));
    snprintf(path, sizeof path, "%s: pre_tokenizer", what);
    if (c) OMNIC_TRY(omnic__pretokenizer_load(c, path, &t->pre, err));
    OMNIC_TRY(component(root, "post_processor", what, &c, err));
    snprintf(path, sizeof path, "%s: post_processor", what);
    if (c) OMNIC_TRY(omnic__postprocessor_load(c, path, &t->post, err));
    OMNIC_TRY(component(root, "decoder", what, &c, err));
    snprintf(path, sizeof path, "%s: decoder", what);
    if (c) OMNIC_TRY(omnic__decoder_load(c, path, &t->dec, err));
    t->dtraits = omnic__decoder_get_traits(t->dec);

    const json_t *added = NULL;
    OMNIC_TRY(omnic__json_get_array(root, "added_tokens", false, what, &added, err));
    snprintf(path, sizeof path, "%s: added_tokens", what);
    omnic__tok_scratch *sc;
    OMNIC_TRY(omnic__tok_scratch_get(t, &sc, err));
    const omnic__strmap *vocab = omnic__bpe_vocab(t->bpe);
    st = omnic__added_vocab_load(added, path, vocab, vocab->n, t->norm, sc, &t->added, err);
    omnic__tok_scratch_put(t, sc);
    OMNIC_TRY(st);
    return build_ids(t, what, err);
}

omnic_status omnic__tokenizer_load_buffer(const char *json, size_t len, const char *config, size_t config_len,
                                          const char *what, omnic__tokenizer **out, omnic_err *err)
{
    if (!what) what = "tokenizer.json";
    omnic__tokenizer *t = omnic_alloc_array(1, sizeof *t);
    omnic__tok_pool *pool = omnic_alloc_array(1, sizeof *pool);
    if (!t || !pool) {
        omnic_free(t);
        omnic_free(pool);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", what);
    }
    pthread_mutex_init(&pool->mu, NULL);
    t->spool = pool;
    json_t *root = NULL;
    omnic_status st = omnic__json_parse(json, len, what, &root, err);
    if (st == OMNIC_OK) st = build(t, root, what, err);
    json_decref(root);
    if (st == OMNIC_OK) {
        char cwhat[512];
        snprintf(cwhat, sizeof cwhat, "tokenizer_config.json next to %s", what);
        st = load_config(t, config, config_len, cwhat, err);
    }
    if (st != OMNIC_OK) {
        omnic__tokenizer_free(t);
        return st;
    }
    *out = t;
    return OMNIC_OK;
}

omnic_status omnic__tokenizer_load(const char *path, omnic__tokenizer **out, omnic_err *err)
{
    bool exists = false, is_dir = false;
    OMNIC_TRY(omnic__path_stat(path, &exists, NULL, &is_dir, NULL, err));
    if (!exists) return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s: no such file or directory", path);
    char *file = NULL, *dir = NULL, *cfg_path = NULL, *buf = NULL, *cfg = NULL;
    size_t len = 0, cfg_len = 0;
    omnic_status st;
    if (is_dir) {
        file = omnic__path_join(path, "tokenizer.json");
        dir = omnic_strdup(path);
    } else {
        file = omnic_strdup(path);
        const char *slash = strrchr(path, '/');
        dir = slash ? omnic_strdup(path) : omnic_strdup(".");
        if (dir && slash) dir[slash - path == 0 ? 1 : slash - path] = 0;
    }
    cfg_path = dir ? omnic__path_join(dir, "tokenizer_config.json") : NULL;
    if (!file || !dir || !cfg_path) {
        st = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    st = omnic__read_file(file, OMNIC_MAX_TOKENIZER_BYTES, &buf, &len, err);
    if (st != OMNIC_OK) goto out;
    bool cfg_exists = false;
    st = omnic__path_stat(cfg_path, &cfg_exists, NULL, NULL, NULL, err);
    if (st != OMNIC_OK) goto out;
    if (cfg_exists) {
        st = omnic__read_file(cfg_path, OMNIC_MAX_CONFIG_BYTES, &cfg, &cfg_len, err);
        if (st != OMNIC_OK) goto out;
    }
    st = omnic__tokenizer_load_buffer(buf, len, cfg, cfg_len, file, out, err);
out:
    omnic_free(file);
    omnic_free(dir);
    omnic_free(cfg_path);
    omnic_free(buf);
    omnic_free(cfg);
    return st;
}

/* ---- lookups ---- */

size_t omnic__tokenizer_vocab_size(const omnic__tokenizer *t)
{
    return t->n_ids;
}

bool omnic__tokenizer_token_to_id(const omnic__tokenizer *t, const char *s, size_t n, int32_t *id)
{
    if (omnic__added_vocab_id(t->added, s, n, id)) return true;
    return omnic__strmap_get(omnic__bpe_vocab(t->bpe), s, n, id);
}

const char *omnic__tokenizer_id_to_token(const omnic__tokenizer *t, int32_t id, size_t *len)
{
    if (id < 0 || (size_t)id >= t->n_ids || !(t->ids[id].flags & OMNIC__TOKID_PRESENT)) return NULL;
    if (len) *len = t->ids[id].len;
    return t->pool.p + t->ids[id].off;
}

bool omnic__tokenizer_is_special(const omnic__tokenizer *t, int32_t id)
{
    return id >= 0 && (size_t)id < t->n_ids && (t->ids[id].flags & OMNIC__TOKID_SPECIAL);
}

const omnic__tokenizer_specials *omnic__tokenizer_get_specials(const omnic__tokenizer *t)
{
    return &t->specials;
}

/* ---- encoding ---- */

static omnic_status encode_with(const omnic__tokenizer *t, omnic__tok_scratch *sc, const char *text,
                                size_t len, bool add_special, omnic__ivec *ids, omnic_err *err)
{
    sc->text.len = 0;
    sc->sp[0].n = sc->sp[1].n = 0;
    OMNIC_TRY(omnic__tbuf_put(&sc->text, text, len, err));
    /* 1. added tokens matched on the raw input */
    OMNIC_TRY(omnic__added_vocab_split(t->added, false, sc->text.p, len, 0, OMNIC__SPLIT_AT_START, &sc->sp[1],
                                       err));
    /* 2. normalize each remaining piece, then match the normalized added tokens */
    bool have_norm_tokens = omnic__added_vocab_has(t->added, true);
    for (size_t i = 0; i < sc->sp[1].n; i++) {
        omnic__tsplit sp = sc->sp[1].v[i];
        if (sp.id >= 0) {
            OMNIC_TRY(omnic__tsplits_push(&sc->sp[0], sp.off, sp.len, sp.id, sp.flags, err));
            continue;
        }
        size_t off = sp.off, n = sp.len;
        if (t->norm) {
            bool moved = false;
            sc->piece.len = 0;
            OMNIC_TRY(
                omnic__normalizer_run(t->norm, sc->text.p + sp.off, sp.len, &sc->piece, &moved, sc, err));
            if (moved) sp.flags &= ~OMNIC__SPLIT_AT_START;
            off = sc->text.len;
            n = sc->piece.len;
            OMNIC_TRY(omnic__tbuf_put(&sc->text, sc->piece.p ? sc->piece.p : "", n, err));
        }
        if (have_norm_tokens)
            OMNIC_TRY(omnic__added_vocab_split(t->added, true, sc->text.p + off, n, off, sp.flags, &sc->sp[0],
                                               err));
        else if (n)
            OMNIC_TRY(omnic__tsplits_push(&sc->sp[0], off, n, -1, sp.flags, err));
    }
    /* 3. pre-tokenize */
    int cur = 0;
    if (t->pre) OMNIC_TRY(omnic__pretokenizer_run(t->pre, sc, &cur, err));
    /* 4. the model */
    const omnic__tsplits *words = &sc->sp[cur];
    for (size_t i = 0; i < words->n; i++) {
        const omnic__tsplit *w = &words->v[i];
        if (w->id >= 0)
            OMNIC_TRY(omnic__ivec_push(ids, w->id, err));
        else if (w->len)
            OMNIC_TRY(omnic__bpe_tokenize(t->bpe, sc->text.p + w->off, w->len, &sc->bpe, ids, err));
    }
    /* 5. special tokens */
    if (add_special && t->post) OMNIC_TRY(omnic__postprocessor_apply(t->post, ids, err));
    return OMNIC_OK;
}

omnic_status omnic__tokenizer_encode(const omnic__tokenizer *t, const char *text, size_t len,
                                     bool add_special, int32_t **ids, size_t *n, omnic_err *err)
{
    if (len > OMNIC_MAX_ENCODE_BYTES)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: text of %zu bytes is over the %zu byte limit",
                          len, (size_t)OMNIC_MAX_ENCODE_BYTES);
    if (!text && len) return OMNIC_FAIL(err, OMNIC_E_INVALID, "tokenizer: text is NULL with length %zu", len);
    if (!text) text = "";
    size_t bad = omnic__utf8_validate(text, len);
    if (bad != len)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "tokenizer: text is not valid UTF-8: byte 0x%02X at offset %zu",
                          (unsigned)(unsigned char)text[bad], bad);
    omnic__tok_scratch *sc;
    OMNIC_TRY(omnic__tok_scratch_get(t, &sc, err));
    omnic__ivec out = {0};
    omnic_status st = encode_with(t, sc, text, len, add_special, &out, err);
    omnic__tok_scratch_put(t, sc);
    if (st == OMNIC_OK && !out.v) st = omnic__ivec_reserve(&out, 1, err);
    if (st != OMNIC_OK) {
        omnic__ivec_free(&out);
        return st;
    }
    *ids = out.v;
    *n = out.n;
    return OMNIC_OK;
}

/* ---- decoding ---- */

omnic_status omnic__tokenizer_decode_into(const omnic__tokenizer *t, const int32_t *ids, size_t n,
                                          bool skip_special, omnic__tbuf *out, omnic__tok_scratch *sc,
                                          omnic_err *err)
{
    sc->text.len = 0;
    sc->sp[0].n = sc->sp[1].n = 0;
    for (size_t i = 0; i < n; i++) {
        const omnic__tokid *d = &t->ids[ids[i]];
        if (skip_special && (d->flags & OMNIC__TOKID_SPECIAL)) continue;
        size_t off = sc->text.len;
        OMNIC_TRY(omnic__tbuf_put(&sc->text, t->pool.p + d->off, d->len, err));
        OMNIC_TRY(omnic__tsplits_push(&sc->sp[0], off, d->len, -1, 0, err));
    }
    return omnic__decoder_run(t->dec, sc, 0, out, err);
}

omnic_status omnic__tokenizer_decode(const omnic__tokenizer *t, const int32_t *ids, size_t n,
                                     bool skip_special, char **out, size_t *len, omnic_err *err)
{
    if (n > OMNIC_MAX_DECODE_IDS)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: %zu ids to decode, over the %zu limit", n,
                          (size_t)OMNIC_MAX_DECODE_IDS);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= t->n_ids || !(t->ids[ids[i]].flags & OMNIC__TOKID_PRESENT))
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "tokenizer: token id %lld (at index %zu) is not in the vocabulary "
                              "(vocab size %zu)",
                              (long long)ids[i], i, t->n_ids);
    omnic__tok_scratch *sc;
    OMNIC_TRY(omnic__tok_scratch_get(t, &sc, err));
    omnic__tbuf o = {0};
    omnic_status st = omnic__tokenizer_decode_into(t, ids, n, skip_special, &o, sc, err);
    omnic__tok_scratch_put(t, sc);
    if (st == OMNIC_OK) st = omnic__tbuf_reserve(&o, 0, err);
    if (st != OMNIC_OK) {
        omnic__tbuf_free(&o);
        return st;
    }
    o.p[o.len] = 0;
    *out = o.p;
    *len = o.len;
    return OMNIC_OK;
}
