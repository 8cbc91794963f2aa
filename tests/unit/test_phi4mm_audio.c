/* Phi-4-multimodal's audio encoder (models/phi4mm_audio.h) against the real Hugging Face
 * Phi4MultimodalAudioModel (eager, f32) on a tiny random encoder: tests/golden/phi4mm_audio
 * (tools/hf_golden/make_phi4mm_audio_goldens.py) holds the weights under their HF-converted
 * names, the config and, for clips of 37, 403 and 4123 feature frames (5, 51 and 516 rows: the
 * last one chunked in 500-row sequences with HF's zero padding), the subsampling output, block 0's
 * output and the encoder output. Each is compared stage by stage on the ref and cpu backends,
 * then the speech and vision-speech projections (Phi4MultimodalAudioEmbedding's rows for the audio
 * placeholders), the first divergent stage named; then the config refusals. */
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
#include "models/phi4mm_audio.h"

#define GOLDEN "tests/golden/phi4mm_audio"

/* The input formula of make_phi4mm_audio_goldens.py, exact in f32. */
static float *features(int64_t T, int64_t salt)
{
    float *x = malloc(sizeof(float) * (size_t)(T * 80));
    for (int64_t t = 0; t < T; t++)
        for (int64_t m = 0; m < 80; m++)
            x[t * 80 + m] = (float)((t * 37 + m * 11 + salt) % 101) / 8.0f - 6.0f;
    return x;
}

/* max |got - want| over max(1, max |want|); fails naming the stage past 1e-4. */
static void compare(const char *label, const char *stage, const float *got, int64_t rows, int64_t H,
                    const char *file)
{
    omnic__tensor *want = NULL;
    omnic_err err;
    if (omnic__npy_read(file, &want, &err) != OMNIC_OK) fail_msg("%s: %s", file, err.msg);
    assert_int_equal(want->dims[0], rows);
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
    print_message("%s %-13s rows %4lld: max difference %.3g (scale %.3g)\n", label, stage, (long long)rows,
                  worst, scale);
    if (!(worst / scale <= 1e-4))
        fail_msg("%s: first divergent stage %s: row %lld col %lld omnic %.7g, Hugging Face %.7g", label,
                 stage, (long long)(at / H), (long long)(at % H), got[at], w[at]);
    omnic__tensor_destroy(want);
}

