/* Gemma 3n's audio tower (models/gemma3n_audio.h) against the real Hugging Face Gemma3nAudioEncoder
 * and the soft path of its audio Gemma3nMultimodalEmbedder (eager, f32) on a tiny random tower:
 * tests/golden/gemma3n_audio (tools/hf_golden/make_gemma3n_audio_goldens.py) holds the weights, the
 * config and, for clips of 37, 203 (150 valid: a batch's shorter clip), 403 and 2997 feature frames
 * (the 30 s clip: 188 rows), the subsampling output, block 0's output, the tower's output and the
 * embedder's rows. Each is compared stage by stage on the ref and cpu backends (rows of valid frames:
 * HF's padded rows are its own), the first divergent stage named; then the config refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/npy.h"
#include "core/tensor.h"
#include "core/threadpool.h"
#include "io/json.h"
#include "models/gemma3n_audio.h"

#define GOLDEN "tests/golden/gemma3n_audio"
#define MELS 40

/* The input formula of make_gemma3n_audio_goldens.py, exact in f32. */
static float *features(int64_t T, int64_t salt)
{
    float *x = malloc(sizeof(float) * (size_t)(T * MELS));
    for (int64_t t = 0; t < T; t++)
        for (int64_t m = 0; m < MELS; m++)
            x[t * MELS + m] = (float)((t * 37 + m * 11 + salt) % 101) / 8.0f - 6.0f;
    return x;
}

/* Rows [0, rows) of got against the golden file (which may hold more rows): max |got - want| over
 * max(1, max |want|) <= 1e-4, else fails naming the stage. */
static void compare(const char *label, const char *stage, const float *got, int64_t rows, int64_t H,
                    const char *file)
{
    omnic__tensor *want = NULL;
    omnic_err err;
    if (omnic__npy_read(file, &want, &err) != OMNIC_OK) fail_msg("%s: %s", file, err.msg);
    assert_true(want->dims[0] >= rows);
    assert_int_equal(want->dims[1], H);
    const float *w = want->data;
    double worst = 0, scale = 1;
    int64_t at = 0;
    for (int64_t i = 0; i < rows * H; i++)
        scale = fmax(scale, fabs(w[i]));
    for (int64_t i = 0; i < rows * H; i++) {
        double d = fabs((double)got[i] - w[i]);
        if (!(d <= worst)) worst = d, at = i;
    }
    print_message("%s %-9s rows %4lld: max difference %.3g (scale %.3g)\n", label, stage, (long long)rows, worst,
                  scale);
    if (!(worst / scale <= 1e-4))
        fail_msg("%s: first divergent stage %s: row %lld col %lld omnic %.7g, Hugging Face %.7g", label, stage,
                 (long long)(at / H), (long long)(at % H), got[at], w[at]);
    omnic__tensor_destroy(want);
}

