/* Log-mel features of a mono clip with the numerics of Hugging Face's Gemma3nAudioFeatureExtractor
 * (transformers 4.57 feature_extraction_gemma3n.py; the Universal Speech Model front end), for
 * one clip as the extractor sees a batch of one:
 *   clip     truncated to max_samples (480000: 30 s), zero-padded to a multiple of pad_multiple
 *            (128) samples: Lp; sample mask = the clip's own samples;
 *   frames   frame_length + 1 samples every hop (T = (Lp - frame_length - 1) / hop + 1), f32;
 *   pre-emphasis  HTK flavour: s[0] = f[0] * (1 - k), s[i] = f[i] - k * f[i - 1] (i < frame_length),
 *            plain: s[i] = f[i + 1] - k * f[i]; f32 like numpy on f32 frames;
 *   window   periodic Hann in f32; fft_length-point real FFT in f64 (FFTW3), magnitude |X|;
 *   mel      HTK mel bank in f64 (linspace of the mel edges, bins at b * rate / fft_length in f32,
 *            no area normalisation); log(max(mel, floor)) in f64, optional per-bin mean / stddev,
 *            rounded to f32;
 *   mask     frame t is valid when its first sample 160 t is one of the clip's samples.
 * Reference: families-gemma-phi.md B2 (and its golden statistics). */
#ifndef OMNIC_MM_USM_MEL_H
#define OMNIC_MM_USM_MEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

typedef struct omnic__usm_mel_params {
    int sample_rate;      /* Hz the clip must be at (16000) */
    int frame_length;     /* round(rate * frame_length_ms / 1000) (512) */
    int hop_length;       /* round(rate * hop_length_ms / 1000) (160) */
    int fft_length;       /* 2^ceil(log2 frame_length), doubled with fft_overdrive (1024) */
    int n_mels;           /* feature_size (128) */
    double preemphasis;   /* k (0.97); 0: none */
    bool htk_preemphasis; /* preemphasis_htk_flavor (true) */
    double input_scale;   /* input_scale_factor (1.0) */
    double mel_min_hz;    /* min_frequency (125) */
    double mel_max_hz;    /* max_frequency (7600) */
    double mel_floor;     /* (1e-5) */
    const double *per_bin_mean, *per_bin_stddev; /* borrowed [n_mels] during init, or NULL */
    int64_t max_samples;                         /* truncation (480000) */
    int pad_multiple;                            /* pad_to_multiple_of (128) */
} omnic__usm_mel_params;

typedef struct omnic__usm_mel omnic__usm_mel;

/* Checks p (E_INVALID naming the field and value) and builds the window, the mel bank and the
 * FFT plan into a new owned *out (copies the per-bin arrays). E_NOMEM. */
omnic_status omnic__usm_mel_init(omnic__usm_mel **out, const omnic__usm_mel_params *p, omnic_err *err);
void omnic__usm_mel_free(omnic__usm_mel *m);
/* m's parameters (the per-bin arrays m's own copies: valid while m lives; init from them clones m). */
const omnic__usm_mel_params *omnic__usm_mel_params_of(const omnic__usm_mel *m);

/* Samples of a clip of n the extractor keeps (n truncated to max_samples). */
int64_t omnic__usm_mel_kept(const omnic__usm_mel *m, int64_t n);
/* Frames T a clip of n samples gives (0: shorter than one frame after padding), and how many
 * of them are valid (*valid, may be NULL). */
int64_t omnic__usm_mel_frames(const omnic__usm_mel *m, int64_t n, int64_t *valid);

/* x[0..n) (borrowed, at the params' rate; truncated as above) -> out[T, n_mels] (caller-sized
 * by omnic__usm_mel_frames). Thread-safe on one m. E_INVALID when the clip gives no frame or a
 * value is not finite, E_NOMEM. */
omnic_status omnic__usm_mel_compute(const omnic__usm_mel *m, const float *x, int64_t n, float *out,
                                    omnic_err *err);

#endif
