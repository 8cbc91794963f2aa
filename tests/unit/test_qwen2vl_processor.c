/* Qwen2-VL image processor: smart_resize against values from HF's Python function (ties-to-even
 * rounding, both clamp branches, the < factor / aspect ratio refusals, a side floored to 0, sizes
 * over the limits), parameter checks and per-request pixel bounds, preprocessor_config.json
 * parsing (Qwen2-VL, Qwen3-VL, overrides, errors naming fields), the patch-row layout on a
 * synthetic image, and an allocation-failure sweep. Bit-exactness of whole images against the HF
 * processor is tests/e2e/test_qwen2vl_preprocess.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io_testutil.h"

#include "core/alloc.h"
#include "core/limits.h"
#include "io/json.h"
#include "models/qwen2vl_processor.h"
#include "models/qwen2vl_processor_config.h"

/* CHECK_ERR(rc, &err, code, substrings...): io_testutil.h's check, with err as a pointer. */
#define CHECK_ERR(rc, errp, code, ...)                                                                       \
    tu_check_err((rc), (errp), (code), __FILE__, __LINE__, (const char *const[]){__VA_ARGS__, NULL})

static void test_smart_resize(void **state)
{
    (void)state;
    /* {h, w, factor, min, max, want_h, want_w}: from transformers' smart_resize run in Python. */
    static const int64_t cases[][7] = {
        {480, 640, 28, 3136, 12845056, 476, 644},
        {28, 28, 28, 3136, 12845056, 56, 56},       /* min branch */
        {238, 238, 28, 3136, 12845056, 224, 224},   /* 8.5 -> 8 */
        {266, 266, 28, 3136, 12845056, 280, 280},   /* 9.5 -> 10 */
        {480, 640, 32, 65536, 16777216, 480, 640},  /* Qwen3-VL */
        {100, 80, 32, 65536, 16777216, 288, 256},   /* Qwen3-VL min branch */
        {1000, 1000, 28, 3136, 50176, 224, 224},    /* max branch */
        {210, 252, 28, 3136, 50176, 196, 224},
        {600, 800, 28, 3136, 200000, 364, 504},
        {28, 5600, 28, 3136, 12845056, 28, 5600},   /* aspect ratio exactly 200 */
        {3000, 29, 28, 3136, 12845056, 2996, 28},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t *c = cases[i];
        int64_t h = -1, w = -1;
        omnic_err err;
        omnic_err_clear(&err);
        omnic_status rc = omnic__qwen2vl_smart_resize(c[0], c[1], c[2], c[3], c[4], &h, &w, &err);
        if (rc != OMNIC_OK || h != c[5] || w != c[6])
            fail_msg("case %zu (%lldx%lld): got %lldx%lld (%s), want %lldx%lld", i, (long long)c[0],
                     (long long)c[1], (long long)h, (long long)w, err.msg, (long long)c[5], (long long)c[6]);
    }
    int64_t h = -1, w = -1;
    omnic_err err;
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_smart_resize(100, 27, 28, 3136, 12845056, &h, &w, &err), &err, OMNIC_E_INVALID,
              "100x27", "too small", ">= 28");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_smart_resize(28, 5601, 28, 3136, 12845056, &h, &w, &err), &err, OMNIC_E_INVALID,
              "28x5601", "aspect ratio 200.036", "200");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_smart_resize(28, 5600, 28, 3136, 50176, &h, &w, &err), &err, OMNIC_E_INVALID,
              "0x3164", "max_pixels 50176");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_smart_resize(28, 28, 28, 89478485, 89478485, &h, &w, &err), &err, OMNIC_E_TOO_LARGE,
              "9464x9464");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_smart_resize(32769, 100, 28, 3136, 12845056, &h, &w, &err), &err, OMNIC_E_TOO_LARGE,
              "32769x100");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_smart_resize(0, 100, 28, 3136, 12845056, &h, &w, &err), &err, OMNIC_E_INVALID,
              "0x100");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_smart_resize(100, 100, 0, 3136, 12845056, &h, &w, &err), &err, OMNIC_E_INVALID,
              "factor 0");
    assert_int_equal(h, -1); /* outputs untouched on failure */
    assert_int_equal(w, -1);
}

