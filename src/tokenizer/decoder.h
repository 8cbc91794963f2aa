/* Decoders from tokenizer.json: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace and
 * Sequence (flattened at load), with Hugging Face's decode_chain semantics; no decoder joins the
 * tokens with spaces. */
#ifndef OMNIC_TOKENIZER_DECODER_H
#define OMNIC_TOKENIZER_DECODER_H

#include <jansson.h>

#include "tokenizer/scratch.h"

typedef struct omnic__decoder omnic__decoder;

/* Builds a decoder from the JSON object j (borrowed; never null). Errors: E_INVALID (missing or
 * wrong-typed field), E_UNSUPPORTED (unknown or unsupported type, naming it), E_TOO_LARGE, E_NOMEM. */
omnic_status omnic__decoder_load(const json_t *j, const char *path, omnic__decoder **out, omnic_err *err);
void omnic__decoder_free(omnic__decoder *d);

/* Decodes the token strings listed in sc->sp[cur] (bytes in sc->text; both are scratch and get
 * rewritten) and appends the text to out. d == NULL joins the tokens with single spaces. */
omnic_status omnic__decoder_run(const omnic__decoder *d, omnic__tok_scratch *sc, int cur, omnic__tbuf *out,
                                omnic_err *err);

/* What the streaming detokenizer needs to know about a decoder (d may be NULL). */
typedef struct omnic__decoder_traits {
    bool byte_level;    /* bytes are joined across tokens, invalid UTF-8 becomes U+FFFD */
    bool byte_fallback; /* runs of <0xNN> tokens decode together */
    bool strip_end;     /* a Strip step removes characters at the end (not prefix-stable) */
} omnic__decoder_traits;

omnic__decoder_traits omnic__decoder_get_traits(const omnic__decoder *d);

/* Whether s[0..n) is a byte token "<0xNN>" as ByteFallback reads it; *b gets the byte. */
bool omnic__decoder_byte_token(const char *s, size_t n, unsigned char *b);

#endif
