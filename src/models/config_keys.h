/* Key lists for the strict config check (omnic__json_check_keys): keys that Hugging Face's
 * PretrainedConfig carries but that never change a forward pass, and the keys that
 * omnic__text_config_parse consumes. A family adds its own list; a key on no list is refused. */
#ifndef OMNIC_MODELS_CONFIG_KEYS_H
#define OMNIC_MODELS_CONFIG_KEYS_H

#include <jansson.h>

#include "core/err.h"

/* PretrainedConfig attributes without numeric effect: names, token ids, generation
 * defaults, output switches, training-only settings (dropout, init). */
extern const char *const omnic__config_keys_generic[];
/* What omnic__text_config_parse reads (dims, norms, rope, tie, activation). */
extern const char *const omnic__config_keys_decoder[];

/* The generic keys' values that would change numerics are refused: quantization_config,
 * pruned_heads (non-empty), an encoder-decoder or cross-attention setup. E_UNSUPPORTED
 * naming the key. */
omnic_status omnic__config_check_generic(const json_t *cfg, const char *what, omnic_err *err);

/* omnic__config_check_generic, then every key of cfg on the generic, decoder or family_keys
 * (NULL-terminated) list; E_UNSUPPORTED naming the first other key. */
omnic_status omnic__config_check_keys_for(const json_t *cfg, const char *what, const char *const *family_keys,
                                          omnic_err *err);

/* Qwen2 / Qwen3 without sliding attention: use_sliding_window must be false and layer_types,
 * when present, n_layers entries all full_attention (E_UNSUPPORTED naming the entry). */
omnic_status omnic__config_full_attention_only(const json_t *cfg, const char *what, int64_t n_layers,
                                               omnic_err *err);

#endif
