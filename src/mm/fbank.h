/* Log-mel filterbank features of a mono clip, with the numerics of Hugging Face's
 * Phi4MultimodalFeatureExtractor (transformers 4.57 / 5.x, torch path): frames of win samples
 * every hop (no padding: (n - win) / hop + 1 frames), in-frame pre-emphasis whose first sample
 * uses itself as its predecessor (x[0] - k * x[0]), a scale, a symmetric Hamming window in f64,
 * an n_fft-point real FFT in f64 (FFTW3) rounded to complex f32, the f32 power |X|^2, a kaldi-scale
 * mel bank triangularised in mel space (audio_utils.mel_filter_bank with the fft bin width
 * rate / n_fft of PR #36603), log(max(mel, floor)). Reference: families-gemma-phi.md C2.2. */
#ifndef OMNIC_MM_FBANK_H
#define OMNIC_MM_FBANK_H

#include <stdint.h>

#include "core/err.h"

typedef struct omnic__fbank_params {
    int sample_rate;    /* Hz the clip must be at (16000) */
    int win_length;     /* samples per frame (400) */
    int hop_length;     /* samples between frames (160) */
    int n_fft;          /* FFT size, >= win_length, even (512) */
    int n_mels;         /* mel bins (80) */
    double preemphasis; /* k (0.97); 0 for none */
    double scale;       /* samples multiplied by this after pre-emphasis (32768) */
    double mel_min_hz;  /* lowest mel edge (0) */
    double mel_max_hz;  /* highest mel edge (7690), <= sample_rate / 2 */
    double log_floor;   /* mel energies clamped to >= this before the log (1.0) */
} omnic__fbank_params;

typedef struct omnic__fbank omnic__fbank;

/* Checks p (E_INVALID naming the field and value: sizes >= 1 and <= 1 << 16, win <= n_fft,
 * 0 <= min < max <= rate / 2, floor > 0, finite values) and builds the
 * window, the f32 filter bank and the FFT plan into a new owned *out. Thread-safe: FFTW's
 * planner is serialised here. E_NOMEM. */
omnic_status omnic__fbank_init(omnic__fbank **out, const omnic__fbank_params *p, omnic_err *err);
void omnic__fbank_free(omnic__fbank *fb);
const omnic__fbank_params *omnic__fbank_params_of(const omnic__fbank *fb);

/* Frames a clip of n samples gives: (n - win) / hop + 1, or 0 when n < win. */
int64_t omnic__fbank_frames(const omnic__fbank *fb, int64_t n);

/* x[0..n) (borrowed, at the params' rate) -> out[frames, n_mels] (borrowed, caller sized by
 * omnic__fbank_frames). Any number of threads may run this on one fb at once. E_INVALID when n
 * is shorter than one frame (names both), E_NOMEM. */
omnic_status omnic__fbank_compute(const omnic__fbank *fb, const float *x, int64_t n, float *out,
                                  omnic_err *err);

#endif
