/* What a checkpoint's generation_config.json says about generation: the sampling defaults
 * a request starts from, and the token ids that end it.
 *
 * Sampling defaults follow vLLM's `--generation-config auto` (its default): only the keys
 * temperature, top_k, top_p, min_p, repetition_penalty and max_new_tokens (-> max_tokens) are
 * read, and each one applies to a request that does not set that value itself. omnic also reads
 * do_sample as Hugging Face generate() means it (vLLM ignores it): do_sample false makes the
 * default greedy (temperature 0; repetition_penalty still applies, as in generate()), do_sample
 * true a draw at the file's temperature (1.0, generate()'s, when absent). A key that is absent or
 * null leaves omnic's own default (no HF class default such as top_k 50 is filled in: vLLM does
 * not, and transformers 5's GenerationConfig leaves them unset too). `--generation-config ignore`
 * turns all of this off (vLLM's `--generation-config vllm`); the stop ids are read either way.
 *
 * Stop ids follow generate(): generation_config.json's eos_token_id (an int or a list) when the
 * file sets it, else config.json's, else its text_config's (GenerationConfig.from_model_config,
 * which generate() uses when there is no generation_config.json; a file without the key would
 * leave generate() with none: omnic falls back to config.json then too); plus, as vLLM adds it,
 * the tokenizer's eos_token. */
#ifndef OMNIC_ENGINE_GEN_CONFIG_H
#define OMNIC_ENGINE_GEN_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "engine/sampling.h"

typedef enum omnic__gen_config_mode {
    OMNIC_GEN_CONFIG_AUTO = 0, /* generation_config.json's sampling keys are request defaults */
    OMNIC_GEN_CONFIG_IGNORE,   /* they are not read */
} omnic__gen_config_mode;

/* "auto" / "ignore" -> *mode; false for anything else. */
bool omnic__gen_config_mode_parse(const char *s, omnic__gen_config_mode *mode);

/* Bits naming sampling values: those generation_config.json set (omnic__gen_defaults.set) and
 * those a request set itself (the `given` argument of omnic__gen_defaults_apply). */
enum {
    OMNIC_GEN_DO_SAMPLE = 1u << 0, /* only in omnic__gen_defaults.set */
    OMNIC_GEN_TEMPERATURE = 1u << 1,
    OMNIC_GEN_TOP_K = 1u << 2,
    OMNIC_GEN_TOP_P = 1u << 3,
    OMNIC_GEN_MIN_P = 1u << 4,
    OMNIC_GEN_REPETITION_PENALTY = 1u << 5,
    OMNIC_GEN_MAX_TOKENS = 1u << 6, /* max_new_tokens in the file, max_tokens / -n in a request */
};

typedef struct omnic__gen_defaults {
    unsigned set; /* OMNIC_GEN_* bits: the keys the file gave (non-null); the fields below are
                   * meaningful only where their bit is set */
    bool do_sample;
    float temperature;        /* >= 0, finite */
    int32_t top_k;            /* >= 0 (0: off) */
    float top_p;              /* (0, 1] */
    float min_p;              /* [0, 1] */
    float repetition_penalty; /* > 0, finite */
    int64_t max_new_tokens;   /* 1..INT32_MAX */
} omnic__gen_defaults;

/* Reads the sampling keys of generation_config (a JSON object or NULL: nothing set; borrowed)
 * into *out (always written; set == 0 on failure). Errors: E_INVALID naming the key and the
 * value or JSON type ("generation_config.json: top_p 1.5 is outside (0, 1]"). */
omnic_status omnic__gen_defaults_parse(const json_t *generation_config, omnic__gen_defaults *out,
                                       omnic_err *err);

/* Applies d to a request's sampling *p and *max_tokens (NULL: not applied) for every value the
 * request did not set itself (given: OMNIC_GEN_* bits). d NULL: nothing. */
void omnic__gen_defaults_apply(const omnic__gen_defaults *d, unsigned given, omnic__sampling_params *p,
                               int64_t *max_tokens);

/* "do_sample=true temperature=0.7 top_k=5" (the keys set, in file order of the enum) into
 * buf[cap] (NUL-terminated, truncated to fit); "" when nothing is set. Returns buf. */
const char *omnic__gen_defaults_describe(const omnic__gen_defaults *d, char *buf, size_t cap);

/* The stop ids: see the header comment. generation_config and config are borrowed (either
 * may be NULL); tokenizer_eos is the tokenizer's eos_token id or -1; vocab is the model's
 * vocab_size. Returns owned *ids (omnic_free; may be NULL when *n is 0), duplicates removed,
 * in order of appearance. Errors: E_INVALID when eos_token_id is neither an integer nor a
 * list of integers, or an id is outside 0..vocab-1 (names the file and the id), E_NOMEM. */
omnic_status omnic__gen_eos_ids(const json_t *generation_config, const json_t *config, int32_t tokenizer_eos,
                                int64_t vocab, int32_t **ids, size_t *n, omnic_err *err);

#endif
