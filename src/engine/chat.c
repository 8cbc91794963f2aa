/* Chat prompt rendering and encoding. */
#include "engine/chat.h"

omnic_status omnic__chat_encode(const omnic__checkpoint *ck, const omnic__tokenizer *tok, const json_t *messages,
                                bool add_generation_prompt, const json_t *extra, char **text, int32_t **ids,
                                size_t *n, omnic_err *err)
{
    (void)tok, (void)messages, (void)add_generation_prompt, (void)extra, (void)text, (void)ids, (void)n;
    if (!ck->chat_template)
        return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s has no chat template (use --raw)", ck->dir);
    return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "chat templates are not implemented yet (use --raw)");
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
