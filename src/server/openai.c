/* OpenAI request validation, error objects, response bodies and SSE chunks. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/json.h"
#include "server/openai.h"

/* ---- errors ---- */

omnic_status omnic__api_fail(omnic__api_error *e, int status, const char *type, const char *code,
                             const char *param, const char *fmt, ...)
{
    omnic_status s;
    switch (status) {
    case 400:
        s = OMNIC_E_INVALID;
        break;
    case 401:
        s = OMNIC_E_INVALID;
        break;
    case 404:
        s = OMNIC_E_NOT_FOUND;
        break;
    case 413:
    case 429:
        s = OMNIC_E_TOO_LARGE;
        break;
    case 501:
        s = OMNIC_E_UNSUPPORTED;
        break;
    case 503:
    case 504:
        s = OMNIC_E_CANCELLED;
        break;
    default:
        s = OMNIC_E_INTERNAL;
        break;
    }
    omnic__error_raised(s);
    if (!e) return s;
    if (!type) {
        if (status == 429)
            type = "rate_limit_error";
        else if (status == 504)
            type = "timeout_error";
        else if (status >= 500)
            type = "server_error";
        else
            type = "invalid_request_error";
    }
    e->status = status;
    e->type = type;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return s;
}

bool omnic__api_error_body(omnic__buf *b, const omnic__api_error *e)
{
    omnic__buf_puts(b, "{\"error\":{\"message\":");
    omnic__buf_json_str(b, e->message, strlen(e->message));
    omnic__buf_puts(b, ",\"type\":");
    omnic__buf_json_str(b, e->type ? e->type : "server_error", strlen(e->type ? e->type : "server_error"));
    omnic__buf_puts(b, ",\"param\":");
    if (e->param[0])
        omnic__buf_json_str(b, e->param, strlen(e->param));
    else
        omnic__buf_puts(b, "null");
    omnic__buf_puts(b, ",\"code\":");
    if (e->code)
        omnic__buf_json_str(b, e->code, strlen(e->code));
    else
        omnic__buf_puts(b, "null");
    return omnic__buf_puts(b, "}}");
}

/* ---- field access ---- */

#define BAD(e, param, ...) omnic__api_fail((e), 400, NULL, "invalid_value", (param), __VA_ARGS__)
#define BADTYPE(e, param, want, v)                                                                           \
    omnic__api_fail((e), 400, NULL, "invalid_type", (param),                                                 \
                    "Invalid type for '%s': expected %s, but got %s", (param), (want),                       \
                    omnic__json_type_phrase(v))
#define UNSUPPORTED(e, param, ...)                                                                           \
    omnic__api_fail((e), 400, NULL, "unsupported_parameter", (param), __VA_ARGS__)

/* The value of key, or NULL when absent or JSON null (OpenAI treats null as "not given"). */
static const json_t *field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

static omnic_status get_bool(const json_t *o, const char *key, bool *out, omnic__api_error *e)
{
    const json_t *v = field(o, key);
    if (!v) return OMNIC_OK;
    if (!json_is_boolean(v)) return BADTYPE(e, key, "a boolean", v);
    *out = json_is_true(v);
    return OMNIC_OK;
}

/* An integer (or a real with an integral value) within [lo, hi]. */
static omnic_status get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, bool *given,
                            int64_t *out, omnic__api_error *e)
{
    const json_t *v = field(o, key);
    if (given) *given = v != NULL;
    if (!v) return OMNIC_OK;
    int64_t x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d == floor(d)) || !(d >= -9.2e18 && d <= 9.2e18)) return BADTYPE(e, key, "an integer", v);
        x = (int64_t)d;
    } else {
        return BADTYPE(e, key, "an integer", v);
    }
    if (x < lo || x > hi)
        return BAD(e, key, "Invalid '%s': %lld is outside the allowed range %lld..%lld", key, (long long)x,
                   (long long)lo, (long long)hi);
    *out = x;
    return OMNIC_OK;
}

/* A finite number within [lo, hi] (lo excluded when lo_open). */
static omnic_status get_num(const json_t *o, const char *key, double lo, double hi, bool lo_open, float *out,
                            omnic__api_error *e)
{
    const json_t *v = field(o, key);
    if (!v) return OMNIC_OK;
    if (!json_is_number(v)) return BADTYPE(e, key, "a number", v);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
        return BAD(e, key, "Invalid '%s': %g is outside the allowed range %s%g, %g]", key, x,
                   lo_open ? "(" : "[", lo, hi);
    *out = (float)x;
    return OMNIC_OK;
}

/* ---- messages ---- */

/* The URL of an image part: {"type": "image_url", "image_url": {"url": U} | U} or
 * {"type": "input_image", "image_url": U}. */
static omnic_status image_part_url(const json_t *part, const char *p, const json_t **url, omnic__api_error *e)
{
    char q[128];
    const json_t *iu = json_object_get(part, "image_url");
    snprintf(q, sizeof q, "%s.image_url", p);
    if (json_is_object(iu)) {
        snprintf(q, sizeof q, "%s.image_url.url", p);
        iu = json_object_get(iu, "url");
    }
    if (!iu) return BAD(e, q, "Missing required parameter: '%s'", q);
    if (!json_is_string(iu)) return BADTYPE(e, q, "a string", iu);
    *url = iu;
    return OMNIC_OK;
}

