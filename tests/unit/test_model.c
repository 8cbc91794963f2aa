/* Model load and text.token_prefill on tiny checkpoints of each family (made by
 * tools/mktiny.py): cpu vs ref logits, chunked prefill vs whole, KV written to the
 * slot, admission by capacity, bad configs and weights; and, stage by stage, against
 * the independent numpy reference tools/ref/decoder.py. */
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

#include "core/dtype.h"
#include "core/npy.h"
#include "models/model.h"

#define CTX 64
#define T 11

static char tmp[64];
static const int32_t TOKENS[T] = {5, 17, 300, 42, 42, 7, 510, 0, 99, 256, 3};

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/omnic-test-model-XXXXXX");
    if (!mkdtemp(tmp)) return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             PY " tools/mktiny.py --family llama --dtype f32 --out %s/llama >/dev/null && " PY
                " tools/mktiny.py --family qwen2 --out %s/qwen2 >/dev/null && " PY
                " tools/mktiny.py --family llama --dtype f16 --shards 3 --out %s/llama-f16 >/dev/null && " PY
                " tools/mktiny.py --family qwen3 --out %s/qwen3 >/dev/null && " PY
                " tools/mktiny.py --family phi3 --dtype f32 --out %s/phi3 >/dev/null && " PY
                " tools/mktiny.py --family gemma3_text --out %s/gemma3_text >/dev/null && " PY
                " tools/mktiny.py --family gemma3n_text --out %s/gemma3n_text >/dev/null && " PY
                " tools/mktiny.py --family qwen3_moe --out %s/qwen3_moe >/dev/null",
             tmp, tmp, tmp, tmp, tmp, tmp, tmp, tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return mt_rmdir(tmp);
}

static omnic__model *open_model_ctx(const char *name, const char *backend, omnic_dtype kv, int slots,
                                    int64_t chunk, int64_t ctx)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    omnic__model_opts o = {
        .backend = backend, .threads = 2, .ctx = ctx, .kv_dtype = kv, .slots = slots, .chunk = chunk};
    omnic__model *m = NULL;
    omnic_err err;
    omnic_status s = omnic__model_open(dir, &o, &m, &err);
    if (s != OMNIC_OK) fprintf(stderr, "open %s: %s\n", dir, err.msg);
    assert_int_equal(s, OMNIC_OK);
    return m;
}

static omnic__model *open_model_opts(const char *name, const char *backend, omnic_dtype kv, int slots,
                                     int64_t chunk)
{
    return open_model_ctx(name, backend, kv, slots, chunk, CTX);
}

static omnic__model *open_model(const char *name, const char *backend, omnic_dtype kv)
{
    return open_model_opts(name, backend, kv, 1, 0);
}

/* Prefills toks[0..n) into slot through module mod (a text.token_prefill) in calls of at
 * most `chunk` rows; copies the last logits to out. */
static void prefill_toks_with(omnic__model *m, omnic__module *mod, int slot, const int32_t *toks, int n,
                              int chunk, float *out)
{
    omnic_err err;
    int32_t pos[4 * CTX];
    for (int i = 0; i < n; i++)
        pos[i] = i;
    for (int start = 0; start < n; start += chunk) {
        int len = n - start < chunk ? n - start : chunk;
        omnic__tensor tok, p;
        int64_t d[1] = {len};
        omnic__tensor_init(&tok, OMNIC_DTYPE_I32, 1, d, &err);
        omnic__tensor_init(&p, OMNIC_DTYPE_I32, 1, d, &err);
        tok.data = (void *)(uintptr_t)(toks + start);
        p.data = pos + start;
        const omnic__tensor *in[2] = {&tok, &p};
        omnic__call c = {
            .n = len, .inputs = in, .n_inputs = 2, .kv = &m->kv, .slot = slot, .kv_start = start};
        omnic_status s = omnic__module_call(mod, &c, &err);
        if (s != OMNIC_OK) fprintf(stderr, "prefill: %s\n", err.msg);
        assert_int_equal(s, OMNIC_OK);
    }
    const omnic__tensor *logits = omnic__module_output(mod, 0);
    assert_int_equal(logits->dims[1], m->dec.cfg.vocab);
    memcpy(out, logits->data, (size_t)m->dec.cfg.vocab * sizeof(float));
}

static void prefill_toks(omnic__model *m, int slot, const int32_t *toks, int n, int chunk, float *out)
{
    prefill_toks_with(m, &m->prefill, slot, toks, n, chunk, out);
}

static void prefill(omnic__model *m, int n, int chunk, float *out)
{
    prefill_toks(m, 0, TOKENS, n, chunk, out);
}

/* One batched decode step: row b feeds tok[b] to slot slots[b] at its current length;
 * logits [n, V] copied to out. */
