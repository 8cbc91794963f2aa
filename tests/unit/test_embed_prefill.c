/* text.embeddings_prefill: host-built embedding rows (omnic__model_embed_tokens) through the
 * embeddings prefill reproduce text.token_prefill bit for bit (last-row logits and every
 * layer's K/V) for each text family, in f32 and bf16 checkpoints, chunked; the explicit
 * attention-bias mask modes (pool-row layout built by omnic__text_bias_rows) against the
 * causal module; input checks. Tiny checkpoints from tools/mktiny.py. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_testutil.h"

#include "models/model.h"

#define CTX 32
#define T 11
#define TMAX 96

static char tmp[64];
static const int32_t TOKENS[T] = {5, 17, 300, 42, 42, 7, 510, 0, 99, 256, 3};

static const struct {
    const char *family, *dtype;
} CKPTS[] = {
    {"llama", "f32"},         {"qwen2", "f32"},        {"qwen3", "f32"},  {"phi3", "f32"},
    {"gemma3_text", "f32"},   {"llama", "bf16"},       {"qwen2", "bf16"}, {"qwen3", "bf16"},
    {"phi3", "bf16"},         {"gemma3_text", "bf16"}, {"llama", "f16"},  {"gemma3n_text", "f32"},
    {"gemma3n_text", "bf16"}, {"qwen3_moe", "bf16"},
};
#define N_CKPTS (sizeof CKPTS / sizeof CKPTS[0])

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/omnic-test-embed-XXXXXX");
    if (!mkdtemp(tmp)) return -1;
    for (size_t i = 0; i < N_CKPTS; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, PY " tools/mktiny.py --family %s --dtype %s --out %s/%s-%s >/dev/null",
                 CKPTS[i].family, CKPTS[i].dtype, tmp, CKPTS[i].family, CKPTS[i].dtype);
        if (system(cmd) != 0) return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return mt_rmdir(tmp);
}

static const char *g_quant;   /* --quant for the next opens (NULL: as stored) */
static int64_t g_step_tokens; /* omnic__model_opts.step_tokens (batch-invariant prefills) */
static int64_t g_ctx = CTX;   /* context of the next opens */

static omnic__model *open_model(const char *name, const char *backend, omnic_dtype kv, int64_t chunk)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    omnic__model_opts o = {.backend = backend,
                           .threads = 2,
                           .ctx = g_ctx,
                           .kv_dtype = kv,
                           .slots = 2,
                           .chunk = chunk,
                           .quant = g_quant,
                           .step_tokens = g_step_tokens};
    omnic__model *m = NULL;
    omnic_err err;
    omnic_status s = omnic__model_open(dir, &o, &m, &err);
    if (s != OMNIC_OK) fprintf(stderr, "open %s: %s\n", dir, err.msg);
    assert_int_equal(s, OMNIC_OK);
    return m;
}

/* The prompt of the parity runs: TOKENS, or n pseudo-random ids when n > T. */
static const int32_t *prompt(const omnic__model *m, int n)
{
    static int32_t buf[TMAX];
    if (n <= T) return TOKENS;
    uint32_t x = 99;
    for (int i = 0; i < n; i++)
        x = x * 1664525u + 1013904223u, buf[i] = (int32_t)((x >> 8) % (uint32_t)m->dec.cfg.vocab);
    return buf;
}

/* LongRoPE models with a context past original_max_position_embeddings take a last input
 * "rope_long" i32 [n] (models/text_decoder.h): the whole prompt's value on every row. */
static int32_t g_rope_long[TMAX];

static void fill_rope_long(const omnic__model *m, int n)
{
    for (int i = 0; i < TMAX; i++)
        g_rope_long[i] = omnic__rope_long(&m->dec.cfg, n);
}

