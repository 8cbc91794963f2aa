/* Log-mel filterbank (mm/fbank.h): the mel bank and window built in f64 as numpy / torch build
 * them, frames transformed with FFTW3 (an estimate-mode plan: the same algorithm on every run,
 * so features are reproducible bit for bit). */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <fftw3.h>

#include "mm/fbank.h"

/* FFTW's planner and plan destruction are not thread-safe; execution on a plan is. */
static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;

struct omnic__fbank {
    omnic__fbank_params p;
    int n_bins;     /* n_fft / 2 + 1 */
    double *window; /* [win_length] f64 */
    float *mel;     /* [n_bins, n_mels] f32 (Hugging Face casts its f64 bank to f32) */
    int *lo, *hi;   /* [n_mels]: bins [lo, hi) where filter m is non-zero */
    fftw_plan plan; /* r2c of n_fft, unaligned arrays, executed with fftw_execute_dft_r2c */
};

static double hz_to_kaldi_mel(double f)
{
    return 1127.0 * log(1.0 + f / 700.0);
}

#define FBANK_MAX_SIZE (1 << 16)

static omnic_status check_params(const omnic__fbank_params *p, omnic_err *err)
{
    const struct {
        const char *name;
        int v;
    } sizes[] = {{"sample_rate", p->sample_rate},
                 {"win_length", p->win_length},
                 {"hop_length", p->hop_length},
                 {"n_fft", p->n_fft},
                 {"n_mels", p->n_mels}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].v < 1 || (sizes[i].v > FBANK_MAX_SIZE && i > 0) || sizes[i].v > 1000000)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel %s %d is outside 1..%d", sizes[i].name,
                              sizes[i].v, i ? FBANK_MAX_SIZE : 1000000);
    if (p->win_length > p->n_fft || p->n_fft % 2)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel n_fft %d must be even and >= win_length %d",
                          p->n_fft, p->win_length);
    if (!isfinite(p->preemphasis) || !isfinite(p->scale) || p->scale == 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel preemphasis %g / scale %g", p->preemphasis,
                          p->scale);
    if (!(p->mel_min_hz >= 0 && p->mel_min_hz < p->mel_max_hz && p->mel_max_hz <= p->sample_rate / 2.0))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel edges %g..%g Hz must satisfy 0 <= min < max <= %g",
                          p->mel_min_hz, p->mel_max_hz, p->sample_rate / 2.0);
    if (!(p->log_floor > 0 && isfinite(p->log_floor)))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel floor %g must be > 0", p->log_floor);
    return OMNIC_OK;
}

void omnic__fbank_free(omnic__fbank *fb)
{
    if (!fb) return;
    if (fb->plan) {
        pthread_mutex_lock(&planner_lock);
        fftw_destroy_plan(fb->plan);
        pthread_mutex_unlock(&planner_lock);
    }
    omnic_free(fb->window);
    omnic_free(fb->mel);
    omnic_free(fb->lo);
    omnic_free(fb->hi);
    omnic_free(fb);
}

omnic_status omnic__fbank_init(omnic__fbank **out, const omnic__fbank_params *p, omnic_err *err)
{
    OMNIC_TRY(check_params(p, err));
    omnic__fbank *fb = omnic_alloc_array(1, sizeof *fb);
    if (!fb) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a log-mel bank");
    memset(fb, 0, sizeof *fb);
    fb->p = *p;
    int nb = fb->n_bins = p->n_fft / 2 + 1, nm = p->n_mels, win = p->win_length;
    fb->window = omnic_alloc_array((size_t)win, sizeof(double));
    fb->mel = omnic_alloc_array((size_t)nb * (size_t)nm, sizeof(float));
    fb->lo = omnic_alloc_array((size_t)nm, sizeof(int));
    fb->hi = omnic_alloc_array((size_t)nm, sizeof(int));
    double *centre = omnic_alloc_array((size_t)nm + 2, sizeof(double));
    double *bin_mel = omnic_alloc_array((size_t)nb, sizeof(double));
    double *in = fftw_alloc_real((size_t)p->n_fft);
    fftw_complex *spec = fftw_alloc_complex((size_t)nb);
    if (!fb->window || !fb->mel || !fb->lo || !fb->hi || !centre || !bin_mel || !in || !spec) {
        omnic_free(centre);
        omnic_free(bin_mel);
        fftw_free(in);
        fftw_free(spec);
        omnic__fbank_free(fb);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a log-mel bank of %d x %d", nb, nm);
    }
    /* torch.hamming_window(win, periodic=False, dtype=float64): 0.54 - 0.46 cos(2 pi n / (win - 1)) */
    double step = win > 1 ? M_PI * 2.0 / (double)(win - 1) : 0;
    for (int n = 0; n < win; n++)
        fb->window[n] = cos((double)n * step) * -0.46 + 0.54;
    /* audio_utils.mel_filter_bank(triangularize_in_mel_space=True, mel_scale="kaldi"): centres
     * np.linspace(mel(min), mel(max), n_mels + 2), bins at mel(b * rate / n_fft) */
    double m0 = hz_to_kaldi_mel(p->mel_min_hz), m1 = hz_to_kaldi_mel(p->mel_max_hz);
    double mstep = (m1 - m0) / (double)(nm + 1);
    for (int k = 0; k < nm + 2; k++)
        centre[k] = (double)k * mstep + m0;
    centre[nm + 1] = m1;
    double width = (double)p->sample_rate / ((double)(nb - 1) * 2.0);
    for (int b = 0; b < nb; b++)
        bin_mel[b] = hz_to_kaldi_mel(width * (double)b);
    for (int k = 0; k < nm; k++) {
        fb->lo[k] = nb;
        fb->hi[k] = 0;
        for (int b = 0; b < nb; b++) {
            double down = -(centre[k] - bin_mel[b]) / (centre[k + 1] - centre[k]);
            double up = (centre[k + 2] - bin_mel[b]) / (centre[k + 2] - centre[k + 1]);
            double w = fmax(0.0, fmin(down, up));
            float wf = (float)w;
            fb->mel[(size_t)b * (size_t)nm + (size_t)k] = wf;
            if (wf != 0) {
                if (b < fb->lo[k]) fb->lo[k] = b;
                fb->hi[k] = b + 1;
            }
        }
        if (fb->lo[k] > fb->hi[k]) fb->lo[k] = fb->hi[k] = 0;
    }
    omnic_free(centre);
    omnic_free(bin_mel);
    pthread_mutex_lock(&planner_lock);
    fb->plan = fftw_plan_dft_r2c_1d(p->n_fft, in, spec, FFTW_ESTIMATE | FFTW_UNALIGNED);
    pthread_mutex_unlock(&planner_lock);
    fftw_free(in);
    fftw_free(spec);
    if (!fb->plan) {
        omnic__fbank_free(fb);
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "FFTW made no plan for a %d-point real FFT", p->n_fft);
    }
    *out = fb;
    return OMNIC_OK;
}

