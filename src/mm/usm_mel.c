/* Gemma 3n log-mel features (mm/usm_mel.h): window and mel bank built as numpy builds them,
 * frames transformed with FFTW3 in an estimate-mode plan (the same algorithm on every run). */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <fftw3.h>

#include "mm/usm_mel.h"

/* FFTW's planner and plan destruction are not thread-safe; execution on a plan is. */
static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;

struct omnic__usm_mel {
    omnic__usm_mel_params p;
    int n_bins;            /* fft_length / 2 + 1 */
    float *window;         /* [frame_length] f32 */
    double *mel;           /* [n_mels, n_bins] f64 (filter-major) */
    int *lo, *hi;          /* [n_mels]: bins [lo, hi) where filter m is non-zero */
    double *mean, *stddev; /* owned [n_mels] or NULL */
    fftw_plan plan;        /* r2c of fft_length, unaligned arrays */
};

#define USM_MAX_SIZE (1 << 16)

/* cos of an f32 as numpy's f32 cos ufunc computes it on an x86 CPU with FMA (its SIMD loop:
 * Cody-Waite reduction by pi/2 in three FMA steps, minimax polynomials on [-pi/4, pi/4]); the
 * extractor's window is built with it, and libm's correctly rounded cosf differs by up to 4 ulp,
 * enough to move the edge taps' small weights by 1e-4 and high-mel log energies by 1e-2.
 * Bit-equal to numpy 1.24's result on 20000 random arguments in [-100, 100] and on the 512
 * window arguments. Valid for |x| <= 117435.992. */
static float numpy_cosf(float x)
{
    /* the quadrant: x * 2 / pi rounded to an integer by one FMA with 1.5 * 2^23 (so 5 pi / 4
     * takes 3: the unrounded product is just above 2.5) */
    const float q = fmaf(x, 0x1.45f306p-1f, 0x1.8p23f) - 0x1.8p23f;
    float r = fmaf(q, -0x1.921fb0p+00f, x);
    r = fmaf(q, -0x1.5110b4p-22f, r);
    r = fmaf(q, -0x1.846988p-48f, r);
    const float r2 = r * r;
    float c = fmaf(0x1.98e616p-16f, r2, -0x1.6c06dcp-10f);
    c = fmaf(c, r2, 0x1.55553cp-05f);
    c = fmaf(c, r2, -0x1.000000p-01f);
    c = fmaf(c, r2, 1.0f);
    float s = fmaf(0x1.7d3bbcp-19f, r2, -0x1.a06bbap-13f);
    s = fmaf(s, r2, 0x1.11119ap-07f);
    s = fmaf(s, r2, -0x1.555556p-03f);
    s = fmaf(s, r2, 0.0f);
    s = fmaf(s, r, r);
    const int iq = (int)q + 1; /* cos(x) = sin(x + pi / 2) */
    const float v = (iq & 1) == 0 ? s : c;
    return (iq & 2) ? -v : v;
}

static omnic_status check_params(const omnic__usm_mel_params *p, omnic_err *err)
{
    const struct {
        const char *name;
        int v, max;
    } sizes[] = {{"sample_rate", p->sample_rate, 1000000},
                 {"frame_length", p->frame_length, USM_MAX_SIZE},
                 {"hop_length", p->hop_length, USM_MAX_SIZE},
                 {"fft_length", p->fft_length, USM_MAX_SIZE},
                 {"n_mels", p->n_mels, 4096},
                 {"pad_multiple", p->pad_multiple, USM_MAX_SIZE}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].v < 1 || sizes[i].v > sizes[i].max)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel %s %d is outside 1..%d", sizes[i].name,
                              sizes[i].v, sizes[i].max);
    if (p->frame_length > p->fft_length)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel fft_length %d is shorter than the frame (%d)",
                          p->fft_length, p->frame_length);
    if (!(p->preemphasis >= 0 && p->preemphasis <= 1) || !isfinite(p->input_scale) || p->input_scale == 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel preemphasis %g / input scale %g", p->preemphasis,
                          p->input_scale);
    if (!(p->mel_min_hz >= 0 && p->mel_min_hz < p->mel_max_hz && p->mel_max_hz <= p->sample_rate / 2.0))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel edges %g..%g Hz must satisfy 0 <= min < max <= %g",
                          p->mel_min_hz, p->mel_max_hz, p->sample_rate / 2.0);
    if (!(p->mel_floor > 0 && isfinite(p->mel_floor)))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel floor %g must be > 0", p->mel_floor);
    if (p->max_samples < p->frame_length + 1 || p->max_samples > ((int64_t)1 << 40))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel max_samples %lld is outside %d..2^40",
                          (long long)p->max_samples, p->frame_length + 1);
    for (int m = 0; m < p->n_mels; m++)
        if ((p->per_bin_mean && !isfinite(p->per_bin_mean[m])) ||
            (p->per_bin_stddev && !(isfinite(p->per_bin_stddev[m]) && p->per_bin_stddev[m] != 0)))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "log-mel per-bin mean / stddev [%d] is not usable", m);
    return OMNIC_OK;
}

