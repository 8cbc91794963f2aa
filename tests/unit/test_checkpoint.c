/* Unit tests for src/io/json.c and src/io/checkpoint.c: typed config getters and their
 * messages, JSON loading errors (line/column, size caps, duplicates), checkpoint discovery,
 * chat-template resolution from each source, and allocation-failure injection. */

#include "io_testutil.h"

#include "core/alloc.h"
#include "io/checkpoint.h"
#include "io/json.h"

static const char *k_config = "{\n"
                              "  \"architectures\": [\"LlamaForCausalLM\"],\n"
                              "  \"hidden_size\": 64,\n"
                              "  \"rms_norm_eps\": 1e-06,\n"
                              "  \"max_position_embeddings\": 4096.0,\n"
                              "  \"tie_word_embeddings\": true,\n"
                              "  \"model_type\": \"llama\",\n"
                              "  \"rope_scaling\": null,\n"
                              "  \"text_config\": {\"vocab_size\": 100},\n"
                              "  \"frac\": 1.5,\n"
                              "  \"name\": \"x\"\n"
                              "}\n";

static json_t *parse_ok(const char *s)
{
    json_t *j = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_OK(omnic__json_parse(s, strlen(s), "config.json", &j, &err), err);
    return j;
}

static void test_get_i64(void **state)
{
    (void)state;
    json_t *j = parse_ok(k_config);
    omnic_err err;
    int64_t v = -1;
    TU_OK(omnic__json_get_i64(j, "hidden_size", true, 0, 1, 1 << 20, "config.json", &v, &err), err);
    assert_int_equal(v, 64);
    /* an integral real is accepted */
    TU_OK(omnic__json_get_i64(j, "max_position_embeddings", true, 0, 1, INT64_MAX, "config.json", &v, &err),
          err);
    assert_int_equal(v, 4096);
    /* absent -> default; null counts as absent */
    TU_OK(omnic__json_get_i64(j, "num_layers", false, 12, 1, 100, "config.json", &v, &err), err);
    assert_int_equal(v, 12);
    TU_OK(omnic__json_get_i64(j, "rope_scaling", false, 7, 1, 100, "config.json", &v, &err), err);
    assert_int_equal(v, 7);

    /* missing required field */
    v = 99;
    omnic_status rc = omnic__json_get_i64(j, "intermediate_size", true, 0, 1, 100, "config.json", &v, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "config.json: missing field 'intermediate_size'");
    assert_int_equal(v, 99); /* unchanged */
    rc = omnic__json_get_i64(j, "rope_scaling", true, 0, 1, 100, "config.json", &v, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "config.json: missing field 'rope_scaling'");
    /* wrong type */
    rc = omnic__json_get_i64(j, "model_type", true, 0, 1, 100, "config.json", &v, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "config.json", "'model_type'", "a string", "expected an integer");
    rc = omnic__json_get_i64(j, "frac", true, 0, 0, 100, "config.json", &v, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "'frac'", "1.5", "expected an integer");
    /* out of range names the value and both bounds */
    rc = omnic__json_get_i64(j, "hidden_size", true, 0, 128, 8192, "config.json", &v, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "config.json", "'hidden_size'", "64", "[128, 8192]");
    assert_int_equal(v, 99);
    /* nested with a context string */
    const json_t *tc = NULL;
    TU_OK(omnic__json_get_obj(j, "text_config", true, "config.json", &tc, &err), err);
    rc = omnic__json_get_i64(tc, "hidden_size", true, 0, 1, 10, "config.json: text_config", &v, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "config.json: text_config: missing field 'hidden_size'");
    /* not an object */
    rc =
        omnic__json_get_i64(json_object_get(j, "architectures"), "x", true, 0, 0, 1, "config.json", &v, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "config.json", "'x'", "an array");
    rc = omnic__json_get_i64(NULL, "x", true, 0, 0, 1, "config.json", &v, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "config.json", "'x'");
    json_decref(j);

    /* a real too big for int64 */
    j = parse_ok("{\"n\": 1e30}");
    rc = omnic__json_get_i64(j, "n", true, 0, INT64_MIN, INT64_MAX, "config.json", &v, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "'n'", "1e+30");
    json_decref(j);
}