static void decode_step(omnic__model *m, const int32_t *slots, const int32_t *tok, int n, float *out)
{
    omnic_err err;
    int32_t pos[16];
    for (int b = 0; b < n; b++)
        pos[b] = (int32_t)m->kv.len[slots[b]];
    omnic__tensor t, p;
    int64_t d[1] = {n};
    omnic__tensor_init(&t, OMNIC_DTYPE_I32, 1, d, &err);
    omnic__tensor_init(&p, OMNIC_DTYPE_I32, 1, d, &err);
    t.data = (void *)(uintptr_t)tok;
    p.data = pos;
    const omnic__tensor *in[2] = {&t, &p};
    omnic__call c = {.n = n, .inputs = in, .n_inputs = 2, .kv = &m->kv, .row_slots = slots};
    omnic_status s = omnic__module_call(&m->decode, &c, &err);
    if (s != OMNIC_OK) fprintf(stderr, "decode: %s\n", err.msg);
    assert_int_equal(s, OMNIC_OK);
    memcpy(out, omnic__module_output(&m->decode, 0)->data, (size_t)(n * m->dec.cfg.vocab) * sizeof(float));
}

/* Greedy continuation of TOKENS[0..T) by n_gen tokens (prefill, then decode steps). */
static void greedy(omnic__model *m, int n_gen, int32_t *out)
{
    int64_t V = m->dec.cfg.vocab;
    float *l = malloc((size_t)V * sizeof *l);
    omnic__kv_pool_clear_slot(&m->kv, 0);
    prefill(m, T, T, l);
    int32_t slot = 0;
    for (int i = 0; i < n_gen; i++) {
        out[i] = argmax(l, V);
        if (i + 1 < n_gen) decode_step(m, &slot, &out[i], 1, l);
    }
    free(l);
}

/* cpu and ref agree; chunking does not change the result; KV rows land in the pool; with
 * numpy_ref, tools/ref/decoder.py agrees too (families it implements). */
static void check_family_ref(const char *name, bool numpy_ref)
{
    omnic__model *cpu = open_model(name, "cpu", OMNIC_DTYPE_F32);
    omnic__model *ref = open_model(name, "ref", OMNIC_DTYPE_F32);
    int64_t V = cpu->dec.cfg.vocab;
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b),
          *c = malloc((size_t)V * sizeof *c);
    prefill(cpu, T, T, a);
    prefill(ref, T, T, b);
    assert_int_equal(cpu->kv.len[0], T);
    double r = max_rel(a, b, V);
    fprintf(stderr, "%s: cpu vs ref logits max rel diff %.3g\n", name, r);
    assert_true(r < 1e-4);
    assert_int_equal(argmax(a, V), argmax(b, V));
    /* KV rows written match between backends */
    double kr =
        max_rel(cpu->kv.k[0].data, ref->kv.k[0].data, T * cpu->dec.cfg.n_kv_heads * cpu->dec.cfg.head_dim);
    assert_true(kr < 1e-4);
    int chunks[] = {1, 3, 7};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        omnic__kv_pool_clear_slot(&cpu->kv, 0);
        prefill(cpu, T, chunks[i], c);
        double rc = max_rel(c, a, V);
        fprintf(stderr, "%s: chunk %d vs whole max rel diff %.3g\n", name, chunks[i], rc);
        assert_true(rc < 1e-5);
        assert_int_equal(argmax(c, V), argmax(a, V));
    }
    /* greedy 32-token continuations are token-identical between ref and cpu */
    int32_t gc[32], gr[32];
    greedy(cpu, 32, gc);
    greedy(ref, 32, gr);
    assert_memory_equal(gc, gr, sizeof gc);
    if (!numpy_ref) {
        free(a), free(b), free(c);
        omnic__model_close(cpu);
        omnic__model_close(ref);
        return;
    }
    /* dump for the numpy reference: last-row logits and every layer's K/V */
    char dir[400], path[500];
    snprintf(dir, sizeof dir, "%s/%s-dump", tmp, name);
    sh("mkdir -p %s", dir);
    omnic__kv_pool_clear_slot(&cpu->kv, 0);
    prefill(cpu, T, T, a);
    omnic__tensor lt;
    omnic_err err;
    int64_t ld[2] = {1, V};
    omnic__tensor_init(&lt, OMNIC_DTYPE_F32, 2, ld, &err);
    lt.data = a;
    snprintf(path, sizeof path, "%s/prefill_logits.npy", dir);
    assert_int_equal(omnic__npy_write(path, &lt, &err), OMNIC_OK);
    for (int l = 0; l < cpu->kv.n_layers; l++) {
        for (int kv = 0; kv < 2; kv++) {
            omnic__tensor view = kv ? cpu->kv.v[l] : cpu->kv.k[l];
            view.dims[0] = T;
            view.owns_data = false;
            snprintf(path, sizeof path, "%s/kv_l%d_%c.npy", dir, l, kv ? 'v' : 'k');
            assert_int_equal(omnic__npy_write(path, &view, &err), OMNIC_OK);
        }
    }
    char toks[128] = "";
    for (int i = 0; i < T; i++)
        snprintf(toks + strlen(toks), sizeof toks - strlen(toks), i ? ",%d" : "%d", TOKENS[i]);
    /* f32 KV on both sides: only summation order differs (observed max abs 4e-6) */
    sh(PY " tools/ref/decoder.py --model %s/%s --tokens %s --compare %s --atol 1e-4 --rtol 0", tmp, name,
       toks, dir);
    free(a), free(b), free(c);
    omnic__model_close(cpu);
    omnic__model_close(ref);
}

