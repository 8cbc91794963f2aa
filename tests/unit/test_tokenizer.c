/* Unit tests for src/tokenizer: a small tokenizer.json end to end; every malformed or unsupported
 * field with the message it must give; invalid UTF-8; ids out of range; the pre-tokenizer split
 * behaviors and normalizers on Hugging Face's documented examples; the streaming detokenizer;
 * concurrent encoding; allocation-failure injection. Conformance against Hugging Face on real
 * tokenizers lives in tests/e2e/test_tokenizer_conformance.py. */

#include "io_testutil.h"

#include <pthread.h>

#include "core/alloc.h"
#include "io/json.h"
#include "tokenizer/detok_stream.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

static const char *k_base =
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n"
    " \"added_tokens\": [\n"
    "  {\"id\": 0, \"content\": \"<unk>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false,"
    "   \"normalized\": false, \"special\": true},\n"
    "  {\"id\": 1, \"content\": \"<s>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false,"
    "   \"normalized\": false, \"special\": true},\n"
    "  {\"id\": 2, \"content\": \"</s>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false,"
    "   \"normalized\": false, \"special\": true}],\n"
    " \"normalizer\": null,\n"
    " \"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"},\n"
    " \"post_processor\": {\"type\": \"TemplateProcessing\",\n"
    "   \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}},"
    "              {\"SpecialToken\": {\"id\": \"</s>\", \"type_id\": 0}}],\n"
    "   \"pair\": [], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1], \"tokens\": [\"<s>\"]},"
    "                                   \"</s>\": {\"id\": \"</s>\", \"ids\": [2], \"tokens\": [\"</s>\"]}}},\n"
    " \"decoder\": null,\n"
    " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\", \"continuing_subword_prefix\": null,"
    "   \"end_of_word_suffix\": null, \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n"
    "   \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"a\": 3, \"b\": 4, \"c\": 5, \"ab\": 6, \"abc\": 7,"
    "             \"d\": 8, \"cd\": 9},\n"
    "   \"merges\": [\"a b\", \"ab c\", \"c d\"]}}\n";

static json_t *base_json(void)
{
    json_t *j = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_OK(omnic__json_parse(k_base, strlen(k_base), "base", &j, &err), err);
    return j;
}

/* Loads j (consumed). */
static omnic_status load_j(json_t *j, omnic__tokenizer **t, omnic_err *err)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    assert_non_null(s);
    omnic_err_clear(err);
    omnic_status rc = omnic__tokenizer_load_buffer(s, strlen(s), NULL, 0, "tok.json", t, err);
    free(s);
    return rc;
}

static omnic__tokenizer *load_ok(json_t *j)
{
    omnic__tokenizer *t = NULL;
    omnic_err err;
    TU_OK(load_j(j, &t, &err), err);
    return t;
}

static void expect_ids(const omnic__tokenizer *t, const char *text, bool special, const int32_t *want, size_t n)
{
    omnic_err err;
    omnic_err_clear(&err);
    int32_t *ids = NULL;
    size_t k = 0;
    TU_OK(omnic__tokenizer_encode(t, text, strlen(text), special, &ids, &k, &err), err);
    assert_non_null(ids);
    if (k != n) print_error("'%s': %zu ids, expected %zu\n", text, k, n);
    assert_int_equal(k, n);
    for (size_t i = 0; i < n; i++) assert_int_equal(ids[i], want[i]);
    omnic_free(ids);
}

static void expect_decode(const omnic__tokenizer *t, const int32_t *ids, size_t n, bool skip, const char *want)
{
    omnic_err err;
    omnic_err_clear(&err);
    char *s = NULL;
    size_t len = 0;
    TU_OK(omnic__tokenizer_decode(t, ids, n, skip, &s, &len, &err), err);
    assert_int_equal(len, strlen(want));
    assert_string_equal(s, want);
    omnic_free(s);
}

