/* The Qwen2 text parse with a caller's class defaults (Qwen2-VL's text model is a Qwen2
 * decoder whose Qwen2VLTextConfig has other defaults). */
#ifndef OMNIC_MODELS_QWEN2_H
#define OMNIC_MODELS_QWEN2_H

#include "models/text_decoder.h"

/* cfg: the text model's keys (borrowed); extra_keys: more keys the caller accepts on cfg
 * (NULL-terminated, or NULL). Strict: unknown keys are E_UNSUPPORTED. */
omnic_status omnic__qwen2_parse_text(const json_t *cfg, const char *what, const omnic__text_defaults *d,
                                     const char *const *extra_keys, omnic__text_config *out, omnic_err *err);

/* The key check alone: generic, decoder and Qwen2 keys, plus extra_keys (or NULL). */
omnic_status omnic__qwen2_check_keys(const json_t *cfg, const char *what, const char *const *extra_keys,
                                     omnic_err *err);

#endif
