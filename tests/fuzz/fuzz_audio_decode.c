/* libFuzzer target for audio decode (WAV, FLAC, MP3, Ogg Vorbis/Opus through libsndfile, format
 * sniffing, the mono downmix and libsoxr resampling). Any input must give OMNIC_OK with a
 * well-formed clip or an error with a message, never a crash, a leak, a non-finite sample or a
 * buffer past the limits: the duration limit is lowered to 2 s so that the fuzzer's memory and
 * time per input stay small. Every decoded clip is resampled to 16 kHz, as a model would ask,
 * and its log-mel features computed by both extractors (Phi-4-multimodal's and Gemma 3n's):
 * finite, or a clear error. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mm/audio.h"
#include "mm/fbank.h"
#include "mm/usm_mel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(omnic_status rc, const omnic_err *err)
{
    if (rc != OMNIC_OK &&
        (err->code != rc || memchr(err->msg, '\0', sizeof err->msg) == NULL || !err->msg[0]))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    omnic_err err;
    omnic_err_clear(&err);
    omnic__audio a = {0};
    omnic__audio_limits lim = {.max_seconds = 2};
    omnic_status rc = omnic__audio_decode(data, size, &lim, 16000, NULL, &a, &err);
    check(rc, &err);
    if (rc != OMNIC_OK) {
        if (a.samples) __builtin_trap();
        return 0;
    }
    /* 2 s at the file's rate, resampled to 16 kHz: at most 32000 samples (and librosa's ceil) */
    if (!a.samples || a.n < 1 || a.n > 32001 || a.sample_rate != 16000 || a.source_channels < 1 ||
        a.source_channels > 6)
        __builtin_trap();
    for (int64_t i = 0; i < a.n; i++)
        if (!isfinite(a.samples[i])) __builtin_trap();
    static omnic__fbank *fb;
    if (!fb) {
        const omnic__fbank_params p = {.sample_rate = 16000,
                                       .win_length = 400,
                                       .hop_length = 160,
                                       .n_fft = 512,
                                       .n_mels = 80,
                                       .preemphasis = 0.97,
                                       .scale = 32768,
                                       .mel_min_hz = 0,
                                       .mel_max_hz = 7690,
                                       .log_floor = 1.0};
        if (omnic__fbank_init(&fb, &p, &err) != OMNIC_OK) __builtin_trap();
    }
    int64_t frames = omnic__fbank_frames(fb, a.n);
    float *feat = frames > 0 ? omnic_alloc_array((size_t)frames * 80, sizeof(float)) : NULL;
    rc = omnic__fbank_compute(fb, a.samples, a.n, feat, &err);
    check(rc, &err);
    if ((rc == OMNIC_OK) != (frames > 0) && rc != OMNIC_E_INVALID) __builtin_trap();
    if (rc == OMNIC_OK)
        for (int64_t i = 0; i < frames * 80; i++)
            if (!isfinite(feat[i]) || feat[i] < 0) __builtin_trap();
    omnic_free(feat);
    static omnic__usm_mel *um;
    if (!um) {
        const omnic__usm_mel_params p = {.sample_rate = 16000, .frame_length = 512, .hop_length = 160,
                                         .fft_length = 1024, .n_mels = 128, .preemphasis = 0.97,
                                         .htk_preemphasis = true, .input_scale = 1.0, .mel_min_hz = 125,
                                         .mel_max_hz = 7600, .mel_floor = 1e-5, .max_samples = 480000,
                                         .pad_multiple = 128};
        if (omnic__usm_mel_init(&um, &p, &err) != OMNIC_OK) __builtin_trap();
    }
    int64_t valid;
    frames = omnic__usm_mel_frames(um, a.n, &valid);
    if (valid < 0 || valid > frames) __builtin_trap();
    feat = frames > 0 ? omnic_alloc_array((size_t)frames * 128, sizeof(float)) : NULL;
    rc = omnic__usm_mel_compute(um, a.samples, a.n, feat, &err);
    check(rc, &err);
    if ((rc == OMNIC_OK) != (frames > 0) && rc != OMNIC_E_INVALID) __builtin_trap();
    if (rc == OMNIC_OK) /* log of at least the 1e-5 floor */
        for (int64_t i = 0; i < frames * 128; i++)
            if (!isfinite(feat[i]) || feat[i] < -11.6f) __builtin_trap();
    omnic_free(feat);
    omnic__audio_deinit(&a);
    return 0;
}