void omnic__usm_mel_free(omnic__usm_mel *m)
{
    if (!m) return;
    if (m->plan) {
        pthread_mutex_lock(&planner_lock);
        fftw_destroy_plan(m->plan);
        pthread_mutex_unlock(&planner_lock);
    }
    omnic_free(m->window);
    omnic_free(m->mel);
    omnic_free(m->lo);
    omnic_free(m->hi);
    omnic_free(m->mean);
    omnic_free(m->stddev);
    omnic_free(m);
}

static double *copy_bins(const double *src, int n)
{
    double *d = omnic_alloc_array((size_t)n, sizeof(double));
    if (d) memcpy(d, src, (size_t)n * sizeof(double));
    return d;
}

omnic_status omnic__usm_mel_init(omnic__usm_mel **out, const omnic__usm_mel_params *p, omnic_err *err)
{
    OMNIC_TRY(check_params(p, err));
    omnic__usm_mel *m = omnic_alloc_array(1, sizeof *m);
    if (!m) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a log-mel bank");
    memset(m, 0, sizeof *m);
    m->p = *p;
    const int nb = m->n_bins = p->fft_length / 2 + 1, nm = p->n_mels, fl = p->frame_length;
    m->window = omnic_alloc_array((size_t)fl, sizeof(float));
    m->mel = omnic_alloc_array((size_t)nb * (size_t)nm, sizeof(double));
    m->lo = omnic_alloc_array((size_t)nm, sizeof(int));
    m->hi = omnic_alloc_array((size_t)nm, sizeof(int));
    double *edge = omnic_alloc_array((size_t)nm + 2, sizeof(double));
    double *in = fftw_alloc_real((size_t)p->fft_length);
    fftw_complex *spec = fftw_alloc_complex((size_t)nb);
    if (p->per_bin_mean) m->mean = copy_bins(p->per_bin_mean, nm);
    if (p->per_bin_stddev) m->stddev = copy_bins(p->per_bin_stddev, nm);
    if (!m->window || !m->mel || !m->lo || !m->hi || !edge || !in || !spec || (p->per_bin_mean && !m->mean) ||
        (p->per_bin_stddev && !m->stddev)) {
        omnic_free(edge);
        fftw_free(in);
        fftw_free(spec);
        omnic__usm_mel_free(m);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a log-mel bank of %d x %d", nb, nm);
    }
    m->p.per_bin_mean = m->mean; /* params_of hands out m's own copies */
    m->p.per_bin_stddev = m->stddev;
    /* numpy in f32: 0.5 * (1 - cos(2 * pi * arange(fl, f32) / fl)); fl <= 2^16 keeps the arguments in range
     */
    const float two_pi = (float)(2.0 * M_PI);
    for (int k = 0; k < fl; k++)
        m->window[k] = 0.5f * (1.0f - numpy_cosf(two_pi * (float)k / (float)fl));
    /* create_fb_matrix(norm=None): HTK mel edges np.linspace(mel(min), mel(max), n_mels + 2) in
     * f64, back to Hz; bins at arange(nb, f32) * (rate / fft_length) in f32 */
    const double m0 = 2595.0 * log10(1.0 + p->mel_min_hz / 700.0),
                 m1 = 2595.0 * log10(1.0 + p->mel_max_hz / 700.0), step = (m1 - m0) / (double)(nm + 1);
    for (int k = 0; k < nm + 2; k++) {
        const double mk = k == nm + 1 ? m1 : (double)k * step + m0;
        edge[k] = 700.0 * (pow(10.0, mk / 2595.0) - 1.0);
    }
    const float bin_w = (float)((double)p->sample_rate / (double)p->fft_length);
    for (int j = 0; j < nm; j++) {
        m->lo[j] = nb;
        m->hi[j] = 0;
        for (int b = 0; b < nb; b++) {
            const double f = (double)((float)b * bin_w);
            const double down = -(edge[j] - f) / (edge[j + 1] - edge[j]),
                         up = (edge[j + 2] - f) / (edge[j + 2] - edge[j + 1]);
            const double w = fmax(0.0, fmin(down, up));
            m->mel[(size_t)j * (size_t)nb + (size_t)b] = w;
            if (w != 0) {
                if (b < m->lo[j]) m->lo[j] = b;
                m->hi[j] = b + 1;
            }
        }
        if (m->lo[j] > m->hi[j]) m->lo[j] = m->hi[j] = 0;
    }
    omnic_free(edge);
    pthread_mutex_lock(&planner_lock);
    m->plan = fftw_plan_dft_r2c_1d(p->fft_length, in, spec, FFTW_ESTIMATE | FFTW_UNALIGNED);
    pthread_mutex_unlock(&planner_lock);
    fftw_free(in);
    fftw_free(spec);
    if (!m->plan) {
        omnic__usm_mel_free(m);
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "FFTW made no plan for a %d-point real FFT", p->fft_length);
    }
    *out = m;
    return OMNIC_OK;
}