static void check_family(const char *name)
{
    check_family_ref(name, true);
}

/* Gemma 3n (the HF goldens are its oracle; tools/ref has no AltUp): cpu == ref, chunking, and a
 * KV pool of only the layers that own a cache */
static void test_gemma3n_text(void **state)
{
    (void)state;
    check_family_ref("gemma3n_text", false);
    omnic__model *m = open_model("gemma3n_text", "cpu", OMNIC_DTYPE_F32);
    assert_int_equal(m->kv.n_layers, 4); /* 6 layers, the last 2 share */
    assert_int_equal(m->dec.cfg.kv_layer[4], 3);
    assert_int_equal(m->dec.cfg.kv_layer[5], 2);
    omnic__model_close(m);
}

/* Qwen3-MoE (HF goldens are its oracle): cpu == ref, chunking */
static void test_qwen3_moe(void **state)
{
    (void)state;
    check_family_ref("qwen3_moe", false);
}

static void test_llama_f32(void **state)
{
    (void)state;
    check_family("llama");
}
static void test_qwen2_bf16(void **state)
{
    (void)state;
    check_family("qwen2");
}
static void test_llama_f16_sharded(void **state)
{
    (void)state;
    check_family("llama-f16");
}
static void test_qwen3(void **state)
{
    (void)state;
    check_family("qwen3");
}
static void test_phi3(void **state)
{
    (void)state;
    check_family("phi3");
}
static void test_gemma3_text(void **state)
{
    (void)state;
    check_family("gemma3_text");
}

/* Chunked prefill of a 100-token prompt with chunk sizes 1, 7, 64 and the whole prompt
 * gives the same greedy continuation (chunks past 16 rows take the sgemm path, so
 * logits agree to f32 rounding rather than bit for bit). */
static void test_chunk_sizes(void **state)
{
    (void)state;
    enum { LONG = 100, GEN = 8 };
    static int32_t toks[LONG];
    for (int i = 0; i < LONG; i++)
        toks[i] = (int32_t)((i * 37 + 11) % 500);
    int32_t first[GEN];
    const int chunks[] = {LONG, 64, 7, 1};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        omnic__model *m = open_model_ctx("llama", "cpu", OMNIC_DTYPE_F16, 1, chunks[c], 128);
        int64_t V = m->dec.cfg.vocab;
        float *l = malloc((size_t)V * sizeof *l);
        int32_t gen[GEN], slot = 0;
        prefill_toks(m, 0, toks, LONG, chunks[c], l);
        for (int i = 0; i < GEN; i++) {
            gen[i] = argmax(l, V);
            if (i + 1 < GEN) decode_step(m, &slot, &gen[i], 1, l);
        }
        if (c == 0)
            memcpy(first, gen, sizeof gen);
        else
            assert_memory_equal(gen, first, sizeof gen);
        free(l);
        omnic__model_close(m);
    }
}

/* Decode steps give the logits a full prefill of the same tokens gives. */
static void test_decode_matches_prefill(void **state)
{
    (void)state;
    omnic__model *m = open_model_opts("qwen2", "cpu", OMNIC_DTYPE_F32, 1, 0);
    int64_t V = m->dec.cfg.vocab;
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    prefill(m, T - 3, T, a);
    int32_t slot = 0;
    for (int i = T - 3; i < T; i++)
        decode_step(m, &slot, &TOKENS[i], 1, a);
    omnic__kv_pool_clear_slot(&m->kv, 0);
    prefill(m, T, T, b);
    double r = max_rel(a, b, V);
    fprintf(stderr, "decode vs prefill max rel diff %.3g\n", r);
    assert_true(r < 1e-5);
    free(a), free(b);
    omnic__model_close(m);
}

