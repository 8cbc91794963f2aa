/* JSON loading (files, buffers) over jansson and typed getters for config fields.
 * Every error names its source (`what` or the path), the field, and the numbers. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/budget.h"
#include "io/file.h"
#include "io/json.h"

static const char *src_name(const char *what)
{
    return what ? what : "json";
}

const char *omnic__json_type_name(const json_t *v)
{
    if (!v) return "missing";
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "real";
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

const char *omnic__json_type_phrase(const json_t *v)
{
    if (!v) return "missing";
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/* jansson reports a duplicate key with the position just past the key's closing quote
 * (and names the key only when it is short). Recover the key from the buffer: walk back
 * to the opening quote (one not escaped by an odd run of backslashes) and decode the
 * string literal. Writes "" when the position does not point at a string. */
static void dup_key_at(const char *buf, size_t len, int position, char *key, size_t key_cap)
{
    key[0] = '\0';
    if (position < 2 || (size_t)position > len || buf[position - 1] != '"') return;
    size_t end = (size_t)position; /* one past the closing quote */
    size_t start = SIZE_MAX;
    for (size_t i = end - 1; i-- > 0;) {
        if (buf[i] != '"') continue;
        size_t bs = 0;
        while (bs < i && buf[i - 1 - bs] == '\\')
            bs++;
        if (bs % 2 == 0) {
            start = i;
            break;
        }
    }
    if (start == SIZE_MAX) return;
    json_error_t e;
    json_t *s = json_loadb(buf + start, end - start, JSON_DECODE_ANY, &e);
    if (s && json_is_string(s)) snprintf(key, key_cap, "%s", json_string_value(s));
    json_decref(s);
}

/* jansson allocates through omnic_malloc/omnic_free, so the size cap and the
 * fault-injection hook cover JSON too. Set once, before the first parse. */
static _Thread_local bool json_oom; /* an allocation inside jansson failed on this thread */

static void *json_alloc(size_t n)
{
    if (!omnic__budget_heap_charge(n)) { /* the caller's budget (core/budget.h) */
        json_oom = true;
        return NULL;
    }
    void *p = omnic_malloc(n);
    if (!p) json_oom = true;
    return p;
}

static void use_omnic_alloc(void)
{
    json_set_alloc_funcs(json_alloc, omnic_free);
}

static omnic_status parse_impl(const char *buf, size_t len, const char *what, size_t flags, json_t **out,
                               omnic_err *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, use_omnic_alloc);
    what = src_name(what);
    json_error_t e;
    json_oom = false;
    json_t *j = json_loadb(buf, len, flags, &e);
    if (!j && json_error_code(&e) == json_error_numeric_overflow && !json_oom &&
        !(flags & JSON_REJECT_DUPLICATES)) {
        /* Integers past int64 occur in real configs (Gemma's model_max_length is 1e30):
         * read every integer as a real then; the typed getters accept integral reals.
         * Strict parses (safetensors headers, index files) keep rejecting them. */
        j = json_loadb(buf, len, flags | JSON_DECODE_INT_AS_REAL, &e);
    }
    if (!j) {
        enum json_error_code code = json_error_code(&e);
        if (code == json_error_out_of_memory || json_oom)
            return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory parsing %zu bytes of JSON", what, len);
        if (code == json_error_duplicate_key) {
            char key[160];
            dup_key_at(buf, len, e.position, key, sizeof key);
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s:%d:%d: duplicate key '%s'", what, e.line, e.column,
                              key);
        }
        if (code == json_error_stack_overflow)
            return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s:%d:%d: JSON nested too deeply (%s)", what, e.line,
                              e.column, e.text);
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s:%d:%d: malformed JSON: %s", what, e.line, e.column,
                          e.text);
    }
    if (!json_is_object(j)) {
        const char *t = omnic__json_type_phrase(j);
        json_decref(j);
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: top-level JSON value is %s, expected an object", what,
                          t);
    }
    *out = j;
    return OMNIC_OK;
}

omnic_status omnic__json_parse(const char *buf, size_t len, const char *what, json_t **out, omnic_err *err)
{
    return parse_impl(buf, len, what, 0, out, err);
}

omnic_status omnic__json_parse_nodup(const char *buf, size_t len, const char *what, json_t **out,
                                     omnic_err *err)
{
    return parse_impl(buf, len, what, JSON_REJECT_DUPLICATES, out, err);
}

omnic_status omnic__json_load_file(const char *path, size_t max_bytes, json_t **out, omnic_err *err)
{
    char *buf;
    size_t len;
    OMNIC_TRY(omnic__read_file(path, max_bytes, &buf, &len, err));
    omnic_status st = parse_impl(buf, len, path, 0, out, err);
    omnic_free(buf);
    return st;
}

/* ---- typed getters ---- */

/* Looks key up in obj; *v is NULL when absent or JSON null. */
static omnic_status lookup(const json_t *obj, const char *key, const char *what, const json_t **v,
                           omnic_err *err)
{
    if (!obj || !json_is_object(obj))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: cannot read field '%s': the container is %s, not an object", src_name(what),
                          key, omnic__json_type_phrase(obj));
    const json_t *x = json_object_get(obj, key);
    *v = (x && !json_is_null(x)) ? x : NULL;
    return OMNIC_OK;
}

static omnic_status missing(const char *key, const char *what, omnic_err *err)
{
    return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: missing field '%s'", src_name(what), key);
}

