/* Pre-tokenizers from tokenizer.json: ByteLevel (with and without the GPT-2 regex,
 * add_prefix_space), Split (String or Regex pattern, every delimiter behavior, invert), Metaspace
 * (replacement, prepend_scheme always/first/never, split), Digits, Punctuation, Whitespace,
 * WhitespaceSplit, CharDelimiterSplit and Sequence (flattened at load). Semantics follow Hugging
 * Face tokenizers' PreTokenizedString::split. */
#ifndef OMNIC_TOKENIZER_PRETOKENIZER_H
#define OMNIC_TOKENIZER_PRETOKENIZER_H

#include <jansson.h>

#include "tokenizer/scratch.h"

typedef struct omnic__pretokenizer omnic__pretokenizer;

/* Builds a pre-tokenizer from the JSON object j (borrowed; never null); `path` names it in messages.
 * Returns owned *out. Errors: E_INVALID (missing or wrong-typed field), E_UNSUPPORTED (unknown or
 * unsupported type, naming it), E_TOO_LARGE (nesting), E_NOMEM. */
omnic_status omnic__pretokenizer_load(const json_t *j, const char *path, omnic__pretokenizer **out,
                                      omnic_err *err);
void omnic__pretokenizer_free(omnic__pretokenizer *p);

/* Runs every step over the splits in sc->sp[*cur] (text in sc->text): splits with id >= 0 pass
 * through, the others are cut (and, for ByteLevel and Metaspace, rewritten: new text is appended to
 * sc->text). Empty splits are dropped. On return *cur names the list holding the result. */
omnic_status omnic__pretokenizer_run(const omnic__pretokenizer *p, omnic__tok_scratch *sc, int *cur,
                                     omnic_err *err);

#endif
