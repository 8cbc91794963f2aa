/* Hugging Face tokenizer.json tokenizers: loading, encoding and decoding, identical to the Rust
 * `tokenizers` library (the conformance oracle) for BPE models with the normalizers,
 * pre-tokenizers, post-processors and decoders listed in the component headers.
 *
 * Encoding follows Hugging Face's pipeline: the input is split on added tokens with
 * normalized=false, each remaining piece is normalized and split on added tokens with
 * normalized=true, the rest is pre-tokenized and run through the BPE model, and with add_special
 * the post-processor adds its special tokens. The `truncation` and `padding` sections of
 * tokenizer.json are ignored (transformers disables them unless a call asks for them).
 *
 * A loaded tokenizer is immutable and may be used from several threads at once. */
#ifndef OMNIC_TOKENIZER_TOKENIZER_H
#define OMNIC_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct omnic__tokenizer omnic__tokenizer;

/* Special tokens as tokenizer_config.json names them (when that file sits next to tokenizer.json).
 * Hugging Face `tokenizers` itself does not read it, so encode() does not use these; the chat
 * template and the engine do. Ids are -1 when the token is not named or not in the vocabulary. */
typedef struct omnic__tokenizer_specials {
    bool have_config; /* tokenizer_config.json was found and read */
    int32_t bos_id;
    int32_t eos_id;
    int32_t pad_id;
    int32_t unk_id;
    bool add_bos;          /* add_bos_token (false when absent) */
    bool add_eos;          /* add_eos_token (false when absent) */
    const char *bos_token; /* borrowed from the tokenizer; NULL when absent */
    const char *eos_token;
    const char *pad_token;
    const char *unk_token;
} omnic__tokenizer_specials;

/* Loads the tokenizer at path (borrowed): a tokenizer.json file, or a directory holding one. A
 * tokenizer_config.json in the same directory is read for omnic__tokenizer_specials.
 * Returns owned *out (omnic__tokenizer_free); *out is unchanged on failure.
 * Errors: E_NOT_FOUND / E_IO (the file), E_TOO_LARGE (over OMNIC_MAX_TOKENIZER_BYTES or another
 * limit), E_CORRUPT (malformed JSON), E_INVALID (a missing or wrong-typed field, naming its path
 * such as "tokenizer.json: model.merges[12]"), E_UNSUPPORTED (a model or component type omnic does
 * not implement, e.g. WordPiece, Unigram, BertPreTokenizer: named in the message), E_NOMEM. */
omnic_status omnic__tokenizer_load(const char *path, omnic__tokenizer **out, omnic_err *err);

/* Loads from tokenizer.json bytes json[0..len) (borrowed) and, when config is not NULL, the bytes
 * of tokenizer_config.json config[0..config_len). `what` names the source in messages. Same
 * ownership and errors as omnic__tokenizer_load. */
omnic_status omnic__tokenizer_load_buffer(const char *json, size_t len, const char *config, size_t config_len,
                                          const char *what, omnic__tokenizer **out, omnic_err *err);

/* Releases t; NULL is a no-op. */
void omnic__tokenizer_free(omnic__tokenizer *t);

/* Encodes text[0..len) (borrowed; UTF-8, may contain NUL bytes). add_special applies the
 * post-processor (BOS/EOS and the like). Returns owned *ids (omnic_free; never NULL on success,
 * even when *n is 0). On failure *ids and *n are unchanged.
 * Errors: E_INVALID (invalid UTF-8: names the byte offset; the unk_token is needed but missing from
 * the vocabulary; a regex match limit), E_TOO_LARGE (len over OMNIC_MAX_ENCODE_BYTES), E_NOMEM. */
omnic_status omnic__tokenizer_encode(const omnic__tokenizer *t, const char *text, size_t len,
                                     bool add_special, int32_t **ids, size_t *n, omnic_err *err);

/* Decodes ids[0..n) (borrowed). skip_special drops special tokens (added tokens marked special).
 * Returns owned *out (omnic_free), NUL-terminated, *len bytes of UTF-8 (invalid byte sequences in
 * the tokens come out as U+FFFD, as in Hugging Face). On failure *out and *len are unchanged.
 * Errors: E_INVALID (an id outside 0..vocab_size-1 or without a token: names the id, its index and
 * the vocabulary size), E_TOO_LARGE (n over OMNIC_MAX_DECODE_IDS), E_NOMEM. */
omnic_status omnic__tokenizer_decode(const omnic__tokenizer *t, const int32_t *ids, size_t n,
                                     bool skip_special, char **out, size_t *len, omnic_err *err);

/* One more than the largest token id (model vocabulary and added tokens). */
size_t omnic__tokenizer_vocab_size(const omnic__tokenizer *t);
/* The id of token string s[0..n) (added tokens first, then the model vocabulary). */
bool omnic__tokenizer_token_to_id(const omnic__tokenizer *t, const char *s, size_t n, int32_t *id);
/* The token string of id, borrowed from t (NUL-terminated; *len may be NULL), or NULL when the id
 * has no token. */
const char *omnic__tokenizer_id_to_token(const omnic__tokenizer *t, int32_t id, size_t *len);
/* Whether id is a special token (what skip_special drops). */
bool omnic__tokenizer_is_special(const omnic__tokenizer *t, int32_t id);
/* Special tokens named by tokenizer_config.json (borrowed from t). */
const omnic__tokenizer_specials *omnic__tokenizer_get_specials(const omnic__tokenizer *t);

#endif
