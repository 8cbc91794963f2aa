/* Media acquisition: data: URLs, files under --media-dir, allow-listed http(s) URLs. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "io/file.h"
#include "mm/media_url.h"
#include "server/media.h"
#include "server/netaddr.h"

static bool has_prefix(const char *s, size_t len, const char *p)
{
    size_t n = strlen(p);
    return len >= n && !strncasecmp(s, p, n);
}

omnic_status omnic__media_global_init(omnic_err *err)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "libcurl could not initialize");
    return OMNIC_OK;
}

/* ---- http(s) ---- */

typedef struct fetch_ctx {
    bool allow_internal; /* the URL's host is an address literal on the allow-list, or a proxy
                          * is used (the proxy's own address is no target) */
    const char *refused; /* the special-purpose range of an address the socket callback refused */
    uint8_t *buf;
    size_t len, cap, max;
    bool too_large;
} fetch_ctx;

static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
    fetch_ctx *f = clientp;
    const char *special =
        purpose != CURLSOCKTYPE_IPCXN ? "not a TCP connection" : omnic__addr_special(&addr->addr);
    if (special && !f->allow_internal) {
        f->refused = special;
        return CURL_SOCKET_BAD;
    }
    return socket(addr->family, addr->socktype, addr->protocol);
}

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
    fetch_ctx *f = userdata;
    size_t k = size * n;
    if (k > f->max - f->len) {
        f->too_large = true;
        return 0; /* aborts the transfer */
    }
    if (f->len + k > f->cap) {
        size_t cap = f->cap ? f->cap : 65536;
        while (cap < f->len + k)
            cap *= 2;
        if (cap > f->max) cap = f->max;
        uint8_t *nb = omnic_realloc(f->buf, cap);
        if (!nb) return 0;
        f->buf = nb, f->cap = cap;
    }
    memcpy(f->buf + f->len, p, k);
    f->len += k;
    return k;
}

static omnic_status fetch_remote(const char *url, size_t len, const omnic__remote_media *r, size_t max_bytes,
                                 uint8_t **out, size_t *out_len, omnic_err *err)
{
    char u[2048];
    if (len >= sizeof u || memchr(url, '\0', len))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the image URL is over %zu bytes or holds a NUL byte",
                          sizeof u - 1);
    memcpy(u, url, len);
    u[len] = '\0';
    CURLU *h = curl_url();
    char *host = NULL;
    omnic_status s = OMNIC_OK;
    if (!h || curl_url_set(h, CURLUPART_URL, u, 0) != CURLUE_OK ||
        curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "the image URL cannot be parsed");
        goto out;
    }
    bool listed = false;
    for (size_t i = 0; i < r->n_hosts && !listed; i++)
        listed = !strcasecmp(r->hosts[i], host);
    if (!listed) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "the image URL's host '%.100s' is not on --allow-remote-media",
                       host);
        goto out;
    }
    if (r->n_ports) { /* the port as the URL gives it, or its scheme's default */
        char *port = NULL;
        long pn = -1;
        if (curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
            pn = strtol(port, NULL, 10);
        curl_free(port);
        bool ok = false;
        for (size_t i = 0; i < r->n_ports && !ok; i++)
            ok = r->ports[i] == pn;
        if (!ok) {
            s = OMNIC_FAIL(err, OMNIC_E_INVALID,
                           "the image URL's port %ld is not on --allow-remote-media-port", pn);
            goto out;
        }
    }
    struct in6_addr a6;
    struct in_addr a4;
    const char *bare = host[0] == '[' ? host + 1 : host; /* an address literal on the list may be internal */
    char lit[64];
    snprintf(lit, sizeof lit, "%s", bare);
    char *rb = strchr(lit, ']');
    if (rb) *rb = '\0';
    fetch_ctx f = {.allow_internal = inet_pton(AF_INET, lit, &a4) == 1 ||
                                     inet_pton(AF_INET6, lit, &a6) == 1 || (r->proxy && r->proxy[0]),
                   .max = max_bytes};
    CURL *c = curl_easy_init();
    if (!c) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an HTTP request");
        goto out;
    }
    long ms = (long)((r->timeout_s > 0 ? r->timeout_s : 10.0) * 1000);
    curl_easy_setopt(c, CURLOPT_URL, u);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_bytes);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &f);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "omnic");
    /* never a proxy from the environment (http_proxy, ALL_PROXY, ...): only --media-proxy */
    curl_easy_setopt(c, CURLOPT_PROXY, r->proxy && r->proxy[0] ? r->proxy : "");
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (f.refused)
        s = OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "the image URL's host '%.100s' resolves to a special-purpose address: %s (list that address "
            "itself in --allow-remote-media to allow it)",
            host, f.refused);
    else if (f.too_large || rc == CURLE_FILESIZE_EXCEEDED)
        s = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "the image at the URL is over the limit of %zu bytes",
                       max_bytes);
    else if (rc == CURLE_OPERATION_TIMEDOUT)
        s = OMNIC_FAIL(err, OMNIC_E_IO, "fetching the image URL took over %ld ms", ms);
    else if (rc != CURLE_OK)
        s = OMNIC_FAIL(err, OMNIC_E_IO, "fetching the image URL failed: %s", curl_easy_strerror(rc));
    else if (status != 200)
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "fetching the image URL gave HTTP status %ld", status);
    else if (f.len == 0)
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "the image URL gave an empty body");
    if (s == OMNIC_OK) {
        *out = f.buf, *out_len = f.len;
        f.buf = NULL;
    }
    omnic_free(f.buf);
