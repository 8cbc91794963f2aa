/* M-RoPE prefill positions (HF Qwen2VLModel.get_rope_index for text + images) and the decode rule:
 * position tables and rope deltas worked out by hand from HF's segment walk (text only, one image,
 * two images, image first / last, a grid with t = 2, the 17x23 example of the reference notes), and
 * random prompts against a literal port of HF's loop, the processor's <|image_pad|> expansion, and
 * every refusal: placeholder counts that do not match the grids, pads not after <|vision_start|>,
 * video placeholders, bad grids, decode coordinates out of range. */
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
#include "models/mrope.h"

#define VS 151652 /* <|vision_start|> */
#define VE 151653 /* <|vision_end|> */
#define PAD 151655 /* <|image_pad|> */
#define VID 151656 /* <|video_pad|> */

static const omnic__mrope_spec SPEC = {.image_token_id = PAD, .vision_start_token_id = VS, .video_token_id = VID,
                                       .spatial_merge_size = 2};

/* CHECK_ERR(rc, &err, code, substrings...): io_testutil.h's check, with err as a pointer. */
#define CHECK_ERR(rc, errp, code, ...)                                                                       \
    tu_check_err((rc), (errp), (code), __FILE__, __LINE__, (const char *const[]){__VA_ARGS__, NULL})

/* Runs omnic__mrope_positions and compares with the expected [3, n] table and delta. */
static void expect_positions(const int32_t *ids, int64_t n, const int64_t *grids, int64_t n_images,
                             const int32_t *want, int64_t want_delta, const char *file, int line)
{
    int32_t *pos = calloc((size_t)(3 * n), sizeof *pos);
    assert_non_null(pos);
    int64_t delta = 12345;
    omnic_err err;
    omnic_err_clear(&err);
    omnic_status rc = omnic__mrope_positions(ids, n, grids, n_images, &SPEC, pos, &delta, &err);
    if (rc != OMNIC_OK) {
        print_error("%s:%d: %s\n", file, line, err.msg);
        free(pos);
        _fail(file, line);
    }
    for (int64_t i = 0; i < 3 * n; i++) {
        if (pos[i] != want[i]) {
            print_error("%s:%d: axis %lld token %lld: got %d, want %d\n", file, line, (long long)(i / n),
                        (long long)(i % n), pos[i], want[i]);
            free(pos);
            _fail(file, line);
        }
    }
    free(pos);
    if (delta != want_delta) {
        print_error("%s:%d: rope_delta %lld, want %lld\n", file, line, (long long)delta, (long long)want_delta);
        _fail(file, line);
    }
}
#define EXPECT_POSITIONS(ids, grids, n_images, want, delta)                                                       \
    expect_positions((ids), (int64_t)(sizeof(ids) / sizeof((ids)[0])), (grids), (n_images), (want), (delta),    \
                     __FILE__, __LINE__)

static void test_text_only(void **state)
{
    (void)state;
    const int32_t ids[] = {9707, 11, 1879, 0, 151645};
    const int32_t want[] = {0, 1, 2, 3, 4, /* T */ 0, 1, 2, 3, 4, /* H */ 0, 1, 2, 3, 4 /* W */};
    EXPECT_POSITIONS(ids, NULL, 0, want, 0);
    /* <|vision_start|> not followed by a pad is text (HF counts images by vision_start + pad). */
    const int32_t ids2[] = {VS, 5, VE};
    const int32_t want2[] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
    EXPECT_POSITIONS(ids2, NULL, 0, want2, 0);
}

static void test_one_image(void **state)
{
    (void)state;
    /* grid (1, 4, 4), merge 2 -> 2x2 = 4 tokens; text [0, 1], image at cur = 2, next at 2 + max(1, 2, 2). */
    const int32_t ids[] = {10, VS, PAD, PAD, PAD, PAD, VE, 11};
    const int64_t grid[] = {1, 4, 4};
    const int32_t want[] = {
        0, 1, 2, 2, 2, 2, 4, 5, /* T */
        0, 1, 2, 2, 3, 3, 4, 5, /* H */
        0, 1, 2, 3, 2, 3, 4, 5, /* W */
    };
    EXPECT_POSITIONS(ids, grid, 1, want, 6 - 8);
}

