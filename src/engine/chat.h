/* Chat prompts: a conversation rendered with the checkpoint's chat template (as
 * transformers' apply_chat_template does: add_generation_prompt, bos_token / eos_token
 * from tokenizer_config.json) and tokenized without adding special tokens again. */
#ifndef OMNIC_ENGINE_CHAT_H
#define OMNIC_ENGINE_CHAT_H

#include <jansson.h>

#include "io/checkpoint.h"
#include "tokenizer/tokenizer.h"

/* Renders messages (a JSON array of {role, content}; borrowed) with extra template
 * variables (a JSON object or NULL; borrowed) into owned *text, and encodes it into
 * owned *ids / *n. Errors: E_NOT_FOUND (the checkpoint has no chat template), template
 * errors (line and column), tokenizer errors. */
omnic_status omnic__chat_encode(const omnic__checkpoint *ck, const omnic__tokenizer *tok, const json_t *messages,
                                bool add_generation_prompt, const json_t *extra, char **text, int32_t **ids,
                                size_t *n, omnic_err *err);

/* The common case: an optional system message and one user message, with the
 * generation prompt. */
omnic_status omnic__chat_prompt(const omnic__checkpoint *ck, const omnic__tokenizer *tok, const char *system,
                                const char *user, char **text, int32_t **ids, size_t *n, omnic_err *err);

#endif