static void test_basic(void **state)
{
    (void)state;
    omnic__tokenizer *t = load_ok(base_json());
    expect_ids(t, "abc abd", false, (const int32_t[]){7, 6, 8}, 3);
    expect_ids(t, "abc abd", true, (const int32_t[]){1, 7, 6, 8, 2}, 5);
    expect_ids(t, "", false, NULL, 0);
    expect_ids(t, "", true, (const int32_t[]){1, 2}, 2);
    expect_ids(t, "xa", false, (const int32_t[]){0, 3}, 2); /* unk, not fused */
    expect_ids(t, "ab<s>cd", false, (const int32_t[]){6, 1, 9}, 3);
    expect_decode(t, (const int32_t[]){1, 7, 6, 8, 2}, 5, false, "<s> abc ab d </s>");
    expect_decode(t, (const int32_t[]){1, 7, 6, 8, 2}, 5, true, "abc ab d");
    expect_decode(t, NULL, 0, false, "");
    assert_int_equal(omnic__tokenizer_vocab_size(t), 10);
    int32_t id = -1;
    assert_true(omnic__tokenizer_token_to_id(t, "abc", 3, &id));
    assert_int_equal(id, 7);
    assert_false(omnic__tokenizer_token_to_id(t, "zz", 2, &id));
    size_t len = 0;
    assert_string_equal(omnic__tokenizer_id_to_token(t, 9, &len), "cd");
    assert_int_equal(len, 2);
    assert_null(omnic__tokenizer_id_to_token(t, 10, NULL));
    assert_null(omnic__tokenizer_id_to_token(t, -1, NULL));
    assert_true(omnic__tokenizer_is_special(t, 1));
    assert_false(omnic__tokenizer_is_special(t, 7));
    assert_false(omnic__tokenizer_get_specials(t)->have_config);
    omnic__tokenizer_free(t);
    omnic__tokenizer_free(NULL);
}

/* One malformed variant: edit the base with a JSON path and a value (NULL deletes). */
typedef struct mutation {
    const char *obj;   /* "" (root), "model", "model.vocab", "added_tokens.0", ... */
    const char *key;   /* field to set or delete */
    const char *value; /* JSON text, or NULL to delete */
    omnic_status code;
    const char *msg1, *msg2;
} mutation;

static json_t *walk(json_t *root, const char *path)
{
    json_t *cur = root;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, ".")) {
        if (json_is_array(cur))
            cur = json_array_get(cur, (size_t)atoi(tok));
        else
            cur = json_object_get(cur, tok);
    }
    return cur;
}