static void test_two_images_image_first(void **state)
{
    (void)state;
    /* image 0: grid (1, 4, 6) -> 2 x 3 = 6 tokens; image 1: grid (1, 2, 4) -> 1 x 2 = 2 tokens. */
    const int32_t ids[] = {VS, PAD, PAD, PAD, PAD, PAD, PAD, VE, 7, VS, PAD, PAD, VE};
    const int64_t grids[] = {1, 4, 6, 1, 2, 4};
    const int32_t want[] = {
        0, 1, 1, 1, 1, 1, 1, 4, 5, 6, 7, 7, 9, /* T */
        0, 1, 1, 1, 2, 2, 2, 4, 5, 6, 7, 7, 9, /* H */
        0, 1, 2, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, /* W */
    };
    EXPECT_POSITIONS(ids, grids, 2, want, 10 - 13);
}

static void test_image_last(void **state)
{
    (void)state;
    const int32_t ids[] = {5, 6, VS, PAD, PAD, PAD, PAD};
    const int64_t grid[] = {1, 4, 4};
    const int32_t want[] = {
        0, 1, 2, 3, 3, 3, 3, /* T */
        0, 1, 2, 3, 3, 4, 4, /* H */
        0, 1, 2, 3, 4, 3, 4, /* W */
    };
    EXPECT_POSITIONS(ids, grid, 1, want, 5 - 7);
    /* Tall image (1, 6, 2) -> 3 x 1: the height axis sets the advance. */
    const int32_t ids2[] = {VS, PAD, PAD, PAD, VE};
    const int64_t grid2[] = {1, 6, 2};
    const int32_t want2[] = {
        0, 1, 1, 1, 4, /* T */
        0, 1, 2, 3, 4, /* H */
        0, 1, 1, 1, 4, /* W */
    };
    EXPECT_POSITIONS(ids2, grid2, 1, want2, 5 - 5);
}

static void test_temporal_grid(void **state)
{
    (void)state;
    /* t = 2 (Qwen2-VL: temporal index tt), grid (2, 2, 2) -> 2 x 1 x 1 tokens. */
    const int32_t ids[] = {VS, PAD, PAD, VE};
    const int64_t grid[] = {2, 2, 2};
    const int32_t want[] = {0, 1, 2, 3, /* T */ 0, 1, 1, 3, /* H */ 0, 1, 1, 3 /* W */};
    EXPECT_POSITIONS(ids, grid, 1, want, 4 - 4);
}

static void test_reference_example(void **state)
{
    (void)state;
    /* Reference notes 8.1: a 17 x 23 merged grid (640x480 on Qwen2-VL-2B): <|vision_end|> gets P + 23,
     * delta = 23 - 391 = -368 wherever the image starts. */
    enum { N = 391, T = N + 4 };
    int32_t ids[T];
    ids[0] = 100;
    ids[1] = VS;
    for (int i = 0; i < N; i++) ids[2 + i] = PAD;
    ids[2 + N] = VE;
    ids[3 + N] = 101;
    const int64_t grid[] = {1, 34, 46};
    int32_t pos[3 * T];
    int64_t delta = 0;
    omnic_err err;
    omnic_err_clear(&err);
    assert_int_equal(omnic__mrope_positions(ids, T, grid, 1, &SPEC, pos, &delta, &err), OMNIC_OK);
    const int P = 2;
    assert_int_equal(delta, -368);
    for (int a = 0; a < 3; a++) assert_int_equal(pos[a * T + 2 + N], P + 23);
    /* last image token: row 16, column 22 */
    assert_int_equal(pos[0 * T + 1 + N], P);
    assert_int_equal(pos[1 * T + 1 + N], P + 16);
    assert_int_equal(pos[2 * T + 1 + N], P + 22);
    /* token 2 + 23 starts row 1 */
    assert_int_equal(pos[1 * T + 2 + 23], P + 1);
    assert_int_equal(pos[2 * T + 2 + 23], P);
}

