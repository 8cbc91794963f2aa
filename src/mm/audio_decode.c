/* Audio decode: WAV / FLAC / MP3 / Ogg (Vorbis, Opus) from memory through libsndfile's virtual
 * I/O, limits checked against the header before any sample memory, channels averaged block by
 * block into one mono buffer (librosa.to_mono: the f32 mean), then resampled (audio_resample.c). */
#include <math.h>
#include <string.h>

#include <sndfile.h>

#include "core/limits.h"
#include "mm/audio.h"

/* Frames read per block: the cancel poll's granularity and the size of the interleaved buffer. */
#define BLOCK_FRAMES 4096

void omnic__audio_deinit(omnic__audio *a)
{
    if (!a) return;
    omnic_free(a->samples);
    memset(a, 0, sizeof *a);
}

/* ---- sniffing ----------------------------------------------------------------------------- */

/* An MPEG audio frame header at b: sync, a layer, a bitrate index other than 15, a sampling index
 * other than 3. */
static bool mpeg_frame(const uint8_t *b)
{
    return b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && (b[1] & 0x06) != 0 && (b[2] & 0xF0) != 0xF0 &&
           (b[2] & 0x0C) != 0x0C;
}

omnic__audio_format omnic__audio_sniff(const uint8_t *b, size_t n)
{
    if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WAVE", 4)) return OMNIC__AUDIO_WAV;
    if (n >= 4 && !memcmp(b, "fLaC", 4)) return OMNIC__AUDIO_FLAC;
    if (n >= 4 && !memcmp(b, "OggS", 4)) return OMNIC__AUDIO_OGG;
    if (n >= 10 && !memcmp(b, "ID3", 3)) return OMNIC__AUDIO_MP3;
    if (n >= 4 && mpeg_frame(b)) return OMNIC__AUDIO_MP3;
    if (n >= 12 && !memcmp(b, "FORM", 4) && (!memcmp(b + 8, "AIFF", 4) || !memcmp(b + 8, "AIFC", 4)))
        return OMNIC__AUDIO_AIFF;
    if (n >= 4 && !memcmp(b, ".snd", 4)) return OMNIC__AUDIO_AU;
    if (n >= 4 && (!memcmp(b, "RF64", 4) || !memcmp(b, "BW64", 4) || !memcmp(b, "riff", 4)))
        return OMNIC__AUDIO_RF64;
    if (n >= 12 && !memcmp(b + 4, "ftyp", 4)) return OMNIC__AUDIO_MP4;
    if (n >= 4 && !memcmp(b, "\x1A\x45\xDF\xA3", 4)) return OMNIC__AUDIO_WEBM;
    return OMNIC__AUDIO_UNKNOWN;
}

const char *omnic__audio_format_name(omnic__audio_format f)
{
    static const char *const names[OMNIC__AUDIO_FORMAT_COUNT] = {
        [OMNIC__AUDIO_UNKNOWN] = "unknown", [OMNIC__AUDIO_WAV] = "WAV",
        [OMNIC__AUDIO_FLAC] = "FLAC",       [OMNIC__AUDIO_MP3] = "MP3",
        [OMNIC__AUDIO_OGG] = "Ogg",         [OMNIC__AUDIO_AIFF] = "AIFF",
        [OMNIC__AUDIO_AU] = "AU",           [OMNIC__AUDIO_RF64] = "RF64/Wave64",
        [OMNIC__AUDIO_MP4] = "MP4/M4A",     [OMNIC__AUDIO_WEBM] = "WebM/Matroska",
    };
    return (unsigned)f < OMNIC__AUDIO_FORMAT_COUNT ? names[f] : "unknown";
}

const char *omnic__audio_format_ext(omnic__audio_format f)
{
    switch (f) {
    case OMNIC__AUDIO_WAV:
        return "wav";
    case OMNIC__AUDIO_FLAC:
        return "flac";
    case OMNIC__AUDIO_MP3:
        return "mp3";
    case OMNIC__AUDIO_OGG:
        return "ogg";
    default:
        return NULL;
    }
}

/* ---- the WAV header, read before libsndfile --------------------------------------------- */

