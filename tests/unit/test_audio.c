/* Audio decode (mm/audio.h): files of every accepted container and encoding written in memory by
 * libsndfile itself, decoded back (lossless ones exactly, lossy ones by their signal), the mono
 * downmix, resampling, and the refused inputs: truncated, corrupt, empty, too many channels,
 * sample rates out of range, a header declaring two hours, other containers, cancellation. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sndfile.h>

#include "core/limits.h"
#include "mm/audio.h"

/* ---- files in memory, written by libsndfile --------------------------------------------- */

typedef struct membuf {
    uint8_t *p;
    sf_count_t len, cap, pos;
} membuf;

static sf_count_t mb_len(void *u)
{
    return ((membuf *)u)->len;
}
static sf_count_t mb_tell(void *u)
{
    return ((membuf *)u)->pos;
}
static sf_count_t mb_seek(sf_count_t off, int whence, void *u)
{
    membuf *m = u;
    sf_count_t base = whence == SEEK_CUR ? m->pos : whence == SEEK_END ? m->len : 0;
    m->pos = base + off;
    return m->pos;
}
static sf_count_t mb_read(void *ptr, sf_count_t n, void *u)
{
    membuf *m = u;
    sf_count_t k = m->pos >= m->len ? 0 : (m->len - m->pos < n ? m->len - m->pos : n);
    memcpy(ptr, m->p + m->pos, (size_t)k);
    m->pos += k;
    return k;
}
static sf_count_t mb_write(const void *ptr, sf_count_t n, void *u)
{
    membuf *m = u;
    if (m->pos + n > m->cap) {
        m->cap = (m->pos + n) * 2;
        m->p = realloc(m->p, (size_t)m->cap);
    }
    if (m->pos > m->len) memset(m->p + m->len, 0, (size_t)(m->pos - m->len));
    memcpy(m->p + m->pos, ptr, (size_t)n);
    m->pos += n;
    if (m->pos > m->len) m->len = m->pos;
    return n;
}

/* frames x channels interleaved f32 -> a file of format (SF_FORMAT_*) in *out (malloc'd). */
static size_t write_file(int format, int rate, int channels, const float *x, sf_count_t frames, uint8_t **out)
{
    membuf m = {0};
    SF_VIRTUAL_IO vio = {mb_len, mb_seek, mb_read, mb_write, mb_tell};
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = format};
    SNDFILE *sf = sf_open_virtual(&vio, SFM_WRITE, &info, &m);
    if (!sf) fail_msg("sf_open_virtual(write 0x%x): %s", format, sf_strerror(NULL));
    assert_int_equal(sf_writef_float(sf, x, frames), frames);
    assert_int_equal(sf_close(sf), 0);
    *out = m.p;
    return (size_t)m.len;
}

/* A sine of f Hz, amplitude a, on every channel (channel c scaled by 1/(c+1)). */
static float *sine(int rate, int channels, sf_count_t frames, double f, double a)
{
    float *x = malloc(sizeof(float) * (size_t)(frames * channels));
    for (sf_count_t i = 0; i < frames; i++)
        for (int c = 0; c < channels; c++)
            x[i * channels + c] = (float)(a * sin(2 * M_PI * f * i / rate) / (c + 1));
    return x;
}

/* A hand-made 44-byte PCM-16 WAV header (data follows or not). */
static size_t wav_header(uint8_t *h, int channels, int rate, uint32_t data_bytes)
{
    uint32_t v;
    memcpy(h, "RIFF", 4);
    v = 36 + data_bytes;
    memcpy(h + 4, &v, 4);
    memcpy(h + 8, "WAVEfmt ", 8);
    v = 16;
    memcpy(h + 16, &v, 4);
    uint16_t fmt = 1, ch = (uint16_t)channels, bits = 16, align = (uint16_t)(2 * channels);
    memcpy(h + 20, &fmt, 2);
    memcpy(h + 22, &ch, 2);
    v = (uint32_t)rate;
    memcpy(h + 24, &v, 4);
    v = (uint32_t)rate * align;
    memcpy(h + 28, &v, 4);
    memcpy(h + 32, &align, 2);
    memcpy(h + 34, &bits, 2);
    memcpy(h + 36, "data", 4);
    memcpy(h + 40, &data_bytes, 4);
    return 44;
}

