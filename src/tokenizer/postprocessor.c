/* Post-processors: each step is a template of special-id runs around the sequence. */
#include "tokenizer/postprocessor.h"

#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "io/json.h"
#include "tokenizer/tok_json.h"

typedef struct piece {
    bool seq;     /* the sequence itself ($A) */
    int32_t *ids; /* owned special ids, [n] */
    size_t n;
} piece;

typedef struct pstep {
    piece *pieces; /* owned, [n] */
    size_t n;
} pstep;

struct omnic__postprocessor {
    pstep *steps; /* owned, [n] */
    size_t n;
    size_t cap;
};

void omnic__postprocessor_free(omnic__postprocessor *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) {
        for (size_t k = 0; k < p->steps[i].n; k++)
            omnic_free(p->steps[i].pieces[k].ids);
        omnic_free(p->steps[i].pieces);
    }
    omnic_free(p->steps);
    omnic_free(p);
}

static omnic_status push_step(omnic__postprocessor *p, size_t npieces, pstep **out, omnic_err *err)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 4;
        pstep *s = omnic_realloc(p->steps, cap * sizeof *s);
        if (!s) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory loading a post-processor");
        p->steps = s;
        p->cap = cap;
    }
    pstep *s = &p->steps[p->n];
    s->pieces = omnic_alloc_array(npieces ? npieces : 1, sizeof *s->pieces);
    if (!s->pieces)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory loading a post-processor");
    s->n = npieces;
    p->n++;
    *out = s;
    return OMNIC_OK;
}

static omnic_status set_ids(piece *pc, const int32_t *ids, size_t n, omnic_err *err)
{
    pc->ids = omnic_alloc_array(n ? n : 1, sizeof *pc->ids);
    if (!pc->ids) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory loading a post-processor");
    if (n) memcpy(pc->ids, ids, n * sizeof *ids);
    pc->n = n;
    return OMNIC_OK;
}

/* ["[CLS]", 101] */
static omnic_status token_pair(const json_t *j, const char *key, const char *path, int32_t *id,
                               omnic_err *err)
{
    const json_t *a = json_object_get(j, key);
    if (!json_is_array(a) || json_array_size(a) != 2 || !json_is_string(json_array_get(a, 0)) ||
        !json_is_integer(json_array_get(a, 1)))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field '%s' must be a [token, id] pair, got %s", path,
                          key, a ? omnic__json_type_phrase(a) : "nothing");
    json_int_t v = json_integer_value(json_array_get(a, 1));
    if (v < 0 || v >= OMNIC_MAX_VOCAB)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s.%s: id %lld is outside 0..%d", path, key, (long long)v,
                          OMNIC_MAX_VOCAB - 1);
    *id = (int32_t)v;
    return OMNIC_OK;
}

/* The ids of special token `name` from the template's special_tokens map. */
static omnic_status special_ids(const json_t *specials, const char *name, const char *path, piece *pc,
                                omnic_err *err)
{
    const json_t *sp = specials ? json_object_get(specials, name) : NULL;
    if (!sp)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: the template uses special token '%s' that special_tokens lacks", path, name);
    char where[256];
    snprintf(where, sizeof where, "%s.special_tokens[\"%s\"]", path, name);
    const json_t *ids;
    OMNIC_TRY(omnic__json_get_array(sp, "ids", true, where, &ids, err));
    size_t n = json_array_size(ids);
    int32_t buf[64];
    if (n > 64) return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s.ids: %zu ids, over the 64 supported", where, n);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(ids, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= OMNIC_MAX_VOCAB)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s.ids[%zu] is %s, expected an id in 0..%d", where, i,
                              omnic__json_type_phrase(v), OMNIC_MAX_VOCAB - 1);
        buf[i] = (int32_t)json_integer_value(v);
    }
    return set_ids(pc, buf, n, err);
}

/* A template piece: {"SpecialToken": {"id": ..}}, {"Sequence": {"id": "A"}} or a string "$A" / "[CLS]". */
static omnic_status load_piece(const json_t *e, const json_t *specials, const char *path, piece *pc,
                               omnic_err *err)
{
    char name[256];
    if (json_is_string(e)) {
        const char *s = json_string_value(e);
        size_t n = strcspn(s, ":");
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, s, n);
        name[n] = 0;
        if (name[0] == '$') {
            if (!strcmp(name, "$") || !strcmp(name, "$A") || !strcmp(name, "$0")) {
                pc->seq = true;
                return OMNIC_OK;
            }
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: piece '%s' is not the first sequence ($A)", path, s);
        }
        return special_ids(specials, name, path, pc, err);
    }
    const json_t *seq = json_object_get(e, "Sequence"), *st = json_object_get(e, "SpecialToken");
    if (json_is_object(seq)) {
        const char *id;
        OMNIC_TRY(omnic__json_get_str(seq, "id", true, NULL, path, &id, err));
        if (strcmp(id, "A") != 0)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "%s: the single-sequence template uses sequence '%s', expected A", path, id);
        pc->seq = true;
        return OMNIC_OK;
    }
    if (json_is_object(st)) {
        const char *id;
        OMNIC_TRY(omnic__json_get_str(st, "id", true, NULL, path, &id, err));
        return special_ids(specials, id, path, pc, err);
    }
    return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s is %s, expected {\"SpecialToken\": ..} or {\"Sequence\": ..}",
                      path, omnic__json_type_phrase(e));
}