static void test_params_and_bounds(void **state)
{
    (void)state;
    omnic__qwen2vl_proc_params p;
    omnic__qwen2vl_proc_params_defaults(&p);
    omnic_err err;
    omnic_err_clear(&err);
    assert_int_equal(omnic__qwen2vl_proc_params_check(&p, &err), OMNIC_OK);
    assert_int_equal(p.min_pixels, 3136);
    assert_int_equal(p.max_pixels, 1003520);
    assert_int_equal(p.numerics, OMNIC__NUMERICS_TORCHVISION);

    omnic__qwen2vl_proc_params q = p;
    q.patch_size = 0;
    CHECK_ERR(omnic__qwen2vl_proc_params_check(&q, &err), &err, OMNIC_E_INVALID, "patch_size = 0");
    q = p;
    q.merge_size = 17;
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_proc_params_check(&q, &err), &err, OMNIC_E_INVALID, "merge_size = 17", "16");
    q = p;
    q.temporal_patch_size = 0;
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_proc_params_check(&q, &err), &err, OMNIC_E_INVALID, "temporal_patch_size = 0");
    q = p;
    q.min_pixels = 5000;
    q.max_pixels = 4000;
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_proc_params_check(&q, &err), &err, OMNIC_E_INVALID, "min_pixels 5000", "4000");
    q = p;
    q.image_std[1] = 0;
    omnic_err_clear(&err);
    assert_int_equal(omnic__qwen2vl_proc_params_check(&q, &err), OMNIC_E_INVALID);

    /* per-request bounds */
    q = p;
    omnic_err_clear(&err);
    assert_int_equal(omnic__qwen2vl_set_pixel_bounds(&q, 0, 200000, &err), OMNIC_OK);
    assert_int_equal(q.min_pixels, 3136);
    assert_int_equal(q.max_pixels, 200000);
    assert_int_equal(omnic__qwen2vl_set_pixel_bounds(&q, 10000, 0, &err), OMNIC_OK);
    assert_int_equal(q.min_pixels, 10000);
    assert_int_equal(q.max_pixels, 200000);
    CHECK_ERR(omnic__qwen2vl_set_pixel_bounds(&q, 300000, 0, &err), &err, OMNIC_E_INVALID, "min_pixels 300000",
              "max_pixels 200000");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_set_pixel_bounds(&q, 0, OMNIC_MAX_IMAGE_PIXELS + 1LL, &err), &err, OMNIC_E_INVALID,
              "max_pixels override = 89478486");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__qwen2vl_set_pixel_bounds(&q, -5, 0, &err), &err, OMNIC_E_INVALID, "min_pixels override = -5");
    assert_int_equal(q.min_pixels, 10000); /* untouched by the refusals */
    assert_int_equal(q.max_pixels, 200000);

    /* grid for a size, and do_resize false */
    omnic__qwen2vl_grid g;
    omnic_err_clear(&err);
    q = p;
    q.max_pixels = 12845056;
    assert_int_equal(omnic__qwen2vl_grid_for_size(&q, 640, 480, &g, &err), OMNIC_OK);
    assert_int_equal(g.t, 1);
    assert_int_equal(g.h, 34);
    assert_int_equal(g.w, 46);
    assert_int_equal(g.n_patches, 1564);
    assert_int_equal(g.row_len, 1176);
    assert_int_equal(g.n_tokens, 391);
    q.do_resize = false;
    assert_int_equal(omnic__qwen2vl_grid_for_size(&q, 84, 56, &g, &err), OMNIC_OK);
    assert_int_equal(g.h, 4);
    assert_int_equal(g.w, 6);
    assert_int_equal(g.n_tokens, 6);
    CHECK_ERR(omnic__qwen2vl_grid_for_size(&q, 85, 56, &g, &err), &err, OMNIC_E_INVALID, "56x85", "multiple of 28");
}

