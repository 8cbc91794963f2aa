/* Chat prompts: a conversation rendered with the checkpoint's chat template (as
 * transformers' apply_chat_template does: add_generation_prompt, bos_token / eos_token
 * from tokenizer_config.json), then tokenized with the special tokens Hugging Face adds:
 *   - text-only models, as tokenizer.apply_chat_template(tokenize=True): none (the template
 *     writes them);
 *   - models with a processor (image input), as processor.apply_chat_template(tokenize=True)
 *     in transformers 4.57.6 and 5.2.0: the rendered text goes through processor(text=...),
 *     whose tokenizer call adds the post-processor's special tokens (LLaVA-1.5's template
 *     writes no BOS: its tokenizer adds it), unless the text already starts with the
 *     tokenizer's bos_token string (Gemma3's template writes it), then nothing is added. */
#ifndef OMNIC_ENGINE_CHAT_H
#define OMNIC_ENGINE_CHAT_H

#include <jansson.h>

#include "core/budget.h"
#include "io/checkpoint.h"
#include "tokenizer/tokenizer.h"

/* A checkpoint's parsed chat template, ready to render many conversations (immutable: any
 * number of threads may apply it at once). */
typedef struct omnic__chat omnic__chat;
struct omnic__model;

/* Parses ck's chat template. processor: the model has a processor (takes images), which
 * decides the special tokens (above). model (NULL: none): the rendered text goes through its
 * processors' prompt rewrite before tokenizing (omnic__media_expand_prompt: Gemma 3's image
 * sequences). ck and model are borrowed and must outlive *out. Returns owned *out.
 * Errors: E_NOT_FOUND (the checkpoint has no chat template), the template parser's errors
 * (E_INVALID with line and column, E_UNSUPPORTED, E_TOO_LARGE: prefixed with the file the
 * template came from), E_NOMEM. */
omnic_status omnic__chat_create(const omnic__checkpoint *ck, const struct omnic__model *model, bool processor,
                                omnic__chat **out, omnic_err *err);
/* NULL ok. */
void omnic__chat_destroy(omnic__chat *c);

/* Renders messages (a JSON array of {role, content}; borrowed) with extra template
 * variables (a JSON object or NULL; borrowed) into owned *text (after the model's prompt
 * rewrite: what is tokenized), and encodes it into owned
 * *ids / *n (special tokens as above: omnic__chat_adds_special). Outputs are unchanged on
 * failure. budget (NULL: the library caps) bounds the render (template_steps, template_work,
 * template_output, deadline). crops (NULL: none known): the images' pan-and-scan crop counts
 * in prompt order, for the rewrite (omnic__media_expand_prompt). Errors: template render errors (E_INVALID
 * "line L: ..." or raise_exception's message, E_TOO_LARGE naming the limit, E_TIMEOUT), tokenizer errors,
 * E_NOMEM. */
omnic_status omnic__chat_apply(const omnic__chat *c, const omnic__tokenizer *tok, const json_t *messages,
                               bool add_generation_prompt, const json_t *extra, const omnic__budget *budget,
                               const int64_t *crops, size_t n_crops, char **text, int32_t **ids, size_t *n,
                               omnic_err *err);

/* Whether the rendered text[0..len) is tokenized with the post-processor's special tokens. */
bool omnic__chat_adds_special(const omnic__chat *c, const omnic__tokenizer *tok, const char *text,
                              size_t len);

/* One-off omnic__chat_create + omnic__chat_apply + omnic__chat_destroy. */
omnic_status omnic__chat_encode(const omnic__checkpoint *ck, const struct omnic__model *model, bool processor,
                                const omnic__tokenizer *tok, const json_t *messages,
                                bool add_generation_prompt, const json_t *extra, const int64_t *crops,
                                size_t n_crops, char **text, int32_t **ids, size_t *n, omnic_err *err);

/* The common case: an optional system message and one user message, with the
 * generation prompt. */
omnic_status omnic__chat_prompt(const omnic__checkpoint *ck, const omnic__tokenizer *tok, const char *system,
                                const char *user, char **text, int32_t **ids, size_t *n, omnic_err *err);
/* The same with n_images image parts ({"type": "image"}), then n_audio audio parts ({"type":
 * "audio"}) before the text in the user message: the template writes the model's placeholders. parts: the
 * model has a processor (takes images): the user content is a list of parts even without images (multimodal
 * templates, e.g. LLaVA's, read only lists) and the special tokens are the processor's. */
omnic_status omnic__chat_prompt_images(const omnic__checkpoint *ck, const struct omnic__model *model,
                                       const omnic__tokenizer *tok, const char *system, const char *user,
                                       size_t n_images, size_t n_audio, const int64_t *crops, bool parts,
                                       char **text, int32_t **ids, size_t *n, omnic_err *err);

/* Multimodal processors render content as lists of parts: turns every string content of
 * messages (a JSON array, modified in place) into [{"type": "text", "text": ...}].
 * E_NOMEM only. */
omnic_status omnic__chat_content_parts(json_t *messages);

#endif
