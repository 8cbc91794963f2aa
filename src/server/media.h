/* Media acquisition for chat requests: the bytes behind an image part's URL. data: URLs
 * are decoded (MIME type checked against the bytes); a file path (or file:// URL) is read
 * only when it resolves inside the --media-dir directory. Remote http(s) URLs are not
 * fetched (the server never makes outbound requests): a clear error says so. */
#ifndef OMNIC_SERVER_MEDIA_H
#define OMNIC_SERVER_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* url[0..len) (borrowed). media_dir: the resolved directory files may come from, or NULL
 * (no files). max_bytes bounds the payload. Returns owned *out (omnic_free). Errors:
 * E_INVALID (malformed data: URL, a path outside media_dir or not a regular file, an
 * unknown scheme, no media_dir: each named), E_UNSUPPORTED (http(s) URLs; a data: URL of
 * another image format), E_TOO_LARGE (names the size and the limit), E_NOT_FOUND, E_IO, E_NOMEM. */
omnic_status omnic__media_fetch(const char *url, size_t len, const char *media_dir, size_t max_bytes, uint8_t **out,
                                size_t *out_len, omnic_err *err);

#endif
