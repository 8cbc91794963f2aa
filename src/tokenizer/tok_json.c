/* tokenizer.json field access shared by the component loaders. */
#include "tokenizer/tok_json.h"

#include <string.h>

#include "core/limits.h"
#include "io/json.h"

omnic_status omnic__tj_strn(const json_t *o, const char *key, bool required, const char *path, const char **s,
                            size_t *len, omnic_err *err)
{
    const char *v = NULL;
    OMNIC_TRY(omnic__json_get_str(o, key, required, NULL, path, &v, err));
    *s = v;
    *len = 0;
    if (!v) return OMNIC_OK;
    size_t n = json_string_length(json_object_get(o, key));
    if (n > OMNIC_MAX_TOKEN_BYTES)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: field '%s' is %zu bytes, over the %d byte limit", path,
                          key, n, OMNIC_MAX_TOKEN_BYTES);
    *len = n;
    return OMNIC_OK;
}

omnic_status omnic__tj_type(const json_t *o, const char *path, const char **type, omnic_err *err)
{
    if (!json_is_object(o))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s is %s, expected an object", path,
                          omnic__json_type_phrase(o));
    return omnic__json_get_str(o, "type", true, NULL, path, type, err);
}

omnic_status omnic__tj_dup(const char *s, size_t n, const char *path, char **out, omnic_err *err)
{
    char *p = omnic_malloc(n + 1);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory copying %zu bytes", path, n);
    if (n) memcpy(p, s, n);
    p[n] = 0;
    *out = p;
    return OMNIC_OK;
}

omnic_status omnic__tj_char(const json_t *o, const char *key, const char *path, uint32_t *cp, omnic_err *err)
{
    const char *s;
    size_t n;
    OMNIC_TRY(omnic__tj_strn(o, key, true, path, &s, &n, err));
    size_t cl = n ? omnic__utf8_len((unsigned char)s[0]) : 0;
    if (n == 0 || cl != n)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: field '%s' must be exactly one character, got '%.*s' (%zu bytes)", path, key,
                          n > 32 ? 32 : (int)n, s, n);
    *cp = omnic__utf8_decode(s, &cl);
    return OMNIC_OK;
}

omnic_status omnic__tpattern_load(const json_t *o, const char *key, const char *path, omnic__tpattern *p,
                                  omnic_err *err)
{
    memset(p, 0, sizeof *p);
    const json_t *pat;
    char where[256];
    snprintf(where, sizeof where, "%s.%s", path, key);
    OMNIC_TRY(omnic__json_get_obj(o, key, true, path, &pat, err));
    const char *s;
    size_t n;
    if (json_object_get(pat, "String")) {
        OMNIC_TRY(omnic__tj_strn(pat, "String", true, where, &s, &n, err));
        p->lit_len = n;
        return omnic__tj_dup(s, n, where, &p->lit, err);
    }
    if (json_object_get(pat, "Regex")) {
        const char *r = NULL;
        OMNIC_TRY(omnic__json_get_str(pat, "Regex", true, NULL, where, &r, err));
        return omnic__regex_compile(r, json_string_length(json_object_get(pat, "Regex")), OMNIC__RX_ONIG,
                                    where, &p->re, err);
    }
    return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: expected an object with a \"String\" or \"Regex\" field",
                      where);
}

void omnic__tpattern_deinit(omnic__tpattern *p)
{
    if (!p) return;
    omnic_free(p->lit);
    omnic__regex_free(p->re);
    memset(p, 0, sizeof *p);
}

omnic_status omnic__tpattern_segments(const omnic__tpattern *p, omnic__rx_scratch *rx, const char *text,
                                      size_t len, omnic__tsegs *segs, omnic_err *err)
{
    if (p->re) return omnic__regex_segments(p->re, rx, text, len, segs, err);
    return omnic__literal_segments(p->lit, p->lit_len, text, len, segs, err);
}