/* Batch invariance: 4 prompts decoded together give bit-identical logits to each alone. */
static void batch_invariance(const char *name)
{
    omnic__model *m = open_model_opts(name, "cpu", OMNIC_DTYPE_F16, 4, 0);
    int64_t V = m->dec.cfg.vocab;
    enum { B = 4, STEPS = 8 };
    static const int lens[B] = {11, 3, 7, 1};
    float *batch = malloc((size_t)(B * V) * sizeof *batch), *alone = malloc((size_t)V * sizeof *alone);
    float *first = malloc((size_t)(B * V) * sizeof *first);
    int32_t cur[B], slots[B] = {0, 1, 2, 3}, hist[B][STEPS];
    for (int b = 0; b < B; b++) {
        prefill_toks(m, b, TOKENS + b, lens[b], T, first + b * V);
        cur[b] = argmax(first + b * V, V);
    }
    float *steps = malloc((size_t)(STEPS * B * V) * sizeof *steps);
    for (int s = 0; s < STEPS; s++) {
        decode_step(m, slots, cur, B, batch);
        memcpy(steps + (size_t)s * B * V, batch, (size_t)(B * V) * sizeof *batch);
        for (int b = 0; b < B; b++)
            hist[b][s] = cur[b], cur[b] = argmax(batch + b * V, V);
    }
    /* each alone, in slot 0 */
    for (int b = 0; b < B; b++) {
        omnic__kv_pool_clear_slot(&m->kv, 0);
        prefill_toks(m, 0, TOKENS + b, lens[b], T, alone);
        assert_memory_equal(alone, first + b * V, (size_t)V * sizeof *alone);
        int32_t slot = 0;
        for (int s = 0; s < STEPS; s++) {
            decode_step(m, &slot, &hist[b][s], 1, alone);
            assert_memory_equal(alone, steps + ((size_t)s * B + (size_t)b) * V, (size_t)V * sizeof *alone);
        }
    }
    free(batch), free(alone), free(first), free(steps);
    omnic__model_close(m);
}

static void test_batch_invariance(void **state)
{
    (void)state;
    batch_invariance("llama");
    batch_invariance("gemma3n_text");
    batch_invariance("qwen3_moe"); /* rows routed to one expert together, each as if alone */
}

/* Mixed steps (step_tokens > 0): one text.decode_body call carrying a decode row of one slot
 * and a run of prompt rows of another, then text.head on the rows that sample, gives
 * bit-identical logits and KV to the prompt prefilled alone by the batch-invariant
 * text.token_prefill (prefill_inv) and the decode row run alone by text.decode; rows of one slot that are not
 * adjacent are refused. Float weights, prompt longer than the decode kernel's row block. */
static void mixed_call(omnic__model *m, const int32_t *slots, const int32_t *tok, int n, float *out)
{
    omnic_err err;
    int32_t pos[64];
    for (int b = 0; b < n; b++)
        pos[b] = b > 0 && slots[b] == slots[b - 1] ? pos[b - 1] + 1 : (int32_t)m->kv.len[slots[b]];
    omnic__tensor t, p;
    int64_t d[1] = {n};
    omnic__tensor_init(&t, OMNIC_DTYPE_I32, 1, d, &err);
    omnic__tensor_init(&p, OMNIC_DTYPE_I32, 1, d, &err);
    t.data = (void *)(uintptr_t)tok;
    p.data = pos;
    const omnic__tensor *in[2] = {&t, &p};
    omnic__call c = {.n = n, .inputs = in, .n_inputs = 2, .kv = &m->kv, .row_slots = slots};
    omnic_status s = omnic__module_call(&m->decode_body, &c, &err);
    if (s != OMNIC_OK) fprintf(stderr, "mixed: %s\n", err.msg);
    assert_int_equal(s, OMNIC_OK);
    /* text.head on rows 0 and n - 1 (the rows that sample), their logits to out[0] and out[n - 1] */
    const int64_t H = m->dec.cfg.hidden, V = m->dec.cfg.vocab;
    const float *hid = omnic__module_output(&m->decode_body, 0)->data;
    float two[2 * 64];
    assert_true(H <= 64);
    memcpy(two, hid, (size_t)H * sizeof(float));
    memcpy(two + H, hid + (n - 1) * H, (size_t)H * sizeof(float));
    omnic__tensor h;
    int64_t dh[2] = {2, H};
    omnic__tensor_init(&h, OMNIC_DTYPE_F32, 2, dh, &err);
    h.data = two;
    const omnic__tensor *hin[1] = {&h};
    omnic__call hc = {.n = 2, .inputs = hin, .n_inputs = 1};
    assert_int_equal(omnic__module_call(&m->head, &hc, &err), OMNIC_OK);
    const float *lg = omnic__module_output(&m->head, 0)->data;
    memcpy(out, lg, (size_t)V * sizeof(float));
    memcpy(out + (n - 1) * V, lg + V, (size_t)V * sizeof(float));
}

