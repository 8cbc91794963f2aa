/* data: URL parsing and strict base64 decoding for images sent inline. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "mm/media_url.h"

static bool prefix_ci(const char *s, size_t len, const char *p)
{
    size_t n = strlen(p);
    if (len < n) return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != p[i]) return false;
    return true;
}

bool omnic__is_data_url(const char *url, size_t len)
{
    return url && prefix_ci(url, len, "data:");
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* A printable rendering of byte c for messages. */
static void char_desc(char *buf, size_t n, unsigned char c)
{
    if (c >= 0x20 && c < 0x7F)
        snprintf(buf, n, "'%c'", c);
    else
        snprintf(buf, n, "byte 0x%02X", c);
}

/* E_INVALID naming the first byte of src[0..len) outside the base64 alphabet and '='. */
static omnic_status check_alphabet(const char *src, size_t len, omnic_err *err)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c != '=' && b64_value(c) < 0) {
            char d[16];
            char_desc(d, sizeof d, c);
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "base64: invalid character %s at offset %zu", d, i);
        }
    }
    return OMNIC_OK;
}

omnic_status omnic__base64_decode(const char *src, size_t len, uint8_t *dst, size_t *dst_len, omnic_err *err)
{
    char d[16];
    OMNIC_TRY(check_alphabet(src, len, err));
    if (len % 4 != 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "base64: length %zu is not a multiple of 4 (missing '=' padding?)", len);
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        size_t pad = 0;
        for (size_t j = 0; j < 4; j++) {
            unsigned char c = (unsigned char)src[i + j];
            if (c == '=' && i + 4 == len && j >= 2) {
                /* '=' only in the last quantum, positions 2-3, and "x=" followed by '=' */
                if (j == 2 && (unsigned char)src[i + 3] != '=') {
                    char_desc(d, sizeof d, c);
                    return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                      "base64: padding %s at offset %zu is not at the end", d, i + j);
                }
                v[j] = 0;
                pad++;
                continue;
            }
            v[j] = b64_value(c);
            if (v[j] < 0 || pad) {
                char_desc(d, sizeof d, c);
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "base64: invalid character %s at offset %zu", d,
                                  i + j);
            }
        }
        uint32_t q = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        if ((pad == 1 && (q & 0xFF) != 0) || (pad == 2 && (q & 0xFFFF) != 0))
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "base64: non-zero unused bits before the padding at offset %zu", i + 3 - pad);
        dst[o++] = (uint8_t)(q >> 16);
        if (pad < 2) dst[o++] = (uint8_t)(q >> 8 & 0xFF);
        if (pad < 1) dst[o++] = (uint8_t)(q & 0xFF);
    }
    *dst_len = o;
    return OMNIC_OK;
}

/* The header and payload of a data URL: the lower-cased MIME type into mime[64] and the
 * decoded bytes (returns owned *out, *n > 0), the size checked against max_bytes from the
 * encoded length before anything is allocated. */
static omnic_status decode_payload(const char *url, size_t len, size_t max_bytes, char mime[64],
                                   uint8_t **out, size_t *out_n, omnic_err *err)
{
    if (max_bytes == 0) max_bytes = OMNIC_MAX_MEDIA_BYTES;
    if (!omnic__is_data_url(url, len))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "media URL is not a data: URL");
    const char *p = url + 5, *end = url + len;
    const char *comma = memchr(p, ',', (size_t)(end - p));
    if (!comma) return OMNIC_FAIL(err, OMNIC_E_INVALID, "data URL: no ',' before the payload");
    /* Header: <mime>[;param=value]*;base64 */
    const char *semi = memchr(p, ';', (size_t)(comma - p));
    const char *mime_end = semi ? semi : comma;
    size_t mime_len = (size_t)(mime_end - p);
    if (comma - p < 7 || !prefix_ci(comma - 7, 7, ";base64"))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "data URL: only base64 payloads are accepted (header must end in ';base64')");
    if (mime_len == 0 || mime_len >= 64)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "data URL: MIME type is %s",
                          mime_len ? "too long" : "missing");
    for (size_t i = 0; i < mime_len; i++) {
        unsigned char c = (unsigned char)p[i];
        mime[i] = (char)(c < 0x20 || c >= 0x7F ? '?' : tolower(c));
    }
    mime[mime_len] = 0;
    const char *b64 = comma + 1;
    size_t b64_len = (size_t)(end - b64);
    if (b64_len == 0) return OMNIC_FAIL(err, OMNIC_E_INVALID, "data URL: empty payload");
    omnic_status rc = check_alphabet(b64, b64_len, err);
    if (rc != OMNIC_OK) {
        omnic__err_prefix(err, "data URL payload");
        return rc;
    }
    if (b64_len % 4 != 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "data URL payload: base64 length %zu is not a multiple of 4 (missing '=' padding?)",
                          b64_len);
    /* The decoded size, from the encoded length alone: nothing is allocated for an oversize one. */
    size_t pad = (size_t)(b64[b64_len - 1] == '=') + (size_t)(b64[b64_len - 2] == '=');
    size_t bound = b64_len / 4 * 3, decoded = bound - pad;
    if (decoded > max_bytes)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "data URL: payload is %zu bytes, over the %zu byte limit",
                          decoded, max_bytes);
    uint8_t *buf = omnic_malloc(bound);
    if (!buf) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "data URL: out of memory for %zu bytes", bound);
    size_t n = 0;
    rc = omnic__base64_decode(b64, b64_len, buf, &n, err);
    if (rc != OMNIC_OK) {
        omnic__err_prefix(err, "data URL payload");
        omnic_free(buf);
        return rc;
    }
    *out = buf;
    *out_n = n;
    return OMNIC_OK;
}

