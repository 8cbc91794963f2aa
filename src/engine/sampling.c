/* Sampling: penalties, temperature, top-k, top-p, min-p, seeded draws. */
#include <math.h>
#include <string.h>

#include "engine/sampling.h"

omnic__sampling_params omnic__sampling_defaults(void)
{
    return (omnic__sampling_params){
        .temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .repetition_penalty = 1.0f};
}

omnic_status omnic__sampling_validate(const omnic__sampling_params *p, omnic_err *err)
{
    if (!isfinite(p->temperature) || p->temperature < 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "temperature %g must be finite and >= 0",
                          (double)p->temperature);
    if (p->top_k < 0) return OMNIC_FAIL(err, OMNIC_E_INVALID, "top_k %d must be >= 0", p->top_k);
    if (!(p->top_p > 0 && p->top_p <= 1))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "top_p %g must be in (0, 1]", (double)p->top_p);
    if (!(p->min_p >= 0 && p->min_p <= 1))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "min_p %g must be in [0, 1]", (double)p->min_p);
    if (!(p->repetition_penalty > 0) || !isfinite(p->repetition_penalty))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "repetition_penalty %g must be > 0",
                          (double)p->repetition_penalty);
    if (!(p->presence_penalty >= -2 && p->presence_penalty <= 2))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "presence_penalty %g must be in [-2, 2]",
                          (double)p->presence_penalty);
    if (!(p->frequency_penalty >= -2 && p->frequency_penalty <= 2))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "frequency_penalty %g must be in [-2, 2]",
                          (double)p->frequency_penalty);
    return OMNIC_OK;
}

/* ---- xoshiro256**, seeded by splitmix64 ---- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t next_u64(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    return r;
}

/* Uniform in [0, 1) with 53 random bits. */
static double next_unit(uint64_t s[4])
{
    return (double)(next_u64(s) >> 11) * 0x1p-53;
}

static void seed_rng(omnic__sampler *s, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);
}

omnic_status omnic__sampler_init(omnic__sampler *s, const omnic__sampling_params *p, int64_t vocab,
                                 omnic_err *err)
{
    memset(s, 0, sizeof *s);
    if (vocab < 1 || vocab > INT32_MAX)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "sampler vocabulary %lld outside 1..%d", (long long)vocab,
                          INT32_MAX);
    OMNIC_TRY(omnic__sampling_validate(p, err));
    s->vocab = vocab;
    s->counts = omnic_alloc_array((size_t)vocab, sizeof *s->counts);
    s->in_prompt = omnic_alloc_array((size_t)vocab, 1);
    s->work = omnic_alloc_array((size_t)vocab, sizeof *s->work);
    s->idx = omnic_alloc_array((size_t)vocab, sizeof *s->idx);
    if (!s->counts || !s->in_prompt || !s->work || !s->idx) {
        omnic__sampler_deinit(s);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a sampler over %lld tokens",
                          (long long)vocab);
    }
    s->p = *p;
    seed_rng(s, p->seed);
    return OMNIC_OK;
}

void omnic__sampler_deinit(omnic__sampler *s)
{
    omnic_free(s->counts);
    omnic_free(s->in_prompt);
    omnic_free(s->work);
    omnic_free(s->idx);
    memset(s, 0, sizeof *s);
}

void omnic__sampler_reset(omnic__sampler *s, const omnic__sampling_params *p)
{
    memset(s->counts, 0, (size_t)s->vocab * sizeof *s->counts);
    memset(s->in_prompt, 0, (size_t)s->vocab);
    s->p = *p;
    seed_rng(s, p->seed);
}

void omnic__sampler_add_prompt(omnic__sampler *s, const int32_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < s->vocab) s->in_prompt[ids[i]] = 1;
}

/* Higher logit first; lower id first on ties (so results never depend on sort stability). */
static inline bool better(const float *v, int32_t a, int32_t b)
{
    return v[a] > v[b] || (v[a] == v[b] && a < b);
}

/* Max-heap of candidate ids by `better`. */
static void sift_down(int32_t *h, int64_t n, int64_t i, const float *v)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && better(v, h[l], h[m])) m = l;
        if (r < n && better(v, h[r], h[m])) m = r;
        if (m == i) return;
        int32_t t = h[i];
        h[i] = h[m], h[m] = t, i = m;
    }
}