static void test_mixed_steps(void **state)
{
    (void)state;
    static const char *const names[] = {"llama", "qwen2", "gemma3n_text", "qwen3_moe"};
    enum { P = 40, STEP = 8 };
    int32_t prompt[P];
    for (int i = 0; i < P; i++)
        prompt[i] = (int32_t)((i * 37 + 11) % 500);
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/%s", tmp, names[f]);
        omnic__model_opts o = {.backend = "cpu",
                               .threads = 2,
                               .ctx = CTX,
                               .kv_dtype = OMNIC_DTYPE_F16,
                               .slots = 2,
                               .chunk = CTX,
                               .step_tokens = STEP};
        omnic__model *m = NULL;
        omnic_err err;
        assert_int_equal(omnic__model_open(dir, &o, &m, &err), OMNIC_OK);
        const int64_t V = m->dec.cfg.vocab;
        float *alone_pf = malloc((size_t)V * sizeof(float)), *alone_dec = malloc((size_t)V * sizeof(float));
        float *mix = malloc((size_t)(STEP + 1) * (size_t)V * sizeof(float));
        /* alone: slot 0 prefilled then one decode row; slot 1's prompt in one prefill call */
        prefill_toks(m, 0, TOKENS, T, T, alone_dec);
        int32_t s0 = 0, t9 = 9;
        decode_step(m, &s0, &t9, 1, alone_dec);
        prefill_toks_with(m, &m->prefill_inv, 1, prompt, P, P, alone_pf);
        const size_t row = omnic__dtype_row_bytes(m->kv.dtype, m->kv.n_kv * m->kv.head_dim);
        uint8_t *kv_alone = malloc((size_t)m->kv.n_layers * 2 * (size_t)(T + 1 + P) * row);
        size_t off = 0;
        for (int l = 0; l < m->kv.n_layers; l++)
            for (int kv = 0; kv < 2; kv++) {
                const uint8_t *base = (kv ? m->kv.v[l] : m->kv.k[l]).data;
                memcpy(kv_alone + off, base, (size_t)(T + 1) * row), off += (size_t)(T + 1) * row;
                memcpy(kv_alone + off, base + (size_t)CTX * row, (size_t)P * row), off += (size_t)P * row;
            }
        omnic__kv_pool_clear_slot(&m->kv, 0);
        omnic__kv_pool_clear_slot(&m->kv, 1);
        /* mixed: slot 0's decode row beside slot 1's first 7 prompt rows, then the rest of the
         * prompt in runs of STEP rows through the decode module */
        prefill_toks(m, 0, TOKENS, T, T, mix);
        int32_t slots[STEP + 1], toks[STEP + 1];
        slots[0] = 0, toks[0] = 9;
        for (int i = 0; i < STEP - 1; i++)
            slots[1 + i] = 1, toks[1 + i] = prompt[i];
        mixed_call(m, slots, toks, STEP, mix);
        assert_memory_equal(mix, alone_dec, (size_t)V * sizeof(float));
        for (int start = STEP - 1; start < P; start += STEP) {
            int n = P - start < STEP ? P - start : STEP;
            for (int i = 0; i < n; i++)
                slots[i] = 1, toks[i] = prompt[start + i];
            mixed_call(m, slots, toks, n, mix);
            if (start + n == P)
                assert_memory_equal(mix + (size_t)(n - 1) * (size_t)V, alone_pf, (size_t)V * sizeof(float));
        }
        off = 0;
        for (int l = 0; l < m->kv.n_layers; l++)
            for (int kv = 0; kv < 2; kv++) {
                const uint8_t *base = (kv ? m->kv.v[l] : m->kv.k[l]).data;
                assert_memory_equal(kv_alone + off, base, (size_t)(T + 1) * row),
                    off += (size_t)(T + 1) * row;
                assert_memory_equal(kv_alone + off, base + (size_t)CTX * row, (size_t)P * row),
                    off += (size_t)P * row;
            }
        /* rows of slot 1 on both sides of a slot-0 row */
        int32_t bad_slots[3] = {1, 0, 1}, bad_toks[3] = {1, 2, 3}, bad_pos[3] = {0, 0, 0};
        omnic__tensor t3, p3;
        int64_t d3[1] = {3};
        omnic__tensor_init(&t3, OMNIC_DTYPE_I32, 1, d3, &err);
        omnic__tensor_init(&p3, OMNIC_DTYPE_I32, 1, d3, &err);
        t3.data = bad_toks, p3.data = bad_pos;
        const omnic__tensor *in3[2] = {&t3, &p3};
        omnic__call c3 = {.n = 3, .inputs = in3, .n_inputs = 2, .kv = &m->kv, .row_slots = bad_slots};
        int64_t len1 = m->kv.len[1];
        assert_int_equal(omnic__module_call(&m->decode_body, &c3, &err), OMNIC_E_INVALID);
        assert_non_null(strstr(err.msg, "name slot 1 but are not adjacent"));
        assert_int_equal(m->kv.len[1], len1);
        fprintf(stderr, "%s: mixed steps bit-identical to prefill + decode alone (prompt %d rows, step %d)\n",
                names[f], P, STEP);
        free(alone_pf), free(alone_dec), free(mix), free(kv_alone);
        omnic__model_close(m);
    }
}