static uint32_t le32(const uint8_t *p)
{
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* What a RIFF/WAVE file's own chunks declare: libsndfile shortens a data chunk that runs past
 * the end of the file to what is there and says so only in its log, so the declared length
 * (for the duration limit) and the truncation are read here. */
typedef struct wav_header {
    bool has_fmt, has_data;
    int channels, rate, block_align;
    uint64_t data_off, data_size;
} wav_header;

static void wav_walk(const uint8_t *b, size_t n, wav_header *h)
{
    memset(h, 0, sizeof *h);
    size_t off = 12;
    while (off + 8 <= n) {
        uint32_t size = le32(b + off + 4);
        if (!memcmp(b + off, "fmt ", 4) && size >= 16 && off + 8 + 16 <= n) {
            h->has_fmt = true;
            h->channels = le16(b + off + 10);
            h->rate = (int)(le32(b + off + 12) & 0x7FFFFFFF);
            h->block_align = le16(b + off + 20);
        } else if (!memcmp(b + off, "data", 4)) {
            h->has_data = true;
            h->data_off = off + 8;
            h->data_size = size;
            return;
        }
        off += 8 + (uint64_t)size + (size & 1);
    }
}

/* ---- the Ogg pages, checked before libsndfile -------------------------------------------- */

/* Ogg's CRC-32 (polynomial 0x04C11DB7, MSB first, initial value 0) of n bytes, the page's own
 * CRC field read as zero. */
static uint32_t ogg_crc(const uint8_t *p, size_t n, size_t crc_at)
{
    static uint32_t table[256];
    static atomic_bool ready;
    if (!atomic_load_explicit(&ready, memory_order_acquire)) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t r = i << 24;
            for (int k = 0; k < 8; k++)
                r = r & 0x80000000u ? (r << 1) ^ 0x04C11DB7u : r << 1;
            table[i] = r;
        }
        atomic_store_explicit(&ready, true, memory_order_release);
    }
    uint32_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = i >= crc_at && i < crc_at + 4 ? 0 : p[i];
        crc = (crc << 8) ^ table[(crc >> 24) ^ b];
    }
    return crc;
}

/* A whole Ogg stream: pages back to back to the end of the buffer, each with its CRC, the last
 * one marked end-of-stream. libsndfile 1.2.0 leaks its Vorbis state when it measures a stream
 * that stops short, and a truncated or damaged file is refused by name anyway. */
static omnic_status ogg_check(const uint8_t *b, size_t n, omnic_err *err)
{
    size_t off = 0;
    int64_t page = 0;
    uint8_t last_flags = 0;
    while (off < n) {
        if (n - off < 27 || memcmp(b + off, "OggS", 4) || b[off + 4] != 0)
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "Ogg page %lld at offset %zu is not an Ogg page header%s",
                              (long long)page, off, n - off < 27 ? " (the file ends inside it)" : "");
        size_t nseg = b[off + 26], len = 27 + nseg;
        if (n - off < len)
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "Ogg is truncated inside page %lld at offset %zu",
                              (long long)page, off);
        for (size_t i = 0; i < nseg; i++)
            len += b[off + 27 + i];
        if (n - off < len)
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                              "Ogg is truncated: page %lld at offset %zu needs %zu bytes, %zu remain",
                              (long long)page, off, len, n - off);
        uint32_t want = le32(b + off + 22);
        if (ogg_crc(b + off, len, 22) != want)
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "Ogg page %lld at offset %zu fails its CRC",
                              (long long)page, off);
        last_flags = b[off + 5];
        off += len;
        page++;
    }
    if (!(last_flags & 0x04))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "Ogg is truncated: its last page (%lld of them) does not end the stream",
                          (long long)page);
    return OMNIC_OK;
}

/* ---- libsndfile over a memory buffer ------------------------------------------------------ */

typedef struct mem_file {
    const uint8_t *buf;
    sf_count_t len, pos;
} mem_file;

static sf_count_t mem_len(void *u)
{
    return ((mem_file *)u)->len;
}
static sf_count_t mem_tell(void *u)
{
    return ((mem_file *)u)->pos;
}

static sf_count_t mem_seek(sf_count_t off, int whence, void *u)
{
    mem_file *f = u;
    sf_count_t base = whence == SEEK_CUR ? f->pos : whence == SEEK_END ? f->len : 0;
    if ((off > 0 && base > f->len - off) || base + off < 0) return -1;
    f->pos = base + off;
    if (f->pos > f->len) f->pos = f->len;
    return f->pos;
}

