/* Resampling with libsoxr at SOXR_HQ, f32 mono, as librosa.resample(res_type="soxr_hq") does it
 * through python-soxr: the whole clip processed and flushed, then fixed to ceil(n * out / in)
 * samples (librosa's fix_length: zeros appended, or the tail dropped). */
#include <math.h>

#include <soxr.h>

#include "core/limits.h"
#include "mm/audio.h"

omnic_status omnic__audio_resample(const float *in, int64_t n, int in_rate, int out_rate, float **out,
                                   int64_t *n_out, omnic_err *err)
{
    if (n < 1) return OMNIC_FAIL(err, OMNIC_E_INVALID, "resample of %lld samples", (long long)n);
    if (in_rate < 1 || in_rate > OMNIC_MAX_AUDIO_RATE || out_rate < 1 || out_rate > OMNIC_MAX_AUDIO_RATE)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "resample from %d Hz to %d Hz: rates must be 1..%d", in_rate,
                          out_rate, OMNIC_MAX_AUDIO_RATE);
    double want = ceil((double)n * out_rate / in_rate);
    if (want > (double)OMNIC_MAX_AUDIO_SAMPLES)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "resampling %lld samples from %d to %d Hz gives %.0f; the limit is %lld",
                          (long long)n, in_rate, out_rate, want, (long long)OMNIC_MAX_AUDIO_SAMPLES);
    int64_t m = (int64_t)want;
    /* Room for what soxr may give past the fixed length (python-soxr's floor(n * r) + 1). */
    size_t room = (size_t)m + 2;
    float *y = omnic_alloc_array(room, sizeof(float));
    if (!y) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %zu resampled samples", room);

    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    soxr_t s = soxr_create((double)in_rate, (double)out_rate, 1, &e, &io, &q, NULL);
    if (!s || e) {
        omnic_free(y);
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "soxr_create(%d -> %d Hz): %s", in_rate, out_rate,
                          e ? e : "failed");
    }
    /* Input in python-soxr's pieces (48000 output samples' worth), then one flush. */
    size_t done = 0, got = 0, piece = (size_t)(48000.0 * in_rate / out_rate);
    if (piece < 1) piece = 1;
    for (size_t i = 0; i < (size_t)n && !e; i += piece) {
        size_t k = (size_t)n - i < piece ? (size_t)n - i : piece;
        e = soxr_process(s, in + i, k, NULL, y + done, room - done, &got);
        done += got;
    }
    if (!e) {
        e = soxr_process(s, NULL, 0, NULL, y + done, room - done, &got);
        done += got;
    }
    soxr_delete(s);
    if (e) {
        omnic_free(y);
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "soxr_process(%d -> %d Hz): %s", in_rate, out_rate, e);
    }
    for (size_t i = done; i < (size_t)m; i++)
        y[i] = 0.0f;
    *out = y;
    *n_out = m;
    return OMNIC_OK;
}

omnic_status omnic__audio_at_rate(const omnic__audio *a, int rate, const float **x, int64_t *n, float **owned,
                                  omnic_err *err)
{
    *owned = NULL;
    if (!a || !a->samples || a->n < 1) return OMNIC_FAIL(err, OMNIC_E_INVALID, "no audio samples");
    *x = a->samples;
    *n = a->n;
    if (a->sample_rate == rate) return OMNIC_OK;
    OMNIC_TRY(omnic__audio_resample(a->samples, a->n, a->sample_rate, rate, owned, n, err));
    *x = *owned;
    return OMNIC_OK;
}