static omnic_status parse_cfg(const char *text, omnic__qwen2vl_proc_params *p, omnic_err *err)
{
    json_t *j = NULL;
    OMNIC_TRY(omnic__json_parse(text, strlen(text), "preprocessor_config.json", &j, err));
    omnic_status rc = omnic__qwen2vl_processor_config_parse(j, "preprocessor_config.json", p, err);
    json_decref(j);
    return rc;
}

static bool matches(const char *text)
{
    json_t *j = NULL;
    omnic_err err;
    if (omnic__json_parse(text, strlen(text), "x", &j, &err) != OMNIC_OK) return false;
    bool m = omnic__qwen2vl_processor_config_matches(j);
    json_decref(j);
    return m;
}

static void test_config(void **state)
{
    (void)state;
    omnic__qwen2vl_proc_params p;
    omnic_err err;
    omnic_err_clear(&err);
    /* Qwen/Qwen2-VL-2B-Instruct */
    assert_int_equal(parse_cfg("{\"min_pixels\": 3136, \"max_pixels\": 12845056, \"patch_size\": 14, "
                               "\"temporal_patch_size\": 2, \"merge_size\": 2, \"image_mean\": [0.48145466, "
                               "0.4578275, 0.40821073], \"image_std\": [0.26862954, 0.26130258, 0.27577711], "
                               "\"image_processor_type\": \"Qwen2VLImageProcessor\", \"processor_class\": "
                               "\"Qwen2VLProcessor\"}",
                               &p, &err),
                     OMNIC_OK);
    assert_int_equal(p.min_pixels, 3136);
    assert_int_equal(p.max_pixels, 12845056);
    assert_int_equal(p.patch_size, 14);
    assert_int_equal(p.numerics, OMNIC__NUMERICS_TORCHVISION);
    assert_true(p.image_mean[1] == 0.4578275);
    /* Qwen3-VL: the Fast class with a size dict, patch 16, mean/std 0.5 */
    assert_int_equal(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessorFast\", \"size\": "
                               "{\"shortest_edge\": 65536, \"longest_edge\": 16777216}, \"patch_size\": 16, "
                               "\"image_mean\": [0.5, 0.5, 0.5], \"image_std\": 0.5, \"do_convert_rgb\": true}",
                               &p, &err),
                     OMNIC_OK);
    assert_int_equal(p.min_pixels, 65536);
    assert_int_equal(p.max_pixels, 16777216);
    assert_int_equal(p.patch_size, 16);
    assert_true(p.image_std[2] == 0.5);
    /* min_pixels / max_pixels override the size entries; the PIL class gives PIL numerics */
    assert_int_equal(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessorPil\", \"size\": "
                               "{\"shortest_edge\": 1, \"longest_edge\": 2}, \"max_pixels\": 50176, \"resample\": 2}",
                               &p, &err),
                     OMNIC_OK);
    assert_int_equal(p.min_pixels, 1);
    assert_int_equal(p.max_pixels, 50176);
    assert_int_equal(p.resample, OMNIC__RESAMPLE_BILINEAR);
    assert_int_equal(p.numerics, OMNIC__NUMERICS_PIL);
    /* defaults when absent */
    assert_int_equal(parse_cfg("{\"feature_extractor_type\": \"Qwen2VLFeatureExtractor\"}", &p, &err), OMNIC_OK);
    assert_int_equal(p.max_pixels, 1003520);
    assert_int_equal(p.merge_size, 2);

    assert_true(matches("{\"image_processor_type\": \"Qwen2VLImageProcessor\"}"));
    assert_false(matches("{\"image_processor_type\": \"CLIPImageProcessor\"}"));
    assert_false(matches("{\"processor_class\": \"Qwen2VLProcessor\"}"));

    omnic__qwen2vl_proc_params keep;
    omnic__qwen2vl_proc_params_defaults(&keep);
    keep.patch_size = 99;
    p = keep;
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"CLIPImageProcessor\"}", &p, &err), &err, OMNIC_E_UNSUPPORTED,
              "CLIPImageProcessor", "not a Qwen2-VL");
    omnic_err_clear(&err);
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"size\": {\"shortest_edge\": 3136}}",
                        &p, &err),
              &err, OMNIC_E_INVALID, "size", "longest_edge");
    omnic_err_clear(&err);
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"size\": 448}", &p, &err), &err,
              OMNIC_E_INVALID, "size");
    omnic_err_clear(&err);
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"patch_size\": 0}", &p, &err), &err,
              OMNIC_E_INVALID, "patch_size");
    omnic_err_clear(&err);
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"merge_size\": 64}", &p, &err),
              &err, OMNIC_E_INVALID, "merge_size", "64");
    omnic_err_clear(&err);
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"min_pixels\": 5000, "
                        "\"max_pixels\": 4000}",
                        &p, &err),
              &err, OMNIC_E_INVALID, "preprocessor_config.json", "min_pixels 5000", "4000");
    omnic_err_clear(&err);
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"image_mean\": [0.5, 0.5]}", &p,
                        &err),
              &err, OMNIC_E_INVALID, "image_mean");
    omnic_err_clear(&err);
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"do_resize\": \"yes\"}", &p, &err),
              &err, OMNIC_E_INVALID, "do_resize");
    assert_int_equal(p.patch_size, 99); /* untouched by every failure */
}

