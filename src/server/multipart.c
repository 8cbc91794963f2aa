/* multipart/form-data parsing (server/multipart.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "server/multipart.h"

/* Case-insensitive prefix test of s[0..n) against p. */
static bool starts_ci(const char *s, size_t n, const char *p)
{
    size_t k = strlen(p);
    if (n < k) return false;
    for (size_t i = 0; i < k; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)p[i])) return false;
    return true;
}

/* The value of parameter key in a header value h[0..n) ("...; key=value" or key="value") into
 * out[cap]; false when absent, empty, too long, malformed or holding a control byte (NUL
 * included: the value is a C string). */
static bool header_param(const char *h, size_t n, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl < n; i++) {
        if ((i > 0 && h[i - 1] != ';' && h[i - 1] != ' ' && h[i - 1] != '\t') ||
            !starts_ci(h + i, n - i, key) || h[i + kl] != '=')
            continue;
        size_t j = i + kl + 1, o = 0;
        if (j < n && h[j] == '"') {
            for (j++; j < n && h[j] != '"'; j++) {
                if (h[j] == '\\' && j + 1 < n) j++;
                if (o + 1 >= cap || (unsigned char)h[j] < 0x20 || h[j] == 0x7F) return false;
                out[o++] = h[j];
            }
            if (j >= n) return false; /* unterminated quote */
        } else {
            for (; j < n && h[j] != ';' && h[j] != ' ' && h[j] != '\t'; j++) {
                if (o + 1 >= cap || (unsigned char)h[j] < 0x20 || h[j] == 0x7F) return false;
                out[o++] = h[j];
            }
        }
        out[o] = '\0';
        return o > 0;
    }
    return false;
}

/* The first occurrence of needle[0..m) in hay[0..n), or NULL. */
static const uint8_t *find(const uint8_t *hay, size_t n, const char *needle, size_t m)
{
    if (m == 0 || n < m) return NULL;
    for (const uint8_t *p = hay; (p = memchr(p, needle[0], n - (size_t)(p - hay) - m + 1)); p++)
        if (!memcmp(p, needle, m)) return p;
    return NULL;
}

const omnic__form_part *omnic__form_get(const omnic__form *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->parts[i].name, name)) return &f->parts[i];
    return NULL;
}

omnic_status omnic__form_parse(const char *content_type, const uint8_t *body, size_t len, omnic__form *out,
                               omnic_err *err)
{
    memset(out, 0, sizeof *out);
    const size_t ctl = content_type ? strlen(content_type) : 0;
    if (!content_type || !starts_ci(content_type, ctl, "multipart/form-data"))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the body is not multipart/form-data");
    char boundary[75];
    if (!header_param(content_type, ctl, "boundary", boundary, sizeof boundary) || strlen(boundary) > 70)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "multipart/form-data: no boundary (1..70 characters) in the Content-Type");
    char delim[80];
    const int dl = snprintf(delim, sizeof delim, "\r\n--%s", boundary);
    /* the first delimiter may open the body (no CRLF before it) */
    const uint8_t *p = body, *end = body + len;
    if (len >= (size_t)dl - 2 && !memcmp(body, delim + 2, (size_t)dl - 2)) {
        p = body + dl - 2;
    } else {
        const uint8_t *d = find(body, len, delim, (size_t)dl);
        if (!d) return OMNIC_FAIL(err, OMNIC_E_INVALID, "multipart/form-data: no '--%s' delimiter", boundary);
        p = d + dl;
    }
    for (;;) {
        /* after a delimiter: "--" closes the body, CRLF opens a part */
        if (end - p >= 2 && p[0] == '-' && p[1] == '-') return OMNIC_OK;
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "multipart/form-data: a delimiter at byte %zu is not followed by CRLF",
                              (size_t)(p - body));
        p += 2;
        if (out->n == OMNIC_MAX_FORM_PARTS)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "multipart/form-data: more than %d parts",
                              OMNIC_MAX_FORM_PARTS);
        omnic__form_part *part = &out->parts[out->n];
        bool disposition = false;
        for (;;) { /* headers up to an empty line */
            const uint8_t *eol = find(p, (size_t)(end - p), "\r\n", 2);
            if (!eol)
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "multipart/form-data: part %d's headers do not end",
                                  out->n);
            const size_t hl = (size_t)(eol - p);
            if (hl == 0) {
                p = eol + 2;
                break;
            }
            if (hl > OMNIC_MAX_FORM_HEADER)
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "multipart/form-data: a header line of part %d is %zu bytes (limit %d)",
                                  out->n, hl, OMNIC_MAX_FORM_HEADER);
            const char *h = (const char *)p;
            if (starts_ci(h, hl, "content-disposition:")) {
                const char *v = h + 20;
                size_t vl = hl - 20;
                while (vl && (*v == ' ' || *v == '\t'))
                    v++, vl--;
                if (!starts_ci(v, vl, "form-data"))
                    return OMNIC_FAIL(err, OMNIC_E_INVALID, "multipart/form-data: part %d is not form-data",
                                      out->n);
                if (!header_param(v, vl, "name", part->name, sizeof part->name))
                    return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                      "multipart/form-data: part %d has no name (or one over %zu bytes)",
                                      out->n, sizeof part->name - 1);
                (void)header_param(v, vl, "filename", part->filename, sizeof part->filename);
                disposition = true;
            } else if (starts_ci(h, hl, "content-type:")) {
                const char *v = h + 13;
                size_t vl = hl - 13;
                while (vl && (*v == ' ' || *v == '\t'))
                    v++, vl--;
                if (vl >= sizeof part->content_type) vl = sizeof part->content_type - 1;
                memcpy(part->content_type, v, vl);
                part->content_type[vl] = '\0';
            }
            p = eol + 2;
        }
        if (!disposition)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "multipart/form-data: part %d has no Content-Disposition",
                              out->n);
        const uint8_t *d = find(p, (size_t)(end - p), delim, (size_t)dl);
        if (!d)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "multipart/form-data: part '%s' is not closed by a delimiter", part->name);
        part->data = p;
        part->len = (size_t)(d - p);
        for (int i = 0; i < out->n; i++)
            if (!strcmp(out->parts[i].name, part->name))
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "multipart/form-data: the field '%s' is given twice",
                                  part->name);
        out->n++;
        p = d + dl;
    }
}