/* The media URL of an audio part: {"type": "input_audio", "input_audio": {"data": base64, "format":
 * "wav" | "mp3" | "flac" | "ogg"}} as a data: URL of that type (owned), or {"type": "audio_url",
 * "audio_url": {"url": U} | U} as given. */
static omnic_status audio_part_url(const json_t *part, const char *t, const char *p, json_t **url,
                                   omnic__api_error *e)
{
    char q[160];
    if (!strcmp(t, "audio_url")) {
        const json_t *au = json_object_get(part, "audio_url");
        snprintf(q, sizeof q, "%s.audio_url", p);
        if (json_is_object(au)) {
            snprintf(q, sizeof q, "%s.audio_url.url", p);
            au = json_object_get(au, "url");
        }
        if (!au) return BAD(e, q, "Missing required parameter: '%s'", q);
        if (!json_is_string(au)) return BADTYPE(e, q, "a string", au);
        *url = json_stringn_nocheck(json_string_value(au), json_string_length(au));
        return *url ? OMNIC_OK : omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
    }
    const json_t *ia = json_object_get(part, "input_audio");
    snprintf(q, sizeof q, "%s.input_audio", p);
    if (!ia) return BAD(e, q, "Missing required parameter: '%s'", q);
    if (!json_is_object(ia)) return BADTYPE(e, q, "an object", ia);
    const json_t *data = json_object_get(ia, "data"), *fmt = json_object_get(ia, "format");
    snprintf(q, sizeof q, "%s.input_audio.data", p);
    if (!data) return BAD(e, q, "Missing required parameter: '%s'", q);
    if (!json_is_string(data)) return BADTYPE(e, q, "a string", data);
    snprintf(q, sizeof q, "%s.input_audio.format", p);
    if (!fmt) return BAD(e, q, "Missing required parameter: '%s'", q);
    if (!json_is_string(fmt)) return BADTYPE(e, q, "a string", fmt);
    static const char *const fmts[][2] = {
        {"wav", "audio/wav"}, {"mp3", "audio/mpeg"}, {"flac", "audio/flac"}, {"ogg", "audio/ogg"}};
    const char *mime = NULL;
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
        if (!strcmp(json_string_value(fmt), fmts[i][0])) mime = fmts[i][1];
    if (!mime)
        return BAD(e, q, "Invalid '%s': '%.32s' is not a supported audio format (wav, mp3, flac, ogg)", q,
                   json_string_value(fmt));
    omnic__buf b = {0};
    omnic__buf_printf(&b, "data:%s;base64,", mime);
    omnic__buf_put(&b, json_string_value(data), json_string_length(data));
    *url = b.oom ? NULL : json_stringn_nocheck(b.p, b.len);
    omnic__buf_free(&b);
    return *url ? OMNIC_OK : omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
}

/* Normalizes one content value (a string or an array of parts) into an owned JSON value for
 * the chat template: a string when it has text only (parts joined by newlines), else an array
 * of {"type": "text", "text"} and {"type": "image"} parts in order, each image's URL appended
 * to images (owned array, created on the first media part; audio parts are {"url", "param",
 * "kind": "audio"} there, and with audio_tag (a model whose prompts carry their clips as text,
 * models/media.h prompt_tag: Phi4MultimodalProcessor's <|audio_N|>) the tag in the text, N counting
 * the request's clips, else an {"type": "audio"} part; with image_tag images are written likewise as
 * text, image_tag's N counting the request's images, and the content stays a string). */
