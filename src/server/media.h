/* Media acquisition for chat requests: the bytes behind an image part's URL. data: URLs
 * are decoded (MIME type checked against the bytes); a file path (or file:// URL) is read
 * only when it resolves inside the --media-dir directory; an http(s) URL is fetched only when
 * its host is on the --allow-remote-media list, never from a loopback, private, link-local or
 * unspecified address unless that address itself is listed, without redirects, within a
 * time and a size limit. Otherwise the server makes no outbound request: a clear error. */
#ifndef OMNIC_SERVER_MEDIA_H
#define OMNIC_SERVER_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Remote fetching: allowed hosts (exact, case-insensitive; borrowed) and the time limit. */
typedef struct omnic__remote_media {
    const char *const *hosts;
    size_t n_hosts;
    double timeout_s; /* connect + transfer; <= 0: 10 s */
} omnic__remote_media;

/* Once per process, before threads fetch (libcurl's global state). */
omnic_status omnic__media_global_init(omnic_err *err);

/* url[0..len) (borrowed). media_dir: the resolved directory files may come from, or NULL
 * (no files). remote: NULL (no fetching) or the allow-list. max_bytes bounds the payload.
 * Returns owned *out (omnic_free). Errors: E_INVALID (malformed data: URL, a path outside
 * media_dir or not a regular file, an unknown scheme, no media_dir, a host not on the list, a
 * refused address, an HTTP status other than 200: each named), E_UNSUPPORTED (http(s) without
 * an allow-list; a data: URL of another image format), E_TOO_LARGE (names the size and the
 * limit), E_IO (connection, timeout: named), E_NOT_FOUND, E_NOMEM. */
omnic_status omnic__media_fetch(const char *url, size_t len, const char *media_dir, const omnic__remote_media *remote,
                                size_t max_bytes, uint8_t **out, size_t *out_len, omnic_err *err);

#endif