/* Token prefill of the n-token prompt into slot in chunks; logits to out [V]. */
static void token_prefill_n(omnic__model *m, int slot, int n, int chunk, float *out)
{
    omnic_err err;
    int32_t pos[TMAX];
    const int32_t *toks = prompt(m, n);
    for (int i = 0; i < n; i++)
        pos[i] = i;
    fill_rope_long(m, n);
    for (int start = 0; start < n; start += chunk) {
        int len = n - start < chunk ? n - start : chunk;
        omnic__tensor tok, p, rl;
        int64_t d[1] = {len};
        omnic__tensor_init(&tok, OMNIC_DTYPE_I32, 1, d, &err);
        omnic__tensor_init(&p, OMNIC_DTYPE_I32, 1, d, &err);
        omnic__tensor_init(&rl, OMNIC_DTYPE_I32, 1, d, &err);
        tok.data = (void *)(uintptr_t)(toks + start);
        p.data = pos + start;
        rl.data = g_rope_long;
        const omnic__tensor *in[3] = {&tok, &p, &rl};
        omnic__call c = {.n = len,
                         .inputs = in,
                         .n_inputs = m->dec.rope_switch ? 3 : 2,
                         .kv = &m->kv,
                         .slot = slot,
                         .kv_start = start};
        omnic_status s = omnic__module_call(&m->prefill, &c, &err);
        if (s != OMNIC_OK) fprintf(stderr, "token prefill: %s\n", err.msg);
        assert_int_equal(s, OMNIC_OK);
    }
    memcpy(out, omnic__module_output(&m->prefill, m->prefill_logits)->data,
           (size_t)m->dec.cfg.vocab * sizeof(float));
}

/* Embeddings prefill of rows emb [n, H] into slot through module mod (its inputs:
 * inputs_embeds, positions[, attn_bias built from prompt bias pb [n, n]][, rope_long]);
 * logits to out. */
static omnic_status embed_prefill_n(omnic__model *m, omnic__module *mod, const float *emb, int n,
                                    const float *pb, int slot, int chunk, float *out, omnic_err *err)
{
    const int64_t H = m->dec.cfg.hidden, S = m->kv.capacity * m->kv.n_slots;
    int32_t pos[TMAX];
    for (int i = 0; i < n; i++)
        pos[i] = i;
    fill_rope_long(m, n);
    float *bias = pb ? malloc((size_t)(chunk * S) * sizeof *bias) : NULL;
    omnic_status s = OMNIC_OK;
    for (int start = 0; start < n && s == OMNIC_OK; start += chunk) {
        int len = n - start < chunk ? n - start : chunk;
        omnic__tensor e, p, b, rl;
        int64_t de[2] = {len, H}, dp[1] = {len}, db[2] = {len, S};
        omnic__tensor_init(&e, OMNIC_DTYPE_F32, 2, de, err);
        omnic__tensor_init(&p, OMNIC_DTYPE_I32, 1, dp, err);
        omnic__tensor_init(&b, OMNIC_DTYPE_F32, 2, db, err);
        omnic__tensor_init(&rl, OMNIC_DTYPE_I32, 1, dp, err);
        e.data = (void *)(uintptr_t)(emb + (size_t)start * (size_t)H);
        p.data = pos + start;
        b.data = bias;
        rl.data = g_rope_long;
        if (pb &&
            (s = omnic__text_bias_rows(pb, n, start, len, slot, m->kv.capacity, S, bias, err)) != OMNIC_OK)
            break;
        /* Gemma 3n: the prompt's ids as the per-layer embeddings' side input */
        omnic__tensor ids;
        omnic__tensor_init(&ids, OMNIC_DTYPE_I32, 1, dp, err);
        ids.data = (void *)(uintptr_t)(prompt(m, n) + start);
        const omnic__tensor *in[4] = {&e, &p, pb ? &b : m->dec.altup ? &ids : &rl, &rl};
        omnic__call c = {.n = len,
                         .inputs = in,
                         .n_inputs = 2 + (pb != NULL) + m->dec.rope_switch + (m->dec.altup != NULL),
                         .kv = &m->kv,
                         .slot = slot,
                         .kv_start = start};
        s = omnic__module_call(mod, &c, err);
    }
    free(bias);
    if (s == OMNIC_OK)
        memcpy(out, omnic__module_output(mod, omnic__module_find_output(mod, "logits"))->data,
               (size_t)m->dec.cfg.vocab * sizeof(float));
    return s;
}

static omnic_status embed_prefill(omnic__model *m, omnic__module *mod, const float *emb, const float *pb,
                                  int slot, int chunk, float *out, omnic_err *err)
{
    return embed_prefill_n(m, mod, emb, T, pb, slot, chunk, out, err);
}

static size_t kv_slot_bytes(const omnic__model *m, int n)
{
    return (size_t)(n * m->kv.n_kv * m->kv.head_dim) * omnic_dtype_size(m->kv.dtype);
}

