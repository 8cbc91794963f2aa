/* The media family interface (models/media.h) without a model: processor selection by the
 * config's image_processor_type, per-call pixel bounds, kwargs refused by fixed-size
 * processors, item copies. (With models: test_engine.c, test_vision.c and the e2e tests.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "io_testutil.h"

#include "models/family.h"
#include "models/media.h"

static void test_processor_selection(void **state)
{
    (void)state;
    omnic_err err;
    omnic__media_proc p;
    json_t *q = tu_json(
        "{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"min_pixels\": 3136, "
        "\"max_pixels\": 12845056, \"patch_size\": 14, \"temporal_patch_size\": 2, \"merge_size\": 2}");
    assert_int_equal(omnic__media_proc_from_config(&p, q, "q.json", OMNIC_MODALITY_IMAGE, NULL, NULL, &err),
                     OMNIC_OK);
    assert_ptr_equal(p.ops, &omnic__media_qwen2vl_image);
    assert_int_equal(omnic__media_proc_max_pixels(&p, false), 12845056);
    /* a request's bounds: within the processor's, else refused naming both numbers */
    omnic__media_proc r;
    omnic__media_kwargs kw = {.max_pixels = 802816};
    assert_int_equal(omnic__media_proc_with(&r, &p, &kw, &err), OMNIC_OK);
    assert_int_equal(omnic__media_proc_max_pixels(&r, false), 802816);
    assert_int_equal(omnic__media_proc_max_pixels(&r, true), 12845056);
    omnic__media_proc_deinit(&r);
    kw.max_pixels = 99999999;
    assert_int_equal(omnic__media_proc_with(&r, &p, &kw, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "99999999 pixels is over this server's limit of 12845056"));
    omnic__media_proc_deinit(&p);
    /* per-call bounds as processor arguments (no model: may exceed the config's) */
    omnic__media_kwargs call = {.min_pixels = 1000, .max_pixels = 20000000};
    assert_int_equal(omnic__media_proc_from_config(&p, q, "q.json", OMNIC_MODALITY_IMAGE, "pil", &call, &err),
                     OMNIC_OK);
    assert_int_equal(omnic__media_proc_max_pixels(&p, false), 20000000);
    omnic__media_proc_deinit(&p);
    json_decref(q);

    json_t *c = tu_json("{\"image_processor_type\": \"CLIPImageProcessor\", \"crop_size\": 32, \"size\": 32}");
    assert_int_equal(omnic__media_proc_from_config(&p, c, "c.json", OMNIC_MODALITY_IMAGE, NULL, NULL, &err),
                     OMNIC_OK);
    assert_ptr_equal(p.ops, &omnic__media_clip_image);
    assert_int_equal(omnic__media_proc_max_pixels(&p, false), 0); /* fixed size */
    kw = (omnic__media_kwargs){.max_pixels = 50000};
    assert_int_equal(omnic__media_proc_with(&r, &p, &kw, &err), OMNIC_E_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "min_pixels / max_pixels"));
    omnic__media_proc_deinit(&p);
    assert_int_equal(omnic__media_proc_from_config(&p, c, "c.json", OMNIC_MODALITY_IMAGE, NULL, &call, &err),
                     OMNIC_E_UNSUPPORTED);
    assert_int_equal(omnic__media_proc_from_config(&p, c, "c.json", OMNIC_MODALITY_IMAGE, "fast", NULL, &err),
                     OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "pil or torchvision"));
    /* no audio processor table exists yet */
    assert_int_equal(omnic__media_proc_from_config(&p, c, "c.json", OMNIC_MODALITY_AUDIO, NULL, NULL, &err),
                     OMNIC_E_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "audio"));
    json_decref(c);
}

static void test_item_copy_and_names(void **state)
{
    (void)state;
    omnic_err err;
    omnic__media_item a = {.modality = OMNIC_MODALITY_IMAGE, .has_grid = true, .grid = {1, 2, 4}, .rows = 2};
    int64_t d[2] = {8, 3};
    assert_int_equal(omnic__tensor_create(&a.input, OMNIC_DTYPE_F32, 2, d, &err), OMNIC_OK);
    for (int i = 0; i < 24; i++)
        ((float *)a.input->data)[i] = (float)i;
    omnic__media_item b;
    assert_int_equal(omnic__media_item_copy(&b, &a, &err), OMNIC_OK);
    assert_ptr_not_equal(a.input, b.input);
    assert_memory_equal(a.input->data, b.input->data, 24 * sizeof(float));
    assert_int_equal(b.grid[2], 4);
    omnic__media_item_deinit(&a);
    assert_null(a.input);
    omnic__media_item_deinit(&b);
    omnic__media_item_deinit(NULL);
    assert_string_equal(omnic__modality_name(OMNIC_MODALITY_AUDIO), "audio");
    assert_string_equal(omnic__modality_name(OMNIC_MODALITY_COUNT), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_processor_selection),
                                       cmocka_unit_test(test_item_copy_and_names)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