static sf_count_t mem_read(void *ptr, sf_count_t count, void *u)
{
    mem_file *f = u;
    if (count <= 0 || f->pos >= f->len) return 0;
    sf_count_t k = f->len - f->pos < count ? f->len - f->pos : count;
    memcpy(ptr, f->buf + f->pos, (size_t)k);
    f->pos += k;
    return k;
}

static sf_count_t mem_write(const void *ptr, sf_count_t count, void *u)
{
    (void)ptr, (void)count, (void)u;
    return 0;
}

/* The encodings each container may carry here; others are E_UNSUPPORTED by name. */
static const char *subtype_name(int sub)
{
    switch (sub) {
    case SF_FORMAT_PCM_S8:
        return "8-bit PCM";
    case SF_FORMAT_PCM_U8:
        return "8-bit PCM";
    case SF_FORMAT_PCM_16:
        return "16-bit PCM";
    case SF_FORMAT_PCM_24:
        return "24-bit PCM";
    case SF_FORMAT_PCM_32:
        return "32-bit PCM";
    case SF_FORMAT_FLOAT:
        return "32-bit float";
    case SF_FORMAT_DOUBLE:
        return "64-bit float";
    case SF_FORMAT_ULAW:
        return "u-law";
    case SF_FORMAT_ALAW:
        return "A-law";
    case SF_FORMAT_VORBIS:
        return "Vorbis";
    case SF_FORMAT_OPUS:
        return "Opus";
    case SF_FORMAT_MPEG_LAYER_I:
        return "MPEG layer I";
    case SF_FORMAT_MPEG_LAYER_II:
        return "MPEG layer II";
    case SF_FORMAT_MPEG_LAYER_III:
        return "MPEG layer III";
    default:
        return NULL;
    }
}

static bool subtype_allowed(omnic__audio_format f, int sub)
{
    switch (f) {
    case OMNIC__AUDIO_WAV:
        return sub == SF_FORMAT_PCM_U8 || sub == SF_FORMAT_PCM_16 || sub == SF_FORMAT_PCM_24 ||
               sub == SF_FORMAT_PCM_32 || sub == SF_FORMAT_FLOAT || sub == SF_FORMAT_DOUBLE ||
               sub == SF_FORMAT_ULAW || sub == SF_FORMAT_ALAW;
    case OMNIC__AUDIO_FLAC:
        return sub == SF_FORMAT_PCM_S8 || sub == SF_FORMAT_PCM_16 || sub == SF_FORMAT_PCM_24;
    case OMNIC__AUDIO_OGG:
        return sub == SF_FORMAT_VORBIS || sub == SF_FORMAT_OPUS;
    case OMNIC__AUDIO_MP3:
        return sub == SF_FORMAT_MPEG_LAYER_I || sub == SF_FORMAT_MPEG_LAYER_II ||
               sub == SF_FORMAT_MPEG_LAYER_III;
    default:
        return false;
    }
}

static bool major_matches(omnic__audio_format f, int major)
{
    switch (f) {
    case OMNIC__AUDIO_WAV:
        return major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX;
    case OMNIC__AUDIO_FLAC:
        return major == SF_FORMAT_FLAC;
    case OMNIC__AUDIO_OGG:
        return major == SF_FORMAT_OGG;
    case OMNIC__AUDIO_MP3:
        return major == SF_FORMAT_MPEG;
    default:
        return false;
    }
}

/* ---- decode ------------------------------------------------------------------------------- */

typedef struct limits_resolved {
    double max_seconds;
    int max_channels, min_rate, max_rate;
} limits_resolved;

static limits_resolved resolve_limits(const omnic__audio_limits *l)
{
    limits_resolved r = {OMNIC_MAX_AUDIO_SECONDS, OMNIC_MAX_AUDIO_CHANNELS, OMNIC_MIN_AUDIO_RATE,
                         OMNIC_MAX_AUDIO_RATE};
    if (l && l->max_seconds > 0) r.max_seconds = l->max_seconds;
    if (l && l->max_channels > 0) r.max_channels = l->max_channels;
    if (l && l->min_rate > 0) r.min_rate = l->min_rate;
    if (l && l->max_rate > 0) r.max_rate = l->max_rate;
    return r;
}