static omnic_status decode(const uint8_t *b, size_t n, int target, omnic__audio *a, omnic_err *err)
{
    omnic_err_clear(err);
    return omnic__audio_decode(b, n, NULL, target, NULL, a, err);
}

/* ---- lossless formats decode exactly ------------------------------------------------------ */

static void test_lossless(void **state)
{
    (void)state;
    static const struct {
        int format;
        double step; /* quantisation of the encoding */
    } cases[] = {
        {SF_FORMAT_WAV | SF_FORMAT_PCM_U8, 1.0 / 128},
        {SF_FORMAT_WAV | SF_FORMAT_PCM_16, 1.0 / 32768},
        {SF_FORMAT_WAV | SF_FORMAT_PCM_24, 1.0 / 8388608},
        {SF_FORMAT_WAV | SF_FORMAT_PCM_32, 1.0 / 2147483648.0},
        {SF_FORMAT_WAV | SF_FORMAT_FLOAT, 0},
        {SF_FORMAT_WAV | SF_FORMAT_DOUBLE, 0},
        {SF_FORMAT_WAVEX | SF_FORMAT_PCM_16, 1.0 / 32768},
        {SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 1.0 / 32768},
        {SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 1.0 / 8388608},
    };
    const int rate = 16000, frames = 8000;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int channels = 1; channels <= 2; channels++) {
            float *x = sine(rate, channels, frames, 440, 0.5);
            uint8_t *file = NULL;
            size_t len = write_file(cases[k].format, rate, channels, x, frames, &file);
            omnic__audio a;
            omnic_err err;
            omnic_status rc = decode(file, len, 0, &a, &err);
            if (rc != OMNIC_OK) fail_msg("format 0x%x: %s", cases[k].format, err.msg);
            assert_int_equal(a.n, frames);
            assert_int_equal(a.sample_rate, rate);
            assert_int_equal(a.source_rate, rate);
            assert_int_equal(a.source_channels, channels);
            double worst = 0;
            for (int i = 0; i < frames; i++) {
                double want = 0;
                for (int c = 0; c < channels; c++)
                    want += x[i * channels + c];
                want /= channels;
                double d = fabs(a.samples[i] - want);
                if (d > worst) worst = d;
            }
            /* each channel within one step (libsndfile truncates 8-bit PCM), the mean within that too */
            if (worst > cases[k].step * 1.01 + 1e-7)
                fail_msg("format 0x%x, %d channels: error %g over the step %g", cases[k].format, channels,
                         worst, cases[k].step);
            omnic__audio_deinit(&a);
            free(file);
            free(x);
        }
    }
}

/* The downmix is the f32 mean, channel by channel in order (librosa.to_mono). */
static void test_downmix_mean(void **state)
{
    (void)state;
    float x[3 * 4] = {0.25f, -0.5f, 0.125f, 1.0f, 0.0f, 0.0f, 0.1f, 0.2f, 0.3f, -1.0f, -1.0f, -1.0f};
    uint8_t *file = NULL;
    size_t len = write_file(SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 3, x, 4, &file);
    omnic__audio a;
    omnic_err err;
    assert_int_equal(decode(file, len, 0, &a, &err), OMNIC_OK);
    assert_int_equal(a.n, 4);
    for (int i = 0; i < 4; i++) {
        float s = x[i * 3] + x[i * 3 + 1];
        s += x[i * 3 + 2];
        assert_true(a.samples[i] == s / 3.0f);
    }
    omnic__audio_deinit(&a);
    free(file);
}

/* ---- lossy formats: the signal comes back ------------------------------------------------ */