static omnic_status content_value(const json_t *c, const char *where, const char *image_tag,
                                  const char *audio_tag, json_t **images, json_t **out, omnic__api_error *e)
{
    char p[96];
    if (json_is_string(c)) {
        *out = json_stringn_nocheck(json_string_value(c), json_string_length(c));
        return *out ? OMNIC_OK : omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
    }
    snprintf(p, sizeof p, "%s.content", where);
    if (!json_is_array(c)) return BADTYPE(e, p, "a string or an array of content parts", c);
    omnic__buf b = {0};
    json_t *parts = json_array();
    bool has_image = false, oom = !parts, after_audio = false;
    omnic_status st = OMNIC_OK;
    for (size_t j = 0; j < json_array_size(c) && st == OMNIC_OK && !oom; j++) {
        const json_t *part = json_array_get(c, j);
        snprintf(p, sizeof p, "%s.content[%zu]", where, j);
        if (!json_is_object(part)) {
            st = BADTYPE(e, p, "an object", part);
            break;
        }
        const json_t *type = json_object_get(part, "type");
        if (!json_is_string(type)) {
            snprintf(p, sizeof p, "%s.content[%zu].type", where, j);
            st = BADTYPE(e, p, "a string", type);
            break;
        }
        const char *t = json_string_value(type);
        if (!strcmp(t, "text")) {
            const json_t *txt = json_object_get(part, "text");
            if (!json_is_string(txt)) {
                snprintf(p, sizeof p, "%s.content[%zu].text", where, j);
                st = BADTYPE(e, p, "a string", txt);
                break;
            }
            if (b.len && !after_audio) omnic__buf_put(&b, "\n", 1);
            after_audio = false;
            omnic__buf_put(&b, json_string_value(txt), json_string_length(txt));
            oom =
                json_array_append_new(parts, json_pack("{s:s, s:s%}", "type", "text", "text",
                                                       json_string_value(txt), json_string_length(txt))) != 0;
            continue;
        }
        if (!strcmp(t, "image_url") || !strcmp(t, "input_image")) {
            const json_t *url = NULL;
            if ((st = image_part_url(part, p, &url, e)) != OMNIC_OK) break;
            if (!*images && !(*images = json_array())) oom = true;
            if (json_array_size(*images) >= OMNIC_MAX_REQUEST_IMAGES) {
                st = BAD(e, p, "Invalid '%s': more than %d images in one request", p,
                         OMNIC_MAX_REQUEST_IMAGES);
                break;
            }
            if (image_tag) { /* <|image_N|> in the text, as for clips */
                size_t k = *images ? json_array_size(*images) : 0, imgs = 0;
                for (size_t i = 0; i < k; i++)
                    imgs += json_object_get(json_array_get(*images, i), "kind") == NULL;
                char ph[32];
                int n = snprintf(ph, sizeof ph, image_tag, imgs + 1);
                omnic__buf_put(&b, ph, (size_t)n);
                after_audio = true;
                oom = oom ||
                      json_array_append_new(*images, json_pack("{s:O, s:s}", "url", url, "param", p)) != 0 ||
                      json_array_append_new(parts, json_pack("{s:s, s:s}", "type", "text", "text", ph)) != 0;
                continue;
            }
            oom = oom ||
                  json_array_append_new(*images, json_pack("{s:O, s:s}", "url", url, "param", p)) != 0 ||
                  json_array_append_new(parts, json_pack("{s:s}", "type", "image")) != 0;
            has_image = true;
            continue;
        }
        if (!strcmp(t, "input_audio") || !strcmp(t, "audio_url")) {
            json_t *url = NULL;
            if ((st = audio_part_url(part, t, p, &url, e)) != OMNIC_OK) break;
            if (!*images && !(*images = json_array())) oom = true;
            size_t k = *images ? json_array_size(*images) : 0, clips = 0;
            for (size_t i = 0; i < k; i++)
                clips += json_object_get(json_array_get(*images, i), "kind") != NULL;
            if (k >= OMNIC_MAX_REQUEST_IMAGES) {
                json_decref(url);
                st = BAD(e, p, "Invalid '%s': more than %d media parts in one request", p,
                         OMNIC_MAX_REQUEST_IMAGES);
                break;
            }
            if (!audio_tag) { /* an audio part the chat template writes */
                oom = oom ||
                      json_array_append_new(*images, json_pack("{s:o, s:s, s:s}", "url", url, "param", p,
                                                               "kind", "audio")) != 0 ||
                      json_array_append_new(parts, json_pack("{s:s}", "type", "audio")) != 0;
                has_image = true;
                continue;
            }
            char ph[32];
            int n = snprintf(ph, sizeof ph, audio_tag, clips + 1);
            omnic__buf_put(&b, ph, (size_t)n);
            after_audio = true;
            oom = oom ||
                  json_array_append_new(
                      *images, json_pack("{s:o, s:s, s:s}", "url", url, "param", p, "kind", "audio")) != 0 ||
                  json_array_append_new(parts, json_pack("{s:s, s:s}", "type", "text", "text", ph)) != 0;
            continue;
        }
        if (!strcmp(t, "video_url") || !strcmp(t, "file")) {
            st = UNSUPPORTED(e, p, "This model does not accept '%s' content (its input modalities: %s)", t,
                             "text, image and audio at most");
            break;
        }
        st = BAD(e, p, "Invalid '%s.type': '%.64s' is not a known content part type", p, t);
    }
    if (st == OMNIC_OK && (oom || b.oom)) st = omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
    if (st == OMNIC_OK) {
        *out = has_image ? json_incref(parts) : json_stringn_nocheck(b.p ? b.p : "", b.len);
        if (!*out) st = omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
    }
    json_decref(parts);
    omnic__buf_free(&b);
    return st;
}