static void test_get_other_types(void **state)
{
    (void)state;
    json_t *j = parse_ok(k_config);
    omnic_err err;
    double d = 0;
    TU_OK(omnic__json_get_f64(j, "rms_norm_eps", true, 0, 0, 1, "config.json", &d, &err), err);
    assert_true(d == 1e-6);
    TU_OK(omnic__json_get_f64(j, "hidden_size", true, 0, 0, 1e9, "config.json", &d, &err), err);
    assert_true(d == 64.0);
    TU_OK(omnic__json_get_f64(j, "rope_theta", false, 10000.0, 0, 1e9, "config.json", &d, &err), err);
    assert_true(d == 10000.0);
    omnic_status rc = omnic__json_get_f64(j, "frac", true, 0, 2, 3, "config.json", &d, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "'frac'", "1.5", "[2, 3]");
    rc = omnic__json_get_f64(j, "name", true, 0, 2, 3, "config.json", &d, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "'name'", "a string", "expected a number");

    bool b = false;
    TU_OK(omnic__json_get_bool(j, "tie_word_embeddings", true, false, "config.json", &b, &err), err);
    assert_true(b);
    TU_OK(omnic__json_get_bool(j, "absent", false, true, "config.json", &b, &err), err);
    assert_true(b);
    rc = omnic__json_get_bool(j, "hidden_size", true, false, "config.json", &b, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "'hidden_size'", "an integer", "true or false");

    const char *s = NULL;
    TU_OK(omnic__json_get_str(j, "model_type", true, NULL, "config.json", &s, &err), err);
    assert_string_equal(s, "llama");
    TU_OK(omnic__json_get_str(j, "absent", false, "dflt", "config.json", &s, &err), err);
    assert_string_equal(s, "dflt");
    rc = omnic__json_get_str(j, "tie_word_embeddings", true, NULL, "config.json", &s, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "'tie_word_embeddings'", "true", "a string");

    const json_t *a = NULL;
    TU_OK(omnic__json_get_array(j, "architectures", true, "config.json", &a, &err), err);
    assert_int_equal(json_array_size(a), 1);
    TU_OK(omnic__json_get_array(j, "absent", false, "config.json", &a, &err), err);
    assert_null(a);
    rc = omnic__json_get_array(j, "text_config", true, "config.json", &a, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "'text_config'", "an object", "expected an array");
    const json_t *o = NULL;
    TU_OK(omnic__json_get_obj(j, "rope_scaling", false, "config.json", &o, &err), err);
    assert_null(o);
    rc = omnic__json_get_obj(j, "vision_config", true, "config.json", &o, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "config.json: missing field 'vision_config'");
    json_decref(j);
}

static void test_json_parse_errors(void **state)
{
    (void)state;
    json_t *j = NULL;
    omnic_err err;
    const char *bad = "{\n  \"a\": 1,\n  \"b\": ,\n}";
    omnic_status rc = omnic__json_parse(bad, strlen(bad), "config.json", &j, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "config.json:3:", "malformed JSON");
    assert_null(j);
    rc = omnic__json_parse("[1]", 3, "req", &j, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "req", "an array", "expected an object");
    rc = omnic__json_parse("", 0, "empty.json", &j, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "empty.json:");
    /* a buffer that is not NUL-terminated is read only up to len */
    rc = omnic__json_parse("{}xxxx", 2, "cut", &j, &err);
    TU_OK(rc, err);
    json_decref(j);
    /* duplicates: last wins for configs, an error for strict parsing */
    const char *dup = "{\"a\": 1, \"a\": 2}";
    TU_OK(omnic__json_parse(dup, strlen(dup), "config.json", &j, &err), err);
    assert_int_equal(json_integer_value(json_object_get(j, "a")), 2);
    json_decref(j);
    rc = omnic__json_parse_nodup(dup, strlen(dup), "index.json", &j, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "index.json:1:", "duplicate key 'a'");
    /* deep nesting is refused, not a stack overflow */
    static char deep[8192];
    deep[0] = '{';
    strcpy(deep + 1, "\"a\":");
    size_t n = strlen(deep);
    for (int i = 0; i < 3000; i++)
        deep[n++] = '[';
    deep[n] = '\0';
    rc = omnic__json_parse(deep, n, "deep.json", &j, &err);
    assert_true(rc == OMNIC_E_TOO_LARGE || rc == OMNIC_E_CORRUPT);
    assert_non_null(strstr(err.msg, "deep.json"));
}

static void test_json_load_file(void **state)
{
    (void)state;
    json_t *j = NULL;
    omnic_err err;
    omnic_status rc = omnic__json_load_file(tu_path("absent.json"), 1024, &j, &err);
    TU_ERR(rc, err, OMNIC_E_NOT_FOUND, tu_path("absent.json"));
    tu_write_str("big.json", "{\"a\": \"0123456789012345678901234567890123456789\"}");
    rc = omnic__json_load_file(tu_path("big.json"), 16, &j, &err);
    TU_ERR(rc, err, OMNIC_E_TOO_LARGE, tu_path("big.json"), "49 bytes", "16 bytes");
    TU_OK(omnic__json_load_file(tu_path("big.json"), 49, &j, &err), err);
    json_decref(j);
    rc = omnic__json_load_file(tu_dir, 1 << 20, &j, &err);
    TU_ERR(rc, err, OMNIC_E_IO, tu_dir);
}

