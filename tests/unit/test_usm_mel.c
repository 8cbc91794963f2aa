/* Gemma 3n's log-mel features (mm/usm_mel.h) against Hugging Face's Gemma3nAudioFeatureExtractor:
 * the FLAC clips of tests/golden/audio_features decoded by omnic, the golden clip of
 * families-gemma-phi.md B2 and a 31 s clip (truncated to 30 s) given as f32 samples, must match
 * the recorded input_features within 1e-4 scaled (|a - b| <= 1e-4 * max(1, |b|)), with the frame
 * count and the mask's valid frames exact; a clip of <= 512 samples gives no frame (HF: empty
 * features) and is refused by name. Also: the parameter checks. Goldens: make_usm_goldens.py. */
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
#include "mm/audio.h"
#include "mm/usm_mel.h"

#define GOLDEN "tests/golden/usm_features"

/* Gemma3nAudioFeatureExtractor's defaults (the E2B preprocessor_config.json audio keys). */
static const omnic__usm_mel_params USM = {.sample_rate = 16000,
                                          .frame_length = 512,
                                          .hop_length = 160,
                                          .fft_length = 1024,
                                          .n_mels = 128,
                                          .preemphasis = 0.97,
                                          .htk_preemphasis = true,
                                          .input_scale = 1.0,
                                          .mel_min_hz = 125,
                                          .mel_max_hz = 7600,
                                          .mel_floor = 1e-5,
                                          .max_samples = 480000,
                                          .pad_multiple = 128};

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* The clip's samples: omnic's decoder for FLAC, the f32 array itself for .npy. */
static float *load_clip(const char *input, int64_t *n)
{
    omnic_err err;
    if (strstr(input, ".npy")) {
        omnic__tensor *t = NULL;
        if (omnic__npy_read(input, &t, &err) != OMNIC_OK) fail_msg("%s: %s", input, err.msg);
        *n = t->dims[0];
        float *x = malloc(sizeof(float) * (size_t)*n);
        memcpy(x, t->data, sizeof(float) * (size_t)*n);
        omnic__tensor_destroy(t);
        return x;
    }
    size_t len;
    uint8_t *file = read_all(input, &len);
    omnic__audio a;
    if (omnic__audio_decode(file, len, NULL, 16000, NULL, &a, &err) != OMNIC_OK)
        fail_msg("%s: %s", input, err.msg);
    free(file);
    *n = a.n;
    float *x = malloc(sizeof(float) * (size_t)a.n);
    memcpy(x, a.samples, sizeof(float) * (size_t)a.n);
    omnic__audio_deinit(&a);
    return x;
}

static void test_against_hf(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *meta = json_load_file(GOLDEN "/meta.json", 0, &jerr);
    if (!meta) fail_msg("%s: %s", GOLDEN "/meta.json", jerr.text);
    json_t *clips = json_object_get(meta, "clips");
    assert_true(json_object_size(clips) >= 12);
    omnic__usm_mel *m = NULL;
    omnic_err err;
    assert_int_equal(omnic__usm_mel_init(&m, &USM, &err), OMNIC_OK);
    const char *name;
    json_t *c;
    double worst = 0;
    json_object_foreach(clips, name, c)
    {
        int64_t n;
        float *x = load_clip(json_string_value(json_object_get(c, "input")), &n);
        assert_int_equal(n, json_integer_value(json_object_get(c, "samples")));
        int64_t valid, frames = omnic__usm_mel_frames(m, n, &valid);
        assert_int_equal(frames, json_integer_value(json_object_get(c, "frames")));
        if (frames == 0) {
            float out[128];
            assert_int_equal(omnic__usm_mel_compute(m, x, n, out, &err), OMNIC_E_INVALID);
            assert_non_null(strstr(err.msg, "is shorter than one 513-sample frame"));
            free(x);
            continue;
        }
        assert_int_equal(valid, json_integer_value(json_object_get(c, "valid_frames")));
        float *got = malloc(sizeof(float) * (size_t)frames * 128);
        assert_int_equal(omnic__usm_mel_compute(m, x, n, got, &err), OMNIC_OK);
        char path[512];
        snprintf(path, sizeof path, GOLDEN "/%s.npy", name);
        omnic__tensor *want = NULL;
        if (omnic__npy_read(path, &want, &err) != OMNIC_OK) fail_msg("%s: %s", path, err.msg);
        json_t *keep = json_object_get(c, "kept_frames");
        int64_t kept = json_is_array(keep) ? (int64_t)json_array_size(keep) : frames;
        assert_int_equal(want->dims[0], kept);
        assert_int_equal(want->dims[1], 128);
        const float *w = want->data;
        for (int64_t r = 0; r < kept; r++) {
            int64_t t = json_is_array(keep) ? json_integer_value(json_array_get(keep, (size_t)r)) : r;
            for (int j = 0; j < 128; j++) {
                double b = w[r * 128 + j], g = got[t * 128 + j], d = fabs(g - b) / fmax(1.0, fabs(b));
                if (d > worst) worst = d;
                if (d > 1e-4)
                    fail_msg("%s: frame %lld mel %d: omnic %.7g, Hugging Face %.7g", name, (long long)t, j, g, b);
            }
        }
        omnic__tensor_destroy(want);
        free(got);
        free(x);
    }
    print_message("usm log-mel vs Hugging Face: worst scaled difference %.3g over %zu clips\n", worst,
                  json_object_size(clips));
    omnic__usm_mel_free(m);
    json_decref(meta);
}

static void test_params(void **state)
{
    (void)state;
    omnic_err err;
    omnic__usm_mel *m = NULL;
    omnic__usm_mel_params p = USM;
    p.fft_length = 256;
    assert_int_equal(omnic__usm_mel_init(&m, &p, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "fft_length 256 is shorter than the frame (512)"));
    p = USM;
    p.mel_max_hz = 9000;
    assert_int_equal(omnic__usm_mel_init(&m, &p, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "0 <= min < max <= 8000"));
    p = USM;
    p.hop_length = 0;
    assert_int_equal(omnic__usm_mel_init(&m, &p, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "hop_length 0"));
    p = USM;
    const double bad[128] = {[5] = 0.0};
    p.per_bin_stddev = bad;
    assert_int_equal(omnic__usm_mel_init(&m, &p, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "per-bin mean / stddev [0]"));
    assert_int_equal(omnic__usm_mel_init(&m, &USM, &err), OMNIC_OK);
    /* frames of padded clips: 512 samples pad to 512 (no frame), 513 to 640 (one) */
    assert_int_equal(omnic__usm_mel_frames(m, 512, NULL), 0);
    assert_int_equal(omnic__usm_mel_frames(m, 513, NULL), 1);
    assert_int_equal(omnic__usm_mel_frames(m, 480000, NULL), 2997);
    assert_int_equal(omnic__usm_mel_frames(m, 10000000, NULL), 2997);
    assert_int_equal(omnic__usm_mel_kept(m, 10000000), 480000);
    /* samples far outside -1..1: infinite energies are refused, not passed on */
    float *big = malloc(sizeof(float) * 1024);
    for (int i = 0; i < 1024; i++)
        big[i] = i % 2 ? 3e38f : -3e38f;
    float out[128 * 4];
    assert_int_equal(omnic__usm_mel_compute(m, big, 1024, out, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "not finite"));
    free(big);
    omnic__usm_mel_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_hf), cmocka_unit_test(test_params)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