static omnic_status parse_messages(const json_t *msgs, const char *image_tag, const char *audio_tag,
                                   json_t **out, json_t **images, omnic__api_error *e)
{
    if (!msgs) return BAD(e, "messages", "Missing required parameter: 'messages'");
    if (!json_is_array(msgs)) return BADTYPE(e, "messages", "an array", msgs);
    size_t n = json_array_size(msgs);
    if (n == 0) return BAD(e, "messages", "Invalid 'messages': empty array. Expected at least 1 message");
    if (n > OMNIC_MAX_MESSAGES)
        return BAD(e, "messages", "Invalid 'messages': %zu messages is over the limit of %d", n,
                   OMNIC_MAX_MESSAGES);
    json_t *arr = json_array();
    if (!arr) return omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
    omnic_status s = OMNIC_OK;
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(msgs, i);
        char where[48], p[96];
        snprintf(where, sizeof where, "messages[%zu]", i);
        if (!json_is_object(m)) {
            s = BADTYPE(e, where, "an object", m);
            break;
        }
        const json_t *role = json_object_get(m, "role");
        snprintf(p, sizeof p, "%s.role", where);
        if (!role) {
            s = BAD(e, p, "Missing required parameter: '%s'", p);
            break;
        }
        if (!json_is_string(role)) {
            s = BADTYPE(e, p, "a string", role);
            break;
        }
        const char *r = json_string_value(role);
        if (!strcmp(r, "tool") || !strcmp(r, "function")) {
            s = UNSUPPORTED(e, p, "Invalid '%s': '%s' messages need tools, which are not supported yet", p,
                            r);
            break;
        }
        if (strcmp(r, "system") && strcmp(r, "developer") && strcmp(r, "user") && strcmp(r, "assistant")) {
            s = BAD(e, p, "Invalid '%s': '%.64s' is not one of 'system', 'developer', 'user', 'assistant'", p,
                    r);
            break;
        }
        if (field(m, "tool_calls") || field(m, "function_call")) {
            snprintf(p, sizeof p, "%s.tool_calls", where);
            s = UNSUPPORTED(e, p, "Invalid '%s': tool calls are not supported yet", p);
            break;
        }
        if (field(m, "audio")) {
            snprintf(p, sizeof p, "%s.audio", where);
            s = UNSUPPORTED(e, p, "Invalid '%s': audio is not supported by this model", p);
            break;
        }
        const json_t *content = json_object_get(m, "content");
        if (!content || json_is_null(content)) {
            snprintf(p, sizeof p, "%s.content", where);
            s = BAD(e, p, "Missing required parameter: '%s'", p);
            break;
        }
        json_t *text = NULL;
        if ((s = content_value(content, where, image_tag, audio_tag, images, &text, e)) != OMNIC_OK) break;
        /* developer is OpenAI's newer name for system; chat templates know only system */
        json_t *nm = json_pack("{s:s, s:o}", "role", strcmp(r, "developer") ? r : "system", "content", text);
        const json_t *name = field(m, "name");
        if (name && !json_is_string(name)) {
            json_decref(nm);
            snprintf(p, sizeof p, "%s.name", where);
            s = BADTYPE(e, p, "a string", name);
            break;
        }
        if (nm && name &&
            json_object_set_new(nm, "name",
                                json_stringn_nocheck(json_string_value(name), json_string_length(name))))
            json_decref(nm), nm = NULL;
        if (!nm || json_array_append_new(arr, nm) != 0) {
            s = omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
            break;
        }
    }
    if (s != OMNIC_OK) {
        json_decref(arr);
        return s;
    }
    *out = arr;
    return OMNIC_OK;
}

/* ---- prompts ---- */

static omnic_status ids_of(const json_t *a, const char *where, int32_t **out, size_t *n, omnic__api_error *e)
{
    size_t k = json_array_size(a);
    if (k == 0) return BAD(e, where, "Invalid '%s': empty token array", where);
    int32_t *ids = omnic_alloc_array(k, sizeof *ids);
    if (!ids) return omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
    for (size_t i = 0; i < k; i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
            char p[96];
            snprintf(p, sizeof p, "%s[%zu]", where, i);
            omnic_free(ids);
            if (!json_is_integer(v)) return BADTYPE(e, p, "a token id (an integer)", v);
            return BAD(e, p, "Invalid '%s': token id %lld is negative or too large", p,
                       (long long)json_integer_value(v));
        }
        ids[i] = (int32_t)json_integer_value(v);
    }
    *out = ids;
    *n = k;
    return OMNIC_OK;
}

static omnic_status parse_prompts(const json_t *p, omnic__api_request *r, omnic__api_error *e)
{
    if (!p) return BAD(e, "prompt", "Missing required parameter: 'prompt'");
    size_t n = 1;
    if (json_is_array(p)) {
        const json_t *first = json_array_get(p, 0);
        if (!first) return BAD(e, "prompt", "Invalid 'prompt': empty array");
        n = json_is_integer(first) ? 1 : json_array_size(p);
    } else if (!json_is_string(p)) {
        return BADTYPE(e, "prompt", "a string, an array of strings or an array of token ids", p);
    }
    if (n > OMNIC_MAX_PROMPTS)
        return BAD(e, "prompt", "Invalid 'prompt': %zu prompts is over the limit of %d", n,
                   OMNIC_MAX_PROMPTS);
    r->prompts = omnic_alloc_array(n, sizeof *r->prompts);
    if (!r->prompts) return omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
    r->n_prompts = n;
    if (json_is_string(p)) {
        r->prompts[0].text = json_string_value(p);
        r->prompts[0].len = json_string_length(p);
        return OMNIC_OK;
    }
    if (json_is_integer(json_array_get(p, 0)))
        return ids_of(p, "prompt", &r->prompts[0].ids, &r->prompts[0].n_ids, e);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(p, i);
        char where[48];
        snprintf(where, sizeof where, "prompt[%zu]", i);
        if (json_is_string(v)) {
            r->prompts[i].text = json_string_value(v);
            r->prompts[i].len = json_string_length(v);
        } else if (json_is_array(v)) {
            OMNIC_TRY(ids_of(v, where, &r->prompts[i].ids, &r->prompts[i].n_ids, e));
        } else {
            return BADTYPE(e, where, "a string or an array of token ids", v);
        }
    }
    return OMNIC_OK;
}

/* ---- requests ---- */