static void test_malformed(void **state)
{
    (void)state;
    static const mutation muts[] = {
        {"", "model", NULL, OMNIC_E_INVALID, "tok.json: missing field 'model'", NULL},
        {"", "model", "5", OMNIC_E_INVALID, "'model'", "expected an object"},
        {"model", "type", "123", OMNIC_E_INVALID, "tok.json: model", "'type'"},
        {"model", "type", "\"WordPiece\"", OMNIC_E_UNSUPPORTED, "model type 'WordPiece' is not supported", NULL},
        {"model", "type", "\"Unigram\"", OMNIC_E_UNSUPPORTED, "'Unigram'", NULL},
        {"model", "vocab", NULL, OMNIC_E_INVALID, "tok.json: model: missing field 'vocab'", NULL},
        {"model", "vocab", "[]", OMNIC_E_INVALID, "'vocab'", "expected an object"},
        {"model.vocab", "d", "\"8\"", OMNIC_E_INVALID, "model.vocab: the id of token 'd' is a string", NULL},
        {"model.vocab", "d", "-1", OMNIC_E_INVALID, "token 'd' has id -1", NULL},
        {"model.vocab", "d", "99999999999", OMNIC_E_INVALID, "token 'd' has id 99999999999", NULL},
        {"model", "merges", NULL, OMNIC_E_INVALID, "missing field 'merges'", NULL},
        {"model", "merges", "{}", OMNIC_E_INVALID, "'merges'", "expected an array"},
        {"model", "merges", "[5]", OMNIC_E_INVALID, "model.merges[0] is an integer", NULL},
        {"model", "merges", "[\"a  b\"]", OMNIC_E_INVALID, "model.merges[0]: 'a  b' is not two tokens", NULL},
        {"model", "merges", "[\"ab\"]", OMNIC_E_INVALID, "model.merges[0]: 'ab' is not two tokens", NULL},
        {"model", "merges", "[\"a x\"]", OMNIC_E_INVALID, "model.merges[0]: token 'x' is not in the vocabulary",
         NULL},
        {"model", "merges", "[\"b c\"]", OMNIC_E_INVALID, "merged token 'bc' is not in the vocabulary", NULL},
        {"model", "merges", "[[\"a\"]]", OMNIC_E_INVALID, "model.merges[0]", "pair of strings"},
        {"model", "merges", "[[\"a\", 4]]", OMNIC_E_INVALID, "model.merges[0]", "pair of strings"},
        {"model", "merges", "[\"a b\", [\"ab\", \"c\"]]", OMNIC_E_INVALID, "model.merges[1] is an array", NULL},
        {"model", "dropout", "0.1", OMNIC_E_UNSUPPORTED, "dropout 0.1 is not supported", NULL},
        {"model", "dropout", "\"x\"", OMNIC_E_INVALID, "'dropout'", NULL},
        {"model", "fuse_unk", "\"yes\"", OMNIC_E_INVALID, "'fuse_unk'", "expected true or false"},
        {"model", "byte_fallback", "1", OMNIC_E_INVALID, "'byte_fallback'", NULL},
        {"model", "unk_token", "7", OMNIC_E_INVALID, "'unk_token'", NULL},
        {"", "added_tokens", "{}", OMNIC_E_INVALID, "'added_tokens'", "expected an array"},
        {"", "added_tokens", "[7]", OMNIC_E_INVALID, "tok.json: added_tokens[0] is an integer", NULL},
        {"added_tokens.1", "content", NULL, OMNIC_E_INVALID, "added_tokens[1]: missing field 'content'", NULL},
        {"added_tokens.1", "content", "[]", OMNIC_E_INVALID, "added_tokens[1]", "'content'"},
        {"added_tokens.1", "id", "\"1\"", OMNIC_E_INVALID, "added_tokens[1]", "'id'"},
        {"added_tokens.1", "id", NULL, OMNIC_E_INVALID, "added_tokens[1]: missing field 'id'", NULL},
        {"added_tokens.2", "special", "\"x\"", OMNIC_E_INVALID, "added_tokens[2]", "'special'"},
        {"added_tokens.2", "lstrip", "0", OMNIC_E_INVALID, "added_tokens[2]", "'lstrip'"},
        {"", "normalizer", "\"NFC\"", OMNIC_E_INVALID, "'normalizer' is a string", NULL},
        {"", "normalizer", "{}", OMNIC_E_INVALID, "normalizer: missing field 'type'", NULL},
        {"", "normalizer", "{\"type\": \"Foo\"}", OMNIC_E_UNSUPPORTED, "normalizer type 'Foo' is not supported", NULL},
        {"", "normalizer", "{\"type\": \"BertNormalizer\"}", OMNIC_E_UNSUPPORTED, "'BertNormalizer'", NULL},
        {"", "normalizer", "{\"type\": \"Sequence\"}", OMNIC_E_INVALID, "missing field 'normalizers'", NULL},
        {"", "normalizer", "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, 3]}", OMNIC_E_INVALID,
         "normalizer.normalizers[1] is an integer", NULL},
        {"", "normalizer", "{\"type\": \"Replace\", \"content\": \"x\"}", OMNIC_E_INVALID, "missing field 'pattern'",
         NULL},
        {"", "normalizer", "{\"type\": \"Replace\", \"pattern\": {\"Foo\": 1}, \"content\": \"x\"}", OMNIC_E_INVALID,
         "\"String\" or \"Regex\"", NULL},
        {"", "normalizer", "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"(\"}, \"content\": \"x\"}",
         OMNIC_E_INVALID, "regex '(' does not compile", NULL},
        {"", "normalizer", "{\"type\": \"Prepend\"}", OMNIC_E_INVALID, "missing field 'prepend'", NULL},
        {"", "pre_tokenizer", "{\"type\": \"BertPreTokenizer\"}", OMNIC_E_UNSUPPORTED,
         "pre-tokenizer type 'BertPreTokenizer' is not supported", NULL},
        {"", "pre_tokenizer", "{\"type\": 5}", OMNIC_E_INVALID, "pre_tokenizer", "'type'"},
        {"", "pre_tokenizer", "{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"Weird\"}",
         OMNIC_E_INVALID, "behavior 'Weird'", NULL},
        {"", "pre_tokenizer", "{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}}", OMNIC_E_INVALID,
         "missing field 'behavior'", NULL},
        {"", "pre_tokenizer", "{\"type\": \"Metaspace\", \"replacement\": \"ab\"}", OMNIC_E_INVALID,
         "'replacement' must be exactly one character", NULL},
        {"", "pre_tokenizer", "{\"type\": \"Metaspace\", \"replacement\": \"_\", \"prepend_scheme\": \"often\"}",
         OMNIC_E_INVALID, "prepend_scheme 'often'", NULL},
        {"", "pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"UnicodeScripts\"}]}",
         OMNIC_E_UNSUPPORTED, "pre_tokenizer.pretokenizers[0]", "'UnicodeScripts'"},
        {"", "decoder", "{\"type\": \"WordPiece\"}", OMNIC_E_UNSUPPORTED, "decoder type 'WordPiece' is not supported",
         NULL},
        {"", "decoder", "{\"type\": \"Strip\", \"content\": \" \", \"start\": \"x\", \"stop\": 0}", OMNIC_E_INVALID,
         "decoder", "'start'"},
        {"", "post_processor", "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<x>\"}}]}",
         OMNIC_E_INVALID, "special token '<x>' that special_tokens lacks", NULL},
        {"", "post_processor", "{\"type\": \"TemplateProcessing\"}", OMNIC_E_INVALID, "'single' is missing", NULL},
        {"", "post_processor", "{\"type\": \"Foo\"}", OMNIC_E_UNSUPPORTED, "post-processor type 'Foo'", NULL},
        {"", "post_processor", "{\"type\": \"BertProcessing\", \"sep\": [\"</s>\"], \"cls\": [\"<s>\", 1]}",
         OMNIC_E_INVALID, "'sep' must be a [token, id] pair", NULL},
    };
    for (size_t i = 0; i < sizeof muts / sizeof muts[0]; i++) {
        const mutation *m = &muts[i];
        json_t *j = base_json();
        json_t *o = m->obj[0] ? walk(j, m->obj) : j;
        assert_non_null(o);
        if (m->value) {
            json_error_t je;
            json_t *v = json_loads(m->value, JSON_DECODE_ANY, &je);
            assert_non_null(v);
            json_object_set_new(o, m->key, v);
        } else
            json_object_del(o, m->key);
        omnic__tokenizer *t = (omnic__tokenizer *)(uintptr_t)0x1;
        omnic_err err;
        omnic_status rc = load_j(j, &t, &err);
        if (rc != m->code) print_error("mutation %zu (%s.%s = %s)\n", i, m->obj, m->key, m->value ? m->value : "-");
        if (m->msg2)
            TU_ERR(rc, err, m->code, m->msg1, m->msg2);
        else
            TU_ERR(rc, err, m->code, m->msg1);
        assert_true(t == (omnic__tokenizer *)(uintptr_t)0x1); /* unchanged on failure */
    }
    /* dropout 0 is accepted; an untagged model with merges is a BPE */
    json_t *j = base_json();
    json_object_set_new(json_object_get(j, "model"), "dropout", json_real(0.0));
    json_object_del(json_object_get(j, "model"), "type");
    omnic__tokenizer_free(load_ok(j));
    /* an untagged model without merges is not */
    j = base_json();
    json_object_del(json_object_get(j, "model"), "type");
    json_object_del(json_object_get(j, "model"), "merges");
    omnic__tokenizer *t;
    omnic_err err;
    TU_ERR(load_j(j, &t, &err), err, OMNIC_E_INVALID, "tok.json: model: missing field 'type'");
    /* deep nesting is bounded */
    char deep[4096] = "";
    for (int k = 0; k < 40; k++) strcat(deep, "{\"type\": \"Sequence\", \"normalizers\": [");
    strcat(deep, "{\"type\": \"NFC\"}");
    for (int k = 0; k < 40; k++) strcat(deep, "]}");
    j = base_json();
    json_error_t je;
    json_object_set_new(j, "normalizer", json_loads(deep, 0, &je));
    TU_ERR(load_j(j, &t, &err), err, OMNIC_E_TOO_LARGE, "nesting deeper than");
    /* malformed JSON and a non-object */
    omnic_err_clear(&err);
    TU_ERR(omnic__tokenizer_load_buffer("{\"model\": ", 10, NULL, 0, "tok.json", &t, &err), err, OMNIC_E_CORRUPT,
           "tok.json:1:");
    TU_ERR(omnic__tokenizer_load_buffer("[1]", 3, NULL, 0, "tok.json", &t, &err), err, OMNIC_E_CORRUPT,
           "top-level JSON value is an array");
}

static void test_files(void **state)
{
    (void)state;
    omnic__tokenizer *t = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_ERR(omnic__tokenizer_load(tu_path("nope"), &t, &err), err, OMNIC_E_NOT_FOUND, "nope");
    /* a directory without tokenizer.json */
    TU_ERR(omnic__tokenizer_load(tu_dir, &t, &err), err, OMNIC_E_NOT_FOUND, "tokenizer.json");
    tu_write_str("tokenizer.json", k_base);
    tu_write_str("tokenizer_config.json", "{\"bos_token\": {\"content\": \"<s>\"}, \"eos_token\": \"</s>\","
                                          " \"pad_token\": null, \"unk_token\": \"<nope>\", \"add_bos_token\": true}");
    TU_OK(omnic__tokenizer_load(tu_dir, &t, &err), err);
    const omnic__tokenizer_specials *sp = omnic__tokenizer_get_specials(t);
    assert_true(sp->have_config);
    assert_int_equal(sp->bos_id, 1);
    assert_int_equal(sp->eos_id, 2);
    assert_int_equal(sp->pad_id, -1);
    assert_int_equal(sp->unk_id, -1);
    assert_string_equal(sp->bos_token, "<s>");
    assert_string_equal(sp->unk_token, "<nope>");
    assert_null(sp->pad_token);
    assert_true(sp->add_bos);
    assert_false(sp->add_eos);
    omnic__tokenizer_free(t);
    /* the file path works too; a bad config is an error naming it */
    tu_write_str("tokenizer_config.json", "{\"bos_token\": 5}");
    TU_ERR(omnic__tokenizer_load(tu_path("tokenizer.json"), &t, &err), err, OMNIC_E_INVALID,
           "tokenizer_config.json", "'bos_token'");
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    omnic__tokenizer *t = load_ok(base_json());
    static const struct {
        const char *s;
        size_t n;
        const char *msg;
    } bad[] = {
        {"ab\xff", 3, "byte 0xFF at offset 2"},
        {"\xe4\xb8", 2, "byte 0xE4 at offset 0"},
        {"a\xc0\xaf", 3, "byte 0xC0 at offset 1"},       /* overlong */
        {"abc\xed\xa0\x80", 6, "byte 0xED at offset 3"}, /* surrogate */
        {"\xf4\x90\x80\x80", 4, "offset 0"},             /* > U+10FFFF */
        {"ok \x80", 4, "byte 0x80 at offset 3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int32_t *ids = (int32_t *)(uintptr_t)0x1;
        size_t n = 77;
        omnic_err err;
        omnic_err_clear(&err);
        TU_ERR(omnic__tokenizer_encode(t, bad[i].s, bad[i].n, false, &ids, &n, &err), err, OMNIC_E_INVALID,
               "not valid UTF-8", bad[i].msg);
        assert_int_equal(n, 77);
    }
    /* NUL bytes are text */
    int32_t *ids;
    size_t n;
    omnic_err err;
    TU_OK(omnic__tokenizer_encode(t, "a\0b", 3, false, &ids, &n, &err), err);
    assert_int_equal(n, 3);
    assert_int_equal(ids[1], 0); /* unk */
    omnic_free(ids);
    omnic__tokenizer_free(t);
}

static void test_decode_range(void **state)
{
    (void)state;
    json_t *j = base_json();
    json_object_set_new(json_object_get(json_object_get(j, "model"), "vocab"), "zz", json_integer(20)); /* hole 10..19 */
    omnic__tokenizer *t = load_ok(j);
    char *s = (char *)(uintptr_t)0x1;
    size_t len = 77;
    omnic_err err;
    omnic_err_clear(&err);
    TU_ERR(omnic__tokenizer_decode(t, (const int32_t[]){3, 21}, 2, false, &s, &len, &err), err, OMNIC_E_INVALID,
           "token id 21 (at index 1)", "vocab size 21");
    TU_ERR(omnic__tokenizer_decode(t, (const int32_t[]){-5}, 1, false, &s, &len, &err), err, OMNIC_E_INVALID,
           "token id -5");
    TU_ERR(omnic__tokenizer_decode(t, (const int32_t[]){3, 4, 15}, 3, true, &s, &len, &err), err, OMNIC_E_INVALID,
           "token id 15 (at index 2)");
    assert_int_equal(len, 77);
    expect_decode(t, (const int32_t[]){20, 3}, 2, false, "zz a");
    omnic__detok_stream ds;
    TU_OK(omnic__detok_stream_init(&ds, t, false, &err), err);
    const char *txt;
    size_t tl;
    TU_ERR(omnic__detok_stream_push(&ds, 1000, &txt, &tl, &err), err, OMNIC_E_INVALID, "token id 1000",
           "vocab size 21");
    omnic__detok_stream_deinit(&ds);
    omnic__tokenizer_free(t);
}

/* ---- components on Hugging Face's documented examples ---- */

static char *pretok(const char *pj, const char *text)
{
    json_t *j = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_OK(omnic__json_parse(pj, strlen(pj), "pre", &j, &err), err);
    omnic__pretokenizer *p = NULL;
    TU_OK(omnic__pretokenizer_load(j, "pre", &p, &err), err);
    json_decref(j);
    omnic__tok_scratch sc;
    TU_OK(omnic__tok_scratch_init(&sc, &err), err);
    TU_OK(omnic__tbuf_put(&sc.text, text, strlen(text), &err), err);
    TU_OK(omnic__tsplits_push(&sc.sp[0], 0, strlen(text), -1, OMNIC__SPLIT_AT_START, &err), err);
    int cur = 0;
    TU_OK(omnic__pretokenizer_run(p, &sc, &cur, &err), err);
    omnic__tbuf out = {0};
    for (size_t i = 0; i < sc.sp[cur].n; i++) {
        if (i) TU_OK(omnic__tbuf_put(&out, "|", 1, &err), err);
        TU_OK(omnic__tbuf_put(&out, sc.text.p + sc.sp[cur].v[i].off, sc.sp[cur].v[i].len, &err), err);
    }
    TU_OK(omnic__tbuf_put(&out, "", 1, &err), err);
    omnic__tok_scratch_deinit(&sc);
    omnic__pretokenizer_free(p);
    return out.p;
}

static void expect_pretok(const char *pj, const char *text, const char *want)
{
    char *got = pretok(pj, text);
    if (strcmp(got, want)) print_error("%s on '%s': got '%s', expected '%s'\n", pj, text, got, want);
    assert_string_equal(got, want);
    omnic_free(got);
}

static void test_split_behaviors(void **state)
{
    (void)state;
    /* Hugging Face's NormalizedString::split docs: "the-final--countdown" split on '-' */
    const char *text = "the-final--countdown";
    expect_pretok("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Removed\"}", text,
                  "the|final|countdown");
    expect_pretok("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Isolated\"}", text,
                  "the|-|final|-|-|countdown");
    expect_pretok("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"MergedWithPrevious\"}", text,
                  "the-|final-|-|countdown");
    expect_pretok("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"-\"},\"behavior\":\"MergedWithNext\"}", text,
                  "the|-final|-|-countdown");
    expect_pretok("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"-\"},\"behavior\":\"Contiguous\"}", text,
                  "the|-|final|--|countdown");
    expect_pretok("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Removed\",\"invert\":true}", text,
                  "-|-|-");
    /* Metaspace (tokenizers' metaspace.rs tests) */
    expect_pretok("{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\",\"prepend_scheme\":\"always\"}",
                  "Hey friend!", "\xe2\x96\x81Hey|\xe2\x96\x81" "friend!");
    expect_pretok("{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\",\"add_prefix_space\":true}",
                  "Hey   friend!",
                  "\xe2\x96\x81Hey|\xe2\x96\x81|\xe2\x96\x81|\xe2\x96\x81" "friend!");
    expect_pretok("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"never\",\"split\":false}",
                  "Hey friend", "Hey_friend");
    /* ByteLevel with the GPT-2 regex */
    expect_pretok("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true}", "Hello my friend",
                  "\xc4\xa0Hello|\xc4\xa0my|\xc4\xa0" "friend");
    expect_pretok("{\"type\":\"ByteLevel\",\"add_prefix_space\":false}", "it's  x\n",
                  "it|'s|\xc4\xa0|\xc4\xa0x|\xc4\x8a");
    /* Digits, Punctuation, Whitespace, WhitespaceSplit */
    expect_pretok("{\"type\":\"Digits\",\"individual_digits\":true}", "Hey 123 friend!", "Hey |1|2|3| friend!");
    expect_pretok("{\"type\":\"Digits\",\"individual_digits\":false}", "Hey 123 friend!", "Hey |123| friend!");
    expect_pretok("{\"type\":\"Punctuation\"}", "Hey friend!     How are you?!?",
                  "Hey friend|!|     How are you|?|!|?");
    expect_pretok("{\"type\":\"Whitespace\"}", "Hey man!  Good?", "Hey|man|!|Good|?");
    expect_pretok("{\"type\":\"Whitespace\"}", "How are you doing?", "How|are|you|doing|?");
    expect_pretok("{\"type\":\"WhitespaceSplit\"}", "Hey man!  Good?", "Hey|man!|Good?");
    expect_pretok("{\"type\":\"CharDelimiterSplit\",\"delimiter\":\"x\"}", "axbxxc", "a|b|c");
}

static char *normalize(const char *nj, const char *text)
{
    json_t *j = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_OK(omnic__json_parse(nj, strlen(nj), "norm", &j, &err), err);
    omnic__normalizer *n = NULL;
    TU_OK(omnic__normalizer_load(j, "norm", &n, &err), err);
    json_decref(j);
    omnic__tok_scratch sc;
    TU_OK(omnic__tok_scratch_init(&sc, &err), err);
    omnic__tbuf out = {0};
    TU_OK(omnic__normalizer_run(n, text, strlen(text), &out, NULL, &sc, &err), err);
    TU_OK(omnic__tbuf_put(&out, "", 1, &err), err);
    omnic__tok_scratch_deinit(&sc);
    omnic__normalizer_free(n);
    return out.p;
}

static void expect_norm(const char *nj, const char *text, const char *want)
{
    char *got = normalize(nj, text);
    if (strcmp(got, want)) print_error("%s on '%s': got '%s', expected '%s'\n", nj, text, got, want);
    assert_string_equal(got, want);
    omnic_free(got);
}

static void test_normalizers(void **state)
{
    (void)state;
    expect_norm("{\"type\":\"NFD\"}", "\xc3\xa9", "e\xcc\x81");
    expect_norm("{\"type\":\"NFC\"}", "e\xcc\x81", "\xc3\xa9");
    expect_norm("{\"type\":\"NFKC\"}", "\xef\xac\x81 \xe2\x91\xa0", "fi 1");
    expect_norm("{\"type\":\"NFKD\"}", "\xc3\xa9\xc2\xbd", "e\xcc\x81" "1\xe2\x81\x84" "2");
    expect_norm("{\"type\":\"Lowercase\"}", "\xc4\xb0STANBUL \xce\xa3\xce\x91", "i\xcc\x87stanbul \xcf\x83\xce\xb1");
    expect_norm("{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}", " \t x y \xc2\xa0\n", "x y");
    expect_norm("{\"type\":\"Strip\",\"strip_left\":false,\"strip_right\":true}", "  x  ", "  x");
    expect_norm("{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xe2\x96\x81\"}", "a b  c",
                "a\xe2\x96\x81" "b\xe2\x96\x81\xe2\x96\x81" "c");
    expect_norm("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"content\":\" \"}", "a \t\n b", "a b");
    expect_norm("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\w+\"},\"content\":\"W\"}",
                "ab_c d\xcc\x81 \xe4\xb8\xad!", "W W W!"); /* Oniguruma \w: letters, marks, digits, _ */
    expect_norm("{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"}", "x", "\xe2\x96\x81x");
    expect_norm("{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"}", "", "");
    expect_norm("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Lowercase\"},{\"type\":\"Sequence\","
                "\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"_\"},{\"type\":\"NFD\"}]}]}",
                "\xc3\x89T\xc3\x89", "_e\xcc\x81te\xcc\x81");
}

/* ---- streaming ---- */

static const char *k_bytelevel =
    "{\"added_tokens\": [{\"id\": 6, \"content\": \"<|eot|>\", \"special\": true}],"
    " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false},"
    " \"post_processor\": null, \"decoder\": {\"type\": \"ByteLevel\"},"
    " \"model\": {\"type\": \"BPE\", \"vocab\": {\"\xc3\xa4\": 0, \"\xc2\xb8\": 1, \"\xc5\x83\": 2, \"a\": 3,"
    "   \"\xc4\xa0\": 4, \"\xc3\xa4\xc2\xb8\": 5}, \"merges\": [[\"\xc3\xa4\", \"\xc2\xb8\"]]}}";

static void test_stream(void **state)
{
    (void)state;
    omnic__tokenizer *t = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_OK(omnic__tokenizer_load_buffer(k_bytelevel, strlen(k_bytelevel), NULL, 0, "bl", &t, &err), err);
    /* "中" is E4 B8 AD: token 5 (E4 B8) + token 2 (AD) */
    expect_ids(t, "a\xe4\xb8\xad a", false, (const int32_t[]){3, 5, 2, 4, 3}, 5);
    static const int32_t ids[] = {3, 5, 2, 4, 3, 6, 5, 3, 5, 2};
    static const char *want[] = {"a", "", "\xe4\xb8\xad", " ", "a", "<|eot|>", "", "\xef\xbf\xbd" "a", "", "\xe4\xb8\xad"};
    omnic__detok_stream s;
    TU_OK(omnic__detok_stream_init(&s, t, false, &err), err);
    char all[256] = "";
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const char *txt;
        size_t len;
        TU_OK(omnic__detok_stream_push(&s, ids[i], &txt, &len, &err), err);
        assert_int_equal(len, strlen(txt));
        if (strcmp(txt, want[i])) print_error("push %zu (id %d): got '%s', expected '%s'\n", i, ids[i], txt, want[i]);
        assert_string_equal(txt, want[i]);
        strcat(all, txt);
    }
    const char *txt;
    size_t len;
    TU_OK(omnic__detok_stream_flush(&s, &txt, &len, &err), err);
    assert_int_equal(len, 0);
    char *full;
    size_t flen;
    TU_OK(omnic__tokenizer_decode(t, ids, sizeof ids / sizeof ids[0], false, &full, &flen, &err), err);
    assert_string_equal(all, full);
    omnic_free(full);
    /* a held-back incomplete tail comes out (as U+FFFD) at flush; then the stream starts over */
    TU_OK(omnic__detok_stream_push(&s, 5, &txt, &len, &err), err);
    assert_int_equal(len, 0);
    TU_OK(omnic__detok_stream_flush(&s, &txt, &len, &err), err);
    assert_string_equal(txt, "\xef\xbf\xbd");
    TU_OK(omnic__detok_stream_push(&s, 3, &txt, &len, &err), err);
    assert_string_equal(txt, "a");
    omnic__detok_stream_deinit(&s);
    /* skip_special drops the special token */
    TU_OK(omnic__detok_stream_init(&s, t, true, &err), err);
    TU_OK(omnic__detok_stream_push(&s, 6, &txt, &len, &err), err);
    assert_int_equal(len, 0);
    TU_OK(omnic__detok_stream_push(&s, 3, &txt, &len, &err), err);
    assert_string_equal(txt, "a");
    omnic__detok_stream_deinit(&s);
    omnic__tokenizer_free(t);
}

/* ---- threads ---- */

typedef struct job {
    const omnic__tokenizer *t;
    int ok;
} job;

static const char *k_texts[] = {"abc abd", "cd ab<s>abc", "", "a b c d abcd", "xyz abc </s>", "ababab cdcd"};

static void *worker(void *arg)
{
    job *j = arg;
    j->ok = 1;
    for (int round = 0; round < 200; round++)
        for (size_t i = 0; i < sizeof k_texts / sizeof k_texts[0]; i++) {
            omnic_err err;
            int32_t *ids;
            size_t n;
            if (omnic__tokenizer_encode(j->t, k_texts[i], strlen(k_texts[i]), true, &ids, &n, &err) != OMNIC_OK) {
                j->ok = 0;
                return NULL;
            }
            int32_t *ref;
            size_t rn;
            omnic__tokenizer_encode(j->t, k_texts[i], strlen(k_texts[i]), true, &ref, &rn, &err);
            if (rn != n || memcmp(ref, ids, n * sizeof *ids)) j->ok = 0;
            omnic_free(ids);
            omnic_free(ref);
        }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    omnic__tokenizer *t = load_ok(base_json());
    pthread_t th[6];
    job jobs[6];
    for (int i = 0; i < 6; i++) {
        jobs[i] = (job){.t = t};
        assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        assert_true(jobs[i].ok);
    }
    expect_ids(t, "abc abd", true, (const int32_t[]){1, 7, 6, 8, 2}, 5);
    omnic__tokenizer_free(t);
}

/* ---- allocation failures: every failing allocation gives a clean E_NOMEM (leaks: ASan) ---- */

static void test_alloc_failures(void **state)
{
    (void)state;
    json_t *j = base_json();
    json_object_set_new(j, "normalizer", json_loads("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"},"
                                                    "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"x+\"},"
                                                    "\"content\":\"y\"}]}",
                                                    0, NULL));
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    int loaded = 0, encoded = 0, decoded = 0;
    for (long n = 0; n < 100000 && !(loaded && encoded && decoded); n++) {
        omnic_err err;
        omnic_err_clear(&err);
        omnic__tokenizer *t = NULL;
        omnic__alloc_fail_after(n);
        omnic_status rc = omnic__tokenizer_load_buffer(s, strlen(s), NULL, 0, "tok.json", &t, &err);
        if (rc != OMNIC_OK) {
            omnic__alloc_fail_after(-1);
            if (rc != OMNIC_E_NOMEM) print_error("n=%ld: %s: %s\n", n, omnic_status_name(rc), err.msg);
            assert_int_equal(rc, OMNIC_E_NOMEM);
            assert_true(err.msg[0] != 0);
            continue;
        }
        loaded = 1;
        omnic__alloc_fail_after(n);
        int32_t *ids = NULL;
        size_t k = 0;
        rc = omnic__tokenizer_encode(t, "abc \xef\xac\x81 xxd<s>cd", 16, true, &ids, &k, &err);
        omnic__alloc_fail_after(-1);
        if (rc == OMNIC_OK) {
            encoded = 1;
            omnic__alloc_fail_after(n);
            char *out = NULL;
            size_t len;
            rc = omnic__tokenizer_decode(t, ids, k, false, &out, &len, &err);
            omnic__alloc_fail_after(-1);
            if (rc == OMNIC_OK) decoded = 1;
            else
                assert_int_equal(rc, OMNIC_E_NOMEM);
            omnic_free(out);
        } else
            assert_int_equal(rc, OMNIC_E_NOMEM);
        omnic_free(ids);
        omnic__tokenizer_free(t);
    }
    omnic__alloc_fail_after(-1);
    free(s);
    assert_true(loaded && encoded && decoded);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test_setup_teardown(test_files, tu_setup, tu_teardown),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_decode_range),
        cmocka_unit_test(test_split_behaviors),
        cmocka_unit_test(test_normalizers),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