static void test_refusals(void **state)
{
    (void)state;
    int32_t pos[64];
    int64_t delta = 0;
    omnic_err err;
    const int64_t g44[] = {1, 4, 4, 1, 4, 4};
    {
        /* two grids, one run */
        const int32_t ids[] = {VS, PAD, PAD, PAD, PAD, VE};
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 6, g44, 2, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "2 image grids given", "1 image placeholder runs");
    }
    {
        /* a run shorter than its grid needs */
        const int32_t ids[] = {VS, PAD, PAD, PAD, VE};
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 5, g44, 1, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "has 3 placeholder tokens", "needs 4");
    }
    {
        /* a run longer than its grid needs (two images' pads with no <|vision_start|> between) */
        const int32_t ids[] = {VS, PAD, PAD, PAD, PAD, PAD, PAD, PAD, PAD, VE};
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 10, g44, 2, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "has 8 placeholder tokens", "needs 4");
    }
    {
        /* more runs than grids */
        const int32_t ids[] = {VS, PAD, PAD, PAD, PAD, VE, VS, PAD, PAD, PAD, PAD, VE};
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 12, g44, 1, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "run 2", "only 1 image grids");
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 2, NULL, 0, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "only 0 image grids");
    }
    {
        /* pads not right after <|vision_start|> */
        const int32_t ids[] = {5, PAD, PAD, PAD, PAD};
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 5, g44, 1, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "token 1", "does not follow <|vision_start|>");
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids + 1, 4, g44, 1, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "token 0");
    }
    {
        /* video placeholders */
        const int32_t ids[] = {VS, VID, VID, VE};
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 4, NULL, 0, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "token 1 is a video placeholder");
    }
    {
        /* bad grids and sizes */
        const int32_t ids[] = {VS, PAD, PAD, PAD, PAD, VE};
        const int64_t odd[] = {1, 4, 5};
        const int64_t zero[] = {0, 4, 4};
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 6, odd, 1, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "image 0 has grid (t, h, w) = (1, 4, 5)");
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 6, zero, 1, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "(0, 4, 4)");
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 0, NULL, 0, &SPEC, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "0 tokens");
        omnic__mrope_spec bad = SPEC;
        bad.spatial_merge_size = 0;
        omnic_err_clear(&err);
        CHECK_ERR(omnic__mrope_positions(ids, 6, g44, 1, &bad, pos, &delta, &err), &err, OMNIC_E_INVALID,
                  "spatial_merge_size 0");
    }
    {
        /* video check off: the id is plain text */
        omnic__mrope_spec novid = SPEC;
        novid.video_token_id = -1;
        const int32_t ids[] = {VID, VID};
        omnic_err_clear(&err);
        assert_int_equal(omnic__mrope_positions(ids, 2, NULL, 0, &novid, pos, &delta, &err), OMNIC_OK);
        assert_int_equal(delta, 0);
        assert_int_equal(pos[1], 1);
    }
}

/* A literal port of HF's get_rope_index loop (index search for the next pad from st, st_idx =
 * previous segment's max + 1, llm_positions.max() + 1 - len) as an oracle for random prompts. */