/* ---- checkpoints ---- */

static void write_weights(void)
{
    float w[2] = {1, 2};
    tu_st_write("model.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", w,
                sizeof w);
}

static void test_checkpoint_basic(void **state)
{
    (void)state;
    tu_write_str("config.json", k_config);
    tu_write_str("generation_config.json", "{\"eos_token_id\": [1, 2]}");
    tu_write_str("tokenizer_config.json", "{\"bos_token\": \"<s>\"}");
    tu_write_str("preprocessor_config.json", "{\"image_size\": 224}");
    tu_write_str("tokenizer.json", "{}");
    tu_write_str("README.md", "hello");
    assert_int_equal(mkdir(tu_path("subdir"), 0700), 0);
    write_weights();
    omnic__checkpoint *c = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_OK(omnic__checkpoint_open(tu_dir, &c, &err), err);
    assert_string_equal(c->dir, tu_dir);
    assert_non_null(c->config);
    assert_int_equal(json_integer_value(json_object_get(c->config, "hidden_size")), 64);
    assert_non_null(c->generation_config);
    assert_non_null(c->tokenizer_config);
    assert_non_null(c->preprocessor_config);
    assert_null(c->processor_config);
    assert_string_equal(c->tokenizer_json_path, tu_path("tokenizer.json"));
    assert_null(c->chat_template);
    assert_null(c->chat_template_source);
    assert_non_null(c->weights);
    assert_non_null(omnic__st_find(c->weights, "w"));
    /* regular files only, sorted by name */
    const char *expect[] = {"README.md",
                            "config.json",
                            "generation_config.json",
                            "model.safetensors",
                            "preprocessor_config.json",
                            "tokenizer.json",
                            "tokenizer_config.json"};
    assert_int_equal(c->n_files, sizeof expect / sizeof expect[0]);
    for (size_t i = 0; i < c->n_files; i++)
        assert_string_equal(c->files[i].name, expect[i]);
    assert_int_equal(c->files[0].bytes, 5);
    omnic__checkpoint_close(c);
    omnic__checkpoint_close(NULL);
}

static void test_checkpoint_missing(void **state)
{
    (void)state;
    omnic__checkpoint *c = NULL;
    omnic_err err;
    write_weights();
    omnic_status rc = omnic__checkpoint_open(tu_dir, &c, &err);
    TU_ERR(rc, err, OMNIC_E_NOT_FOUND, tu_path("config.json"));
    assert_null(c);
    rc = omnic__checkpoint_open(tu_path("nodir"), &c, &err);
    TU_ERR(rc, err, OMNIC_E_NOT_FOUND, tu_path("nodir"));
    rc = omnic__checkpoint_open(tu_path("model.safetensors"), &c, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "model.safetensors", "not a directory");
    /* config but no weights */
    tu_write_str("config.json", "{}");
    remove(tu_path("model.safetensors"));
    rc = omnic__checkpoint_open(tu_dir, &c, &err);
    TU_ERR(rc, err, OMNIC_E_NOT_FOUND, tu_dir, "model.safetensors");
}

static void test_checkpoint_malformed(void **state)
{
    (void)state;
    omnic__checkpoint *c = NULL;
    omnic_err err;
    write_weights();
    tu_write_str("config.json", "{\n  \"hidden_size\": 64\n  \"vocab_size\": 10\n}\n");
    omnic_status rc = omnic__checkpoint_open(tu_dir, &c, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, tu_path("config.json"), ":3:", "malformed JSON");
    assert_null(c);
    /* a malformed optional file is an error too, not silently skipped */
    tu_write_str("config.json", "{}");
    tu_write_str("generation_config.json", "{\"a\":");
    rc = omnic__checkpoint_open(tu_dir, &c, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, tu_path("generation_config.json"), ":1:");
    remove(tu_path("generation_config.json"));
    tu_write_str("tokenizer_config.json", "{\"chat_template\": 5}");
    rc = omnic__checkpoint_open(tu_dir, &c, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "tokenizer_config.json", "'chat_template'", "integer");
    tu_write_str("tokenizer_config.json", "{\"chat_template\": [{\"name\": \"a\"}]}");
    rc = omnic__checkpoint_open(tu_dir, &c, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "tokenizer_config.json", "'chat_template'[0]");
    tu_write_str("chat_template.json", "{\"template\": \"x\"}");
    rc = omnic__checkpoint_open(tu_dir, &c, &err);
    TU_ERR(rc, err, OMNIC_E_INVALID, "chat_template.json", "missing field 'chat_template'");
    tu_write("chat_template.jinja", "ab\0cd", 5);
    rc = omnic__checkpoint_open(tu_dir, &c, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "chat_template.jinja", "offset 2");
    /* an oversized config */
    static char big[(16 << 20) + 16];
    memset(big, ' ', sizeof big);
    big[0] = '{';
    big[sizeof big - 1] = '}';
    tu_write("config.json", big, sizeof big);
    rc = omnic__checkpoint_open(tu_dir, &c, &err);
    TU_ERR(rc, err, OMNIC_E_TOO_LARGE, tu_path("config.json"), "16777232 bytes", "16777216 bytes");
}