static omnic_status check_format(int channels, int rate, const limits_resolved *lim, const char *fmt,
                                 omnic_err *err)
{
    if (channels < 1) return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s audio declares %d channels", fmt, channels);
    if (channels > lim->max_channels)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s audio has %d channels; the limit is %d", fmt, channels,
                          lim->max_channels);
    if (rate < lim->min_rate || rate > lim->max_rate)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "%s audio sample rate %d Hz is outside the accepted %d..%d Hz", fmt, rate,
                          lim->min_rate, lim->max_rate);
    return OMNIC_OK;
}

static omnic_status check_duration(double frames, int rate, const limits_resolved *lim, const char *fmt,
                                   omnic_err *err)
{
    double seconds = frames / rate;
    if (seconds > lim->max_seconds)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "%s audio lasts %.3f s (%.0f frames at %d Hz); the limit is %g s per clip", fmt,
                          seconds, frames, rate, lim->max_seconds);
    return OMNIC_OK;
}

/* Reads every frame of sf, averaging channels into *mono (owned, grown up to cap frames). */
static omnic_status read_mono(SNDFILE *sf, int channels, int64_t expect, int64_t cap,
                              const limits_resolved *lim, int rate, const char *fmt,
                              const atomic_bool *cancel, float **mono, int64_t *n_out, omnic_err *err)
{
    float *block = omnic_alloc_array((size_t)BLOCK_FRAMES * (size_t)channels, sizeof(float));
    int64_t capacity = expect > 0 && expect < cap ? expect : (cap < BLOCK_FRAMES ? cap : BLOCK_FRAMES);
    float *out = omnic_alloc_array((size_t)capacity, sizeof(float));
    omnic_status rc = OMNIC_OK;
    int64_t n = 0;
    if (!block || !out) {
        rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld audio frames", (long long)capacity);
        goto done;
    }
    for (;;) {
        if (cancel && atomic_load_explicit(cancel, memory_order_relaxed)) {
            rc = OMNIC_FAIL(err, OMNIC_E_CANCELLED, "audio decode cancelled after %lld frames", (long long)n);
            goto done;
        }
        sf_count_t got = sf_readf_float(sf, block, BLOCK_FRAMES);
        if (got <= 0) break;
        if (n + got > cap) {
            rc = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                            "%s audio runs past %lld frames at %d Hz; the limit is %g s per clip", fmt,
                            (long long)cap, rate, lim->max_seconds);
            goto done;
        }
        if (n + got > capacity) {
            int64_t c = capacity * 2 > n + got ? capacity * 2 : n + got;
            if (c > cap) c = cap;
            float *p = omnic_realloc(out, (size_t)c * sizeof(float));
            if (!p) {
                rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld audio frames", (long long)c);
                goto done;
            }
            out = p;
            capacity = c;
        }
        for (sf_count_t i = 0; i < got; i++) {
            const float *fr = block + i * channels;
            float s = fr[0];
            for (int c = 1; c < channels; c++)
                s += fr[c];
            if (channels > 1) s /= (float)channels;
            if (!isfinite(s)) {
                rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s audio frame %lld is not a finite number", fmt,
                                (long long)(n + i));
                goto done;
            }
            out[n + i] = s;
        }
        n += got;
    }
    if (sf_error(sf) != SF_ERR_NO_ERROR) {
        rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s audio is corrupt after %lld frames: %s", fmt, (long long)n,
                        sf_strerror(sf));
        goto done;
    }
done:
    omnic_free(block);
    if (rc != OMNIC_OK) {
        omnic_free(out);
        return rc;
    }
    *mono = out;
    *n_out = n;
    return OMNIC_OK;
}

