/* Chat prompt rendering (the checkpoint's template, apply_chat_template's variables) and
 * encoding without adding special tokens again (the template writes them). */
#include <string.h>

#include "engine/chat.h"
#include "tokenizer/template.h"

omnic_status omnic__chat_encode(const omnic__checkpoint *ck, const omnic__tokenizer *tok, const json_t *messages,
                                bool add_generation_prompt, const json_t *extra, char **text, int32_t **ids,
                                size_t *n, omnic_err *err)
{
    if (!ck->chat_template)
        return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s has no chat template (use a raw prompt)", ck->dir);
    omnic__template *t = NULL;
    json_t *vars = NULL;
    char *out = NULL;
    size_t len = 0;
    omnic_status s = omnic__template_parse(ck->chat_template, strlen(ck->chat_template), NULL, &t, err);
    if (s != OMNIC_OK) {
        omnic__err_prefix(err, "chat template (%s)", ck->chat_template_source ? ck->chat_template_source : "?");
        goto out;
    }
    if ((s = omnic__template_chat_vars(ck->tokenizer_config, messages, extra, add_generation_prompt, &vars, err)) !=
        OMNIC_OK)
        goto out;
    if ((s = omnic__template_render(t, vars, NULL, &out, &len, err)) != OMNIC_OK) {
        omnic__err_prefix(err, "chat template (%s)", ck->chat_template_source ? ck->chat_template_source : "?");
        goto out;
    }
    if ((s = omnic__tokenizer_encode(tok, out, len, false, ids, n, err)) != OMNIC_OK) goto out;
    *text = out;
    out = NULL;
out:
    omnic_free(out);
    json_decref(vars);
    omnic__template_destroy(t);
    return s;
}

omnic_status omnic__chat_prompt(const omnic__checkpoint *ck, const omnic__tokenizer *tok, const char *system,
                                const char *user, char **text, int32_t **ids, size_t *n, omnic_err *err)
{
    json_t *msgs = json_array();
    if (!msgs) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory building messages");
    if (system) json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", system));
    json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", user));
    omnic_status s = omnic__chat_encode(ck, tok, msgs, true, NULL, text, ids, n, err);
    json_decref(msgs);
    return s;
}
