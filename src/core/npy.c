/* NumPy .npy reader and writer (C order, little-endian) for stage dumps and oracles. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/dtype.h"
#include "core/npy.h"

static const char *descr_of(omnic_dtype t)
{
    switch (t) {
    case OMNIC_DTYPE_F32:
        return "<f4";
    case OMNIC_DTYPE_BF16:
        return "<f4"; /* widened on write */
    case OMNIC_DTYPE_F16:
        return "<f2";
    case OMNIC_DTYPE_I32:
        return "<i4";
    case OMNIC_DTYPE_I64:
        return "<i8";
    case OMNIC_DTYPE_U8:
        return "|u1";
    case OMNIC_DTYPE_BOOL:
        return "|b1";
    default:
        return NULL;
    }
}

static bool dtype_of_descr(const char *d, omnic_dtype *out)
{
    static const struct {
        const char *descr;
        omnic_dtype t;
    } map[] = {{"<f4", OMNIC_DTYPE_F32}, {"<f2", OMNIC_DTYPE_F16}, {"<i4", OMNIC_DTYPE_I32},
               {"<i8", OMNIC_DTYPE_I64}, {"|u1", OMNIC_DTYPE_U8},  {"<u1", OMNIC_DTYPE_U8},
               {"|b1", OMNIC_DTYPE_BOOL}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(d, map[i].descr)) {
            *out = map[i].t;
            return true;
        }
    return false;
}

omnic_status omnic__npy_write(const char *path, const omnic__tensor *t, omnic_err *err)
{
    const char *descr = descr_of(t->dtype);
    if (!descr)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: dtype %d has no .npy form", path, (int)t->dtype);
    size_t n, nbytes;
    OMNIC_TRY(omnic__tensor_numel(t, &n, err));
    OMNIC_TRY(omnic__tensor_nbytes(t, &nbytes, err));
    char hdr[512];
    int len = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->ndim; i++)
        len += snprintf(hdr + len, sizeof hdr - (size_t)len, "%lld,%s", (long long)t->dims[i],
                        i + 1 < t->ndim ? " " : "");
    len += snprintf(hdr + len, sizeof hdr - (size_t)len, "), }");
    /* total = 10-byte preamble + header + '\n', padded to a multiple of 64 (format 1.0) */
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) return OMNIC_FAIL(err, OMNIC_E_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    unsigned hlen = (unsigned)(len + pad + 1);
    uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(hlen & 0xff), (uint8_t)(hlen >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)len, f) == (size_t)len;
    for (int i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    if (ok && t->dtype == OMNIC_DTYPE_BF16) {
        const uint16_t *src = t->data;
        for (size_t i = 0; ok && i < n; i++) {
            float v = omnic__bf16_to_f32(src[i]);
            ok = fwrite(&v, 4, 1, f) == 1;
        }
    } else if (ok && nbytes) {
        ok = fwrite(t->data, 1, nbytes, f) == nbytes;
    }
    if (fclose(f) != 0) ok = false;
    if (!ok) return OMNIC_FAIL(err, OMNIC_E_IO, "%s: write failed: %s", path, strerror(errno));
    return OMNIC_OK;
}

/* ---- header dict parser: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } ---- */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n'))
        c->p++;
}

static bool eat(cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

static bool read_str(cursor *c, char *out, size_t cap)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (n + 1 >= cap) return false;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return false;
    c->p++;
    out[n] = '\0';
    return true;
}

static bool read_word(cursor *c, const char *w)
{
    skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return false;
    c->p += n;
    return true;
}