static omnic_status parse_stop(const json_t *body, omnic__api_request *r, omnic__api_error *e)
{
    const json_t *v = field(body, "stop");
    if (!v) return OMNIC_OK;
    if (json_is_string(v)) {
        if (json_string_length(v) == 0) return BAD(e, "stop", "Invalid 'stop': empty string");
        if (json_string_length(v) > OMNIC_MAX_STOP_LEN)
            return BAD(e, "stop", "Invalid 'stop': %zu bytes is over the limit of %d", json_string_length(v),
                       OMNIC_MAX_STOP_LEN);
        if (strlen(json_string_value(v)) != json_string_length(v))
            return BAD(e, "stop", "Invalid 'stop': contains a NUL character");
        r->stops[0] = json_string_value(v);
        r->n_stops = 1;
        return OMNIC_OK;
    }
    if (!json_is_array(v)) return BADTYPE(e, "stop", "a string or an array of strings", v);
    if (json_array_size(v) > OMNIC_MAX_STOPS)
        return BAD(e, "stop", "Invalid 'stop': %zu stop sequences is over the limit of %d",
                   json_array_size(v), OMNIC_MAX_STOPS);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *s = json_array_get(v, i);
        char p[32];
        snprintf(p, sizeof p, "stop[%zu]", i);
        if (!json_is_string(s)) return BADTYPE(e, p, "a string", s);
        size_t len = json_string_length(s);
        if (len == 0 || len > OMNIC_MAX_STOP_LEN || strlen(json_string_value(s)) != len)
            return BAD(e, p, "Invalid '%s': %zu bytes (allowed 1..%d, no NUL)", p, len, OMNIC_MAX_STOP_LEN);
        r->stops[r->n_stops++] = json_string_value(s);
    }
    return OMNIC_OK;
}

/* Fields OpenAI defines that this build refuses unless they ask for nothing. */
static omnic_status refuse_unsupported(omnic__api_kind kind, const json_t *body, int n, omnic__api_error *e)
{
    const json_t *v;
    if ((v = field(body, "logprobs"))) {
        bool on = json_is_true(v) || (json_is_integer(v) && json_integer_value(v) > 0);
        if (on || !(json_is_boolean(v) || json_is_integer(v)))
            return UNSUPPORTED(e, "logprobs", "'logprobs' is not supported yet");
    }
    if ((v = field(body, "top_logprobs")) && !(json_is_integer(v) && json_integer_value(v) == 0))
        return UNSUPPORTED(e, "top_logprobs", "'top_logprobs' is not supported yet");
    if ((v = field(body, "tools")) && !(json_is_array(v) && json_array_size(v) == 0))
        return UNSUPPORTED(e, "tools", "'tools' (function calling) is not supported yet");
    if ((v = field(body, "tool_choice")) && !(json_is_string(v) && !strcmp(json_string_value(v), "none")))
        return UNSUPPORTED(e, "tool_choice", "'tool_choice' is not supported yet (only \"none\")");
    if (field(body, "functions")) return UNSUPPORTED(e, "functions", "'functions' is not supported yet");
    if (field(body, "function_call"))
        return UNSUPPORTED(e, "function_call", "'function_call' is not supported yet");
    if ((v = field(body, "response_format"))) {
        const json_t *t = json_is_object(v) ? json_object_get(v, "type") : NULL;
        if (!json_is_string(t) || strcmp(json_string_value(t), "text"))
            return UNSUPPORTED(e, "response_format",
                               "'response_format' is not supported yet (only {\"type\": \"text\"})");
    }
    if ((v = field(body, "logit_bias")) && !(json_is_object(v) && json_object_size(v) == 0))
        return UNSUPPORTED(e, "logit_bias", "'logit_bias' is not supported yet");
    if (field(body, "audio")) return UNSUPPORTED(e, "audio", "audio output is not supported by this model");
    if ((v = field(body, "modalities"))) {
        if (!json_is_array(v)) return BADTYPE(e, "modalities", "an array", v);
        for (size_t i = 0; i < json_array_size(v); i++) {
            const json_t *m = json_array_get(v, i);
            if (!json_is_string(m) || strcmp(json_string_value(m), "text"))
                return UNSUPPORTED(e, "modalities",
                                   "this model outputs only text ('modalities': [\"text\"])");
        }
    }
    if (field(body, "prediction")) return UNSUPPORTED(e, "prediction", "'prediction' is not supported yet");
    if (kind == OMNIC_API_COMPLETION) {
        if ((v = field(body, "echo")) && !json_is_false(v))
            return UNSUPPORTED(e, "echo", "'echo' is not supported yet");
        if ((v = field(body, "suffix")) && !(json_is_string(v) && json_string_length(v) == 0))
            return UNSUPPORTED(e, "suffix", "'suffix' is not supported yet");
        if ((v = field(body, "best_of")) && !(json_is_integer(v) && json_integer_value(v) == n))
            return UNSUPPORTED(e, "best_of", "'best_of' other than n is not supported yet");
    }
    return OMNIC_OK;
}