static omnic_status wrong_type(const json_t *v, const char *key, const char *expected, const char *what,
                               omnic_err *err)
{
    return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field '%s' is %s, expected %s", src_name(what), key,
                      omnic__json_type_phrase(v), expected);
}

omnic_status omnic__json_get_i64(const json_t *obj, const char *key, bool required, int64_t dflt, int64_t min,
                                 int64_t max, const char *what, int64_t *out, omnic_err *err)
{
    const json_t *v;
    OMNIC_TRY(lookup(obj, key, what, &v, err));
    if (!v) {
        if (required) return missing(key, what, err);
        *out = dflt;
        return OMNIC_OK;
    }
    int64_t x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        /* [-2^63, 2^63) is exactly representable at both ends. */
        if (!(d == trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field '%s' is %.17g, expected an integer",
                              src_name(what), key, d);
        x = (int64_t)d;
    } else {
        return wrong_type(v, key, "an integer", what, err);
    }
    if (x < min || x > max)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: field '%s' = %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]",
                          src_name(what), key, x, min, max);
    *out = x;
    return OMNIC_OK;
}

omnic_status omnic__json_get_f64(const json_t *obj, const char *key, bool required, double dflt, double min,
                                 double max, const char *what, double *out, omnic_err *err)
{
    const json_t *v;
    OMNIC_TRY(lookup(obj, key, what, &v, err));
    if (!v) {
        if (required) return missing(key, what, err);
        *out = dflt;
        return OMNIC_OK;
    }
    if (!json_is_number(v)) return wrong_type(v, key, "a number", what, err);
    double x = json_number_value(v);
    if (!isfinite(x))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field '%s' = %g is not finite", src_name(what), key, x);
    if (x < min || x > max)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field '%s' = %.17g is out of range [%.17g, %.17g]",
                          src_name(what), key, x, min, max);
    *out = x;
    return OMNIC_OK;
}

omnic_status omnic__json_get_bool(const json_t *obj, const char *key, bool required, bool dflt,
                                  const char *what, bool *out, omnic_err *err)
{
    const json_t *v;
    OMNIC_TRY(lookup(obj, key, what, &v, err));
    if (!v) {
        if (required) return missing(key, what, err);
        *out = dflt;
        return OMNIC_OK;
    }
    if (!json_is_boolean(v)) return wrong_type(v, key, "true or false", what, err);
    *out = json_is_true(v);
    return OMNIC_OK;
}

omnic_status omnic__json_get_str(const json_t *obj, const char *key, bool required, const char *dflt,
                                 const char *what, const char **out, omnic_err *err)
{
    const json_t *v;
    OMNIC_TRY(lookup(obj, key, what, &v, err));
    if (!v) {
        if (required) return missing(key, what, err);
        *out = dflt;
        return OMNIC_OK;
    }
    if (!json_is_string(v)) return wrong_type(v, key, "a string", what, err);
    *out = json_string_value(v);
    return OMNIC_OK;
}

omnic_status omnic__json_get_obj(const json_t *obj, const char *key, bool required, const char *what,
                                 const json_t **out, omnic_err *err)
{
    const json_t *v;
    OMNIC_TRY(lookup(obj, key, what, &v, err));
    if (!v) {
        if (required) return missing(key, what, err);
        *out = NULL;
        return OMNIC_OK;
    }
    if (!json_is_object(v)) return wrong_type(v, key, "an object", what, err);
    *out = v;
    return OMNIC_OK;
}

omnic_status omnic__json_get_array(const json_t *obj, const char *key, bool required, const char *what,
                                   const json_t **out, omnic_err *err)
{
    const json_t *v;
    OMNIC_TRY(lookup(obj, key, what, &v, err));
    if (!v) {
        if (required) return missing(key, what, err);
        *out = NULL;
        return OMNIC_OK;
    }
    if (!json_is_array(v)) return wrong_type(v, key, "an array", what, err);
    *out = v;
    return OMNIC_OK;
}

omnic_status omnic__json_check_keys(const json_t *obj, const char *what, const char *const *const *lists,
                                    omnic_err *err)
{
    if (!json_is_object(obj))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: expected an object", src_name(what));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)(uintptr_t)obj, key, v)
    {
        bool known = false;
        for (size_t l = 0; lists[l] && !known; l++)
            for (size_t k = 0; lists[l][k] && !known; k++)
                known = !strcmp(lists[l][k], key);
        if (!known)
            return OMNIC_FAIL(
                err, OMNIC_E_UNSUPPORTED,
                "%s: key '%s' is not understood (it may change the model's numerics; refusing to ignore it)",
                src_name(what), key);
    }
    return OMNIC_OK;
}

/* Numbers compare by value (1 == 1.0), everything else by jansson's equality. */
static bool same_value(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    return json_equal(a, b) != 0;
}

omnic_status omnic__json_expect(const json_t *obj, const char *key, const char *noop, const char *what,
                                omnic_err *err)
{
    const json_t *v;
    OMNIC_TRY(lookup(obj, key, what, &v, err));
    if (!v) return OMNIC_OK;
    json_error_t e;
    json_t *want = json_loads(noop, JSON_DECODE_ANY, &e);
    if (!want) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory checking %s", key);
    bool ok = same_value(v, want);
    json_decref(want);
    if (ok) return OMNIC_OK;
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    omnic_status s = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: %s = %.60s is not supported (only %s)",
                                src_name(what), key, text ? text : "?", noop);
    free(text); /* jansson's allocator is omnic_malloc / omnic_free */
    return s;
}
