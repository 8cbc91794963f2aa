/* Log-mel features (mm/fbank.h) against Hugging Face's Phi4MultimodalFeatureExtractor: the 11
 * clips of tests/golden/audio_features (0.025 s to 30 s; silence, clipping, near-floor noise, odd
 * lengths; FLAC decoded by omnic's own decoder) must match the recorded audio_input_features
 * within 1e-4 relative (|a - b| <= 1e-4 * max(1, |b|): a log near 0 is compared absolutely), and
 * the frame count and audio_embed_sizes (ceil(frames / 8)) exactly. Also: the parameter checks,
 * a clip shorter than one frame, and concurrent use of one bank. Goldens: make_audio_goldens.py. */
#include <math.h>
#include <pthread.h>
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
#include "mm/fbank.h"

#define GOLDEN "tests/golden/audio_features"

static const omnic__fbank_params PHI4 = {.sample_rate = 16000,
                                         .win_length = 400,
                                         .hop_length = 160,
                                         .n_fft = 512,
                                         .n_mels = 80,
                                         .preemphasis = 0.97,
                                         .scale = 32768,
                                         .mel_min_hz = 0,
                                         .mel_max_hz = 7690,
                                         .log_floor = 1.0};

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

static void test_against_hf(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *meta = json_load_file(GOLDEN "/meta.json", 0, &jerr);
    if (!meta) fail_msg("%s: %s", GOLDEN "/meta.json", jerr.text);
    json_t *clips = json_object_get(meta, "clips");
    assert_true(json_object_size(clips) >= 10);
    omnic__fbank *fb = NULL;
    omnic_err err;
    assert_int_equal(omnic__fbank_init(&fb, &PHI4, &err), OMNIC_OK);
    const char *name;
    json_t *c;
    double worst = 0;
    json_object_foreach(clips, name, c)
    {
        char path[512];
        snprintf(path, sizeof path, GOLDEN "/%s.flac", name);
        size_t len;
        uint8_t *file = read_all(path, &len);
        omnic__audio a;
        if (omnic__audio_decode(file, len, NULL, 16000, NULL, &a, &err) != OMNIC_OK)
            fail_msg("%s: %s", name, err.msg);
        free(file);
        assert_int_equal(a.n, json_integer_value(json_object_get(c, "samples")));
        int64_t frames = omnic__fbank_frames(fb, a.n);
        assert_int_equal(frames, json_integer_value(json_object_get(c, "frames")));
        assert_int_equal((frames + 7) / 8, json_integer_value(json_object_get(c, "embed_size")));
        float *got = malloc(sizeof(float) * (size_t)frames * 80);
        assert_int_equal(omnic__fbank_compute(fb, a.samples, a.n, got, &err), OMNIC_OK);
        snprintf(path, sizeof path, GOLDEN "/%s.npy", name);
        omnic__tensor *want = NULL;
        if (omnic__npy_read(path, &want, &err) != OMNIC_OK) fail_msg("%s: %s", path, err.msg);
        json_t *keep = json_object_get(c, "kept_frames");
        int64_t kept = json_is_array(keep) ? (int64_t)json_array_size(keep) : frames;
        assert_int_equal(want->dims[0], kept);
        assert_int_equal(want->dims[1], 80);
        const float *w = want->data;
        for (int64_t r = 0; r < kept; r++) {
            int64_t t = json_is_array(keep) ? json_integer_value(json_array_get(keep, (size_t)r)) : r;
            for (int m = 0; m < 80; m++) {
                double b = w[r * 80 + m], g = got[t * 80 + m];
                double d = fabs(g - b) / fmax(1.0, fabs(b));
                if (d > worst) worst = d;
                if (d > 1e-4)
                    fail_msg("%s: frame %lld mel %d: omnic %.7g, Hugging Face %.7g", name, (long long)t, m, g,
                             b);
            }
        }
        omnic__tensor_destroy(want);
        free(got);
        omnic__audio_deinit(&a);
    }
    print_message("log-mel vs Hugging Face: worst scaled difference %.3g over %zu clips\n", worst,
                  json_object_size(clips));
    omnic__fbank_free(fb);
    json_decref(meta);
}

static void test_params_and_short(void **state)
{
    (void)state;
    omnic_err err;
    omnic__fbank *fb = NULL;
    omnic__fbank_params p = PHI4;
    p.n_fft = 256;
    assert_int_equal(omnic__fbank_init(&fb, &p, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "n_fft 256 must be even and >= win_length 400"));
    p = PHI4;
    p.mel_max_hz = 9000;
    assert_int_equal(omnic__fbank_init(&fb, &p, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "0 <= min < max <= 8000"));
    p = PHI4;
    p.hop_length = 0;
    assert_int_equal(omnic__fbank_init(&fb, &p, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "hop_length 0"));
    p = PHI4;
    p.log_floor = 0;
    assert_int_equal(omnic__fbank_init(&fb, &p, &err), OMNIC_E_INVALID);
    assert_int_equal(omnic__fbank_init(&fb, &PHI4, &err), OMNIC_OK);
    float x[399] = {0}, out[80];
    assert_int_equal(omnic__fbank_frames(fb, 399), 0);
    assert_int_equal(omnic__fbank_frames(fb, 400), 1);
    assert_int_equal(omnic__fbank_frames(fb, 559), 1);
    assert_int_equal(omnic__fbank_frames(fb, 560), 2);
    assert_int_equal(omnic__fbank_compute(fb, x, 399, out, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "audio of 399 samples (0.0249 s) is shorter than one 400-sample frame"));
    /* samples far outside -1..1: infinite energies are refused, not passed on */
    float big[400];
    for (int i = 0; i < 400; i++)
        big[i] = i % 2 ? 1e30f : -1e30f;
    assert_int_equal(omnic__fbank_compute(fb, big, 400, out, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "not finite"));
    omnic__fbank_free(fb);
}

/* ---- one bank, several threads: the same features as alone ------------------------------- */

typedef struct worker {
    const omnic__fbank *fb;
    const float *x;
    int64_t n;
    float *out;
    omnic_status rc;
} worker;

static void *run_worker(void *arg)
{
    worker *w = arg;
    omnic_err err;
    w->rc = omnic__fbank_compute(w->fb, w->x, w->n, w->out, &err);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    omnic_err err;
    omnic__fbank *fb = NULL;
    assert_int_equal(omnic__fbank_init(&fb, &PHI4, &err), OMNIC_OK);
    enum { N = 48000, T = 4 };
    float *x = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++)
        x[i] = (float)(0.3 * sin(i * 0.05) + 0.1 * sin(i * 1.3));
    int64_t frames = omnic__fbank_frames(fb, N);
    float *alone = malloc(sizeof(float) * (size_t)frames * 80);
    assert_int_equal(omnic__fbank_compute(fb, x, N, alone, &err), OMNIC_OK);
    worker w[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        w[i] = (worker){fb, x, N, malloc(sizeof(float) * (size_t)frames * 80), OMNIC_E_INTERNAL};
        pthread_create(&th[i], NULL, run_worker, &w[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, OMNIC_OK);
        assert_memory_equal(w[i].out, alone, sizeof(float) * (size_t)frames * 80);
        free(w[i].out);
    }
    free(alone);
    free(x);
    omnic__fbank_free(fb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_hf),
        cmocka_unit_test(test_params_and_short),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
