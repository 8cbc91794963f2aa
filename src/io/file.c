/* Whole-file reads with a size cap, path joining and stat for the io layer. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/file.h"

omnic_status omnic__read_file(const char *path, size_t max_bytes, char **out, size_t *len, omnic_err *err)
{
    return omnic__read_file_ex(path, max_bytes, false, out, len, err);
}

omnic_status omnic__read_file_ex(const char *path, size_t max_bytes, bool untrusted, char **out, size_t *len,
                                 omnic_err *err)
{
    omnic_status st = OMNIC_OK;
    char *buf = NULL;
    /* untrusted: a link is not followed, and opening a FIFO or a device must not wait (the
     * regular-file check follows) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | (untrusted ? O_NOFOLLOW | O_NONBLOCK : 0));
    if (fd < 0) {
        int e = errno;
        if (untrusted && e == ELOOP) return OMNIC_FAIL(err, OMNIC_E_IO, "%s: is a symbolic link", path);
        return OMNIC_FAIL(err, e == ENOENT ? OMNIC_E_NOT_FOUND : OMNIC_E_IO, "%s: cannot open: %s", path,
                          strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = OMNIC_FAIL(err, OMNIC_E_IO, "%s: cannot stat: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = OMNIC_FAIL(err, OMNIC_E_IO, "%s: not a regular file", path);
        goto fail;
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > (uint64_t)max_bytes) {
        st = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: file is %lld bytes, over the limit of %zu bytes", path,
                        (long long)sb.st_size, max_bytes);
        goto fail;
    }
    size_t size = (size_t)sb.st_size, cap;
    if (!omnic_size_add(&cap, size, 1) || !(buf = omnic_malloc(cap))) {
        st = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: cannot allocate %zu bytes to read it", path, size);
        goto fail;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = OMNIC_FAIL(err, OMNIC_E_IO, "%s: read failed at byte %zu of %zu: %s", path, got, size,
                            strerror(errno));
            goto fail;
        }
        if (r == 0) break; /* truncated while we read: keep what is there */
        got += (size_t)r;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    buf = NULL;
fail:
    omnic_free(buf);
    close(fd);
    return st;
}

char *omnic__path_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name), total;
    while (dl > 1 && dir[dl - 1] == '/')
        dl--; /* "d/" + "x" -> "d/x"; "/" stays "/" */
    bool slash = !(dl == 1 && dir[0] == '/');
    if (!omnic_size_add(&total, dl, nl) || !omnic_size_add(&total, total, slash ? 2 : 1)) return NULL;
    char *p = omnic_malloc(total);
    if (!p) return NULL;
    memcpy(p, dir, dl);
    size_t o = dl;
    if (slash) p[o++] = '/';
    memcpy(p + o, name, nl);
    p[o + nl] = '\0';
    return p;
}

omnic_status omnic__path_stat(const char *path, bool *exists, bool *is_reg, bool *is_dir, uint64_t *size,
                              omnic_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            return OMNIC_FAIL(err, OMNIC_E_IO, "%s: cannot stat: %s", path, strerror(errno));
        if (exists) *exists = false;
        if (is_reg) *is_reg = false;
        if (is_dir) *is_dir = false;
        if (size) *size = 0;
        return OMNIC_OK;
    }
    if (exists) *exists = true;
    if (is_reg) *is_reg = S_ISREG(sb.st_mode);
    if (is_dir) *is_dir = S_ISDIR(sb.st_mode);
    if (size) *size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    return OMNIC_OK;
}
