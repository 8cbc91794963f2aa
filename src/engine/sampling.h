/* Token sampling for one request: penalties, then greedy or temperature / top-k /
 * top-p / min-p sampling with a per-request seeded generator (same seed, same logits:
 * same token, on any machine). Order follows Hugging Face generate(): repetition
 * penalty, presence/frequency penalties, temperature, top-k, top-p, min-p.
 * A sampler owns its work buffers ([V] entries, sized at init): sampling never allocates. */
#ifndef OMNIC_ENGINE_SAMPLING_H
#define OMNIC_ENGINE_SAMPLING_H

#include <stdint.h>

#include "core/err.h"

typedef struct omnic__sampling_params {
    float temperature;        /* 0: greedy (argmax, lowest id on ties) */
    int32_t top_k;            /* 0: off */
    float top_p;              /* 1: off; in (0, 1] */
    float min_p;              /* 0: off; in [0, 1] */
    float repetition_penalty; /* 1: off; HF: logit > 0 ? logit / p : logit * p, over prompt + generated */
    float presence_penalty;   /* 0: off; OpenAI: logit -= p if the token was generated */
    float frequency_penalty;  /* 0: off; OpenAI: logit -= p * times generated */
    uint64_t seed;
} omnic__sampling_params;

/* Defaults: greedy, every filter off, seed 0. */
omnic__sampling_params omnic__sampling_defaults(void);
/* E_INVALID naming the field and value when out of range (temperature < 0 or non-finite,
 * top_k < 0, top_p outside (0, 1], min_p outside [0, 1], repetition_penalty <= 0,
 * penalties outside [-2, 2]). */
omnic_status omnic__sampling_validate(const omnic__sampling_params *p, omnic_err *err);

typedef struct omnic__sampler {
    omnic__sampling_params p;
    int64_t vocab;
    uint64_t rng[4];    /* xoshiro256** state */
    uint32_t *counts;   /* [vocab] times each token was generated */
    uint8_t *in_prompt; /* [vocab] 1 when the token is in the prompt or was generated */
    float *work;        /* [vocab] penalized / scaled logits */
    int32_t *idx;       /* [vocab] candidate ids (heap, sorted candidates) */
} omnic__sampler;

/* Sizes buffers for vocab and seeds the generator. params must be valid. */
omnic_status omnic__sampler_init(omnic__sampler *s, const omnic__sampling_params *p, int64_t vocab,
                                 omnic_err *err);
void omnic__sampler_deinit(omnic__sampler *s);
/* Forgets history and reseeds (slot reuse). */
void omnic__sampler_reset(omnic__sampler *s, const omnic__sampling_params *p);
/* Records prompt tokens (for the repetition penalty). Ids outside the vocab are ignored. */
void omnic__sampler_add_prompt(omnic__sampler *s, const int32_t *ids, size_t n);
/* Picks the next token from logits [vocab] (not modified) and records it as generated. */
int32_t omnic__sampler_sample(omnic__sampler *s, const float *logits);

#endif
