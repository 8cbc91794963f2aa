/* Qwen3-VL's learned position table interpolated to each image's grid (omnic__qvit_pos_embeds,
 * computed on the host and fed to vision.encode as "pos_embeds") against Hugging Face's
 * Qwen3VLVisionModel.fast_pos_embed_interpolate: tests/golden/<case>/pos_embeds[_i].npy, written
 * by tools/hf_golden/make_goldens.py (transformers 4.57.6), on each golden's own tiny checkpoint
 * rebuilt with the mktiny command in its meta.json. Grids of 2x2, 4x4 and 6x4 patches against
 * the 4x4 table: linspace corners, truncation, the clamped ceiling, the merge-block row order. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_testutil.h"

#include "core/alloc.h"
#include "core/npy.h"
#include "models/model.h"
#include "models/qwen2vl_media.h"

static char tmp[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/omnic-test-qvitpos-XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return mt_rmdir(tmp);
}

static omnic__tensor *load_npy(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    omnic__tensor *t = NULL;
    omnic_err err;
    omnic_status s = omnic__npy_read(path, &t, &err);
    if (s != OMNIC_OK) fprintf(stderr, "%s: %s\n", path, err.msg);
    assert_int_equal(s, OMNIC_OK);
    return t;
}

/* One golden case: rebuild its checkpoint, interpolate its grids, compare every image's rows. */
static void check_case(const char *gcase)
{
    char gdir[256], meta_path[300], model[256];
    snprintf(gdir, sizeof gdir, "tests/golden/%s", gcase);
    snprintf(meta_path, sizeof meta_path, "%s/meta.json", gdir);
    json_error_t je;
    json_t *meta = json_load_file(meta_path, 0, &je);
    assert_non_null(meta);
    const char *cmd = json_string_value(json_object_get(json_object_get(meta, "mktiny"), "command"));
    assert_non_null(cmd);
    const char *out = strstr(cmd, "--out DIR");
    assert_non_null(out); /* "tools/mktiny.py FLAGS --out DIR" */
    snprintf(model, sizeof model, "%s/%s", tmp, gcase);
    sh(PY " %.*s--out %s >/dev/null", (int)(out - cmd), cmd, model);
    omnic__model_opts o = {.backend = "ref", .threads = 1, .ctx = 256};
    omnic__model *m = NULL;
    omnic_err err;
    omnic_status s = omnic__model_open(model, &o, &m, &err);
    if (s != OMNIC_OK) fprintf(stderr, "open %s: %s\n", model, err.msg);
    assert_int_equal(s, OMNIC_OK);
    const omnic__qwen2vl_media *qm = omnic__qwen2vl_media_of(m);
    assert_non_null(qm);
    const omnic__qvit *v = qm->qvit;
    assert_int_equal(v->cfg.arch, OMNIC_QVIT_QWEN3_VL);
    omnic__tensor *grid = load_npy(gdir, "image_grid_thw"); /* i32 [n, 3] */
    const int n = (int)grid->dims[0];
    int64_t grids[3 * 8], rows = 0;
    assert_true(n >= 1 && n <= 8);
    for (int i = 0; i < 3 * n; i++)
        grids[i] = ((const int32_t *)grid->data)[i];
    for (int i = 0; i < n; i++)
        rows += grids[3 * i] * grids[3 * i + 1] * grids[3 * i + 2];
    const int64_t C = v->cfg.hidden;
    float *pe = omnic_alloc_array((size_t)(rows * C), sizeof *pe);
    assert_non_null(pe);
    omnic__qvit_pos_embeds(v, grids, n, pe);
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        char name[32];
        if (n > 1)
            snprintf(name, sizeof name, "pos_embeds_%d", i);
        else
            snprintf(name, sizeof name, "pos_embeds");
        omnic__tensor *want = load_npy(gdir, name);
        const int64_t ri = grids[3 * i] * grids[3 * i + 1] * grids[3 * i + 2];
        assert_int_equal(want->dims[0], ri);
        assert_int_equal(want->dims[1], C);
        double rel = max_rel(pe + off * C, want->data, ri * C);
        printf("%s %s [%lld, %lld]: max rel %.3g\n", gcase, name, (long long)ri, (long long)C, rel);
        assert_true(rel <= 1e-6);
        off += ri;
        omnic__tensor_destroy(want);
    }
    omnic_free(pe);
    omnic__tensor_destroy(grid);
    omnic__model_close(m);
    json_decref(meta);
}

static void test_pos_embeds_match_hf(void **state)
{
    (void)state;
    static const char *const cases[] = {"qwen3_vl-f32-1img", "qwen3_vl-f32-2img", "qwen3_vl-bf16-2img",
                                        "qwen3_vl_moe-f32-2img"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(cases[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pos_embeds_match_hf),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