int32_t omnic__sampler_sample(omnic__sampler *s, const float *logits)
{
    const omnic__sampling_params *p = &s->p;
    const int64_t V = s->vocab;
    float *v = s->work;
    for (int64_t i = 0; i < V; i++) {
        float x = logits[i];
        if (isnan(x)) x = -INFINITY; /* a NaN logit is never chosen */
        if (p->repetition_penalty != 1.0f && s->in_prompt[i])
            x = x > 0 ? x / p->repetition_penalty : x * p->repetition_penalty;
        if (s->counts[i]) x -= p->presence_penalty + p->frequency_penalty * (float)s->counts[i];
        v[i] = x;
    }
    int32_t tok = 0;
    if (p->temperature == 0.0f) {
        for (int64_t i = 1; i < V; i++)
            if (v[i] > v[tok]) tok = (int32_t)i;
        goto done;
    }
    for (int64_t i = 0; i < V; i++)
        v[i] /= p->temperature;
    if (p->top_k == 0 && p->top_p >= 1.0f) { /* no ordering needed: walk ids in order */
        float vmax = -INFINITY;
        for (int64_t i = 0; i < V; i++)
            vmax = v[i] > vmax ? v[i] : vmax;
        if (vmax == -INFINITY) goto done;
        const double thr = p->min_p > 0 ? log((double)p->min_p) : -INFINITY;
        double mass = 0;
        for (int64_t i = 0; i < V; i++)
            if ((double)(v[i] - vmax) >= thr) mass += exp((double)(v[i] - vmax));
        double u = next_unit(s->rng) * mass, acc = 0;
        for (int64_t i = 0; i < V; i++) {
            if ((double)(v[i] - vmax) < thr) continue;
            acc += exp((double)(v[i] - vmax));
            tok = (int32_t)i;
            if (u < acc) break;
        }
        goto done;
    }
    /* Candidates in descending order: heap-pop until top_k, or until top_p mass. Softmax
     * needs the max and the total over every token first. */
    int32_t *h = s->idx;
    for (int64_t i = 0; i < V; i++)
        h[i] = (int32_t)i;
    for (int64_t i = V / 2 - 1; i >= 0; i--)
        sift_down(h, V, i, v);
    const float vmax = v[h[0]];
    if (vmax == -INFINITY) goto done; /* every logit masked: token 0 */
    double total = 0;
    for (int64_t i = 0; i < V; i++)
        total += exp((double)(v[i] - vmax));
    int64_t limit = p->top_k > 0 && p->top_k < V ? p->top_k : V;
    /* Pop into the tail of h: sorted[k] = h[V-1-k]. */
    int64_t n_heap = V, kept = 0;
    double cum = 0;
    while (kept < limit && n_heap > 0) {
        int32_t top = h[0];
        h[0] = h[--n_heap];
        h[n_heap] = top;
        sift_down(h, n_heap, 0, v);
        kept++;
        cum += exp((double)(v[top] - vmax)) / total;
        if (p->top_p < 1.0f && cum >= p->top_p) break; /* HF keeps the token that crosses top_p */
    }
    /* min_p: drop candidates whose probability is below min_p x the top probability. */
    const int32_t *sorted_end = h + V; /* candidate k is sorted_end[-1-k] */
    if (p->min_p > 0) {
        double thr = log((double)p->min_p);
        int64_t k = 1;
        while (k < kept && (double)(v[sorted_end[-1 - k]] - vmax) >= thr)
            k++;
        kept = k;
    }
    double mass = 0;
    for (int64_t k = 0; k < kept; k++)
        mass += exp((double)(v[sorted_end[-1 - k]] - vmax));
    double u = next_unit(s->rng) * mass, acc = 0;
    tok = sorted_end[-1];
    for (int64_t k = 0; k < kept; k++) {
        acc += exp((double)(v[sorted_end[-1 - k]] - vmax));
        if (u < acc) {
            tok = sorted_end[-1 - k];
            break;
        }
    }
done:
    if (s->counts[tok] < UINT32_MAX) s->counts[tok]++;
    s->in_prompt[tok] = 1;
    return tok;
}