/* M-RoPE (Qwen2-VL's text model): the qwen2 checkpoint with rope_scaling {mrope,
 * mrope_section}: text rows (the same coordinate on all three axes) give logits and K/V
 * bit-identical to the plain 1-D model; distinct coordinates change them and agree between
 * backends; bad sections are refused. */
static void mrope_prefill(omnic__model *m, const int32_t *pos3, int n, float *out)
{
    omnic_err err;
    omnic__tensor tok, p;
    int64_t d[1] = {n}, d3[2] = {n, 3};
    omnic__tensor_init(&tok, OMNIC_DTYPE_I32, 1, d, &err);
    omnic__tensor_init(&p, OMNIC_DTYPE_I32, 2, d3, &err);
    tok.data = (void *)(uintptr_t)TOKENS;
    p.data = (void *)(uintptr_t)pos3;
    const omnic__tensor *in[2] = {&tok, &p};
    omnic__call c = {.n = n, .inputs = in, .n_inputs = 2, .kv = &m->kv, .slot = 0, .kv_start = 0};
    omnic__kv_pool_clear_slot(&m->kv, 0);
    omnic_status s = omnic__module_call(&m->prefill, &c, &err);
    if (s != OMNIC_OK) fprintf(stderr, "mrope prefill: %s\n", err.msg);
    assert_int_equal(s, OMNIC_OK);
    memcpy(out, omnic__module_output(&m->prefill, 0)->data, (size_t)m->dec.cfg.vocab * sizeof(float));
}

static void test_mrope_text(void **state)
{
    (void)state;
    sh("rm -rf %s/qwen2-mrope && cp -r %s/qwen2 %s/qwen2-mrope && " PY
       " -c \"import json,sys; p=sys.argv[1]; "
       "c=json.load(open(p)); c['rope_scaling']={'type':'mrope','mrope_section':[2,3,3]}; "
       "json.dump(c,open(p,'w'))\" "
       "%s/qwen2-mrope/config.json",
       tmp, tmp, tmp, tmp);
    omnic__model *plain = open_model("qwen2", "cpu", OMNIC_DTYPE_F32),
                 *mr = open_model("qwen2-mrope", "cpu", OMNIC_DTYPE_F32);
    omnic__model *mr_ref = open_model("qwen2-mrope", "ref", OMNIC_DTYPE_F32);
    assert_true(mr->dec.cfg.mrope && !plain->dec.cfg.mrope);
    assert_string_not_equal(mr->identity, plain->identity); /* position mode is part of the identity */
    const int64_t V = mr->dec.cfg.vocab;
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b),
          *c = malloc((size_t)V * sizeof *c);
    int32_t pos3[3 * T];
    for (int i = 0; i < T; i++)
        pos3[3 * i] = pos3[3 * i + 1] = pos3[3 * i + 2] = i;
    prefill(plain, T, T, a);
    mrope_prefill(mr, pos3, T, b);
    assert_memory_equal(a, b, (size_t)V * sizeof *a);
    const size_t row = omnic__dtype_row_bytes(mr->kv.dtype, mr->kv.n_kv * mr->kv.head_dim);
    for (int l = 0; l < mr->kv.n_layers; l++)
        assert_memory_equal(plain->kv.k[l].data, mr->kv.k[l].data, (size_t)T * row);
    /* image-like coordinates: a 2 x 3 grid at rows 3..8 (t = 3, h = 3 + y, w = 3 + x), text after */
    for (int i = 3; i < 9; i++)
        pos3[3 * i] = 3, pos3[3 * i + 1] = 3 + (i - 3) / 3, pos3[3 * i + 2] = 3 + (i - 3) % 3;
    for (int i = 9; i < T; i++)
        pos3[3 * i] = pos3[3 * i + 1] = pos3[3 * i + 2] = i - 3;
    mrope_prefill(mr, pos3, T, b);
    mrope_prefill(mr_ref, pos3, T, c);
    double r = max_rel(b, c, V);
    fprintf(stderr, "mrope: distinct coordinates cpu vs ref max rel diff %.3g\n", r);
    assert_true(r < 1e-5);
    assert_true(max_rel(a, b, V) > 1e-4); /* the axes matter */
    omnic__model_close(plain), omnic__model_close(mr), omnic__model_close(mr_ref);
    free(a), free(b), free(c);
    /* sections that do not sum to rotary dims / 2, and a list of the wrong length */
    static const char *const bad[] = {"[2,3,4]", "[4,4]"};
    for (int k = 0; k < 2; k++) {
        sh(PY " -c \"import json,sys; p=sys.argv[1]; c=json.load(open(p)); "
              "c['rope_scaling']={'type':'mrope','mrope_section':%s}; json.dump(c,open(p,'w'))\" "
              "%s/qwen2-mrope/config.json",
           bad[k], tmp);
        char dir[300];
        snprintf(dir, sizeof dir, "%s/qwen2-mrope", tmp);
        omnic__model_opts o = {.backend = "cpu", .threads = 1, .ctx = CTX};
        omnic__model *m = NULL;
        omnic_err err;
        assert_int_equal(omnic__model_open(dir, &o, &m, &err), OMNIC_E_INVALID);
        assert_non_null(strstr(err.msg, "mrope_section"));
    }
}

