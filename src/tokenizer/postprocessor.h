/* Post-processors from tokenizer.json, applied when special tokens are requested: TemplateProcessing
 * (the single-sequence template and its special_tokens), BertProcessing and RobertaProcessing
 * ([cls] A [sep]), ByteLevel (no effect on ids) and Sequence (flattened at load). */
#ifndef OMNIC_TOKENIZER_POSTPROCESSOR_H
#define OMNIC_TOKENIZER_POSTPROCESSOR_H

#include <jansson.h>

#include "tokenizer/tok_util.h"

typedef struct omnic__postprocessor omnic__postprocessor;

/* Builds a post-processor from the JSON object j (borrowed; never null). Errors: E_INVALID (missing
 * or wrong-typed field; a template naming a special token that special_tokens lacks), E_UNSUPPORTED
 * (unknown type), E_TOO_LARGE, E_NOMEM. */
omnic_status omnic__postprocessor_load(const json_t *j, const char *path, omnic__postprocessor **out,
                                       omnic_err *err);
void omnic__postprocessor_free(omnic__postprocessor *p);

/* Replaces the ids in *ids with the post-processed single sequence (specials added). */
omnic_status omnic__postprocessor_apply(const omnic__postprocessor *p, omnic__ivec *ids, omnic_err *err);

#endif
