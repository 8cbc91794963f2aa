/* A growable byte buffer for building HTTP bodies: appends, printf, and JSON string
 * literals (escaped; invalid UTF-8 replaced by U+FFFD so the output is always valid JSON).
 * A failed allocation sets `oom` and turns later appends into no-ops, so a caller checks
 * once at the end. */
#ifndef OMNIC_SERVER_BUF_H
#define OMNIC_SERVER_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct omnic__buf {
    char *p;    /* owned; NUL-terminated after every append (when not NULL) */
    size_t len; /* bytes used, excluding the NUL */
    size_t cap; /* bytes allocated */
    bool oom;   /* an append failed; contents are incomplete */
} omnic__buf;

/* Appends n bytes of s (borrowed). Returns false (and sets oom) when memory runs out. */
bool omnic__buf_put(omnic__buf *b, const void *s, size_t n);
bool omnic__buf_puts(omnic__buf *b, const char *s);
bool omnic__buf_printf(omnic__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..n) as a quoted JSON string. */
bool omnic__buf_json_str(omnic__buf *b, const char *s, size_t n);
/* Appends the RFC 4648 base64 (standard alphabet, '=' padding) of s[0..n). */
bool omnic__buf_base64(omnic__buf *b, const void *s, size_t n);
/* Forgets the contents, keeps the allocation. */
void omnic__buf_clear(omnic__buf *b);
/* Frees the allocation; the buffer is empty and usable afterwards. NULL ok. */
void omnic__buf_free(omnic__buf *b);

/* Length of the longest prefix of s[0..n) that is valid UTF-8 (no overlongs, surrogates or
 * code points past U+10FFFF). Equals n when s is valid. */
size_t omnic__utf8_valid_prefix(const char *s, size_t n);

#endif
