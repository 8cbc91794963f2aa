/* multipart/form-data bodies (RFC 7578), as OpenAI's /v1/audio/transcriptions takes them: the
 * boundary from the Content-Type header, then parts of Content-Disposition form-data with a name
 * (and a filename for files), an optional Content-Type, and the bytes up to the next delimiter.
 * Borrowing: parts point into the body. Strict (CRLF line ends, a closing delimiter) and bounded
 * (OMNIC_MAX_FORM_PARTS parts, header lines of OMNIC_MAX_FORM_HEADER bytes); no network here: the
 * fuzz target (tests/fuzz/fuzz_multipart.c) drives the parser directly. */
#ifndef OMNIC_SERVER_MULTIPART_H
#define OMNIC_SERVER_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define OMNIC_MAX_FORM_PARTS 16
#define OMNIC_MAX_FORM_HEADER 1024

typedef struct omnic__form_part {
    char name[64];          /* the form field's name */
    char filename[256];     /* "" when the part is no file */
    char content_type[128]; /* "" when absent */
    const uint8_t *data;    /* borrowed: the part's bytes */
    size_t len;
} omnic__form_part;

typedef struct omnic__form {
    omnic__form_part parts[OMNIC_MAX_FORM_PARTS];
    int n;
} omnic__form;

/* Parses body[0..len) (borrowed) sent with content_type (the header's value: multipart/form-data;
 * boundary=...; quoted or not) into *out. E_INVALID naming what is wrong and where (no boundary, a
 * part without Content-Disposition form-data or a name, a header line over the limit, no closing
 * delimiter, more than OMNIC_MAX_FORM_PARTS parts, a name given twice). */
omnic_status omnic__form_parse(const char *content_type, const uint8_t *body, size_t len, omnic__form *out,
                               omnic_err *err);

/* The part named name, or NULL. */
const omnic__form_part *omnic__form_get(const omnic__form *f, const char *name);

#endif