static int64_t hf_rope_index(const int32_t *ids, int64_t n, const int64_t *grids, int32_t *pos)
{
    int64_t image_nums = 0;
    for (int64_t i = 0; i + 1 < n; i++) image_nums += ids[i] == VS && ids[i + 1] == PAD;
    int64_t st = 0, prev_max = -1, all_max = -1;
    for (int64_t k = 0; k < image_nums; k++) {
        int64_t ed = st;
        while (ids[ed] != PAD) ed++;
        const int64_t text_len = ed - st, st_idx = prev_max + 1;
        for (int64_t j = 0; j < text_len; j++)
            for (int a = 0; a < 3; a++) pos[a * n + st + j] = (int32_t)(st_idx + j);
        const int64_t t = grids[3 * k], h = grids[3 * k + 1] / 2, w = grids[3 * k + 2] / 2;
        int64_t idx = ed;
        prev_max = -1;
        for (int64_t tt = 0; tt < t; tt++)
            for (int64_t r = 0; r < h; r++)
                for (int64_t c = 0; c < w; c++, idx++) {
                    const int64_t v[3] = {st_idx + text_len + tt, st_idx + text_len + r, st_idx + text_len + c};
                    for (int a = 0; a < 3; a++) {
                        pos[a * n + idx] = (int32_t)v[a];
                        if (v[a] > prev_max) prev_max = v[a];
                    }
                }
        st = ed + t * h * w;
    }
    if (st < n) {
        const int64_t st_idx = prev_max + 1;
        for (int64_t j = 0; j < n - st; j++)
            for (int a = 0; a < 3; a++) pos[a * n + st + j] = (int32_t)(st_idx + j);
    }
    for (int64_t i = 0; i < 3 * n; i++)
        if (pos[i] > all_max) all_max = pos[i];
    return all_max + 1 - n;
}

static void test_random_prompts_vs_hf_loop(void **state)
{
    (void)state;
    enum { MAXN = 4096 };
    int32_t *ids = malloc(MAXN * sizeof *ids), *got = malloc(3 * MAXN * sizeof *got),
            *want = malloc(3 * MAXN * sizeof *want);
    assert_non_null(ids);
    assert_non_null(got);
    assert_non_null(want);
    uint64_t rng = 0x9e3779b97f4a7c15u;
#define NEXT() (rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17, rng)
    for (int trial = 0; trial < 500; trial++) {
        int64_t n = 0, grids[3 * 8];
        const int n_images = (int)(NEXT() % 5);
        for (int k = 0; k <= n_images; k++) {
            const int text = (int)(NEXT() % 6) + (k == 0 ? 0 : 1);
            for (int j = 0; j < text; j++) ids[n++] = (int32_t)(NEXT() % 1000);
            if (k == n_images) break;
            const int64_t t = 1 + (int64_t)(NEXT() % 2), h = 2 * (1 + (int64_t)(NEXT() % 7)),
                          w = 2 * (1 + (int64_t)(NEXT() % 7));
            grids[3 * k] = t;
            grids[3 * k + 1] = h;
            grids[3 * k + 2] = w;
            ids[n++] = VS;
            for (int64_t j = 0; j < t * (h / 2) * (w / 2); j++) ids[n++] = PAD;
            if (NEXT() % 4 != 0) ids[n++] = VE; /* sometimes two images back to back */
        }
        if (n == 0) ids[n++] = 42;
        omnic_err err;
        omnic_err_clear(&err);
        int64_t delta = 0;
        omnic_status rc = omnic__mrope_positions(ids, n, grids, n_images, &SPEC, got, &delta, &err);
        if (rc != OMNIC_OK) print_error("trial %d: %s\n", trial, err.msg);
        assert_int_equal(rc, OMNIC_OK);
        const int64_t want_delta = hf_rope_index(ids, n, grids, want);
        assert_int_equal(delta, want_delta);
        assert_memory_equal(got, want, (size_t)(3 * n) * sizeof *got);
    }
#undef NEXT
    free(ids);
    free(got);
    free(want);
}