/* Correlation of a's samples [from, to) with a sine of f Hz at rate (best over phase). */
static double sine_match(const omnic__audio *a, double f, int64_t from, int64_t to)
{
    double s = 0, c = 0, e = 0;
    for (int64_t i = from; i < to; i++) {
        double v = a->samples[i];
        s += v * sin(2 * M_PI * f * i / a->sample_rate);
        c += v * cos(2 * M_PI * f * i / a->sample_rate);
        e += v * v;
    }
    double n = (double)(to - from);
    return e > 0 ? sqrt((s * s + c * c) * 2 / n) / sqrt(e / n) / sqrt(2) : 0;
}

static void test_lossy(void **state)
{
    (void)state;
    static const struct {
        int format, rate;
        const char *name;
    } cases[] = {
        {SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, "Ogg"},
        {SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000, "Ogg"},
        {SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, "MP3"},
        {SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 44100, "MP3"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int rate = cases[k].rate;
        sf_count_t frames = rate; /* 1 s */
        float *x = sine(rate, 2, frames, 440, 0.5);
        uint8_t *file = NULL;
        size_t len = write_file(cases[k].format, rate, 2, x, frames, &file);
        omnic__audio a;
        omnic_err err;
        omnic_status rc = decode(file, len, 16000, &a, &err);
        if (rc != OMNIC_OK) fail_msg("format 0x%x: %s", cases[k].format, err.msg);
        assert_string_equal(omnic__audio_format_name(a.format), cases[k].name);
        assert_int_equal(a.sample_rate, 16000);
        assert_int_equal(a.source_rate, rate);
        assert_int_equal(a.source_channels, 2);
        /* about 1 s (codecs add priming / padding frames) */
        assert_true(a.n > 15000 && a.n < 18000);
        double m = sine_match(&a, 440, a.n / 4, a.n * 3 / 4);
        if (m < 0.95) fail_msg("format 0x%x: the 440 Hz sine matches %.3f", cases[k].format, m);
        omnic__audio_deinit(&a);
        free(file);
        free(x);
    }
}

/* ---- resampling --------------------------------------------------------------------------- */

static void test_resample(void **state)
{
    (void)state;
    static const int rates[] = {8000, 22050, 44100, 48000};
    for (size_t k = 0; k < sizeof rates / sizeof rates[0]; k++) {
        int rate = rates[k];
        sf_count_t frames = rate + 7; /* an odd length */
        float *x = sine(rate, 1, frames, 1000, 0.5);
        uint8_t *file = NULL;
        size_t len = write_file(SF_FORMAT_WAV | SF_FORMAT_FLOAT, rate, 1, x, frames, &file);
        omnic__audio a;
        omnic_err err;
        assert_int_equal(decode(file, len, 16000, &a, &err), OMNIC_OK);
        /* librosa's fix_length: ceil(n * 16000 / rate) */
        assert_int_equal(a.n, (int64_t)ceil((double)frames * 16000 / rate));
        assert_int_equal(a.sample_rate, 16000);
        assert_int_equal(a.source_rate, rate);
        double worst = 0;
        for (int64_t i = a.n / 8; i < a.n * 7 / 8; i++) {
            double d = fabs(a.samples[i] - 0.5 * sin(2 * M_PI * 1000.0 * i / 16000));
            if (d > worst) worst = d;
        }
        if (worst > 2e-3) fail_msg("%d Hz -> 16 kHz: a 1 kHz sine off by %g", rate, worst);
        omnic__audio_deinit(&a);
        free(file);
        free(x);
    }
    omnic_err err;
    float one = 1, *out = NULL;
    int64_t n = 0;
    assert_int_equal(omnic__audio_resample(&one, 1, 0, 16000, &out, &n, &err), OMNIC_E_INVALID);
    assert_int_equal(omnic__audio_resample(&one, 0, 8000, 16000, &out, &n, &err), OMNIC_E_INVALID);
    assert_int_equal(omnic__audio_resample(&one, 1, 8000, 16000, &out, &n, &err), OMNIC_OK);
    assert_int_equal(n, 2);
    omnic_free(out);
}

/* ---- refused inputs ----------------------------------------------------------------------- */

static void expect(const uint8_t *b, size_t n, const omnic__audio_limits *lim, omnic_status want,
                   const char *msg)
{
    omnic__audio a = {0};
    omnic_err err;
    omnic_err_clear(&err);
    omnic_status rc = omnic__audio_decode(b, n, lim, 16000, NULL, &a, &err);
    if (rc != want || !strstr(err.msg, msg))
        fail_msg("want %s \"%s\", got %s \"%s\"", omnic_status_name(want), msg, omnic_status_name(rc),
                 err.msg);
    assert_null(a.samples);
}

static void test_refused(void **state)
{
    (void)state;
    uint8_t h[64 + 4000];
    /* 8 channels, 1 Hz, 1 MHz */
    wav_header(h, 8, 16000, 1600);
    expect(h, 44 + 1600, NULL, OMNIC_E_TOO_LARGE, "8 channels; the limit is 6");
    wav_header(h, 1, 1, 200);
    expect(h, 44 + 200, NULL, OMNIC_E_TOO_LARGE, "sample rate 1 Hz is outside the accepted 4000..384000 Hz");
    wav_header(h, 1, 1000000, 200);
    expect(h, 44 + 200, NULL, OMNIC_E_TOO_LARGE, "sample rate 1000000 Hz");
    /* a header declaring two hours of 16 kHz mono (230 MB) in a 4 KB file: the duration first */
    memset(h, 0, sizeof h);
    wav_header(h, 1, 16000, 2u * 16000 * 7200);
    expect(h, sizeof h, NULL, OMNIC_E_TOO_LARGE,
           "lasts 7200.000 s (115200000 frames at 16000 Hz); the limit is 30 s");
    /* truncated: a data chunk running past the end */
    wav_header(h, 1, 16000, 3000);
    expect(h, 44 + 1000, NULL, OMNIC_E_CORRUPT,
           "WAV is truncated: its data chunk declares 3000 bytes at offset 44, the file has 1044 bytes");
    /* no samples */
    wav_header(h, 1, 16000, 0);
    expect(h, 44, NULL, OMNIC_E_INVALID, "no samples");
    expect(h, 20, NULL, OMNIC_E_CORRUPT, "no fmt chunk");
    /* a limit lowered: 2 s against 1 s */
    {
        float *x = sine(16000, 1, 32000, 440, 0.5);
        uint8_t *file = NULL;
        size_t len = write_file(SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, x, 32000, &file);
        omnic__audio_limits lim = {.max_seconds = 1};
        expect(file, len, &lim, OMNIC_E_TOO_LARGE,
               "FLAC audio lasts 2.000 s (32000 frames at 16000 Hz); the limit is 1 s");
        omnic__audio_limits mono = {.max_channels = 1, .min_rate = 22050};
        expect(file, len, &mono, OMNIC_E_TOO_LARGE, "16000 Hz is outside the accepted 22050..384000 Hz");
        /* truncated FLAC: the stream ends before STREAMINFO's count */
        expect(file, len / 2, NULL, OMNIC_E_CORRUPT, "FLAC");
        free(file);
        len = write_file(SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1, x, 32000, &file);
        expect(file, 30, NULL, OMNIC_E_CORRUPT, "Ogg is truncated: page 0 at offset 0 needs");
        expect(file, len - 10, NULL, OMNIC_E_CORRUPT, "Ogg is truncated: page");
        /* bytes in the middle overwritten: that page's CRC */
        memset(file + len / 2, 0x55, 200);
        expect(file, len, NULL, OMNIC_E_CORRUPT, "fails its CRC");
        free(file);
        free(x);
    }
    /* float samples that are not numbers */
    {
        float x[4] = {0.1f, NAN, 0.2f, 0.3f};
        uint8_t *file = NULL;
        size_t len = write_file(SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 1, x, 4, &file);
        expect(file, len, NULL, OMNIC_E_CORRUPT, "WAV audio frame 1 is not a finite number");
        free(file);
    }
    /* other containers and bytes */
    {
        float *x = sine(16000, 1, 1600, 440, 0.5);
        uint8_t *file = NULL;
        size_t len = write_file(SF_FORMAT_AIFF | SF_FORMAT_PCM_16, 16000, 1, x, 1600, &file);
        expect(file, len, NULL, OMNIC_E_UNSUPPORTED, "audio format AIFF is not supported");
        free(file);
        len = write_file(SF_FORMAT_WAV | SF_FORMAT_IMA_ADPCM, 16000, 1, x, 1600, &file);
        expect(file, len, NULL, OMNIC_E_UNSUPPORTED, "WAV audio with encoding 0x0012 is not supported");
        free(file);
        free(x);
    }
    static const uint8_t junk[] = "this is not audio at all";
    expect(junk, sizeof junk, NULL, OMNIC_E_UNSUPPORTED, "audio format unknown is not supported");
    expect(junk, 0, NULL, OMNIC_E_UNSUPPORTED, "unknown");
    /* an MP3 frame sync followed by garbage */
    uint8_t mp3[4096];
    for (size_t i = 0; i < sizeof mp3; i++)
        mp3[i] = (uint8_t)(i * 7919 >> 3);
    mp3[0] = 0xFF, mp3[1] = 0xFB, mp3[2] = 0x90, mp3[3] = 0x00;
    omnic__audio a;
    omnic_err err;
    omnic_status rc = decode(mp3, sizeof mp3, 16000, &a, &err);
    if (rc == OMNIC_OK) {
        assert_true(a.n >= 1);
        omnic__audio_deinit(&a);
    } else {
        assert_non_null(strstr(err.msg, "MP3"));
    }
}

static void test_cancel(void **state)
{
    (void)state;
    float *x = sine(16000, 1, 16000, 440, 0.5);
    uint8_t *file = NULL;
    size_t len = write_file(SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, x, 16000, &file);
    atomic_bool cancel = true;
    omnic__audio a = {0};
    omnic_err err;
    assert_int_equal(omnic__audio_decode(file, len, NULL, 16000, &cancel, &a, &err), OMNIC_E_CANCELLED);
    assert_null(a.samples);
    free(file);
    free(x);
}

static void test_sniff(void **state)
{
    (void)state;
    assert_int_equal(omnic__audio_sniff((const uint8_t *)"RIFF\0\0\0\0WAVEfmt ", 16), OMNIC__AUDIO_WAV);
    assert_int_equal(omnic__audio_sniff((const uint8_t *)"fLaC\0\0\0\x22", 8), OMNIC__AUDIO_FLAC);
    assert_int_equal(omnic__audio_sniff((const uint8_t *)"OggS\0\2", 6), OMNIC__AUDIO_OGG);
    assert_int_equal(omnic__audio_sniff((const uint8_t *)"ID3\4\0\0\0\0\0\0", 10), OMNIC__AUDIO_MP3);
    assert_int_equal(omnic__audio_sniff((const uint8_t *)"\xFF\xFB\x90\x00", 4), OMNIC__AUDIO_MP3);
    assert_int_equal(omnic__audio_sniff((const uint8_t *)"\xFF\xFF\xFF\xFF", 4), OMNIC__AUDIO_UNKNOWN);
    assert_int_equal(omnic__audio_sniff((const uint8_t *)"\0\0\0\x20"
                                                         "ftypM4A ",
                                        12),
                     OMNIC__AUDIO_MP4);
    assert_string_equal(omnic__audio_format_ext(OMNIC__AUDIO_OGG), "ogg");
    assert_null(omnic__audio_format_ext(OMNIC__AUDIO_MP4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lossless), cmocka_unit_test(test_downmix_mean), cmocka_unit_test(test_lossy),
        cmocka_unit_test(test_resample), cmocka_unit_test(test_refused),      cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_sniff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