/* An RGB image whose byte at (y, x, c) is (y * w + x) * 3 + c (mod 256). */
static omnic__image ramp(int64_t w, int64_t h)
{
    omnic__image img = {0};
    omnic_err err;
    assert_int_equal(omnic__image_alloc(&img, w, h, &err), OMNIC_OK);
    for (int64_t i = 0; i < w * h * 3; i++) img.data[i] = (uint8_t)(i % 256);
    return img;
}

static void test_layout(void **state)
{
    (void)state;
    /* 8 wide, 4 high, patch 2, merge 2, temporal 3, no resize and raw values: grid (1, 2, 4),
     * merge blocks (0, 0) and (0, 1) of 2x2 patches each. */
    omnic__qwen2vl_proc_params p;
    omnic__qwen2vl_proc_params_defaults(&p);
    p.do_resize = false;
    p.do_rescale = false;
    p.do_normalize = false;
    p.patch_size = 2;
    p.merge_size = 2;
    p.temporal_patch_size = 3;
    omnic__image img = ramp(8, 4);
    omnic__tensor *pv = NULL;
    omnic__qwen2vl_grid g;
    omnic_err err;
    omnic_err_clear(&err);
    assert_int_equal(omnic__qwen2vl_preprocess(&img, &p, &pv, &g, &err), OMNIC_OK);
    assert_int_equal(g.t, 1);
    assert_int_equal(g.h, 2);
    assert_int_equal(g.w, 4);
    assert_int_equal(g.n_tokens, 2);
    assert_int_equal(pv->ndim, 2);
    assert_int_equal(pv->dims[0], 8);
    assert_int_equal(pv->dims[1], 3 * 3 * 2 * 2);
    assert_string_equal(pv->name, "pixel_values");
    const float *v = pv->data;
#define AT(r, col) v[(r) * 36 + (col)]
#define PX(y, x, c) (float)((((y) * 8 + (x)) * 3 + (c)) % 256)
    /* row 0: patch (0, 0); row 1: patch (0, 1); row 2: patch (1, 0); row 4: block 1's patch (0, 2) */
    assert_true(AT(0, 0) == PX(0, 0, 0));
    assert_true(AT(0, 1) == PX(0, 1, 0));  /* dx */
    assert_true(AT(0, 2) == PX(1, 0, 0));  /* dy */
    assert_true(AT(0, 4) == PX(0, 0, 0));  /* frame 1 repeats frame 0 */
    assert_true(AT(0, 8) == PX(0, 0, 0));  /* frame 2 */
    assert_true(AT(0, 12) == PX(0, 0, 1)); /* channel 1 starts after 3 frames of 2x2 */
    assert_true(AT(0, 35) == PX(1, 1, 2));
    assert_true(AT(1, 0) == PX(0, 2, 0));
    assert_true(AT(2, 0) == PX(2, 0, 0));
    assert_true(AT(3, 3) == PX(3, 3, 0));
    assert_true(AT(4, 0) == PX(0, 4, 0));
    assert_true(AT(7, 27) == PX(3, 7, 2));
#undef AT
#undef PX
    omnic__tensor_destroy(pv);

    /* The normalised path goes through the torchvision LUT: value = (u8 - 255 mean) / (255 std). */
    omnic__qwen2vl_proc_params_defaults(&p);
    p.do_resize = false;
    omnic__image big = ramp(56, 28);
    omnic__norm_lut lut;
    assert_int_equal(omnic__norm_lut_init(&lut, OMNIC__NUMERICS_TORCHVISION, true, p.rescale_factor, true,
                                          p.image_mean, p.image_std, &err),
                     OMNIC_OK);
    assert_int_equal(omnic__qwen2vl_preprocess(&big, &p, &pv, &g, &err), OMNIC_OK);
    assert_int_equal(pv->dims[0], 8);
    assert_int_equal(pv->dims[1], 1176);
    v = pv->data;
    assert_true(v[0] == lut.v[0][0]);
    assert_true(v[1176 + 1] == lut.v[0][big.data[(0 * 56 + 15) * 3]]); /* row 1 = patch (0, 1), dx 1 */
    /* row 2 = patch (1, 0); column 2 * 196 + 14 = channel 1, frame 0, dy 1, dx 0 */
    assert_true(v[2 * 1176 + 2 * 196 + 14] == lut.v[1][big.data[(15 * 56 + 0) * 3 + 1]]);
    omnic__tensor_destroy(pv);
    omnic__image_deinit(&big);
    omnic__image_deinit(&img);
}

