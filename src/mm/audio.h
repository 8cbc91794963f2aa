/* Audio: an owned mono f32 clip, decoding WAV / FLAC / MP3 / Ogg (Vorbis, Opus) from memory into
 * it with libsndfile (the library Python's soundfile wraps, so samples match what Hugging Face
 * pipelines read through soundfile / librosa), the downmix librosa.to_mono does (the mean of the
 * channels), and resampling with libsoxr at high quality (librosa's default res_type soxr_hq).
 * Limits (duration, channels, sample rate) are checked against the file's header before any
 * sample buffer exists. */
#ifndef OMNIC_MM_AUDIO_H
#define OMNIC_MM_AUDIO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Containers recognised from their magic bytes: the four that decode, then the rest by name. */
typedef enum omnic__audio_format {
    OMNIC__AUDIO_UNKNOWN = 0,
    OMNIC__AUDIO_WAV,  /* RIFF/WAVE (PCM 8/16/24/32-bit, IEEE float 32/64, WAVE_FORMAT_EXTENSIBLE) */
    OMNIC__AUDIO_FLAC, /* native FLAC ("fLaC") */
    OMNIC__AUDIO_MP3,  /* MPEG-1/2 layer III (an ID3v2 tag or a frame sync first) */
    OMNIC__AUDIO_OGG,  /* Ogg with Vorbis or Opus (Ogg FLAC is refused by libsndfile's name) */
    OMNIC__AUDIO_AIFF,
    OMNIC__AUDIO_AU,
    OMNIC__AUDIO_RF64, /* RF64 / BW64 / Wave64 */
    OMNIC__AUDIO_MP4,  /* ISO-BMFF ("ftyp"): AAC, ALAC in .m4a */
    OMNIC__AUDIO_WEBM, /* Matroska / WebM (EBML) */
    OMNIC__AUDIO_FORMAT_COUNT
} omnic__audio_format;

/* Format of buf[0..len) by its magic bytes (borrows buf). */
omnic__audio_format omnic__audio_sniff(const uint8_t *buf, size_t len);
/* "WAV", "FLAC", "MP3", "Ogg", "AIFF", "AU", "RF64/Wave64", "MP4/M4A", "WebM/Matroska", "unknown". */
const char *omnic__audio_format_name(omnic__audio_format f);
/* The OpenAI `input_audio.format` name of a decodable format ("wav", "flac", "mp3", "ogg"), else NULL. */
const char *omnic__audio_format_ext(omnic__audio_format f);

/* A decoded clip. Caller-allocated; samples is owned (omnic__audio_deinit frees it). */
typedef struct omnic__audio {
    float *samples;      /* owned [n] mono, nominally in [-1, 1] */
    int64_t n;           /* samples, >= 1 */
    int sample_rate;     /* Hz of samples */
    int source_rate;     /* Hz of the file; != sample_rate when it was resampled */
    int source_channels; /* channels of the file, averaged into one */
    omnic__audio_format format;
} omnic__audio;

void omnic__audio_deinit(omnic__audio *a);

/* Bounds a decode checks against the file's header before any sample memory exists, and again
 * while decoding (a stream whose header does not give its length). */
typedef struct omnic__audio_limits {
    double max_seconds; /* duration of one clip; <= 0 means OMNIC_MAX_AUDIO_SECONDS */
    int max_channels;   /* <= 0 means OMNIC_MAX_AUDIO_CHANNELS */
    int min_rate;       /* Hz; <= 0 means OMNIC_MIN_AUDIO_RATE */
    int max_rate;       /* Hz; <= 0 means OMNIC_MAX_AUDIO_RATE */
} omnic__audio_limits;

/* Decodes len bytes of buf (borrows) into *out: every channel read as f32 (libsndfile's
 * normalisation: an n-bit PCM sample over 2^(n-1)), averaged to mono, then resampled to
 * target_rate when it is > 0 and differs from the file's rate (out->source_rate keeps the
 * file's). limits may be NULL (the defaults of core/limits.h). cancel (optional) is polled
 * between blocks. Errors: E_UNSUPPORTED (a container other than WAV / FLAC / MP3 / Ogg, or a
 * codec inside one that libsndfile does not decode: names it), E_TOO_LARGE (duration, channels
 * or sample rate against the limit: both numbers named; nothing allocated for samples),
 * E_CORRUPT (truncated or malformed: names the format and libsndfile's message; a WAV whose
 * data chunk runs past the file; a FLAC that ends before its STREAMINFO length), E_INVALID
 * (no samples at all), E_CANCELLED, E_NOMEM. *out untouched on failure. */
omnic_status omnic__audio_decode(const uint8_t *buf, size_t len, const omnic__audio_limits *limits,
                                 int target_rate, const atomic_bool *cancel, omnic__audio *out,
                                 omnic_err *err);

/* Resamples in[0..n) from in_rate to out_rate Hz with libsoxr (SOXR_HQ, f32 in and out, one
 * channel) into a new owned buffer *out of *n_out = round(n * out_rate / in_rate) samples (at
 * least 1). Rates 1..OMNIC_MAX_AUDIO_RATE. E_INVALID (rates, n < 1), E_TOO_LARGE (output over
 * OMNIC_MAX_AUDIO_SAMPLES), E_NOMEM, E_INTERNAL (soxr's message). */
omnic_status omnic__audio_resample(const float *in, int64_t n, int in_rate, int out_rate, float **out,
                                   int64_t *n_out, omnic_err *err);

/* A decoded clip a (borrowed) at rate Hz, as a feature extractor takes it: *x, *n its own samples
 * when it is at that rate (*owned NULL), else resampled into *owned (the caller frees it).
 * E_INVALID when a has no samples, and omnic__audio_resample's errors. */
omnic_status omnic__audio_at_rate(const omnic__audio *a, int rate, const float **x, int64_t *n, float **owned,
                                  omnic_err *err);

#endif