static const uint8_t *kv_slot(const omnic__model *m, bool v, int layer, int slot)
{
    const omnic__tensor *t = v ? &m->kv.v[layer] : &m->kv.k[layer];
    return (const uint8_t *)t->data +
           (size_t)(slot * m->kv.capacity * m->kv.n_kv * m->kv.head_dim) * omnic_dtype_size(m->kv.dtype);
}

static double max_abs(const float *a, const float *b, int64_t n)
{
    double d = 0;
    for (int64_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* Token prefill into slot 0, host embeddings + embeddings prefill into slot 1 (same chunking):
 * logits and every layer's K/V rows bit-identical. */
static void parity_n(const char *name, const char *backend, omnic_dtype kv, int chunk, int n)
{
    omnic__model *m = open_model(name, backend, kv, chunk);
    const int64_t V = m->dec.cfg.vocab, H = m->dec.cfg.hidden;
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    float *emb = malloc((size_t)(n * H) * sizeof *emb);
    omnic_err err;
    token_prefill_n(m, 0, n, chunk, a);
    assert_int_equal(omnic__model_embed_tokens(m, prompt(m, n), n, emb, &err), OMNIC_OK);
    assert_int_equal(embed_prefill_n(m, &m->embed_prefill, emb, n, NULL, 1, chunk, b, &err), OMNIC_OK);
    assert_int_equal(m->kv.len[1], n);
    assert_memory_equal(a, b, (size_t)V * sizeof *a);
    for (int l = 0; l < m->kv.n_layers; l++) {
        assert_memory_equal(kv_slot(m, false, l, 0), kv_slot(m, false, l, 1), kv_slot_bytes(m, n));
        assert_memory_equal(kv_slot(m, true, l, 0), kv_slot(m, true, l, 1), kv_slot_bytes(m, n));
    }
    fprintf(stderr,
            "%s%s%s%s (%s, kv %s, chunk %d, %d rows): embeddings prefill == token prefill, logits and %d "
            "layers of K/V "
            "bit-identical\n",
            name, g_quant ? " --quant " : "", g_quant ? g_quant : "",
            m->dec.rope_switch ? " rope-switch" : "", backend, omnic_dtype_name(kv), chunk, n,
            m->kv.n_layers);
    free(a);
    free(b);
    free(emb);
    omnic__model_close(m);
}

static void parity(const char *name, const char *backend, omnic_dtype kv, int chunk)
{
    parity_n(name, backend, kv, chunk, T);
}

static void test_parity_all(void **state)
{
    (void)state;
    char name[64];
    for (size_t i = 0; i < N_CKPTS; i++) {
        snprintf(name, sizeof name, "%s-%s", CKPTS[i].family, CKPTS[i].dtype);
        parity(name, "cpu", OMNIC_DTYPE_F32, 4);
        parity(name, "cpu", OMNIC_DTYPE_F16, T);
    }
    parity("llama-f32", "ref", OMNIC_DTYPE_F32, 3);
    parity("gemma3_text-bf16", "ref", OMNIC_DTYPE_F32, 5);
    parity("gemma3n_text-bf16", "ref", OMNIC_DTYPE_F32, 5);
}

/* Quantized tables (--quant): the host rows dequantize through the same get_rows kernel. */
static void test_parity_quant(void **state)
{
    (void)state;
    static const char *const q[] = {"q8_0", "q4_0"};
    for (int i = 0; i < 2; i++) {
        g_quant = q[i];
        parity("llama-f32", "cpu", OMNIC_DTYPE_F32, 4);
        parity("qwen2-bf16", "cpu", OMNIC_DTYPE_F16, 5);
        parity("gemma3_text-bf16", "cpu", OMNIC_DTYPE_F32, T);
        parity("gemma3n_text-bf16", "cpu", OMNIC_DTYPE_F32, 4); /* its per-layer table quantized too */
        parity("qwen3_moe-bf16", "cpu", OMNIC_DTYPE_F32, 4);    /* stacked experts quantized */
    }
    g_quant = NULL;
    /* mixed-step models plan batch-invariant prefills: the embeddings prefill follows */
    g_step_tokens = 4;
    parity("qwen3-f32", "cpu", OMNIC_DTYPE_F32, 4);
    parity("phi3-bf16", "cpu", OMNIC_DTYPE_F16, T);
    g_step_tokens = 0;
    /* LongRoPE past original_max_position_embeddings (64): the per-row table switch input,
     * short (11 rows) and long (80 rows) */
    g_ctx = 128;
    parity_n("phi3-f32", "cpu", OMNIC_DTYPE_F32, 16, T);
    parity_n("phi3-f32", "cpu", OMNIC_DTYPE_F32, 16, 80);
    parity_n("phi3-bf16", "ref", OMNIC_DTYPE_F32, 32, 80);
    g_ctx = CTX;
}

/* The explicit bias modes, built beside the model's modules over its KV pool. */
static void build_bias_module(omnic__model *m, omnic__module *mod, omnic__mask_mode mode, int64_t chunk)
{
    omnic_err err;
    assert_int_equal(omnic__module_init(mod, "text.embeddings_prefill", "test", chunk, &err), OMNIC_OK);
    omnic_status s = omnic__text_decoder_build_embeddings(
        &m->dec, mod, m->kv_dtype, m->kv.n_slots * m->kv.capacity, mode, OMNIC_HEAD_LAST, false, &err);
    if (s == OMNIC_OK) s = omnic__module_finalize(mod, m->backend, m->pool, &err);
    if (s == OMNIC_OK) s = omnic__module_constrain(mod, "attn_bias", 0, true, &err);
    if (s != OMNIC_OK) fprintf(stderr, "bias module: %s\n", err.msg);
    assert_int_equal(s, OMNIC_OK);
}

static void causal_bias(float *pb)
{
    for (int r = 0; r < T; r++)
        for (int c = 0; c < T; c++)
            pb[r * T + c] = c <= r ? 0.0f : OMNIC_MASK_NEG;
}

static void bias_modes(const char *name)
{
    omnic__model *m = open_model(name, "cpu", OMNIC_DTYPE_F32, T);
    omnic__model *r = open_model(name, "ref", OMNIC_DTYPE_F32, T);
    const int64_t V = m->dec.cfg.vocab, H = m->dec.cfg.hidden;
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b),
          *c = malloc((size_t)V * sizeof *c);
    float *emb = malloc((size_t)(T * H) * sizeof *emb), pb[T * T];
    omnic_err err;
    assert_int_equal(omnic__model_embed_tokens(m, TOKENS, T, emb, &err), OMNIC_OK);
    assert_int_equal(embed_prefill(m, &m->embed_prefill, emb, NULL, 0, T, a, &err), OMNIC_OK);
    omnic__module cb, bo, rbo;
    build_bias_module(m, &cb, OMNIC_MASK_CAUSAL_BIAS, T);
    build_bias_module(m, &bo, OMNIC_MASK_BIAS, 4);
    build_bias_module(r, &rbo, OMNIC_MASK_BIAS, T);
    /* causal + an all-zero bias, and the bias alone spelling the causal mask: the causal result
     * (masked keys add exact zeros; stated tolerance 1e-6 relative for a different visit order) */
    memset(pb, 0, sizeof pb);
    assert_int_equal(embed_prefill(m, &cb, emb, pb, 1, T, b, &err), OMNIC_OK);
    assert_memory_equal(a, b, (size_t)V * sizeof *a);
    causal_bias(pb);
    omnic__kv_pool_clear_slot(&m->kv, 1);
    assert_int_equal(embed_prefill(m, &bo, emb, pb, 1, 4, c, &err), OMNIC_OK);
    double d = max_abs(a, c, V);
    fprintf(stderr, "%s: bias-only causal mask vs causal module: max abs logit diff %.3g\n", name, d);
    assert_true(d <= 1e-5);
    /* a bidirectional span (rows 4..7 see each other) changes the logits, and cpu agrees with ref */
    for (int i = 4; i < 8; i++)
        for (int j = 4; j < 8; j++)
            pb[i * T + j] = 0.0f;
    omnic__kv_pool_clear_slot(&m->kv, 1);
    assert_int_equal(embed_prefill(m, &bo, emb, pb, 1, 3, c, &err),
                     OMNIC_E_INVALID); /* chunks of 3 split it */
    assert_non_null(strstr(err.msg, "later chunk"));
    omnic__kv_pool_clear_slot(&m->kv, 1);
    assert_int_equal(embed_prefill(m, &bo, emb, pb, 1, 4, c, &err), OMNIC_OK); /* 4..7 is one chunk */
    assert_int_equal(embed_prefill(r, &rbo, emb, pb, 0, T, b, &err), OMNIC_OK);
    double dr = max_abs(c, b, V), dc = max_abs(c, a, V);
    fprintf(stderr, "%s: bidirectional span: cpu vs ref max abs %.3g; vs causal %.3g\n", name, dr, dc);
    assert_true(dr < 1e-4);
    assert_true(dc > 1e-3);
    /* the split span is refused by the bias helper, naming the chunk */
    assert_int_equal(
        omnic__text_bias_rows(pb, T, 0, 6, 0, m->kv.capacity, m->kv.capacity * m->kv.n_slots, c, &err),
        OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "later chunk"));
    omnic__module_deinit(&cb);
    omnic__module_deinit(&bo);
    omnic__module_deinit(&rbo);
    free(a);
    free(b);
    free(c);
    free(emb);
    omnic__model_close(m);
    omnic__model_close(r);
}

