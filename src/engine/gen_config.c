/* generation_config.json: sampling defaults for requests and the stop ids (gen_config.h). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/gen_config.h"
#include "io/json.h"

#define GC "generation_config.json"

bool omnic__gen_config_mode_parse(const char *s, omnic__gen_config_mode *mode)
{
    if (!strcmp(s, "auto"))
        *mode = OMNIC_GEN_CONFIG_AUTO;
    else if (!strcmp(s, "ignore"))
        *mode = OMNIC_GEN_CONFIG_IGNORE;
    else
        return false;
    return true;
}

/* o has key with a value other than null (NULL o: false). */
static bool has(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return v && !json_is_null(v);
}

/* A number key in [lo, hi]; lo_open: lo itself is outside. */
static omnic_status get_float(const json_t *gc, const char *key, double lo, double hi, bool lo_open,
                              unsigned bit, omnic__gen_defaults *d, float *out, omnic_err *err)
{
    if (!has(gc, key)) return OMNIC_OK;
    double x;
    OMNIC_TRY(omnic__json_get_f64(gc, key, true, 0, -DBL_MAX, DBL_MAX, GC, &x, err));
    if (x < lo || x > hi || (lo_open && x == lo)) {
        if (hi == FLT_MAX)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, GC ": %s %g must be %s %g", key, x,
                              lo_open ? ">" : ">=", lo);
        return OMNIC_FAIL(err, OMNIC_E_INVALID, GC ": %s %g is outside %s%g, %g]", key, x,
                          lo_open ? "(" : "[", lo, hi);
    }
    *out = (float)x;
    d->set |= bit;
    return OMNIC_OK;
}

omnic_status omnic__gen_defaults_parse(const json_t *gc, omnic__gen_defaults *out, omnic_err *err)
{
    omnic__gen_defaults d = {0};
    memset(out, 0, sizeof *out);
    if (!gc) return OMNIC_OK;
    int64_t x;
    if (has(gc, "do_sample")) {
        OMNIC_TRY(omnic__json_get_bool(gc, "do_sample", true, false, GC, &d.do_sample, err));
        d.set |= OMNIC_GEN_DO_SAMPLE;
    }
    /* Ranges: what Hugging Face's logits warpers accept, except temperature 0 (greedy, as vLLM
     * takes it) and top_p 0 (omnic's sampler needs top_p > 0, as vLLM's does). */
    OMNIC_TRY(
        get_float(gc, "temperature", 0, FLT_MAX, false, OMNIC_GEN_TEMPERATURE, &d, &d.temperature, err));
    if (has(gc, "top_k")) {
        OMNIC_TRY(omnic__json_get_i64(gc, "top_k", true, 0, 0, INT32_MAX, GC, &x, err));
        d.top_k = (int32_t)x;
        d.set |= OMNIC_GEN_TOP_K;
    }
    OMNIC_TRY(get_float(gc, "top_p", 0, 1, true, OMNIC_GEN_TOP_P, &d, &d.top_p, err));
    OMNIC_TRY(get_float(gc, "min_p", 0, 1, false, OMNIC_GEN_MIN_P, &d, &d.min_p, err));
    OMNIC_TRY(get_float(gc, "repetition_penalty", 0, FLT_MAX, true, OMNIC_GEN_REPETITION_PENALTY, &d,
                        &d.repetition_penalty, err));
    if (has(gc, "max_new_tokens")) {
        OMNIC_TRY(
            omnic__json_get_i64(gc, "max_new_tokens", true, 0, 1, INT32_MAX, GC, &d.max_new_tokens, err));
        d.set |= OMNIC_GEN_MAX_TOKENS;
    }
    *out = d;
    return OMNIC_OK;
}

void omnic__gen_defaults_apply(const omnic__gen_defaults *d, unsigned given, omnic__sampling_params *p,
                               int64_t *max_tokens)
{
    if (!d) return;
    unsigned use = d->set & ~given;
    if (use & OMNIC_GEN_TEMPERATURE) p->temperature = d->temperature;
    if ((d->set & OMNIC_GEN_DO_SAMPLE) && !(given & OMNIC_GEN_TEMPERATURE)) {
        if (!d->do_sample)
            p->temperature = 0.0f; /* generate(): greedy whatever the temperature says */
        else if (!(d->set & OMNIC_GEN_TEMPERATURE))
            p->temperature = 1.0f; /* generate()'s default */
    }
    if (use & OMNIC_GEN_TOP_K) p->top_k = d->top_k;
    if (use & OMNIC_GEN_TOP_P) p->top_p = d->top_p;
    if (use & OMNIC_GEN_MIN_P) p->min_p = d->min_p;
    if (use & OMNIC_GEN_REPETITION_PENALTY) p->repetition_penalty = d->repetition_penalty;
    if ((use & OMNIC_GEN_MAX_TOKENS) && max_tokens) *max_tokens = d->max_new_tokens;
}

