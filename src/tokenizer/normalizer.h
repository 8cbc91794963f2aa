/* Normalizers from tokenizer.json: NFC, NFD, NFKC, NFKD (utf8proc), Lowercase, Replace (string or
 * regex pattern), Prepend, Strip, Sequence (flattened at load). Semantics follow Hugging Face
 * tokenizers' NormalizedString operations. */
#ifndef OMNIC_TOKENIZER_NORMALIZER_H
#define OMNIC_TOKENIZER_NORMALIZER_H

#include <jansson.h>

#include "tokenizer/scratch.h"

typedef struct omnic__normalizer omnic__normalizer;

/* Builds a normalizer from the JSON object j (borrowed; never null). `path` names it in messages
 * ("normalizer"). Returns owned *out (omnic__normalizer_free). Errors: E_INVALID (missing or
 * wrong-typed field, naming the path), E_UNSUPPORTED (an unknown or unsupported type, naming it),
 * E_TOO_LARGE (nesting over OMNIC_MAX_TOKENIZER_NESTING), E_NOMEM. */
omnic_status omnic__normalizer_load(const json_t *j, const char *path, omnic__normalizer **out,
                                    omnic_err *err);
void omnic__normalizer_free(omnic__normalizer *n);

/* Normalizes s[0..len) (valid UTF-8, borrowed, must not lie in out or in sc's buffers) and appends
 * the result to out. *lead_moved (may be NULL) is set when the first output character no longer
 * lines up with the first input character (a Strip or an empty Replace removed text at the start);
 * it is left alone otherwise. */
omnic_status omnic__normalizer_run(const omnic__normalizer *n, const char *s, size_t len, omnic__tbuf *out,
                                   bool *lead_moved, omnic__tok_scratch *sc, omnic_err *err);

#endif
