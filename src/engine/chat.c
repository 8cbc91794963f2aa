/* Chat prompt rendering and encoding. */
#include <string.h>

#include "engine/chat.h"
#include "models/media.h"
#include "tokenizer/template.h"

struct omnic__chat {
    const omnic__checkpoint *ck;      /* borrowed */
    const struct omnic__model *model; /* borrowed; NULL: no prompt rewrite */
    omnic__template *tmpl;            /* owned */
    bool processor;                   /* special tokens as processor.apply_chat_template adds them */
};

omnic_status omnic__chat_create(const omnic__checkpoint *ck, const struct omnic__model *model, bool processor,
                                omnic__chat **out, omnic_err *err)
{
    if (!ck->chat_template)
        return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s has no chat template (use --raw)", ck->dir);
    omnic__chat *c = omnic_alloc_array(1, sizeof *c);
    if (!c) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a chat template");
    c->ck = ck;
    c->model = model;
    c->processor = processor;
    omnic_status s = omnic__template_parse(ck->chat_template, strlen(ck->chat_template), NULL, &c->tmpl, err);
    if (s != OMNIC_OK) {
        omnic__err_prefix(err, "%s: chat template",
                          ck->chat_template_source ? ck->chat_template_source : ck->dir);
        omnic_free(c);
        return s;
    }
    *out = c;
    return OMNIC_OK;
}

void omnic__chat_destroy(omnic__chat *c)
{
    if (!c) return;
    omnic__template_destroy(c->tmpl);
    omnic_free(c);
}

bool omnic__chat_adds_special(const omnic__chat *c, const omnic__tokenizer *tok, const char *text, size_t len)
{
    if (!c->processor) return false; /* tokenizer.apply_chat_template: add_special_tokens=False */
    /* ProcessorMixin.apply_chat_template: `if self.tokenizer.bos_token is not None and
     * single_prompt.startswith(self.tokenizer.bos_token): kwargs["add_special_tokens"] = False` */
    const char *bos = omnic__tokenizer_get_specials(tok)->bos_token;
    size_t nb = bos ? strlen(bos) : 0;
    return !(bos && len >= nb && memcmp(text, bos, nb) == 0);
}

omnic_status omnic__chat_apply(const omnic__chat *c, const omnic__tokenizer *tok, const json_t *messages,
                               bool add_generation_prompt, const json_t *extra, const omnic__budget *budget,
                               const int64_t *crops, size_t n_crops, char **text, int32_t **ids, size_t *n,
                               omnic_err *err)
{
    json_t *vars = NULL;
    char *t = NULL;
    size_t len = 0;
    OMNIC_TRY(omnic__template_chat_vars(c->ck->tokenizer_config, messages, extra, add_generation_prompt,
                                        &vars, err));
    omnic__template_opts o = {0};
    if (budget)
        o = (omnic__template_opts){.max_iterations = budget->template_steps,
                                   .max_work = budget->template_work,
                                   .max_output = budget->template_output,
                                   .deadline = budget->deadline};
    omnic_status s = omnic__template_render(c->tmpl, vars, &o, &t, &len, err);
    json_decref(vars);
    if (s != OMNIC_OK) return s;
    if (c->model) { /* the processor's rewrite (Gemma 3: image sequences) */
        char *x = NULL;
        size_t xn = 0;
        s = omnic__media_expand_prompt(c->model, tok, t, len, crops, n_crops, &x, &xn, err);
        if (s != OMNIC_OK || x) omnic_free(t);
        if (s != OMNIC_OK) return s;
        if (x) t = x, len = xn;
    }
    if ((s = omnic__tokenizer_encode(tok, t, len, omnic__chat_adds_special(c, tok, t, len), ids, n, err)) !=
        OMNIC_OK) {
        omnic_free(t);
        return s;
    }
    *text = t;
    return OMNIC_OK;
}

omnic_status omnic__chat_encode(const omnic__checkpoint *ck, const struct omnic__model *model, bool processor,
                                const omnic__tokenizer *tok, const json_t *messages,
                                bool add_generation_prompt, const json_t *extra, const int64_t *crops,
                                size_t n_crops, char **text, int32_t **ids, size_t *n, omnic_err *err)
{
    omnic__chat *c = NULL;
    OMNIC_TRY(omnic__chat_create(ck, model, processor, &c, err));
    omnic_status s = omnic__chat_apply(c, tok, messages, add_generation_prompt, extra, NULL, crops, n_crops,
                                       text, ids, n, err);
    omnic__chat_destroy(c);
    return s;
}

omnic_status omnic__chat_content_parts(json_t *messages)
{
    for (size_t i = 0; i < json_array_size(messages); i++) {
        json_t *m = json_array_get(messages, i), *c = json_object_get(m, "content");
        if (!json_is_string(c)) continue;
        json_t *parts = json_pack("[{s:s, s:O}]", "type", "text", "text", c);
        if (!parts || json_object_set_new(m, "content", parts) != 0) return OMNIC_E_NOMEM;
    }
    return OMNIC_OK;
}

omnic_status omnic__chat_prompt(const omnic__checkpoint *ck, const omnic__tokenizer *tok, const char *system,
                                const char *user, char **text, int32_t **ids, size_t *n, omnic_err *err)
{
    return omnic__chat_prompt_images(ck, NULL, tok, system, user, 0, 0, NULL, false, text, ids, n, err);
}

omnic_status omnic__chat_prompt_images(const omnic__checkpoint *ck, const struct omnic__model *model,
                                       const omnic__tokenizer *tok, const char *system, const char *user,
                                       size_t n_images, size_t n_audio, const int64_t *crops, bool parts,
                                       char **text, int32_t **ids, size_t *n, omnic_err *err)
{
    json_t *msgs = json_array(), *content = NULL;
    if (!msgs) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory building messages");
    if (system) json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", system));
    if (n_images || n_audio ||
        parts) { /* content parts: images, clips, then the text (the processors' examples) */
        content = json_array();
        for (size_t i = 0; content && i < n_images; i++)
            json_array_append_new(content, json_pack("{s:s}", "type", "image"));
        for (size_t i = 0; content && i < n_audio; i++)
            json_array_append_new(content, json_pack("{s:s}", "type", "audio"));
        if (content) json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", user));
        json_array_append_new(msgs, json_pack("{s:s, s:o}", "role", "user", "content", content));
    } else {
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", user));
    }
    omnic_status s = parts && omnic__chat_content_parts(msgs) != OMNIC_OK
                         ? OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory building messages")
                         : omnic__chat_encode(ck, model, parts, tok, msgs, true, NULL, crops,
                                              crops ? n_images : 0, text, ids, n, err);
    json_decref(msgs);
    return s;
}
