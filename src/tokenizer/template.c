/* Chat templates: rendering a parsed template against JSON variables (limits, the root scope,
 * the final sweep of namespaces and scopes), and the variables transformers passes to it. */
#include <string.h>

#include "io/json.h"
#include "tokenizer/template_internal.h"

static void fill_limits(omnic__template_opts *lim, const omnic__template_opts *opts)
{
    omnic__template_opts o = opts ? *opts : (omnic__template_opts){0};
    lim->max_bytes = o.max_bytes ? o.max_bytes : OMNIC_MAX_TEMPLATE_BYTES;
    lim->max_nesting = o.max_nesting > 0 ? o.max_nesting : OMNIC_MAX_TEMPLATE_NESTING;
    lim->max_output = o.max_output ? o.max_output : OMNIC_MAX_TEMPLATE_OUTPUT;
    lim->max_memory = o.max_memory ? o.max_memory : OMNIC_MAX_TEMPLATE_MEMORY;
    lim->max_work = o.max_work ? o.max_work : OMNIC_MAX_TEMPLATE_WORK_BYTES;
    lim->max_iterations = o.max_iterations ? o.max_iterations : OMNIC_MAX_TEMPLATE_ITERATIONS;
    lim->max_call_depth = o.max_call_depth > 0 ? o.max_call_depth : OMNIC_MAX_TEMPLATE_CALL_DEPTH;
    lim->max_range = o.max_range > 0 ? o.max_range : OMNIC_MAX_TEMPLATE_RANGE;
    lim->max_value_depth = o.max_value_depth > 0 ? o.max_value_depth : OMNIC_MAX_TEMPLATE_VALUE_DEPTH;
    lim->now = o.now;
    lim->deadline = o.deadline;
    /* the output is also bounded by what one allocation may hold */
    if (lim->max_output > OMNIC_MAX_ALLOC / 2) lim->max_output = OMNIC_MAX_ALLOC / 2;
}

/* Frees what cycles kept alive: every scope and namespace still listed. Contents are released
 * first with scope and namespace frees suspended, then the shells. */
static void sweep(omnic__jrender *r)
{
    r->sweeping = true;
    for (omnic__jscope *s = r->scopes; s; s = s->next) {
        for (size_t i = 0; i < s->n; i++)
            omnic__jv_unref(r, s->vars[i].v);
        s->n = 0;
        if (s->parent) {
            omnic__jscope_unref(r, s->parent); /* only counts down while sweeping */
            s->parent = NULL;
        }
    }
    for (omnic__jdict *d = r->namespaces; d; d = d->ns_next) {
        for (size_t i = 0; i < d->n; i++) {
            omnic__jv_unref(r, omnic__jv_obj(&d->k[i]->h));
            omnic__jv_unref(r, d->v[i]);
        }
        d->n = 0;
    }
    while (r->scopes) {
        omnic__jscope *s = r->scopes;
        r->scopes = s->next;
        omnic__jmem_free(r, s->vars);
        omnic__jmem_free(r, s);
    }
    while (r->namespaces) {
        omnic__jdict *d = r->namespaces;
        r->namespaces = d->ns_next;
        omnic__jmem_free(r, d->k);
        omnic__jmem_free(r, d->v);
        omnic__jmem_free(r, d->idx);
        omnic__jmem_free(r, d);
    }
    r->sweeping = false;
}