static void run_backend(const omnic__backend_ops *be, int threads)
{
    omnic_err err;
    json_t *cfg = NULL;
    if (omnic__json_load_file(GOLDEN "/config.json", 1 << 20, &cfg, &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    omnic__p4a_config c;
    if (omnic__p4a_config_parse(json_object_get(cfg, "audio_config"), "config.json audio_config",
                                json_integer_value(json_object_get(cfg, "hidden_size")), &c,
                                &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(c.stages, 3);
    assert_int_equal(c.final_size, 10);
    omnic__safetensors *st = NULL;
    if (omnic__st_open_file(GOLDEN "/model.safetensors", &st, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    omnic__p4a enc;
    if (omnic__p4a_load(&enc, &c, st, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    omnic__threadpool *pool = NULL;
    if (threads > 1) assert_int_equal(omnic__threadpool_create(&pool, threads, &err), OMNIC_OK);
    omnic__module mod;
    const int64_t cap = 8 * 1000; /* 4123 frames: 516 rows, two chunks of 500 */
    assert_int_equal(omnic__p4a_call_rows(&c, 4123), cap);
    assert_int_equal(omnic__module_init(&mod, "audio.encode", "omnic.audio.encode.phi4mm/1", cap, &err),
                     OMNIC_OK);
    if (omnic__p4a_build(&enc, &mod, &err) != OMNIC_OK ||
        omnic__module_finalize(&mod, be, pool, &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    json_t *meta = NULL;
    if (omnic__json_load_file(GOLDEN "/meta.json", 1 << 20, &meta, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    const char *name;
    json_t *cs;
    json_object_foreach(json_object_get(meta, "cases"), name, cs)
    {
        int64_t T = json_integer_value(json_object_get(cs, "frames")),
                salt = json_integer_value(json_object_get(cs, "salt"));
        int64_t rows = omnic__p4a_rows(&c, T);
        assert_int_equal(rows, json_integer_value(json_object_get(cs, "rows")));
        float *x = features(T, salt);
        if (omnic__p4a_encode(&enc, &mod, x, T, &err) != OMNIC_OK) fail_msg("%s: %s", name, err.msg);
        char label[64], file[256];
        snprintf(label, sizeof label, "%s %s", be->name, name);
        static const struct {
            const char *out, *file;
            bool text;
        } stage[] = {{"embed", "embed", false},
                     {"block0", "layer0", false},
                     {"encoded", "out", false},
                     {"speech", "speech", true},
                     {"vision_speech", "vision", true}};
        for (size_t k = 0; k < sizeof stage / sizeof stage[0]; k++) {
            if (!strcmp(stage[k].out, "block0") && !json_is_true(json_object_get(cs, "has_layer0")))
                continue; /* chunked: block 0's output is per chunk in HF */
            int o = omnic__module_find_output(&mod, stage[k].out);
            assert_true(o >= 0);
            const omnic__tensor *t = omnic__module_output(&mod, o);
            assert_true(t->dims[0] >= rows);
            snprintf(file, sizeof file, GOLDEN "/%s.%s.npy", name, stage[k].file);
            compare(label, stage[k].out, t->data, rows, stage[k].text ? c.text_hidden : c.hidden, file);
        }
        free(x);
    }
    /* over the module's capacity: refused by number */
    float *one = calloc(8001 * 80, sizeof(float));
    assert_int_equal(omnic__p4a_encode(&enc, &mod, one, 8001, &err), OMNIC_E_INVALID);
    assert_non_null(
        strstr(err.msg, "audio of 8001 feature frames (12000 padded): the encoder takes up to 8000"));
    free(one);
    json_decref(meta);
    omnic__module_deinit(&mod);
    omnic__threadpool_destroy(pool);
    omnic__p4a_deinit(&enc);
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
        {"{\"chunk_size\": 18}", "chunk_size"},
        {"{\"bias_symmetric\": true}", "bias_symmetric"},
        {"{\"activation\": \"gelu\"}", "activation \"gelu\" is not supported"},
        {"{\"nemo_activation\": \"gelu\"}", "nemo_activation"},
        {"{\"time_reduction\": 6}", "time_reduction 6 is not a power of 2"},
        {"{\"hidden_size\": 30, \"num_attention_heads\": 4, \"ext_pw_out_channel\": 30, "
         "\"depthwise_separable_out_channel\": 30}",
         "not a multiple of 4 heads"},
        {"{\"ext_pw_out_channel\": 512}", "must equal hidden_size 1024"},
        {"{\"nemo_final_size\": 12}", "nemo_final_size 12, but 80 bins reduced 3 times give 10"},
        {"{\"depthwise_multiplier\": 2}", "depthwise_multiplier"},
        {"{\"some_new_key\": 1}", "some_new_key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        omnic_err err;
        json_t *j = NULL;
        assert_int_equal(omnic__json_parse(cases[i].json, strlen(cases[i].json), "t", &j, &err), OMNIC_OK);
        omnic__p4a_config c;
        omnic_status rc = omnic__p4a_config_parse(j, "audio_config", 3072, &c, &err);
        if (rc == OMNIC_OK || !strstr(err.msg, cases[i].msg))
            fail_msg("%s: want \"%s\", got %s \"%s\"", cases[i].json, cases[i].msg, omnic_status_name(rc),
                     err.msg);
        json_decref(j);
    }
    /* the class defaults are the published encoder (24 blocks of 1024, 16 heads, T5 distance 1000
     * unless the checkpoint says 500) */
    json_t *j = json_object();
    omnic__p4a_config c;
    omnic_err err;
    assert_int_equal(omnic__p4a_config_parse(j, "audio_config", 3072, &c, &err), OMNIC_OK);
    assert_int_equal(c.hidden, 1024);
    assert_int_equal(c.n_blocks, 24);
    assert_int_equal(c.head_dim, 64);
    assert_int_equal(c.max_distance, 1000);
    assert_int_equal(c.final_size, 10);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref),
        cmocka_unit_test(test_cpu),
        cmocka_unit_test(test_config_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
