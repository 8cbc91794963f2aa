/* generation_config.json: the sampling keys read and range-checked (errors name the key), how
 * they apply to a request that did or did not set each value, and generate()'s EOS fallback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "io_testutil.h"

#include "engine/gen_config.h"

static void test_parse(void **state)
{
    (void)state;
    omnic__gen_defaults d;
    omnic_err err;
    json_t *gc =
        tu_json("{\"do_sample\": true, \"temperature\": 0.7, \"top_k\": 5, \"top_p\": 0.9, \"min_p\": 0.05,"
           " \"repetition_penalty\": 1.1, \"max_new_tokens\": 12, \"eos_token_id\": 3, \"num_beams\": 4}");
    assert_int_equal(omnic__gen_defaults_parse(gc, &d, &err), OMNIC_OK);
    assert_int_equal(d.set, OMNIC_GEN_DO_SAMPLE | OMNIC_GEN_TEMPERATURE | OMNIC_GEN_TOP_K | OMNIC_GEN_TOP_P |
                                OMNIC_GEN_MIN_P | OMNIC_GEN_REPETITION_PENALTY | OMNIC_GEN_MAX_TOKENS);
    assert_true(d.do_sample);
    assert_float_equal(d.temperature, 0.7f, 0);
    assert_int_equal(d.top_k, 5);
    assert_float_equal(d.top_p, 0.9f, 0);
    assert_float_equal(d.min_p, 0.05f, 0);
    assert_float_equal(d.repetition_penalty, 1.1f, 0);
    assert_int_equal(d.max_new_tokens, 12);
    char buf[256];
    assert_string_equal(omnic__gen_defaults_describe(&d, buf, sizeof buf),
                        "do_sample=true temperature=0.7 top_k=5 top_p=0.9 min_p=0.05 repetition_penalty=1.1 "
                        "max_new_tokens=12");
    assert_string_equal(omnic__gen_defaults_describe(&d, buf, 12), "do_sample=t"); /* truncated, terminated */
    json_decref(gc);
    /* null and absent keys set nothing; no file: nothing */
    gc = tu_json("{\"temperature\": null, \"top_k\": null, \"bos_token_id\": 1}");
    assert_int_equal(omnic__gen_defaults_parse(gc, &d, &err), OMNIC_OK);
    assert_int_equal(d.set, 0);
    assert_string_equal(omnic__gen_defaults_describe(&d, buf, sizeof buf), "");
    json_decref(gc);
    assert_int_equal(omnic__gen_defaults_parse(NULL, &d, &err), OMNIC_OK);
    assert_int_equal(d.set, 0);
}

static void test_bad_values(void **state)
{
    (void)state;
    static const struct {
        const char *json, *key;
    } bad[] = {
        {"{\"temperature\": -0.5}", "temperature"},
        {"{\"temperature\": \"hot\"}", "temperature"},
        {"{\"temperature\": true}", "temperature"},
        {"{\"top_k\": -1}", "top_k"},
        {"{\"top_k\": 2.5}", "top_k"},
        {"{\"top_p\": 0}", "top_p"},
        {"{\"top_p\": 1.5}", "top_p"},
        {"{\"min_p\": 1.01}", "min_p"},
        {"{\"min_p\": -0.1}", "min_p"},
        {"{\"repetition_penalty\": 0}", "repetition_penalty"},
        {"{\"repetition_penalty\": [1]}", "repetition_penalty"},
        {"{\"max_new_tokens\": 0}", "max_new_tokens"},
        {"{\"max_new_tokens\": 3000000000}", "max_new_tokens"},
        {"{\"do_sample\": 1}", "do_sample"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *gc = tu_json(bad[i].json);
        omnic__gen_defaults d;
        omnic_err err;
        omnic_err_clear(&err);
        assert_int_equal(omnic__gen_defaults_parse(gc, &d, &err), OMNIC_E_INVALID);
        assert_int_equal(d.set, 0);
        if (!strstr(err.msg, bad[i].key) || !strstr(err.msg, "generation_config.json"))
            fail_msg("%s: message '%s' does not name the key and the file", bad[i].json, err.msg);
        json_decref(gc);
    }
}

static omnic__gen_defaults parsed(const char *text)
{
    omnic__gen_defaults d;
    omnic_err err;
    json_t *gc = tu_json(text);
    assert_int_equal(omnic__gen_defaults_parse(gc, &d, &err), OMNIC_OK);
    json_decref(gc);
    return d;
}

static void test_apply(void **state)
{
    (void)state;
    omnic__gen_defaults d =
        parsed("{\"do_sample\": true, \"temperature\": 0.7, \"top_k\": 5, \"max_new_tokens\": 9}");
    omnic__sampling_params p = omnic__sampling_defaults();
    int64_t max_tokens = 256;
    omnic__gen_defaults_apply(&d, 0, &p, &max_tokens);
    assert_float_equal(p.temperature, 0.7f, 0);
    assert_int_equal(p.top_k, 5);
    assert_float_equal(p.top_p, 1.0f, 0); /* absent: unchanged (no HF class default) */
    assert_int_equal(max_tokens, 9);
    /* a request's own values win */
    p = omnic__sampling_defaults();
    p.temperature = 0.2f;
    max_tokens = 3;
    omnic__gen_defaults_apply(&d, OMNIC_GEN_TEMPERATURE | OMNIC_GEN_MAX_TOKENS, &p, &max_tokens);
    assert_float_equal(p.temperature, 0.2f, 0);
    assert_int_equal(p.top_k, 5);
    assert_int_equal(max_tokens, 3);
    /* do_sample false: greedy whatever the temperature says (generate()); penalties still apply */
    d = parsed("{\"do_sample\": false, \"temperature\": 0.6, \"repetition_penalty\": 1.3}");
    p = omnic__sampling_defaults();
    p.temperature = 1.0f; /* the server's OpenAI default */
    omnic__gen_defaults_apply(&d, 0, &p, NULL);
    assert_float_equal(p.temperature, 0.0f, 0);
    assert_float_equal(p.repetition_penalty, 1.3f, 0);
    p.temperature = 0.9f;
    omnic__gen_defaults_apply(&d, OMNIC_GEN_TEMPERATURE, &p, NULL);
    assert_float_equal(p.temperature, 0.9f, 0);
    /* do_sample true without a temperature: generate()'s 1.0 (the CLI's own default is greedy) */
    d = parsed("{\"do_sample\": true, \"top_p\": 0.8}");
    p = omnic__sampling_defaults();
    omnic__gen_defaults_apply(&d, 0, &p, NULL);
    assert_float_equal(p.temperature, 1.0f, 0);
    assert_float_equal(p.top_p, 0.8f, 0);
    /* no do_sample: the keys as vLLM applies them */
    d = parsed("{\"temperature\": 0.5}");
    p = omnic__sampling_defaults();
    omnic__gen_defaults_apply(&d, 0, &p, NULL);
    assert_float_equal(p.temperature, 0.5f, 0);
    omnic__gen_defaults_apply(NULL, 0, &p, NULL); /* no defaults: nothing */
    assert_float_equal(p.temperature, 0.5f, 0);
}

static void expect_eos(const char *gc_text, const char *cfg_text, int32_t tok_eos, const int32_t *want,
                       size_t n_want)
{
    json_t *gc = gc_text ? tu_json(gc_text) : NULL, *cfg = tu_json(cfg_text);
    int32_t *ids = NULL;
    size_t n = 99;
    omnic_err err;
    assert_int_equal(omnic__gen_eos_ids(gc, cfg, tok_eos, 100, &ids, &n, &err), OMNIC_OK);
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ids[i], want[i]);
    omnic_free(ids);
    json_decref(gc);
    json_decref(cfg);
}