omnic_status omnic__template_render(const omnic__template *t, const json_t *vars,
                                    const omnic__template_opts *opts, char **out, size_t *out_len,
                                    omnic_err *err)
{
    if (!t || !out) return OMNIC_FAIL(err, OMNIC_E_INVALID, "chat template render: NULL template or output");
    if (vars && !json_is_object(vars))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "chat template variables must be a JSON object, got %s",
                          omnic__json_type_phrase(vars));
    omnic__jrender r = {.t = t, .err = err, .line = 1};
    fill_limits(&r.lim, opts);
    omnic__jbuf root = {0};
    omnic__jscope *g = NULL;
    char *res = NULL;
    r.out = &root;
    omnic_status rc = omnic__jscope_new(&r, NULL, &g);
    if (rc == OMNIC_OK && vars) {
        const char *key;
        size_t klen;
        json_t *val;
        void *it = json_object_iter((json_t *)(uintptr_t)vars);
        for (; it && rc == OMNIC_OK; it = json_object_iter_next((json_t *)(uintptr_t)vars, it)) {
            key = json_object_iter_key(it);
            klen = json_object_iter_key_len(it);
            val = json_object_iter_value(it);
            omnic__jv v;
            rc = omnic__jv_from_json(&r, val, 0, &v);
            if (rc == OMNIC_OK) rc = omnic__jscope_set(&r, g, key, klen, v);
        }
    }
    if (rc == OMNIC_OK) rc = omnic__jexec(&r, t->root, g);
    if (rc == OMNIC_OK) {
        res = omnic_malloc(root.n + 1);
        if (!res) {
            rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory copying %zu bytes of rendered chat template",
                            root.n);
        } else {
            if (root.n) memcpy(res, root.p, root.n);
            res[root.n] = '\0';
            *out = res;
            if (out_len) *out_len = root.n;
        }
    }
    omnic__jbuf_free(&r, &root);
    omnic__jscope_unref(&r, g);
    sweep(&r);
    return rc;
}

static const char *const SPECIAL_TOKENS[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                             "pad_token", "cls_token", "mask_token"};

/* A special token of tokenizer_config: a string, or {"content": string} (AddedToken form). */
static omnic_status token_text(const json_t *v, const char *key, const char **out, omnic_err *err)
{
    *out = NULL;
    if (!v || json_is_null(v)) return OMNIC_OK;
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return OMNIC_OK;
    }
    const json_t *c = json_is_object(v) ? json_object_get(v, "content") : NULL;
    if (json_is_string(c)) {
        *out = json_string_value(c);
        return OMNIC_OK;
    }
    return OMNIC_FAIL(err, OMNIC_E_INVALID,
                      "tokenizer_config.json: '%s' is %s, expected a string or {\"content\": string}", key,
                      omnic__json_type_phrase(v));
}

omnic_status omnic__template_chat_vars(const json_t *tokenizer_config, const json_t *messages,
                                       const json_t *extra, bool add_generation_prompt, json_t **out,
                                       omnic_err *err)
{
    if (!json_is_array(messages))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "chat messages must be a JSON array, got %s",
                          omnic__json_type_phrase(messages));
    if (extra && !json_is_object(extra))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "chat template keyword arguments must be a JSON object, got %s",
                          omnic__json_type_phrase(extra));
    omnic_status rc = OMNIC_OK;
    json_t *v = json_object(), *list = NULL;
    if (!v) goto nomem;
    if (tokenizer_config) {
        for (size_t i = 0; i < sizeof SPECIAL_TOKENS / sizeof SPECIAL_TOKENS[0]; i++) {
            const char *s;
            rc = token_text(json_object_get(tokenizer_config, SPECIAL_TOKENS[i]), SPECIAL_TOKENS[i], &s, err);
            if (rc != OMNIC_OK) goto fail;
            if (s && json_object_set_new(v, SPECIAL_TOKENS[i], json_string(s))) goto nomem;
        }
        const json_t *extra_tokens = json_object_get(tokenizer_config, "additional_special_tokens");
        if (json_is_array(extra_tokens)) {
            if (!(list = json_array())) goto nomem;
            for (size_t i = 0; i < json_array_size(extra_tokens); i++) {
                const char *s;
                rc = token_text(json_array_get(extra_tokens, i), "additional_special_tokens", &s, err);
                if (rc != OMNIC_OK) goto fail;
                if (s && json_array_append_new(list, json_string(s))) goto nomem;
            }
            if (json_object_set_new(v, "additional_special_tokens", list)) {
                list = NULL;
                goto nomem;
            }
            list = NULL;
        }
    }
    if (json_object_set_new(v, "tools", json_null()) || json_object_set_new(v, "documents", json_null()))
        goto nomem;
    if (extra && json_object_update(v, (json_t *)(uintptr_t)extra)) goto nomem;
    if (json_object_set(v, "messages", (json_t *)(uintptr_t)messages)) goto nomem;
    if (add_generation_prompt || !json_object_get(v, "add_generation_prompt"))
        if (json_object_set_new(v, "add_generation_prompt", json_boolean(add_generation_prompt))) goto nomem;
    *out = v;
    return OMNIC_OK;
nomem:
    rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory building chat template variables");
fail:
    json_decref(list);
    json_decref(v);
    return rc;
}