static omnic_status parse_request(omnic__api_kind kind, const json_t *body, int max_n, const char *image_tag,
                                  const char *audio_tag, omnic__api_request *r, omnic__api_error *e)
{
    const json_t *v;
    if (!json_is_object(body)) return BADTYPE(e, "", "a JSON object", body);
    if ((v = field(body, "model"))) {
        if (!json_is_string(v)) return BADTYPE(e, "model", "a string", v);
        r->model = json_string_value(v);
    }
    int64_t x;
    bool given;
    OMNIC_TRY(get_int(body, "n", 1, max_n, NULL, &x, e));
    r->n = (int)(field(body, "n") ? x : 1);
    OMNIC_TRY(refuse_unsupported(kind, body, r->n, e));
    if (kind == OMNIC_API_CHAT)
        OMNIC_TRY(parse_messages(field(body, "messages"), image_tag, audio_tag, &r->messages, &r->images, e));
    else
        OMNIC_TRY(parse_prompts(field(body, "prompt"), r, e));
    size_t n_prompts = kind == OMNIC_API_CHAT ? 1 : r->n_prompts;
    if (n_prompts * (size_t)r->n > OMNIC_MAX_CHOICES)
        return BAD(e, "n", "Invalid 'n': %zu prompts x n %d = %zu choices is over the limit of %d", n_prompts,
                   r->n, n_prompts * (size_t)r->n, OMNIC_MAX_CHOICES);
    OMNIC_TRY(get_bool(body, "stream", &r->stream, e));
    if ((v = field(body, "stream_options"))) {
        if (!json_is_object(v)) return BADTYPE(e, "stream_options", "an object", v);
        if (!r->stream)
            return BAD(e, "stream_options", "Invalid 'stream_options': only allowed when 'stream' is true");
        const json_t *u = field(v, "include_usage");
        if (u && !json_is_boolean(u)) return BADTYPE(e, "stream_options.include_usage", "a boolean", u);
        r->include_usage = json_is_true(u);
        u = field(v, "continuous_usage_stats");
        if (u && !json_is_boolean(u))
            return BADTYPE(e, "stream_options.continuous_usage_stats", "a boolean", u);
        r->continuous_usage = json_is_true(u);
    }
    OMNIC_TRY(get_bool(body, "ignore_eos", &r->ignore_eos, e));
    if ((v = field(body, "mm_processor_kwargs"))) { /* vLLM's spelling: per-request processor options */
        if (!json_is_object(v)) return BADTYPE(e, "mm_processor_kwargs", "an object", v);
        static const char *const known[] = {"min_pixels",
                                            "max_pixels",
                                            "do_pan_and_scan",
                                            "pan_and_scan_min_crop_size",
                                            "pan_and_scan_max_num_crops",
                                            "pan_and_scan_min_ratio_to_activate"};
        json_t *obj = (json_t *)(uintptr_t)v; /* jansson iterates non-const objects only */
        for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
            const char *k = json_object_iter_key(it);
            size_t i = 0;
            while (i < sizeof known / sizeof known[0] && strcmp(known[i], k))
                i++;
            if (i == sizeof known / sizeof known[0])
                return UNSUPPORTED(e, "mm_processor_kwargs",
                                   "Invalid 'mm_processor_kwargs': '%.64s' is not supported", k);
        }
        OMNIC_TRY(get_int(v, "min_pixels", 1, INT32_MAX, NULL, &r->min_pixels, e));
        OMNIC_TRY(get_int(v, "max_pixels", 1, INT32_MAX, NULL, &r->max_pixels, e));
        const json_t *pas = json_object_get(v, "do_pan_and_scan");
        if (pas && !json_is_boolean(pas))
            return BADTYPE(e, "mm_processor_kwargs.do_pan_and_scan", "a boolean", pas);
        r->pan_and_scan = pas ? (json_is_true(pas) ? 2 : 1) : 0;
        OMNIC_TRY(get_int(v, "pan_and_scan_min_crop_size", 1, INT32_MAX, NULL, &r->pas_min_crop, e));
        OMNIC_TRY(get_int(v, "pan_and_scan_max_num_crops", 1, INT32_MAX, NULL, &r->pas_max_crops, e));
        float ratio = 0;
        OMNIC_TRY(get_num(v, "pan_and_scan_min_ratio_to_activate", 1, 1e6, false, &ratio, e));
        r->pas_min_ratio = ratio;
    }
    r->max_tokens = -1;
    OMNIC_TRY(get_int(body, "max_tokens", 1, INT32_MAX, &given, &x, e));
    if (given) r->max_tokens = x;
    OMNIC_TRY(get_int(body, "max_completion_tokens", 1, INT32_MAX, &given, &x, e));
    if (given) r->max_tokens = x;
    omnic__sampling_params *sp = &r->sampling;
    *sp = omnic__sampling_defaults();
    sp->temperature = 1.0f; /* OpenAI's defaults: temperature 1, top_p 1 */
    OMNIC_TRY(get_num(body, "temperature", 0, 2, false, &sp->temperature, e));
    float top_p = 1.0f;
    OMNIC_TRY(get_num(body, "top_p", 0, 1, false, &top_p, e));
    if (top_p == 0.0f)
        sp->temperature = 0.0f; /* keeps only the most likely token: greedy */
    else
        sp->top_p = top_p;
    OMNIC_TRY(get_num(body, "presence_penalty", -2, 2, false, &sp->presence_penalty, e));
    OMNIC_TRY(get_num(body, "frequency_penalty", -2, 2, false, &sp->frequency_penalty, e));
    OMNIC_TRY(get_num(body, "min_p", 0, 1, false, &sp->min_p, e));
    OMNIC_TRY(get_num(body, "repetition_penalty", 0, 10, true, &sp->repetition_penalty, e));
    OMNIC_TRY(get_int(body, "top_k", -1, INT32_MAX, &given, &x, e));
    if (given) sp->top_k = x < 0 ? 0 : (int32_t)x;
    static const struct {
        const char *key;
        unsigned bit;
    } sampling_keys[] = {{"temperature", OMNIC_GEN_TEMPERATURE},
                         {"top_p", OMNIC_GEN_TOP_P},
                         {"top_k", OMNIC_GEN_TOP_K},
                         {"min_p", OMNIC_GEN_MIN_P},
                         {"repetition_penalty", OMNIC_GEN_REPETITION_PENALTY},
                         {"max_tokens", OMNIC_GEN_MAX_TOKENS},
                         {"max_completion_tokens", OMNIC_GEN_MAX_TOKENS}};
    for (size_t k = 0; k < sizeof sampling_keys / sizeof sampling_keys[0]; k++)
        if (field(body, sampling_keys[k].key)) r->sampling_given |= sampling_keys[k].bit;
    if (top_p == 0.0f) r->sampling_given |= OMNIC_GEN_TEMPERATURE; /* greedy, as asked */
    OMNIC_TRY(get_int(body, "seed", INT64_MIN, INT64_MAX, &r->has_seed, &x, e));
    if (r->has_seed) sp->seed = (uint64_t)x;
    OMNIC_TRY(parse_stop(body, r, e));
    return OMNIC_OK;
}

