/* Added tokens (tokenizer.json "added_tokens"): id assignment as Hugging Face's
 * AddedVocabulary::add_tokens does it, the special-token set, and leftmost-longest splitting of a
 * text on the tokens' contents (a byte trie per set: tokens with normalized=false match the raw
 * input, the others match each normalized piece), honouring single_word, lstrip and rstrip. */
#ifndef OMNIC_TOKENIZER_ADDED_TOKENS_H
#define OMNIC_TOKENIZER_ADDED_TOKENS_H

#include <jansson.h>

#include "tokenizer/normalizer.h"
#include "tokenizer/tok_map.h"

typedef struct omnic__added_token {
    const char *content; /* borrowed from the vocabulary's pool, NUL-terminated */
    size_t len;
    int32_t id;
    bool special, single_word, lstrip, rstrip, normalized;
} omnic__added_token;

typedef struct omnic__added_vocab omnic__added_vocab;

/* Builds the added vocabulary from the "added_tokens" array arr (borrowed; NULL means none).
 * model_vocab is the model's token -> id map and model_size its entry count (both borrowed, used
 * to assign ids); norm (may be NULL) computes the patterns of normalized tokens; sc is scratch.
 * Errors: E_INVALID (an entry is not an object, or a field is missing or wrong-typed, naming
 * added_tokens[i]), E_TOO_LARGE (over OMNIC_MAX_ADDED_TOKENS or an id over OMNIC_MAX_VOCAB), E_NOMEM. */
omnic_status omnic__added_vocab_load(const json_t *arr, const char *path, const omnic__strmap *model_vocab,
                                     size_t model_size, const omnic__normalizer *norm, omnic__tok_scratch *sc,
                                     omnic__added_vocab **out, omnic_err *err);
void omnic__added_vocab_free(omnic__added_vocab *av);

/* Number of distinct added tokens (ids), and the i-th of them (0 <= i < count). */
size_t omnic__added_vocab_count(const omnic__added_vocab *av);
const omnic__added_token *omnic__added_vocab_at(const omnic__added_vocab *av, size_t i);
/* The id of an added token's content. */
bool omnic__added_vocab_id(const omnic__added_vocab *av, const char *s, size_t n, int32_t *id);
/* Whether s is the content of a special token (Hugging Face's special_tokens_set). */
bool omnic__added_vocab_is_special(const omnic__added_vocab *av, const char *s, size_t n);
/* Whether any token of the set (normalized or not) exists. */
bool omnic__added_vocab_has(const omnic__added_vocab *av, bool normalized);

/* Splits t[0..len) (valid UTF-8) on the tokens of one set and appends the pieces to dst with offsets
 * base + i: matched tokens carry their id, the text between them id -1 (empty pieces are dropped).
 * The first piece keeps `flags` when it starts at 0. */
omnic_status omnic__added_vocab_split(const omnic__added_vocab *av, bool normalized, const char *t,
                                      size_t len, size_t base, uint32_t flags, omnic__tsplits *dst,
                                      omnic_err *err);

#endif
