/* tokenizer.json field access shared by the component loaders: strings with their byte length,
 * owned copies, "type" tags and {"String": ..} / {"Regex": ..} patterns. Messages name the field's
 * path ("tokenizer.json: pre_tokenizer.pretokenizers[1].pattern"). */
#ifndef OMNIC_TOKENIZER_TOK_JSON_H
#define OMNIC_TOKENIZER_TOK_JSON_H

#include <jansson.h>

#include "tokenizer/regex.h"

/* String field key of o: *s borrowed from o (NUL-terminated), *len its bytes. Absent or null gives
 * *s = NULL when !required, else E_INVALID "missing field"; other types E_INVALID; longer than
 * OMNIC_MAX_TOKEN_BYTES E_TOO_LARGE. */
omnic_status omnic__tj_strn(const json_t *o, const char *key, bool required, const char *path, const char **s,
                            size_t *len, omnic_err *err);
/* The "type" string of component object o (required). */
omnic_status omnic__tj_type(const json_t *o, const char *path, const char **type, omnic_err *err);
/* Owned NUL-terminated copy of s[0..n) (E_NOMEM naming path). */
omnic_status omnic__tj_dup(const char *s, size_t n, const char *path, char **out, omnic_err *err);
/* A single-character string field (Metaspace replacement, Strip content): *cp its code point. */
omnic_status omnic__tj_char(const json_t *o, const char *key, const char *path, uint32_t *cp, omnic_err *err);

/* A pattern: a literal string or a compiled regex. Zero-initialized is empty. */
typedef struct omnic__tpattern {
    char *lit; /* owned literal (NULL for a regex) */
    size_t lit_len;
    omnic__regex *re; /* owned */
} omnic__tpattern;

/* Loads field key of o, an object {"String": "..."} or {"Regex": "..."} (Oniguruma syntax). */
omnic_status omnic__tpattern_load(const json_t *o, const char *key, const char *path, omnic__tpattern *p,
                                  omnic_err *err);
void omnic__tpattern_deinit(omnic__tpattern *p);
/* Segments text by the pattern (see omnic__regex_segments). */
omnic_status omnic__tpattern_segments(const omnic__tpattern *p, omnic__rx_scratch *rx, const char *text,
                                      size_t len, omnic__tsegs *segs, omnic_err *err);

#endif