omnic_status omnic__audio_decode(const uint8_t *buf, size_t len, const omnic__audio_limits *limits,
                                 int target_rate, const atomic_bool *cancel, omnic__audio *out,
                                 omnic_err *err)
{
    limits_resolved lim = resolve_limits(limits);
    omnic__audio_format f = omnic__audio_sniff(buf, len);
    const char *fmt = omnic__audio_format_name(f);
    if (!omnic__audio_format_ext(f))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "audio format %s is not supported (WAV, FLAC, MP3 and Ogg Vorbis/Opus decode)",
                          fmt);
    if (target_rate < 0 || target_rate > OMNIC_MAX_AUDIO_RATE)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "target sample rate %d Hz", target_rate);

    double declared = -1; /* frames the container's own header declares (WAV), -1: not read */
    if (f == OMNIC__AUDIO_WAV) {
        wav_header h;
        wav_walk(buf, len, &h);
        if (!h.has_fmt || !h.has_data)
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "WAV file of %zu bytes has no %s chunk", len,
                              h.has_fmt ? "data" : "fmt");
        OMNIC_TRY(check_format(h.channels, h.rate, &lim, fmt, err));
        if (h.block_align < 1) return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "WAV block align is 0");
        bool streaming = h.data_size == 0 || h.data_size == 0xFFFFFFFFu;
        if (!streaming) {
            declared = (double)(h.data_size / (uint64_t)h.block_align);
            OMNIC_TRY(check_duration(declared, h.rate, &lim, fmt, err));
            if (h.data_off + h.data_size > len)
                return OMNIC_FAIL(
                    err, OMNIC_E_CORRUPT,
                    "WAV is truncated: its data chunk declares %llu bytes at offset %llu, the file "
                    "has %zu bytes",
                    (unsigned long long)h.data_size, (unsigned long long)h.data_off, len);
        }
    }

    if (f == OMNIC__AUDIO_OGG) OMNIC_TRY(ogg_check(buf, len, err));

    mem_file mf = {buf, (sf_count_t)len, 0};
    SF_VIRTUAL_IO vio = {mem_len, mem_seek, mem_read, mem_write, mem_tell};
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, &info, &mf);
    if (!sf) return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s audio does not open: %s", fmt, sf_strerror(NULL));

    omnic_status rc;
    int major = info.format & SF_FORMAT_TYPEMASK, sub = info.format & SF_FORMAT_SUBMASK;
    float *mono = NULL;
    int64_t n = 0;
    if (!major_matches(f, major)) {
        rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT, "audio looks like %s but libsndfile reads container 0x%x", fmt,
                        (unsigned)major);
        goto fail;
    }
    if (!subtype_allowed(f, sub)) {
        const char *name = subtype_name(sub);
        if (name)
            rc = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s audio with %s samples is not supported", fmt, name);
        else
            rc = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s audio with encoding 0x%04x is not supported", fmt,
                            (unsigned)sub);
        goto fail;
    }
    rc = check_format(info.channels, info.samplerate, &lim, fmt, err);
    if (rc != OMNIC_OK) goto fail;
    /* Frames allowed: the duration limit at this rate (a stream without a length is bounded by it
     * while reading). */
    int64_t cap = (int64_t)floor(lim.max_seconds * info.samplerate);
    bool known = info.frames > 0 && info.frames < SF_COUNT_MAX;
    if (known) {
        rc = check_duration((double)info.frames, info.samplerate, &lim, fmt, err);
        if (rc != OMNIC_OK) goto fail;
    }
    rc = read_mono(sf, info.channels, known ? (int64_t)info.frames : 0, cap, &lim, info.samplerate, fmt,
                   cancel, &mono, &n, err);
    if (rc != OMNIC_OK) goto fail;
    if (f == OMNIC__AUDIO_FLAC && known && n < info.frames) {
        rc =
            OMNIC_FAIL(err, OMNIC_E_CORRUPT, "FLAC is truncated: %lld of the %lld frames its header declares",
                       (long long)n, (long long)info.frames);
        goto fail;
    }
    if (declared >= 0 && (double)n < declared) {
        rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT, "WAV is truncated: %lld of the %.0f frames its header declares",
                        (long long)n, declared);
        goto fail;
    }
    if (n == 0) {
        rc = OMNIC_FAIL(err, OMNIC_E_INVALID, "%s audio has no samples (0 s)", fmt);
        goto fail;
    }
    sf_close(sf);
    sf = NULL;

    omnic__audio a = {.samples = mono,
                      .n = n,
                      .sample_rate = info.samplerate,
                      .source_rate = info.samplerate,
                      .source_channels = info.channels,
                      .format = f};
    if (target_rate > 0 && target_rate != info.samplerate) {
        float *rs = NULL;
        int64_t m = 0;
        rc = omnic__audio_resample(mono, n, info.samplerate, target_rate, &rs, &m, err);
        omnic_free(mono);
        if (rc != OMNIC_OK) return rc;
        a.samples = rs;
        a.n = m;
        a.sample_rate = target_rate;
    }
    *out = a;
    return OMNIC_OK;
fail:
    omnic_free(mono);
    if (sf) sf_close(sf);
    return rc;
}