static void test_eos(void **state)
{
    (void)state;
    /* generation_config.json's list wins over config.json (generate() never merges them) */
    expect_eos("{\"eos_token_id\": [7, 9, 7]}", "{\"eos_token_id\": 2}", 9, (int32_t[]){7, 9}, 2);
    expect_eos("{\"eos_token_id\": 7}", "{\"eos_token_id\": 2}", -1, (int32_t[]){7}, 1);
    /* no eos_token_id in the file (or null, or no file): config.json, then its text_config */
    expect_eos("{\"bos_token_id\": 1}", "{\"eos_token_id\": [2, 3]}", 4, (int32_t[]){2, 3, 4}, 3);
    expect_eos("{\"eos_token_id\": null}", "{\"eos_token_id\": 2}", -1, (int32_t[]){2}, 1);
    expect_eos(NULL, "{\"text_config\": {\"eos_token_id\": 5}}", -1, (int32_t[]){5}, 1);
    expect_eos(NULL, "{}", 4, (int32_t[]){4}, 1);
    expect_eos(NULL, "{}", -1, NULL, 0);
    /* bad ids: errors naming the file and the id */
    static const char *bad[] = {"{\"eos_token_id\": 100}", "{\"eos_token_id\": [1, -2]}",
                                "{\"eos_token_id\": \"</s>\"}", "{\"eos_token_id\": [1, 2.0]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *gc = tu_json(bad[i]), *cfg = tu_json("{}");
        int32_t *ids = (int32_t *)(uintptr_t)1;
        size_t n = 99;
        omnic_err err;
        assert_int_equal(omnic__gen_eos_ids(gc, cfg, -1, 100, &ids, &n, &err), OMNIC_E_INVALID);
        assert_int_equal(n, 99);
        if (!strstr(err.msg, "generation_config.json: eos_token_id")) fail_msg("%s: '%s'", bad[i], err.msg);
        json_decref(gc);
        json_decref(cfg);
    }
}

static void test_mode(void **state)
{
    (void)state;
    omnic__gen_config_mode m = OMNIC_GEN_CONFIG_IGNORE;
    assert_true(omnic__gen_config_mode_parse("auto", &m));
    assert_int_equal(m, OMNIC_GEN_CONFIG_AUTO);
    assert_true(omnic__gen_config_mode_parse("ignore", &m));
    assert_int_equal(m, OMNIC_GEN_CONFIG_IGNORE);
    assert_false(omnic__gen_config_mode_parse("vllm", &m));
    assert_int_equal(m, OMNIC_GEN_CONFIG_IGNORE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse), cmocka_unit_test(test_bad_values), cmocka_unit_test(test_apply),
        cmocka_unit_test(test_eos),   cmocka_unit_test(test_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