const char *omnic__gen_defaults_describe(const omnic__gen_defaults *d, char *buf, size_t cap)
{
    size_t at = 0;
    if (!cap) return buf;
    buf[0] = '\0';
#define PUT(...)                                                                                             \
    do {                                                                                                     \
        int k = snprintf(buf + at, cap - at, "%s", at ? " " : "");                                           \
        if (k > 0 && (size_t)k < cap - at) at += (size_t)k;                                                  \
        k = snprintf(buf + at, cap - at, __VA_ARGS__);                                                       \
        if (k > 0) at = (size_t)k < cap - at ? at + (size_t)k : cap - 1;                                     \
    } while (0)
    if (d->set & OMNIC_GEN_DO_SAMPLE) PUT("do_sample=%s", d->do_sample ? "true" : "false (greedy)");
    if (d->set & OMNIC_GEN_TEMPERATURE) PUT("temperature=%g", (double)d->temperature);
    if (d->set & OMNIC_GEN_TOP_K) PUT("top_k=%d", d->top_k);
    if (d->set & OMNIC_GEN_TOP_P) PUT("top_p=%g", (double)d->top_p);
    if (d->set & OMNIC_GEN_MIN_P) PUT("min_p=%g", (double)d->min_p);
    if (d->set & OMNIC_GEN_REPETITION_PENALTY) PUT("repetition_penalty=%g", (double)d->repetition_penalty);
    if (d->set & OMNIC_GEN_MAX_TOKENS) PUT("max_new_tokens=%lld", (long long)d->max_new_tokens);
#undef PUT
    return buf;
}

/* ---- stop ids ---- */

static omnic_status add_id(int64_t id, int64_t vocab, const char *what, int32_t **ids, size_t *n,
                           omnic_err *err)
{
    if (id < 0 || id >= vocab)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: eos_token_id %lld is outside the vocabulary 0..%lld",
                          what, (long long)id, (long long)vocab - 1);
    for (size_t i = 0; i < *n; i++)
        if ((*ids)[i] == id) return OMNIC_OK;
    int32_t *g = omnic_realloc(*ids, (*n + 1) * sizeof *g);
    if (!g) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for EOS ids");
    *ids = g;
    g[(*n)++] = (int32_t)id;
    return OMNIC_OK;
}

/* v: eos_token_id (an integer or a list of integers; not null). */
static omnic_status add_json(const json_t *v, int64_t vocab, const char *what, int32_t **ids, size_t *n,
                             omnic_err *err)
{
    if (json_is_integer(v)) return add_id(json_integer_value(v), vocab, what, ids, n, err);
    if (!json_is_array(v))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: eos_token_id is %s, expected an integer or a list of integers", what,
                          omnic__json_type_phrase(v));
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_integer(x))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: eos_token_id[%zu] is %s, expected an integer", what,
                              i, omnic__json_type_phrase(x));
        OMNIC_TRY(add_id(json_integer_value(x), vocab, what, ids, n, err));
    }
    return OMNIC_OK;
}

omnic_status omnic__gen_eos_ids(const json_t *generation_config, const json_t *config, int32_t tokenizer_eos,
                                int64_t vocab, int32_t **ids, size_t *n, omnic_err *err)
{
    int32_t *v = NULL;
    size_t k = 0;
    const json_t *text = config ? json_object_get(config, "text_config") : NULL;
    omnic_status s = OMNIC_OK;
    if (has(generation_config, "eos_token_id"))
        s = add_json(json_object_get(generation_config, "eos_token_id"), vocab, GC, &v, &k, err);
    else if (has(config, "eos_token_id"))
        s = add_json(json_object_get(config, "eos_token_id"), vocab, "config.json", &v, &k, err);
    else if (json_is_object(text) && has(text, "eos_token_id"))
        s = add_json(json_object_get(text, "eos_token_id"), vocab, "config.json text_config", &v, &k, err);
    if (s == OMNIC_OK && tokenizer_eos >= 0 && tokenizer_eos < vocab)
        s = add_id(tokenizer_eos, vocab, "tokenizer_config.json", &v, &k, err);
    if (s != OMNIC_OK) {
        omnic_free(v);
        return s;
    }
    *ids = v;
    *n = k;
    return OMNIC_OK;
}
