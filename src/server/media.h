/* Media acquisition for chat requests: the bytes behind an image part's URL. data: URLs
 * are decoded (MIME type checked against the bytes); a file path (or file:// URL) is read
 * only when it resolves inside the --media-dir directory; an http(s) URL is fetched only when
 * its host is on the --allow-remote-media list, never from a special-purpose address
 * (server/netaddr.h: loopback, private, link-local, translation prefixes, ...) unless that
 * address itself is listed, without redirects, within a
 * time and a size limit. Otherwise the server makes no outbound request: a clear error. */
#ifndef OMNIC_SERVER_MEDIA_H
#define OMNIC_SERVER_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Remote fetching: allowed hosts (exact, case-insensitive; borrowed), the time limit, an
 * optional port allow-list and an optional proxy. Proxies from the environment (http_proxy,
 * HTTPS_PROXY, ALL_PROXY, ...) are never used. With a proxy, the address check is the proxy's
 * job (omnic connects only to the proxy). */
typedef struct omnic__remote_media {
    const char *const *hosts;
    size_t n_hosts;
    double timeout_s;  /* connect + transfer; <= 0: 10 s */
    const long *ports; /* the URL's port (or its scheme's default) must be one of these; none: any */
    size_t n_ports;
    const char *proxy; /* NULL or "": none */
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
omnic_status omnic__media_fetch(const char *url, size_t len, const char *media_dir,
                                const omnic__remote_media *remote, size_t max_bytes, uint8_t **out,
                                size_t *out_len, omnic_err *err);
/* The same for an audio part's URL: a data: URL must carry an audio MIME type
 * (omnic__data_url_decode_audio); files and fetches as above. */
omnic_status omnic__media_fetch_audio(const char *url, size_t len, const char *media_dir,
                                      const omnic__remote_media *remote, size_t max_bytes, uint8_t **out,
                                      size_t *out_len, omnic_err *err);

#endif