static void run_backend(const omnic__backend_ops *be, int threads)
{
    omnic_err err;
    json_t *cfg = NULL;
    if (omnic__json_load_file(GOLDEN "/config.json", 1 << 20, &cfg, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    omnic__usm_config c;
    if (omnic__usm_config_parse(json_object_get(cfg, "audio_config"), "config.json audio_config", 24, &c, &err) !=
        OMNIC_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(c.freq[1], 20);
    assert_int_equal(c.freq[2], 10);
    assert_int_equal(c.context, 5);
    omnic__safetensors *st = NULL;
    if (omnic__st_open_file(GOLDEN "/model.safetensors", &st, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    omnic__usm enc;
    if (omnic__usm_load(&enc, &c, st, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    omnic__threadpool *pool = NULL;
    if (threads > 1) assert_int_equal(omnic__threadpool_create(&pool, threads, &err), OMNIC_OK);
    omnic__module mod;
    const int64_t cap = omnic__usm_call_rows(&c, 2997);
    assert_int_equal(cap, 3008);
    assert_int_equal(omnic__module_init(&mod, "audio.encode", "omnic.audio.encode.gemma3n/1", cap, &err), OMNIC_OK);
    if (omnic__usm_build(&enc, &mod, &err) != OMNIC_OK || omnic__module_finalize(&mod, be, pool, &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    json_t *meta = NULL;
    if (omnic__json_load_file(GOLDEN "/meta.json", 1 << 20, &meta, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    const char *name;
    json_t *cs;
    json_object_foreach(json_object_get(meta, "cases"), name, cs)
    {
        const int64_t T = json_integer_value(json_object_get(cs, "frames")),
                      V = json_integer_value(json_object_get(cs, "valid")),
                      salt = json_integer_value(json_object_get(cs, "salt"));
        assert_int_equal(omnic__usm_sub_rows(&c, T), json_integer_value(json_object_get(cs, "sub_rows")));
        assert_int_equal(omnic__usm_rows(&c, T), json_integer_value(json_object_get(cs, "rows")));
        const int64_t nv = omnic__usm_valid_rows(&c, T, V);
        assert_int_equal(nv, json_integer_value(json_object_get(cs, "valid_rows")));
        float *x = features(T, salt);
        omnic__usm_inputs in;
        omnic__tensor t[3];
        if (omnic__usm_inputs_make(&enc, x, T, V, &in, &err) != OMNIC_OK ||
            omnic__usm_inputs_bind(&enc, &in, t, &err) != OMNIC_OK)
            fail_msg("%s: %s", name, err.msg);
        const omnic__tensor *ins[3] = {&t[0], &t[1], &t[2]};
        omnic__call call = {.n = in.n, .inputs = ins, .n_inputs = 3};
        if (omnic__module_call(&mod, &call, &err) != OMNIC_OK) fail_msg("%s: %s", name, err.msg);
        /* sub-rows of valid frames: HF's padded rows (no key to attend) are not the model's output */
        int64_t sub_valid = 0;
        for (int64_t s = 0; s < omnic__usm_sub_rows(&c, T); s++)
            sub_valid += (s * 4 < T - 1 ? s * 4 : T - 1) < V;
        char label[64], file[256];
        snprintf(label, sizeof label, "%s %s", be->name, name);
        static const struct {
            const char *out, *file;
        } stage[] = {{"sscp", "sscp"}, {"block0", "layer0"}, {"encoded", "out"}, {"projected", "proj"}};
        for (size_t k = 0; k < sizeof stage / sizeof stage[0]; k++) {
            int o = omnic__module_find_output(&mod, stage[k].out);
            assert_true(o >= 0);
            const omnic__tensor *r = omnic__module_output(&mod, o);
            const int64_t rows = k == 0 ? omnic__usm_sub_rows(&c, T) : k == 1 ? sub_valid : nv;
            assert_true(r->dims[0] >= rows);
            snprintf(file, sizeof file, GOLDEN "/%s.%s.npy", name, stage[k].file);
            compare(label, stage[k].out, r->data, rows, k == 3 ? c.text_hidden : c.hidden, file);
        }
        omnic__usm_inputs_free(&in);
        free(x);
    }
    /* bad host inputs are refused by number */
    float one[MELS] = {0};
    omnic__usm_inputs in;
    assert_int_equal(omnic__usm_inputs_make(&enc, one, 1, 2, &in, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "audio of 1 feature frames (2 valid)"));
    json_decref(meta);
    omnic__module_deinit(&mod);
    omnic__threadpool_destroy(pool);
    omnic__usm_deinit(&enc);
    omnic__st_close(st);
    json_decref(cfg);
}

static void test_ref(void **state)
{
    (void)state;
    run_backend(omnic__backend_ref(), 1);
}

static void test_cpu(void **state)
{
    (void)state;
    run_backend(omnic__backend_cpu(), 2);
}

static void test_config_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *json, *msg;
    } cases[] = {
        {"{\"conf_attention_context_right\": 2}", "conf_attention_context_right 2: omnic's audio attention is causal"},
        {"{\"gradient_clipping\": 100.0}", "gradient_clipping 100"},
        {"{\"hidden_size\": 30, \"conf_num_attention_heads\": 4}", "not a multiple of 4 heads"},
        {"{\"sscp_conv_channel_size\": [8]}", "sscp_conv_channel_size must be a list of 2 integers"},
        {"{\"sscp_conv_kernel_size\": [[3, 3], [3]]}", "sscp_conv_kernel_size[1] must be a pair of integers"},
        {"{\"sscp_conv_stride_size\": [[2, 0], [2, 2]]}", "sscp_conv_stride_size[0] must be a pair"},
        {"{\"input_feat_size\": 1, \"sscp_conv_kernel_size\": [[3, 9], [3, 3]]}", "kernel width 9 is wider"},
        {"{\"conf_attention_context_left\": 600}", "conf_attention_context_left"},
        {"{\"some_new_key\": 1}", "some_new_key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        omnic_err err;
        json_t *j = NULL;
        assert_int_equal(omnic__json_parse(cases[i].json, strlen(cases[i].json), "t", &j, &err), OMNIC_OK);
        omnic__usm_config c;
        omnic_status rc = omnic__usm_config_parse(j, "audio_config", 2048, &c, &err);
        if (rc == OMNIC_OK || !strstr(err.msg, cases[i].msg))
            fail_msg("%s: want \"%s\", got %s \"%s\"", cases[i].json, cases[i].msg, omnic_status_name(rc), err.msg);
        json_decref(j);
    }
    /* the class defaults are E2B's tower: 12 blocks of 1536, 8 heads, 13 keys, 128 bins -> 64 -> 32 */
    json_t *j = json_object();
    omnic__usm_config c;
    omnic_err err;
    assert_int_equal(omnic__usm_config_parse(j, "audio_config", 2048, &c, &err), OMNIC_OK);
    assert_int_equal(c.hidden, 1536);
    assert_int_equal(c.n_layers, 12);
    assert_int_equal(c.head_dim, 192);
    assert_int_equal(c.context, 13);
    assert_int_equal(c.freq[1], 64);
    assert_int_equal(c.freq[2], 32);
    assert_int_equal(omnic__usm_rows(&c, 2997), 188);
    json_decref(j);
    /* the published google/gemma-3n-E2B-it config.json parses to the same tower */
    json_t *pub = NULL;
    if (omnic__json_load_file("tests/configs/gemma-3n-E2B-it/config.json", 1 << 20, &pub, &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    omnic__usm_config p;
    if (omnic__usm_config_parse(json_object_get(pub, "audio_config"), "audio_config", 2048, &p, &err) != OMNIC_OK)
        fail_msg("published audio_config: %s", err.msg);
    assert_int_equal(p.hidden, 1536);
    assert_int_equal(p.n_layers, 12);
    assert_int_equal(p.context, 13);
    assert_int_equal(p.kernel_size, 5);
    assert_int_equal(p.ch[0], 128);
    assert_int_equal(p.ch[1], 32);
    assert_int_equal(p.freq[2], 32);
    assert_true(p.logit_cap == 50.0 && p.gn_eps == 1e-3 && p.residual_weight == 0.5);
    json_decref(pub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ref), cmocka_unit_test(test_cpu),
                                       cmocka_unit_test(test_config_refusals)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
