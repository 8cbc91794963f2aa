/* Key lists of the strict config check (see config_keys.h). */
#include <string.h>

#include "io/json.h"
#include "models/config_keys.h"

const char *const omnic__config_keys_generic[] = {
    /* identity and bookkeeping */
    "model_type", "architectures", "_name_or_path", "name_or_path", "transformers_version", "_commit_hash",
    "auto_map", "torch_dtype", "dtype", "use_bfloat16", "tokenizer_class", "prefix", "finetuning_task",
    "id2label", "label2id", "num_labels", "problem_type", "task_specific_params", "custom_pipelines",
    "_attn_implementation_autoset", "attn_implementation", "_attn_implementation", "tf_legacy_loss",
    "torchscript", "return_dict", "output_hidden_states", "output_attentions", "use_return_dict",
    "chunk_size_feed_forward", "is_decoder", "pruned_heads", "is_encoder_decoder", "add_cross_attention",
    "tie_encoder_decoder", "cross_attention_hidden_size", "quantization_config",
    "ignore_keys_at_rope_validation",
    /* token ids (the tokenizer and generation use them, not the forward) */
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
    /* generation defaults (sampling, not the model) */
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
    "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty",
    "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
    "output_scores", "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
    "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens",
    "cache_implementation", "use_cache",
    /* training only */
    "initializer_range", "initializer_factor", "attention_dropout", "dropout", "gradient_checkpointing",
    NULL};

const char *const omnic__config_keys_decoder[] = {
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "max_position_embeddings",
    "head_dim",
    "rms_norm_eps",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "tie_word_embeddings",
    "partial_rotary_factor",
    "original_max_position_embeddings", /* read by the longrope (4.x, 5.x) and llama3 (5.x) RoPE */
    NULL};

omnic_status omnic__config_check_generic(const json_t *cfg, const char *what, omnic_err *err)
{
    OMNIC_TRY(omnic__json_expect(cfg, "quantization_config", "null", what, err));
    OMNIC_TRY(omnic__json_expect(cfg, "is_encoder_decoder", "false", what, err));
    OMNIC_TRY(omnic__json_expect(cfg, "add_cross_attention", "false", what, err));
    const json_t *ph = json_object_get(cfg, "pruned_heads");
    if (ph && !json_is_null(ph) && !(json_is_object(ph) && json_object_size(ph) == 0))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: pruned_heads is not supported (only {})", what);
    return OMNIC_OK;
}

omnic_status omnic__config_check_keys_for(const json_t *cfg, const char *what, const char *const *family_keys,
                                          omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_generic(cfg, what, err));
    const char *const *const lists[] = {omnic__config_keys_generic, omnic__config_keys_decoder, family_keys,
                                        NULL};
    return omnic__json_check_keys(cfg, what, lists, err);
}

omnic_status omnic__config_full_attention_only(const json_t *cfg, const char *what, int64_t n_layers,
                                               omnic_err *err)
{
    OMNIC_TRY(omnic__json_expect(cfg, "use_sliding_window", "false", what, err));
    const json_t *lt;
    OMNIC_TRY(omnic__json_get_array(cfg, "layer_types", false, what, &lt, err));
    if (!lt) return OMNIC_OK;
    if ((int64_t)json_array_size(lt) != n_layers)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: layer_types has %zu entries for %lld layers", what,
                          json_array_size(lt), (long long)n_layers);
    for (size_t l = 0; l < json_array_size(lt); l++) {
        const char *t = json_string_value(json_array_get(lt, l));
        if (!t || strcmp(t, "full_attention") != 0)
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                              "%s: layer_types[%zu] '%s' is not supported (full_attention only)", what, l,
                              t ? t : "?");
    }
    return OMNIC_OK;
}