const omnic__usm_mel_params *omnic__usm_mel_params_of(const omnic__usm_mel *m)
{
    return &m->p;
}

int64_t omnic__usm_mel_kept(const omnic__usm_mel *m, int64_t n)
{
    return n < 0 ? 0 : n > m->p.max_samples ? m->p.max_samples : n;
}

int64_t omnic__usm_mel_frames(const omnic__usm_mel *m, int64_t n, int64_t *valid)
{
    const omnic__usm_mel_params *p = &m->p;
    const int64_t N = omnic__usm_mel_kept(m, n),
                  Lp = (N + p->pad_multiple - 1) / p->pad_multiple * p->pad_multiple,
                  T = Lp < p->frame_length + 1 ? 0 : (Lp - p->frame_length - 1) / p->hop_length + 1;
    if (valid) {
        const int64_t v = (N + p->hop_length - 1) / p->hop_length; /* frames whose first sample is kept */
        *valid = v < T ? v : T;
    }
    return T;
}

omnic_status omnic__usm_mel_compute(const omnic__usm_mel *m, const float *x, int64_t n, float *out,
                                    omnic_err *err)
{
    const omnic__usm_mel_params *p = &m->p;
    const int64_t N = omnic__usm_mel_kept(m, n), T = omnic__usm_mel_frames(m, n, NULL);
    if (T < 1)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "audio of %lld samples (%.4f s) is shorter than one %d-sample frame (%.4f s at %d Hz)",
            (long long)n, (double)n / p->sample_rate, p->frame_length + 1,
            (double)(p->frame_length + 1) / p->sample_rate, p->sample_rate);
    const int nb = m->n_bins, nm = p->n_mels, fl = p->frame_length;
    double *in = fftw_alloc_real((size_t)p->fft_length);
    fftw_complex *spec = fftw_alloc_complex((size_t)nb);
    double *mag = omnic_alloc_array((size_t)nb, sizeof(double));
    float *f = omnic_alloc_array((size_t)fl + 1, sizeof(float));
    if (!in || !spec || !mag || !f) {
        fftw_free(in);
        fftw_free(spec);
        omnic_free(mag);
        omnic_free(f);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a %d-point FFT", p->fft_length);
    }
    const float k = (float)p->preemphasis, k1 = (float)(1.0 - p->preemphasis), sc = (float)p->input_scale;
    for (int i = fl; i < p->fft_length; i++)
        in[i] = 0;
    omnic_status s = OMNIC_OK;
    for (int64_t t = 0; t < T && s == OMNIC_OK; t++) {
        for (int i = 0; i <= fl; i++) { /* the frame's fl + 1 samples, zero past the kept clip */
            const int64_t j = t * p->hop_length + i;
            f[i] = j < N ? (sc != 1.0f ? x[j] * sc : x[j]) : 0.0f;
        }
        for (int i = 0; i < fl; i++) {
            float y;
            if (k == 0)
                y = f[i];
            else if (!p->htk_preemphasis)
                y = f[i + 1] - k * f[i];
            else
                y = i == 0 ? f[0] * k1 : f[i] - k * f[i - 1];
            in[i] = (double)(y * m->window[i]);
        }
        fftw_execute_dft_r2c(m->plan, in, spec);
        for (int b = 0; b < nb; b++)
            mag[b] = hypot(spec[b][0], spec[b][1]);
        float *o = out + t * nm;
        for (int j = 0; j < nm; j++) {
            double acc = 0;
            const double *w = m->mel + (size_t)j * (size_t)nb;
            for (int b = m->lo[j]; b < m->hi[j]; b++)
                acc += mag[b] * w[b];
            double v = log(acc > p->mel_floor ? acc : p->mel_floor);
            if (m->mean) v -= m->mean[j];
            if (m->stddev) v /= m->stddev[j];
            if (!isfinite(acc) || !isfinite(v) || !isfinite((float)v)) {
                s = OMNIC_FAIL(
                    err, OMNIC_E_INVALID,
                    "log-mel energy of frame %lld bin %d is not finite (samples far outside -1..1)",
                    (long long)t, j);
                break;
            }
            o[j] = (float)v;
        }
    }
    fftw_free(in);
    fftw_free(spec);
    omnic_free(mag);
    omnic_free(f);
    return s;
}