/* Audio MIME types and the container each names. */
static const struct {
    const char *mime;
    omnic__audio_format f;
} audio_mimes[] = {{"audio/wav", OMNIC__AUDIO_WAV},   {"audio/x-wav", OMNIC__AUDIO_WAV},
                   {"audio/wave", OMNIC__AUDIO_WAV},  {"audio/vnd.wave", OMNIC__AUDIO_WAV},
                   {"audio/flac", OMNIC__AUDIO_FLAC}, {"audio/x-flac", OMNIC__AUDIO_FLAC},
                   {"audio/mpeg", OMNIC__AUDIO_MP3},  {"audio/mp3", OMNIC__AUDIO_MP3},
                   {"audio/ogg", OMNIC__AUDIO_OGG},   {"application/ogg", OMNIC__AUDIO_OGG}};

omnic_status omnic__data_url_decode_audio(const char *url, size_t len, size_t max_bytes, uint8_t **out,
                                          size_t *out_len, omnic_err *err)
{
    char mime[64];
    uint8_t *buf = NULL;
    size_t n = 0;
    OMNIC_TRY(decode_payload(url, len, max_bytes, mime, &buf, &n, err));
    size_t m = 0, nm = sizeof audio_mimes / sizeof audio_mimes[0];
    while (m < nm && strcmp(mime, audio_mimes[m].mime) != 0)
        m++;
    omnic__audio_format f = omnic__audio_sniff(buf, n);
    omnic_status rc = OMNIC_OK;
    if (m == nm)
        rc = OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "data URL: MIME type '%s' is not accepted (audio/wav, audio/flac, audio/mpeg, audio/ogg)", mime);
    else if (f != audio_mimes[m].f)
        rc = OMNIC_FAIL(err, OMNIC_E_INVALID, "data URL: declared %s but the payload is %s", mime,
                        f == OMNIC__AUDIO_UNKNOWN ? "not a recognised audio file"
                                                  : omnic__audio_format_name(f));
    if (rc != OMNIC_OK) {
        omnic_free(buf);
        return rc;
    }
    *out = buf;
    *out_len = n;
    return OMNIC_OK;
}

static const char *const allowed_mimes[] = {"image/jpeg", "image/png", "image/webp"};

omnic_status omnic__data_url_decode(const char *url, size_t len, size_t max_bytes, uint8_t **out,
                                    size_t *out_len, omnic__image_format *format, omnic_err *err)
{
    if (!omnic__is_data_url(url, len))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "image URL is not a data: URL");
    char mime[64];
    uint8_t *buf = NULL;
    size_t n = 0;
    OMNIC_TRY(decode_payload(url, len, max_bytes, mime, &buf, &n, err));
    size_t m = 0, nm = sizeof allowed_mimes / sizeof allowed_mimes[0];
    while (m < nm && strcmp(mime, allowed_mimes[m]) != 0)
        m++;
    omnic_status rc;
    if (m == nm) {
        rc = OMNIC_FAIL(err, OMNIC_E_INVALID,
                        "data URL: MIME type '%s' is not accepted (image/jpeg, image/png, image/webp)", mime);
        goto fail;
    }
    omnic__image_format f = omnic__image_sniff(buf, n);
    const char *f_mime = omnic__image_format_mime(f);
    if (!f_mime) {
        rc = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                        "data URL: declared %s but the payload is %s%s (supported: JPEG, PNG, WebP)", mime,
                        f == OMNIC__IMAGE_UNKNOWN ? "not a recognised image" : omnic__image_format_name(f),
                        f == OMNIC__IMAGE_UNKNOWN ? "" : " data");
        goto fail;
    }
    if (strcmp(f_mime, mime) != 0) {
        rc = OMNIC_FAIL(err, OMNIC_E_INVALID,
                        "data URL: declared %s but the payload's magic bytes say %s (%s)", mime, f_mime,
                        omnic__image_format_name(f));
        goto fail;
    }
    *out = buf;
    *out_len = n;
    if (format) *format = f;
    return OMNIC_OK;
fail:
    omnic_free(buf);
    return rc;
}