/* Admission: rows past the capacity are refused with the three numbers; nothing changes. */
static void test_capacity(void **state)
{
    (void)state;
    omnic__model *m = open_model_opts("qwen2", "cpu", OMNIC_DTYPE_F16, 2, 0);
    float *logits = malloc((size_t)m->dec.cfg.vocab * sizeof *logits);
    prefill(m, T, T, logits);
    omnic_err err;
    static int32_t toks[CTX];
    omnic__tensor tok, pos;
    int64_t d[1] = {CTX - T + 1};
    omnic__tensor_init(&tok, OMNIC_DTYPE_I32, 1, d, &err);
    omnic__tensor_init(&pos, OMNIC_DTYPE_I32, 1, d, &err);
    tok.data = toks;
    pos.data = toks;
    const omnic__tensor *in[2] = {&tok, &pos};
    omnic__call c = {.n = CTX - T + 1, .inputs = in, .n_inputs = 2, .kv = &m->kv, .slot = 0, .kv_start = T};
    assert_int_equal(omnic__module_call(&m->prefill, &c, &err), OMNIC_E_CAPACITY);
    assert_non_null(strstr(err.msg, "11 cached + 54 new rows exceed the capacity of 64"));
    assert_int_equal(m->kv.len[0], T);
    /* token id past the vocabulary */
    toks[0] = (int32_t)m->dec.cfg.vocab;
    c.n = 1;
    tok.dims[0] = pos.dims[0] = 1;
    assert_int_equal(omnic__module_call(&m->prefill, &c, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "tokens"));
    /* kv_start past the slot's history, slot out of range */
    toks[0] = 1;
    c.kv_start = T + 1;
    assert_int_equal(omnic__module_call(&m->prefill, &c, &err), OMNIC_E_INVALID);
    c.kv_start = 0;
    c.slot = 2;
    assert_int_equal(omnic__module_call(&m->prefill, &c, &err), OMNIC_E_INVALID);
    /* decode: a run of rows past a slot's capacity, a full slot */
    int32_t rows[2] = {0, 0}, tk[2] = {1, 2};
    omnic__tensor t2, p2;
    int64_t d2[1] = {2};
    omnic__tensor_init(&t2, OMNIC_DTYPE_I32, 1, d2, &err);
    omnic__tensor_init(&p2, OMNIC_DTYPE_I32, 1, d2, &err);
    t2.data = tk;
    p2.data = tk;
    const omnic__tensor *in2[2] = {&t2, &p2};
    omnic__call dc = {.n = 2, .inputs = in2, .n_inputs = 2, .kv = &m->kv, .row_slots = rows};
    m->kv.len[0] = CTX - 1; /* a run of 2 rows for slot 0: the second is past the capacity */
    rows[1] = 0;
    assert_int_equal(omnic__module_call(&m->decode, &dc, &err), OMNIC_E_CAPACITY);
    assert_non_null(strstr(err.msg, "slot 0: 63 cached + 2 new rows exceed the capacity of 64"));
    m->kv.len[0] = T;
    m->kv.len[1] = CTX;
    rows[1] = 1;
    assert_int_equal(omnic__module_call(&m->decode, &dc, &err), OMNIC_E_CAPACITY);
    assert_non_null(strstr(err.msg, "slot 1: 64 cached + 1 new rows exceed the capacity of 64"));
    assert_int_equal(m->kv.len[0], T);
    free(logits);
    omnic__model_close(m);
}

