/* data: URLs carrying images (`data:<mime>[;param]*;base64,<payload>`, RFC 2397), as OpenAI
 * chat requests send them in image_url parts: strict base64, a byte limit checked before
 * decoding, and a MIME type that must be a decodable image format matching the payload's magic
 * bytes. */
#ifndef OMNIC_MM_MEDIA_URL_H
#define OMNIC_MM_MEDIA_URL_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "mm/audio.h"
#include "mm/image.h"

/* True when url[0..len) starts with "data:" (case-insensitive). */
bool omnic__is_data_url(const char *url, size_t len);

/* Decodes the data URL url[0..len) (borrowed; need not be NUL-terminated). max_bytes bounds the
 * decoded payload (0 means OMNIC_MAX_MEDIA_BYTES) and is checked from the encoded length before
 * anything is allocated. The MIME type (case-insensitive) must be image/jpeg, image/png or
 * image/webp and must match the format sniffed from the payload. On OMNIC_OK, *out (returns
 * owned, omnic_free) holds *out_len > 0 bytes and *format (may be NULL) the format.
 * Errors: E_INVALID (not a data: URL, no ";base64," marker, non-base64 character or bad padding
 * at a named offset into the payload, empty payload, MIME type not an allowed image type, MIME
 * type and magic bytes disagree: both named), E_UNSUPPORTED (payload of another image format,
 * e.g. GIF under image/png: names both), E_TOO_LARGE (names both sizes), E_NOMEM. Outputs
 * untouched on failure. */
omnic_status omnic__data_url_decode(const char *url, size_t len, size_t max_bytes, uint8_t **out,
                                    size_t *out_len, omnic__image_format *format, omnic_err *err);

/* The same for audio: the MIME type must be audio/wav (x-wav, wave, vnd.wave), audio/flac
 * (x-flac), audio/mpeg (mp3) or audio/ogg (application/ogg) and name the container sniffed from
 * the payload (mm/audio.h). Errors as omnic__data_url_decode's (E_INVALID for a MIME type / payload
 * mismatch, naming both). */
omnic_status omnic__data_url_decode_audio(const char *url, size_t len, size_t max_bytes, uint8_t **out,
                                          size_t *out_len, omnic_err *err);

/* Strict RFC 4648 base64 (standard alphabet, '=' padding required, no whitespace, zero unused
 * bits) of src[0..len) into dst (borrowed, at least len / 4 * 3 bytes); *dst_len gets the byte
 * count. E_INVALID naming the offset of the first bad character. */
omnic_status omnic__base64_decode(const char *src, size_t len, uint8_t *dst, size_t *dst_len, omnic_err *err);

#endif