omnic_status omnic__npy_parse(const uint8_t *buf, size_t len, omnic__tensor **out, omnic_err *err)
{
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "npy: missing magic (file of %zu bytes)", len);
    int major = buf[6];
    size_t hlen, off;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "npy: truncated preamble (%zu bytes)", len);
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        off = 12;
    } else {
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "npy: format version %d is not 1, 2 or 3", major);
    }
    if (hlen > OMNIC_MAX_NPY_HEADER)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "npy: header of %zu bytes is over the %d-byte limit", hlen,
                          OMNIC_MAX_NPY_HEADER);
    if (hlen > len - off)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "npy: header of %zu bytes runs past the end of a %zu-byte file", hlen, len);
    cursor c = {(const char *)buf + off, (const char *)buf + off + hlen};
    char descr[16] = "";
    bool have_descr = false, have_shape = false, fortran = false;
    int ndim = 0;
    int64_t dims[OMNIC_MAX_DIMS] = {0};
    if (!eat(&c, '{')) goto bad;
    while (!eat(&c, '}')) {
        char key[32];
        if (!read_str(&c, key, sizeof key) || !eat(&c, ':')) goto bad;
        if (!strcmp(key, "descr")) {
            if (!read_str(&c, descr, sizeof descr)) goto bad;
            have_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (read_word(&c, "True"))
                fortran = true;
            else if (!read_word(&c, "False"))
                goto bad;
        } else if (!strcmp(key, "shape")) {
            if (!eat(&c, '(')) goto bad;
            while (!eat(&c, ')')) {
                skip_ws(&c);
                int64_t v = 0;
                int digits = 0;
                while (c.p < c.end && *c.p >= '0' && *c.p <= '9' && digits < 18)
                    v = v * 10 + (*c.p++ - '0'), digits++;
                if (!digits || (c.p < c.end && *c.p >= '0' && *c.p <= '9')) goto bad;
                if (ndim == OMNIC_MAX_DIMS)
                    return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "npy: rank over %d", OMNIC_MAX_DIMS);
                dims[ndim++] = v;
                if (!eat(&c, ',')) {
                    if (!eat(&c, ')')) goto bad;
                    break;
                }
            }
            have_shape = true;
        } else {
            goto bad;
        }
        if (!eat(&c, ',')) {
            if (!eat(&c, '}')) goto bad;
            break;
        }
    }
    if (!have_descr || !have_shape) goto bad;
    if (fortran) return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "npy: fortran_order arrays are not supported");
    omnic_dtype dt;
    if (!dtype_of_descr(descr, &dt))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "npy: dtype '%s' is not supported", descr);
    omnic__tensor probe;
    OMNIC_TRY(omnic__tensor_init(&probe, dt, ndim, dims, err));
    size_t nbytes;
    OMNIC_TRY(omnic__tensor_nbytes(&probe, &nbytes, err));
    size_t data_off = off + hlen;
    if (nbytes > len - data_off)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "npy: shape needs %zu data bytes, file has %zu", nbytes,
                          len - data_off);
    omnic__tensor *t;
    OMNIC_TRY(omnic__tensor_create(&t, dt, ndim, dims, err));
    if (nbytes) memcpy(t->data, buf + data_off, nbytes);
    *out = t;
    return OMNIC_OK;
bad:
    return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "npy: malformed header dict at byte %zu",
                      (size_t)(c.p - (const char *)buf));
}

omnic_status omnic__npy_read(const char *path, omnic__tensor **out, omnic_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return OMNIC_FAIL(err, OMNIC_E_IO, "%s: cannot open: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    omnic_status s = OMNIC_OK;
    long size;
    struct stat sb;
    /* a directory or device has no meaningful size (ftell can say LONG_MAX) */
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        s = OMNIC_FAIL(err, OMNIC_E_IO, "%s: not a regular file", path);
        goto out;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        s = OMNIC_FAIL(err, OMNIC_E_IO, "%s: cannot size the file", path);
        goto out;
    }
    buf = omnic_malloc(size ? (size_t)size : 1);
    if (!buf) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory reading %ld bytes", path, size);
        goto out;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        s = OMNIC_FAIL(err, OMNIC_E_IO, "%s: short read", path);
        goto out;
    }
    s = omnic__npy_parse(buf, (size_t)size, out, err);
    if (s != OMNIC_OK) omnic__err_prefix(err, "%s", path);
out:
    omnic_free(buf);
    fclose(f);
    return s;
}