/* Broken configs and weights give errors naming the field or tensor and the numbers. */
static void test_bad_checkpoints(void **state)
{
    (void)state;
    struct {
        const char *edit; /* python statement over config dict `c` */
        const char *expect;
    } cases[] = {
        /* an absent key is LlamaConfig's default (hidden_size 4096), which these weights do not fit */
        {"del c['hidden_size']", "model.embed_tokens.weight' is f32 [523, 64], expected a float [523, 4096]"},
        {"c['num_attention_heads'] = 5; c.pop('head_dim', None)",
         "hidden_size 64 is not a multiple of num_attention_heads 5"},
        {"c['num_key_value_heads'] = 3", "num_attention_heads 4 is not a multiple of num_key_value_heads 3"},
        {"c['model_type'] = 'mamba'", "model_type 'mamba' is not supported"},
        {"c['vocab_size'] = 9999",
         "model.embed_tokens.weight' is f32 [523, 64], expected a float [9999, 64]"},
        {"c['num_hidden_layers'] = 3", "model.layers.2.input_layernorm.weight' is missing"},
        {"c['hidden_act'] = 'relu'", "hidden_act 'relu' is not supported"},
        {"c['rope_scaling'] = {'rope_type': 'yarn', 'factor': 2}",
         "rope_scaling type 'yarn' is not supported"},
        {"c['hidden_size'] = 'wide'", "hidden_size"},
        {"c['rms_norm_eps'] = -1", "rms_norm_eps"},
        /* keys that change numerics and that omnic does not implement are refused, never ignored */
        {"c['rope_scaling'] = {'rope_type': 'dynamic', 'factor': 2.0}",
         "rope_scaling type 'dynamic' is not supported"},
        {"c['rope_scaling'] = {'rope_type': 'linear', 'factor': 2.0, 'beta': 3}",
         "key 'beta' is not understood"},
        {"c['attn_logit_softcapping'] = 50.0", "key 'attn_logit_softcapping' is not understood"},
        {"c['mlp_bias'] = True", "mlp_bias = true is not supported"},
        {"c['partial_rotary_factor'] = 0.5", "partial_rotary_factor 0.5 is not supported by llama"},
        {"c['quantization_config'] = {'quant_method': 'gptq'}", "quantization_config = {"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/bad%zu", tmp, i);
        sh("rm -rf %s && cp -r %s/llama %s && " PY
           " -c \"import json; p='%s/config.json'; c=json.load(open(p)); %s; json.dump(c, open(p, 'w'))\"",
           dir, tmp, dir, dir, cases[i].edit);
        omnic__model_opts o = {.backend = "cpu", .threads = 1, .ctx = CTX};
        omnic__model *m = NULL;
        omnic_err err;
        omnic_err_clear(&err);
        assert_int_not_equal(omnic__model_open(dir, &o, &m, &err), OMNIC_OK);
        assert_null(m);
        if (!strstr(err.msg, cases[i].expect)) fprintf(stderr, "case %zu: got '%s'\n", i, err.msg);
        assert_non_null(strstr(err.msg, cases[i].expect));
    }
}

/* A file whose tensor data is misaligned (legal safetensors) loads and computes the same. */
static void test_misaligned_weights(void **state)
{
    (void)state;
    sh("rm -rf %s/odd && cp -r %s/llama %s/odd && " PY " -c \"import struct; p='%s/odd/model.safetensors'; "
       "b=open(p,'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=b[8:8+n]+b' '; "
       "open(p,'wb').write(struct.pack('<Q',n+1)+h+b[8+n:])\"",
       tmp, tmp, tmp, tmp);
    omnic__model *a = open_model("llama", "cpu", OMNIC_DTYPE_F32),
                 *b = open_model("odd", "cpu", OMNIC_DTYPE_F32);
    assert_true(b->dec.copies.n > 0);
    int64_t V = a->dec.cfg.vocab;
    float *la = malloc((size_t)V * sizeof *la), *lb = malloc((size_t)V * sizeof *lb);
    prefill(a, T, T, la);
    prefill(b, T, T, lb);
    assert_memory_equal(la, lb, (size_t)V * sizeof *la);
    free(la), free(lb);
    omnic__model_close(a);
    omnic__model_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_f32),
        cmocka_unit_test(test_qwen2_bf16),
        cmocka_unit_test(test_llama_f16_sharded),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_phi3),
        cmocka_unit_test(test_gemma3_text),
        cmocka_unit_test(test_gemma3n_text),
        cmocka_unit_test(test_qwen3_moe),
        cmocka_unit_test(test_chunk_sizes),
        cmocka_unit_test(test_decode_matches_prefill),
        cmocka_unit_test(test_batch_invariance),
        cmocka_unit_test(test_mixed_steps),
        cmocka_unit_test(test_mrope_text),
        cmocka_unit_test(test_capacity),
        cmocka_unit_test(test_bad_checkpoints),
        cmocka_unit_test(test_misaligned_weights),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
