/* JSON access over jansson: loading files and buffers with errors that name the file,
 * line and column, and typed getters for config fields whose errors name the file
 * (`what`), the field, the expected and actual type, and the offending value. */
#ifndef OMNIC_IO_JSON_H
#define OMNIC_IO_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Reads and parses the file at path (borrows). The top-level value must be an object.
 * Duplicate keys: the last one wins (what Python's json does with config files).
 * Returns owned *out (json_decref) on OMNIC_OK; *out is unchanged on failure.
 * Errors: E_NOT_FOUND (no such file), E_IO (cannot open/read, not a regular file),
 * E_TOO_LARGE (file over max_bytes: names both sizes), E_CORRUPT (malformed JSON: names
 * path:line:column and jansson's text; top level not an object). */
omnic_status omnic__json_load_file(const char *path, size_t max_bytes, json_t **out, omnic_err *err);

/* Parses len bytes of buf (borrows; need not be NUL-terminated) as a JSON object.
 * `what` names the source in messages ("config.json", "request body"). Same ownership
 * and errors as omnic__json_load_file (E_CORRUPT for malformed JSON / non-object). */
omnic_status omnic__json_parse(const char *buf, size_t len, const char *what, json_t **out, omnic_err *err);

/* As omnic__json_parse, but a key repeated within one object is an error (E_CORRUPT
 * naming the key, line and column). Used for safetensors headers and index files. */
omnic_status omnic__json_parse_nodup(const char *buf, size_t len, const char *what, json_t **out,
                                     omnic_err *err);

/* "object", "array", "string", "integer", "real", "true", "false", "null"; "missing" for NULL. */
const char *omnic__json_type_name(const json_t *v);
/* The same with an article, for messages: "an integer", "a string", "null"; "missing" for NULL. */
const char *omnic__json_type_phrase(const json_t *v);

/* ---- typed getters ----
 * obj (borrowed) must be a JSON object, else E_INVALID. A key whose value is JSON null
 * counts as absent (Hugging Face configs write `"rope_scaling": null`). An absent key
 * yields dflt when !required, else E_INVALID "what: missing field 'key'". A value of the
 * wrong type is E_INVALID naming the expected and actual type; a value outside [min, max]
 * is E_INVALID naming the value and both bounds. dflt is returned as is (not range-checked).
 * On failure *out is unchanged. */

/* Integer field. A real with an integral value (4096.0) is accepted. */
omnic_status omnic__json_get_i64(const json_t *obj, const char *key, bool required, int64_t dflt, int64_t min,
                                 int64_t max, const char *what, int64_t *out, omnic_err *err);
/* Number field (integer or real); must be finite. */
omnic_status omnic__json_get_f64(const json_t *obj, const char *key, bool required, double dflt, double min,
                                 double max, const char *what, double *out, omnic_err *err);
/* true/false field. */
omnic_status omnic__json_get_bool(const json_t *obj, const char *key, bool required, bool dflt,
                                  const char *what, bool *out, omnic_err *err);
/* String field; *out is borrowed from obj (or is dflt) and lives as long as obj. */
omnic_status omnic__json_get_str(const json_t *obj, const char *key, bool required, const char *dflt,
                                 const char *what, const char **out, omnic_err *err);
/* Object field (nested configs: "text_config", "rope_scaling"); *out borrowed, NULL when
 * absent and !required. */
omnic_status omnic__json_get_obj(const json_t *obj, const char *key, bool required, const char *what,
                                 const json_t **out, omnic_err *err);
/* Array field; *out borrowed, NULL when absent and !required. */
omnic_status omnic__json_get_array(const json_t *obj, const char *key, bool required, const char *what,
                                   const json_t **out, omnic_err *err);

/* ---- strict configs ----
 * Every key of obj (an object, borrowed) must be named in one of `lists` (a NULL-terminated
 * array of NULL-terminated key lists), else E_UNSUPPORTED naming the first unknown key: a key
 * nobody understood may change numerics and is never silently ignored. */
omnic_status omnic__json_check_keys(const json_t *obj, const char *what, const char *const *const *lists,
                                    omnic_err *err);
/* key absent, null, or equal to the JSON literal noop ("false", "1", "[]"; numbers compare by
 * value), else E_UNSUPPORTED naming the key, its value and noop. */
omnic_status omnic__json_expect(const json_t *obj, const char *key, const char *noop, const char *what,
                                omnic_err *err);

#endif