static void test_bias_modes(void **state)
{
    (void)state;
    bias_modes("llama-f32");
    bias_modes("gemma3_text-bf16");
}

static void test_checks(void **state)
{
    (void)state;
    omnic__model *m = open_model("qwen2-f32", "cpu", OMNIC_DTYPE_F32, 4);
    const int64_t H = m->dec.cfg.hidden, V = m->dec.cfg.vocab;
    float *emb = calloc((size_t)(4 * H), sizeof *emb), *l = malloc((size_t)V * sizeof *l);
    omnic_err err;
    int32_t bad[2] = {3, (int32_t)V};
    assert_int_equal(omnic__model_embed_tokens(m, bad, 2, emb, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "[1]"));
    int32_t neg = -1;
    assert_int_equal(omnic__model_embed_tokens(m, &neg, 1, emb, &err), OMNIC_E_INVALID);
    /* non-finite rows are refused before any kernel runs */
    emb[H + 2] = NAN;
    omnic__tensor e, p;
    int64_t de[2] = {2, H}, dp[1] = {2};
    int32_t pos[2] = {0, 1};
    omnic__tensor_init(&e, OMNIC_DTYPE_F32, 2, de, &err);
    omnic__tensor_init(&p, OMNIC_DTYPE_I32, 1, dp, &err);
    e.data = emb;
    p.data = pos;
    const omnic__tensor *in[2] = {&e, &p};
    omnic__call c = {.n = 2, .inputs = in, .n_inputs = 2, .kv = &m->kv, .slot = 0, .kv_start = 0};
    assert_int_equal(omnic__module_call(&m->embed_prefill, &c, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "not finite"));
    assert_int_equal(m->kv.len[0], 0);
    emb[H + 2] = 0;
    /* wrong width */
    int64_t dw[2] = {2, H - 1};
    omnic__tensor_init(&e, OMNIC_DTYPE_F32, 2, dw, &err);
    e.data = emb;
    assert_int_equal(omnic__module_call(&m->embed_prefill, &c, &err), OMNIC_E_INVALID);
    /* more rows than the chunk */
    c.n = 5;
    assert_int_equal(omnic__module_call(&m->embed_prefill, &c, &err), OMNIC_E_CAPACITY);
    free(emb);
    free(l);
    omnic__model_close(m);
    /* Gemma 3n declares the per-layer ids side input: a call without it is refused */
    m = open_model("gemma3n_text-f32", "cpu", OMNIC_DTYPE_F32, 4);
    emb = calloc((size_t)(2 * m->dec.cfg.hidden), sizeof *emb);
    int64_t dg[2] = {2, m->dec.cfg.hidden};
    omnic__tensor_init(&e, OMNIC_DTYPE_F32, 2, dg, &err);
    e.data = emb;
    c = (omnic__call){.n = 2, .inputs = in, .n_inputs = 2, .kv = &m->kv, .slot = 0, .kv_start = 0};
    assert_int_equal(omnic__module_call(&m->embed_prefill, &c, &err), OMNIC_E_INVALID);
    fprintf(stderr, "gemma3n embeddings prefill without ple_ids: %s\n", err.msg);
    int32_t big[2] = {0, (int32_t)m->dec.cfg.vocab};
    omnic__tensor pi;
    omnic__tensor_init(&pi, OMNIC_DTYPE_I32, 1, dp, &err);
    pi.data = big;
    const omnic__tensor *in3[3] = {&e, &p, &pi};
    c.inputs = in3;
    c.n_inputs = 3;
    assert_int_equal(omnic__module_call(&m->embed_prefill, &c, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "ple_ids"));
    assert_int_equal(m->kv.len[0], 0);
    free(emb);
    omnic__model_close(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity_all),
        cmocka_unit_test(test_parity_quant),
        cmocka_unit_test(test_bias_modes),
        cmocka_unit_test(test_checks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