static omnic_status load_template(omnic__postprocessor *p, const json_t *j, const char *path, omnic_err *err)
{
    const json_t *single = json_object_get(j, "single");
    const json_t *specials = NULL;
    OMNIC_TRY(omnic__json_get_obj(j, "special_tokens", false, path, &specials, err));
    if (json_is_string(single)) { /* "[CLS] $A [SEP]" */
        const char *s = json_string_value(single);
        size_t count = 0;
        for (const char *q = s; *q;) {
            q += strspn(q, " ");
            if (!*q) break;
            count++;
            q += strcspn(q, " ");
        }
        pstep *stp;
        OMNIC_TRY(push_step(p, count, &stp, err));
        size_t k = 0;
        for (const char *q = s; *q && k < count;) {
            q += strspn(q, " ");
            size_t n = strcspn(q, " ");
            char word[256];
            if (n >= sizeof word) n = sizeof word - 1;
            memcpy(word, q, n);
            word[n] = 0;
            json_t *w = json_string(word);
            if (!w) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", path);
            omnic_status st = load_piece(w, specials, path, &stp->pieces[k++], err);
            json_decref(w);
            OMNIC_TRY(st);
            q += n;
        }
        return OMNIC_OK;
    }
    if (!json_is_array(single))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field 'single' is %s, expected an array of pieces", path,
                          single ? omnic__json_type_phrase(single) : "missing");
    size_t n = json_array_size(single);
    if (n > 1024) return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s.single: %zu pieces, over 1024", path, n);
    pstep *stp;
    OMNIC_TRY(push_step(p, n, &stp, err));
    for (size_t i = 0; i < n; i++) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.single[%zu]", path, i);
        OMNIC_TRY(load_piece(json_array_get(single, i), specials, sub, &stp->pieces[i], err));
    }
    return OMNIC_OK;
}

static omnic_status load_into(omnic__postprocessor *p, const json_t *j, const char *path, int depth,
                              omnic_err *err)
{
    if (depth > OMNIC_MAX_TOKENIZER_NESTING)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: Sequence nesting deeper than %d", path,
                          OMNIC_MAX_TOKENIZER_NESTING);
    const char *type;
    OMNIC_TRY(omnic__tj_type(j, path, &type, err));
    if (!strcmp(type, "Sequence")) {
        const json_t *arr;
        OMNIC_TRY(omnic__json_get_array(j, "processors", true, path, &arr, err));
        for (size_t i = 0; i < json_array_size(arr); i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.processors[%zu]", path, i);
            OMNIC_TRY(load_into(p, json_array_get(arr, i), sub, depth + 1, err));
        }
        return OMNIC_OK;
    }
    if (!strcmp(type, "ByteLevel")) return OMNIC_OK; /* trims offsets only */
    if (!strcmp(type, "TemplateProcessing")) return load_template(p, j, path, err);
    if (!strcmp(type, "BertProcessing") || !strcmp(type, "RobertaProcessing")) {
        int32_t cls, sep;
        OMNIC_TRY(token_pair(j, "cls", path, &cls, err));
        OMNIC_TRY(token_pair(j, "sep", path, &sep, err));
        pstep *stp;
        OMNIC_TRY(push_step(p, 3, &stp, err));
        OMNIC_TRY(set_ids(&stp->pieces[0], &cls, 1, err));
        stp->pieces[1].seq = true;
        return set_ids(&stp->pieces[2], &sep, 1, err);
    }
    return OMNIC_FAIL(
        err, OMNIC_E_UNSUPPORTED,
        "%s: post-processor type '%s' is not supported (supported: TemplateProcessing, ByteLevel, "
        "BertProcessing, RobertaProcessing, Sequence)",
        path, type);
}

omnic_status omnic__postprocessor_load(const json_t *j, const char *path, omnic__postprocessor **out,
                                       omnic_err *err)
{
    omnic__postprocessor *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", path);
    omnic_status st = load_into(p, j, path, 0, err);
    if (st != OMNIC_OK) {
        omnic__postprocessor_free(p);
        return st;
    }
    *out = p;
    return OMNIC_OK;
}

omnic_status omnic__postprocessor_apply(const omnic__postprocessor *p, omnic__ivec *ids, omnic_err *err)
{
    for (size_t s = 0; s < p->n; s++) {
        const pstep *st = &p->steps[s];
        omnic__ivec out = {0};
        for (size_t k = 0; k < st->n; k++) {
            const piece *pc = &st->pieces[k];
            const int32_t *src = pc->seq ? ids->v : pc->ids;
            size_t n = pc->seq ? ids->n : pc->n;
            omnic_status rc = omnic__ivec_reserve(&out, n, err);
            if (rc != OMNIC_OK) {
                omnic__ivec_free(&out);
                return rc;
            }
            if (n) memcpy(out.v + out.n, src, n * sizeof *src);
            out.n += n;
        }
        omnic__ivec_free(ids);
        *ids = out;
    }
    return OMNIC_OK;
}