out:
    curl_free(host);
    curl_url_cleanup(h);
    return s;
}

static omnic_status fetch(const char *url, size_t len, const char *media_dir,
                          const omnic__remote_media *remote, size_t max_bytes, bool audio, uint8_t **out,
                          size_t *out_len, omnic_err *err);

omnic_status omnic__media_fetch(const char *url, size_t len, const char *media_dir,
                                const omnic__remote_media *remote, size_t max_bytes, uint8_t **out,
                                size_t *out_len, omnic_err *err)
{
    return fetch(url, len, media_dir, remote, max_bytes, false, out, out_len, err);
}

omnic_status omnic__media_fetch_audio(const char *url, size_t len, const char *media_dir,
                                      const omnic__remote_media *remote, size_t max_bytes, uint8_t **out,
                                      size_t *out_len, omnic_err *err)
{
    return fetch(url, len, media_dir, remote, max_bytes, true, out, out_len, err);
}

static omnic_status fetch(const char *url, size_t len, const char *media_dir,
                          const omnic__remote_media *remote, size_t max_bytes, bool audio, uint8_t **out,
                          size_t *out_len, omnic_err *err)
{
    if (omnic__is_data_url(url, len))
        return audio ? omnic__data_url_decode_audio(url, len, max_bytes, out, out_len, err)
                     : omnic__data_url_decode(url, len, max_bytes, out, out_len, NULL, err);
    if (has_prefix(url, len, "http://") || has_prefix(url, len, "https://")) {
        if (remote && remote->n_hosts) return fetch_remote(url, len, remote, max_bytes, out, out_len, err);
        return OMNIC_FAIL(
            err, OMNIC_E_UNSUPPORTED,
            "remote image URLs are not fetched by this server (no --allow-remote-media); send the image "
            "as a data: URL%s",
            media_dir ? " or a file path under --media-dir" : "");
    }
    const char *path = url;
    size_t plen = len;
    if (has_prefix(url, len, "file://"))
        path += 7, plen -= 7;
    else if (memchr(url, ':', len < 16 ? len : 16) && url[0] != '/' && url[0] != '.')
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the image URL's scheme is not supported (use a data: URL%s)",
                          media_dir ? " or a file path under --media-dir" : "");
    if (!media_dir)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "image file paths are refused: the server was started without --media-dir");
    if (plen == 0 || plen >= PATH_MAX || memchr(path, '\0', plen))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the image path is empty, too long or holds a NUL byte");
    char joined[PATH_MAX], real[PATH_MAX];
    int w = path[0] == '/' ? snprintf(joined, sizeof joined, "%.*s", (int)plen, path)
                           : snprintf(joined, sizeof joined, "%s/%.*s", media_dir, (int)plen, path);
    if (w < 0 || (size_t)w >= sizeof joined)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the image path is too long");
    /* one answer whether the path is missing or outside: no probing of what exists elsewhere */
    static const char *const nowhere = "the image path does not exist or is outside --media-dir";
    if (!realpath(joined, real)) return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s", nowhere);
    size_t dl = strlen(media_dir); /* resolved by the server: no trailing slash but for "/" */
    if (strncmp(real, media_dir, dl) || (real[dl] != '/' && !(dl == 1 && media_dir[0] == '/')))
        return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s", nowhere);
    /* the resolved path, opened without following a link swapped in since and without waiting
     * on a FIFO; read only when it is a regular file */
    char *bytes = NULL;
    omnic_err rerr;
    omnic_status st = omnic__read_file_ex(real, max_bytes, true, &bytes, out_len, &rerr);
    if (st == OMNIC_E_TOO_LARGE || st == OMNIC_E_NOMEM)
        return OMNIC_FAIL(err, st, "the image file: %s", rerr.msg + strlen(real) + 2);
    if (st != OMNIC_OK)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the image path is not a regular file under --media-dir");
    *out = (uint8_t *)bytes;
    return OMNIC_OK;
}
