/* Media acquisition: data: URLs and files under --media-dir. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "io/file.h"
#include "mm/media_url.h"
#include "server/media.h"

static bool has_prefix(const char *s, size_t len, const char *p)
{
    size_t n = strlen(p);
    return len >= n && !strncasecmp(s, p, n);
}

omnic_status omnic__media_fetch(const char *url, size_t len, const char *media_dir, size_t max_bytes, uint8_t **out,
                                size_t *out_len, omnic_err *err)
{
    if (omnic__is_data_url(url, len)) return omnic__data_url_decode(url, len, max_bytes, out, out_len, NULL, err);
    if (has_prefix(url, len, "http://") || has_prefix(url, len, "https://"))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "remote image URLs are not fetched by this server; send the image as a data: URL%s",
                          media_dir ? " or a file path under --media-dir" : "");
    const char *path = url;
    size_t plen = len;
    if (has_prefix(url, len, "file://")) path += 7, plen -= 7;
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
    if (w < 0 || (size_t)w >= sizeof joined) return OMNIC_FAIL(err, OMNIC_E_INVALID, "the image path is too long");
    if (!realpath(joined, real)) {
        if (errno == ENOENT || errno == ENOTDIR)
            return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "the image file does not exist under --media-dir");
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the image path cannot be resolved: %s", strerror(errno));
    }
    size_t dl = strlen(media_dir); /* resolved by the server: no trailing slash but for "/" */
    if (strncmp(real, media_dir, dl) || (real[dl] != '/' && !(dl == 1 && media_dir[0] == '/')))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the image path resolves outside --media-dir");
    bool exists, is_reg, is_dir;
    uint64_t size;
    OMNIC_TRY(omnic__path_stat(real, &exists, &is_reg, &is_dir, &size, err));
    if (!is_reg) return OMNIC_FAIL(err, OMNIC_E_INVALID, "the image path is not a regular file");
    char *bytes = NULL;
    OMNIC_TRY(omnic__read_file(real, max_bytes, &bytes, out_len, err));
    *out = (uint8_t *)bytes;
    return OMNIC_OK;
}