static omnic__checkpoint *open_ok(void)
{
    omnic__checkpoint *c = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_OK(omnic__checkpoint_open(tu_dir, &c, &err), err);
    return c;
}

static void test_chat_template_sources(void **state)
{
    (void)state;
    write_weights();
    tu_write_str("config.json", "{}");

    /* 4. processor_config.json (older processors) */
    tu_write_str("processor_config.json", "{\"chat_template\": \"P\"}");
    omnic__checkpoint *c = open_ok();
    assert_string_equal(c->chat_template, "P");
    assert_string_equal(c->chat_template_source, "processor_config.json");
    omnic__checkpoint_close(c);

    /* 3a. tokenizer_config.json string */
    tu_write_str("tokenizer_config.json", "{\"chat_template\": \"{{ messages }}\"}");
    c = open_ok();
    assert_string_equal(c->chat_template, "{{ messages }}");
    assert_string_equal(c->chat_template_source, "tokenizer_config.json");
    omnic__checkpoint_close(c);

    /* 3b. a list: the one named default */
    tu_write_str("tokenizer_config.json",
                 "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"},"
                 "{\"name\": \"default\", \"template\": \"D\"}]}");
    c = open_ok();
    assert_string_equal(c->chat_template, "D");
    omnic__checkpoint_close(c);
    /* 3c. a list without default: the first */
    tu_write_str("tokenizer_config.json", "{\"chat_template\": [{\"name\": \"rag\", \"template\": \"R\"},"
                                          "{\"name\": \"tool_use\", \"template\": \"T\"}]}");
    c = open_ok();
    assert_string_equal(c->chat_template, "R");
    omnic__checkpoint_close(c);

    /* 2. chat_template.json beats tokenizer_config.json */
    tu_write_str("chat_template.json", "{\"chat_template\": \"J\\n\"}");
    c = open_ok();
    assert_string_equal(c->chat_template, "J\n");
    assert_string_equal(c->chat_template_source, "chat_template.json");
    omnic__checkpoint_close(c);

    /* 1. chat_template.jinja beats both */
    tu_write_str("chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}\n");
    c = open_ok();
    assert_string_equal(c->chat_template, "{% for m in messages %}{{ m.content }}{% endfor %}\n");
    assert_string_equal(c->chat_template_source, "chat_template.jinja");
    omnic__checkpoint_close(c);

    /* null in tokenizer_config means none */
    remove(tu_path("chat_template.jinja"));
    remove(tu_path("chat_template.json"));
    remove(tu_path("processor_config.json"));
    tu_write_str("tokenizer_config.json", "{\"chat_template\": null}");
    c = open_ok();
    assert_null(c->chat_template);
    omnic__checkpoint_close(c);
}

static void test_checkpoint_alloc_failures(void **state)
{
    (void)state;
    write_weights();
    tu_write_str("config.json", k_config);
    tu_write_str("tokenizer_config.json",
                 "{\"chat_template\": [{\"name\": \"default\", \"template\": \"D\"}]}");
    tu_write_str("tokenizer.json", "{}");
    int failures = 0;
    for (long n = 0; n < 1000; n++) {
        omnic__checkpoint *c = NULL;
        omnic_err err;
        omnic_err_clear(&err);
        omnic__alloc_fail_after(n);
        omnic_status rc = omnic__checkpoint_open(tu_dir, &c, &err);
        long injected = omnic__alloc_injected_failures();
        omnic__alloc_fail_after(-1);
        if (injected == 0) {
            TU_OK(rc, err);
            assert_string_equal(c->chat_template, "D");
            omnic__checkpoint_close(c);
            break;
        }
        TU_ERR(rc, err, OMNIC_E_NOMEM, "");
        assert_null(c);
        failures++;
    }
    assert_true(failures > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_i64),
        cmocka_unit_test(test_get_other_types),
        cmocka_unit_test(test_json_parse_errors),
        cmocka_unit_test_setup_teardown(test_json_load_file, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_basic, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_missing, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_malformed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_chat_template_sources, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_alloc_failures, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