const omnic__fbank_params *omnic__fbank_params_of(const omnic__fbank *fb)
{
    return &fb->p;
}

int64_t omnic__fbank_frames(const omnic__fbank *fb, int64_t n)
{
    return n < fb->p.win_length ? 0 : (n - fb->p.win_length) / fb->p.hop_length + 1;
}

omnic_status omnic__fbank_compute(const omnic__fbank *fb, const float *x, int64_t n, float *out,
                                  omnic_err *err)
{
    const omnic__fbank_params *p = &fb->p;
    int64_t frames = omnic__fbank_frames(fb, n);
    if (frames < 1)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "audio of %lld samples (%.4f s) is shorter than one %d-sample frame (%.4f s at %d Hz)",
            (long long)n, (double)n / p->sample_rate, p->win_length, (double)p->win_length / p->sample_rate,
            p->sample_rate);
    int nb = fb->n_bins, nm = p->n_mels, win = p->win_length;
    double *in = fftw_alloc_real((size_t)p->n_fft);
    fftw_complex *spec = fftw_alloc_complex((size_t)nb);
    float *power = omnic_alloc_array((size_t)nb, sizeof(float));
    if (!in || !spec || !power) {
        fftw_free(in);
        fftw_free(spec);
        omnic_free(power);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a %d-point FFT", p->n_fft);
    }
    const float k = (float)p->preemphasis, scale = (float)p->scale, floor_v = (float)p->log_floor;
    for (int i = win; i < p->n_fft; i++)
        in[i] = 0;
    for (int64_t t = 0; t < frames; t++) {
        const float *f = x + t * p->hop_length;
        /* f32 as torch: (frame - k * previous) * scale, previous of sample 0 being sample 0 */
        for (int i = 0; i < win; i++) {
            float prev = f[i > 0 ? i - 1 : 0];
            float kp = k * prev;
            float y = (f[i] - kp) * scale;
            in[i] = fb->window[i] * (double)y;
        }
        fftw_execute_dft_r2c(fb->plan, in, spec);
        for (int b = 0; b < nb; b++) {
            float re = (float)spec[b][0], im = (float)spec[b][1];
            float mag = sqrtf(re * re + im * im);
            power[b] = mag * mag;
        }
        float *o = out + t * nm;
        for (int m = 0; m < nm; m++) {
            double acc = 0;
            for (int b = fb->lo[m]; b < fb->hi[m]; b++)
                acc += (double)power[b] * (double)fb->mel[(size_t)b * (size_t)nm + (size_t)m];
            float v = (float)acc;
            if (!isfinite(v)) {
                fftw_free(in);
                fftw_free(spec);
                omnic_free(power);
                return OMNIC_FAIL(
                    err, OMNIC_E_INVALID,
                    "log-mel energy of frame %lld bin %d is not finite (samples far outside -1..1)",
                    (long long)t, m);
            }
            o[m] = logf(v > floor_v ? v : floor_v);
        }
    }
    fftw_free(in);
    fftw_free(spec);
    omnic_free(power);
    return OMNIC_OK;
}