/* ---- allocation-failure sweep --------------------------------------------------------------- */

static omnic_status run_preprocess(void *ctx, omnic_err *err)
{
    const omnic__image *img = ctx;
    omnic__qwen2vl_proc_params p;
    omnic__qwen2vl_proc_params_defaults(&p);
    omnic__tensor *pv = NULL;
    omnic__qwen2vl_grid g = {.t = -7};
    omnic_status rc = omnic__qwen2vl_preprocess(img, &p, &pv, &g, err);
    if (rc != OMNIC_OK) {
        if (pv || g.t != -7) fail_msg("outputs touched on failure");
        return rc;
    }
    omnic__tensor_destroy(pv);
    return rc;
}

static void test_oom_sweep(void **state)
{
    (void)state;
    omnic__image img = ramp(100, 70);
    for (long n = 0; n < 1000; n++) {
        omnic_err err;
        omnic_err_clear(&err);
        omnic__alloc_fail_after(n);
        omnic_status rc = run_preprocess(&img, &err);
        long injected = omnic__alloc_injected_failures();
        omnic__alloc_fail_after(-1);
        if (rc == OMNIC_OK && injected == 0) {
            omnic__image_deinit(&img);
            return;
        }
        if (rc != OMNIC_E_NOMEM) fail_msg("fail after %ld: %s (%s)", n, omnic_status_name(rc), err.msg);
        assert_true(err.msg[0] != 0);
    }
    fail_msg("preprocess did not succeed within 1000 allocations");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smart_resize),
        cmocka_unit_test(test_params_and_bounds),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_oom_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
