/* Growable byte buffer and JSON string escaping. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "omnic/omnic.h"
#include "server/buf.h"

static bool grow(omnic__buf *b, size_t extra)
{
    size_t need;
    if (b->oom) return false;
    if (!omnic_size_add(&need, b->len, extra) || !omnic_size_add(&need, need, 1)) {
        b->oom = true;
        return false;
    }
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (!omnic_size_mul(&cap, cap, 2)) {
            cap = need;
            break;
        }
    }
    char *p = omnic_realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

bool omnic__buf_put(omnic__buf *b, const void *s, size_t n)
{
    if (!grow(b, n)) return false;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

bool omnic__buf_puts(omnic__buf *b, const char *s)
{
    return omnic__buf_put(b, s, strlen(s));
}

bool omnic__buf_printf(omnic__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return false;
    }
    if (!grow(b, (size_t)n)) return false;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}

/* Bytes of the UTF-8 sequence at s[0..n), or 0 when it is not valid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, cp = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, cp = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, cp = c & 0x07u;
    else
        return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0u) != 0x80u) return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

size_t omnic__utf8_valid_prefix(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq(u + i, n - i);
        if (!k) break;
        i += k;
    }
    return i;
}

bool omnic__buf_json_str(omnic__buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    if (!omnic__buf_put(b, "\"", 1)) return false;
    size_t i = 0, run = 0; /* run: verbatim bytes ending at i, copied at the next escape */
    while (i < n) {
        unsigned c = u[i];
        const char *esc = NULL;
        char tmp[7];
        size_t k = 1;
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c < 0x20) {
            tmp[0] = '\\', tmp[1] = 'u', tmp[2] = '0', tmp[3] = '0', tmp[4] = hex[c >> 4],
            tmp[5] = hex[c & 15];
            tmp[6] = '\0';
            esc = tmp;
        } else if (c >= 0x80) {
            k = utf8_seq(u + i, n - i);
            if (!k) {
                esc = "\xEF\xBF\xBD"; /* U+FFFD for one invalid byte */
                k = 1;
            }
        }
        if (esc) {
            if (run && !omnic__buf_put(b, u + i - run, run)) return false;
            run = 0;
            if (!omnic__buf_puts(b, esc)) return false;
        } else {
            run += k;
        }
        i += k;
    }
    if (run && !omnic__buf_put(b, u + i - run, run)) return false;
    return omnic__buf_put(b, "\"", 1);
}

void omnic__buf_clear(omnic__buf *b)
{
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

void omnic__buf_free(omnic__buf *b)
{
    if (!b) return;
    omnic_free(b->p);
    memset(b, 0, sizeof *b);
}

bool omnic__buf_base64(omnic__buf *b, const void *s, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = s;
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        const unsigned v =
            (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        q[0] = abc[v >> 18 & 63], q[1] = abc[v >> 12 & 63];
        q[2] = i + 1 < n ? abc[v >> 6 & 63] : '=';
        q[3] = i + 2 < n ? abc[v & 63] : '=';
        if (!omnic__buf_put(b, q, 4)) return false;
    }
    return !b->oom;
}