omnic_status omnic__api_parse(omnic__api_kind kind, const json_t *body, int max_n, omnic__api_request *out,
                              omnic__api_error *e)
{
    return omnic__api_parse_tagged(kind, body, max_n, NULL, "<|audio_%zu|>", out, e);
}

omnic_status omnic__api_parse_tagged(omnic__api_kind kind, const json_t *body, int max_n,
                                     const char *image_tag, const char *audio_tag, omnic__api_request *out,
                                     omnic__api_error *e)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    if (max_n < 1) max_n = 1;
    omnic_status s = parse_request(kind, body, max_n, image_tag, audio_tag, out, e);
    if (s != OMNIC_OK) {
        omnic__api_request_deinit(out);
        out->kind = kind;
    }
    return s;
}

void omnic__api_request_deinit(omnic__api_request *r)
{
    if (!r) return;
    json_decref(r->messages);
    json_decref(r->images);
    for (size_t i = 0; r->prompts && i < r->n_prompts; i++)
        omnic_free(r->prompts[i].ids);
    omnic_free(r->prompts);
    memset(r, 0, sizeof *r);
}

omnic_status omnic__api_parse_tokenize(const json_t *body, omnic__api_tokenize *out, omnic__api_error *e)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(body)) return BADTYPE(e, "", "a JSON object", body);
    const json_t *text = field(body, "content");
    const char *key = "content";
    if (!text) text = field(body, "prompt"), key = "prompt";
    const json_t *msgs = field(body, "messages");
    if (text && msgs) return BAD(e, "messages", "Give either '%s' or 'messages', not both", key);
    omnic_status s;
    if (text) {
        if (!json_is_string(text)) return BADTYPE(e, key, "a string", text);
        out->text = json_string_value(text);
        out->len = json_string_length(text);
        out->add_special = true;
    } else if (msgs) {
        json_t *images = NULL; /* image parts tokenize as the template's placeholders */
        s = parse_messages(msgs, NULL, "<|audio_%zu|>", &out->messages, &images, e);
        json_decref(images);
        if (s != OMNIC_OK) return s;
    } else {
        return BAD(e, "content", "Missing required parameter: 'content' (or 'prompt', or 'messages')");
    }
    if ((s = get_bool(body, "add_special", &out->add_special, e)) != OMNIC_OK ||
        (s = get_bool(body, "add_special_tokens", &out->add_special, e)) != OMNIC_OK ||
        (s = get_bool(body, "add_generation_prompt", &out->add_generation_prompt, e)) != OMNIC_OK) {
        omnic__api_tokenize_deinit(out);
        return s;
    }
    return OMNIC_OK;
}

void omnic__api_tokenize_deinit(omnic__api_tokenize *t)
{
    if (!t) return;
    json_decref(t->messages);
    memset(t, 0, sizeof *t);
}

omnic_status omnic__api_parse_detokenize(const json_t *body, omnic__api_detokenize *out, omnic__api_error *e)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(body)) return BADTYPE(e, "", "a JSON object", body);
    const json_t *t = field(body, "tokens");
    if (!t) return BAD(e, "tokens", "Missing required parameter: 'tokens'");
    if (!json_is_array(t)) return BADTYPE(e, "tokens", "an array of token ids", t);
    omnic_status s = OMNIC_OK;
    if (json_array_size(t) > 0) s = ids_of(t, "tokens", &out->ids, &out->n, e);
    if (s == OMNIC_OK) s = get_bool(body, "skip_special_tokens", &out->skip_special, e);
    if (s != OMNIC_OK) omnic__api_detokenize_deinit(out);
    return s;
}

void omnic__api_detokenize_deinit(omnic__api_detokenize *d)
{
    if (!d) return;
    omnic_free(d->ids);
    memset(d, 0, sizeof *d);
}

/* ---- responses ---- */

static void head(omnic__buf *b, const omnic__api_meta *m, bool chunk)
{
    const char *obj =
        m->kind == OMNIC_API_CHAT ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    omnic__buf_puts(b, "{\"id\":");
    omnic__buf_json_str(b, m->id, strlen(m->id));
    omnic__buf_printf(b, ",\"object\":\"%s\",\"created\":%lld,\"model\":", obj, (long long)m->created);
    omnic__buf_json_str(b, m->model, strlen(m->model));
    if (m->fingerprint) {
        omnic__buf_puts(b, ",\"system_fingerprint\":");
        omnic__buf_json_str(b, m->fingerprint, strlen(m->fingerprint));
    }
}

/* The usage object; final (the last chunk's or the body's): with prompt_tokens_details as
 * OpenAI reports them. */