static void test_expand_image_pads(void **state)
{
    (void)state;
    /* one placeholder per image -> N copies; the result feeds the one-image table above */
    const int32_t logical[] = {10, VS, PAD, VE, 11};
    const int64_t n_tokens[] = {4};
    int32_t *ex = NULL;
    int64_t n = -1;
    omnic_err err;
    omnic_err_clear(&err);
    assert_int_equal(omnic__mrope_expand_image_pads(logical, 5, n_tokens, 1, PAD, &ex, &n, &err), OMNIC_OK);
    const int32_t want[] = {10, VS, PAD, PAD, PAD, PAD, VE, 11};
    assert_int_equal(n, 8);
    assert_memory_equal(ex, want, sizeof want);
    int32_t pos[24];
    int64_t delta = 0;
    const int64_t grid[] = {1, 4, 4};
    assert_int_equal(omnic__mrope_positions(ex, n, grid, 1, &SPEC, pos, &delta, &err), OMNIC_OK);
    assert_int_equal(delta, -2);
    omnic_free(ex);

    /* two images of different sizes, image last; text only */
    const int32_t logical2[] = {VS, PAD, VE, 7, VS, PAD};
    const int64_t n2[] = {2, 3};
    assert_int_equal(omnic__mrope_expand_image_pads(logical2, 6, n2, 2, PAD, &ex, &n, &err), OMNIC_OK);
    const int32_t want2[] = {VS, PAD, PAD, VE, 7, VS, PAD, PAD, PAD};
    assert_int_equal(n, 9);
    assert_memory_equal(ex, want2, sizeof want2);
    omnic_free(ex);
    const int32_t text[] = {1, 2, 3};
    assert_int_equal(omnic__mrope_expand_image_pads(text, 3, NULL, 0, PAD, &ex, &n, &err), OMNIC_OK);
    assert_int_equal(n, 3);
    assert_memory_equal(ex, text, sizeof text);
    omnic_free(ex);

    /* refusals leave the outputs alone */
    ex = NULL;
    n = -1;
    CHECK_ERR(omnic__mrope_expand_image_pads(logical2, 6, n2, 1, PAD, &ex, &n, &err), &err, OMNIC_E_INVALID,
              "2 image placeholders", "1 images");
    omnic_err_clear(&err);
    const int64_t zero[] = {2, 0};
    CHECK_ERR(omnic__mrope_expand_image_pads(logical2, 6, zero, 2, PAD, &ex, &n, &err), &err, OMNIC_E_INVALID,
              "image 1 has 0 tokens");
    omnic_err_clear(&err);
    const int64_t huge[] = {INT32_MAX, 2};
    CHECK_ERR(omnic__mrope_expand_image_pads(logical2, 6, huge, 2, PAD, &ex, &n, &err), &err, OMNIC_E_TOO_LARGE,
              "2147483647");
    omnic_err_clear(&err);
    omnic__alloc_fail_after(0);
    CHECK_ERR(omnic__mrope_expand_image_pads(logical2, 6, n2, 2, PAD, &ex, &n, &err), &err, OMNIC_E_NOMEM,
              "9 tokens");
    omnic__alloc_fail_after(-1);
    assert_null(ex);
    assert_int_equal(n, -1);
}

static void test_decode_rule(void **state)
{
    (void)state;
    int32_t out[3] = {-1, -1, -1};
    omnic_err err;
    omnic_err_clear(&err);
    /* one image example: prefill of 8 tokens, delta -2: the first decoded token is at 8 - 2 = 6 */
    assert_int_equal(omnic__mrope_decode_position(8, -2, out, &err), OMNIC_OK);
    assert_int_equal(out[0], 6);
    assert_int_equal(out[1], 6);
    assert_int_equal(out[2], 6);
    assert_int_equal(omnic__mrope_decode_position(395, -368, out, &err), OMNIC_OK);
    assert_int_equal(out[2], 27);
    assert_int_equal(omnic__mrope_decode_position(5, 0, out, &err), OMNIC_OK);
    assert_int_equal(out[1], 5);
    CHECK_ERR(omnic__mrope_decode_position(3, -4, out, &err), &err, OMNIC_E_INVALID, "cache length 3",
              "rope_delta -4");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__mrope_decode_position(-1, 0, out, &err), &err, OMNIC_E_INVALID, "cache length -1");
    omnic_err_clear(&err);
    CHECK_ERR(omnic__mrope_decode_position((int64_t)INT32_MAX, 1, out, &err), &err, OMNIC_E_INVALID,
              "2147483647");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_only),
        cmocka_unit_test(test_one_image),
        cmocka_unit_test(test_two_images_image_first),
        cmocka_unit_test(test_image_last),
        cmocka_unit_test(test_temporal_grid),
        cmocka_unit_test(test_reference_example),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_random_prompts_vs_hf_loop),
        cmocka_unit_test(test_expand_image_pads),
        cmocka_unit_test(test_decode_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