static void usage(omnic__buf *b, const omnic__api_meta *m, bool final, int64_t prompt, int64_t completion)
{
    omnic__buf_printf(b, "{\"prompt_tokens\":%lld,\"completion_tokens\":%lld,\"total_tokens\":%lld",
                      (long long)prompt, (long long)completion, (long long)(prompt + completion));
    if (final)
        omnic__buf_printf(b, ",\"prompt_tokens_details\":{\"cached_tokens\":%lld}",
                          (long long)m->cached_tokens);
    omnic__buf_puts(b, "}");
}

/* One chunk with one choice: chat deltas carry role and/or content; completions carry text. */
static bool chunk(omnic__buf *b, const omnic__api_meta *m, int index, const char *role, const char *text,
                  size_t len, const char *finish, int64_t prompt, int64_t completion)
{
    omnic__buf_puts(b, "data: ");
    head(b, m, true);
    omnic__buf_puts(b, ",\"choices\":[{");
    if (m->kind == OMNIC_API_CHAT) {
        omnic__buf_printf(b, "\"index\":%d,\"delta\":{", index);
        if (role) omnic__buf_printf(b, "\"role\":\"%s\"%s", role, text ? "," : "");
        if (text) {
            omnic__buf_puts(b, "\"content\":");
            omnic__buf_json_str(b, text, len);
        }
        omnic__buf_puts(b, "},");
    } else {
        omnic__buf_puts(b, "\"text\":");
        omnic__buf_json_str(b, text ? text : "", text ? len : 0);
        omnic__buf_printf(b, ",\"index\":%d,", index);
    }
    omnic__buf_puts(b, "\"logprobs\":null,\"finish_reason\":");
    if (finish)
        omnic__buf_printf(b, "\"%s\"", finish);
    else
        omnic__buf_puts(b, "null");
    omnic__buf_puts(b, "}]");
    if (m->continuous_usage) {
        omnic__buf_puts(b, ",\"usage\":");
        usage(b, m, false, prompt, completion);
    } else if (m->include_usage) {
        omnic__buf_puts(b, ",\"usage\":null");
    }
    return omnic__buf_puts(b, "}\n\n");
}

bool omnic__api_chunk_role(omnic__buf *b, const omnic__api_meta *m, int index, int64_t prompt_tokens)
{
    return chunk(b, m, index, "assistant", "", 0, NULL, prompt_tokens, 0);
}

bool omnic__api_chunk_text(omnic__buf *b, const omnic__api_meta *m, int index, const char *text, size_t len,
                           int64_t prompt_tokens, int64_t completion_tokens)
{
    return chunk(b, m, index, NULL, text, len, NULL, prompt_tokens, completion_tokens);
}

bool omnic__api_chunk_finish(omnic__buf *b, const omnic__api_meta *m, int index, const char *finish_reason,
                             int64_t prompt_tokens, int64_t completion_tokens)
{
    return chunk(b, m, index, NULL, m->kind == OMNIC_API_CHAT ? NULL : "", 0, finish_reason, prompt_tokens,
                 completion_tokens);
}

bool omnic__api_chunk_usage(omnic__buf *b, const omnic__api_meta *m, int64_t prompt_tokens,
                            int64_t completion_tokens)
{
    omnic__buf_puts(b, "data: ");
    head(b, m, true);
    omnic__buf_puts(b, ",\"choices\":[],\"usage\":");
    usage(b, m, true, prompt_tokens, completion_tokens);
    return omnic__buf_puts(b, "}\n\n");
}

bool omnic__api_sse_error(omnic__buf *b, const omnic__api_error *e)
{
    omnic__buf_puts(b, "data: ");
    omnic__api_error_body(b, e);
    return omnic__buf_puts(b, "\n\n");
}

bool omnic__api_sse_done(omnic__buf *b)
{
    return omnic__buf_puts(b, "data: [DONE]\n\n");
}

bool omnic__api_body(omnic__buf *b, const omnic__api_meta *m, const omnic__api_choice_out *choices,
                     int n_choices, int64_t prompt_tokens, int64_t completion_tokens)
{
    head(b, m, false);
    omnic__buf_puts(b, ",\"choices\":[");
    for (int i = 0; i < n_choices; i++) {
        const omnic__api_choice_out *c = &choices[i];
        if (i) omnic__buf_puts(b, ",");
        if (m->kind == OMNIC_API_CHAT) {
            omnic__buf_printf(b, "{\"index\":%d,\"message\":{\"role\":\"assistant\",\"content\":", i);
            omnic__buf_json_str(b, c->text ? c->text : "", c->text ? c->len : 0);
            omnic__buf_puts(b, ",\"refusal\":null},");
        } else {
            omnic__buf_puts(b, "{\"text\":");
            omnic__buf_json_str(b, c->text ? c->text : "", c->text ? c->len : 0);
            omnic__buf_printf(b, ",\"index\":%d,", i);
        }
        omnic__buf_printf(b, "\"logprobs\":null,\"finish_reason\":\"%s\"}", c->finish_reason);
    }
    omnic__buf_puts(b, "],\"usage\":");
    usage(b, m, true, prompt_tokens, completion_tokens);
    if (m->warning && m->warning[0]) {
        omnic__buf_puts(b, ",\"warnings\":[");
        omnic__buf_json_str(b, m->warning, strlen(m->warning));
        omnic__buf_puts(b, "]");
    }
    return omnic__buf_puts(b, "}");
}
