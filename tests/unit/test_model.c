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

#include "core/npy.h"
#include "models/model.h"

#define PY "/usr/bin/python3"
#define CTX 64
#define T 11

static char tmp[64];
static const int32_t TOKENS[T] = {5, 17, 300, 42, 42, 7, 510, 0, 99, 256, 3};

static void sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/omnic-test-model-XXXXXX");
    if (!mkdtemp(tmp)) return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             PY " tools/mktiny.py --family llama --dtype f32 --out %s/llama >/dev/null && " PY
                " tools/mktiny.py --family qwen2 --out %s/qwen2 >/dev/null && " PY
                " tools/mktiny.py --family llama --dtype f16 --shards 3 --out %s/llama-f16 >/dev/null",
             tmp, tmp, tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static omnic__model *open_model(const char *name, const char *backend, omnic_dtype kv)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    omnic__model_opts o = {.backend = backend, .threads = 2, .ctx = CTX, .kv_dtype = kv};
    omnic__model *m = NULL;
    omnic_err err;
    omnic_status s = omnic__model_open(dir, &o, &m, &err);
    if (s != OMNIC_OK) fprintf(stderr, "open %s: %s\n", dir, err.msg);
    assert_int_equal(s, OMNIC_OK);
    return m;
}

/* Prefills TOKENS[0..n) in chunks of `chunk` rows into slot; copies the last logits to out. */
static void prefill(omnic__model *m, omnic__kv_slot *slot, int n, int chunk, float *out)
{
    omnic_err err;
    int32_t pos[T];
    for (int i = 0; i < n; i++) pos[i] = i;
    for (int start = 0; start < n; start += chunk) {
        int len = n - start < chunk ? n - start : chunk;
        omnic__tensor tok, p;
        int64_t d[1] = {len};
        omnic__tensor_init(&tok, OMNIC_DTYPE_I32, 1, d, &err);
        omnic__tensor_init(&p, OMNIC_DTYPE_I32, 1, d, &err);
        tok.data = (void *)(uintptr_t)(TOKENS + start);
        p.data = pos + start;
        const omnic__tensor *in[2] = {&tok, &p};
        omnic__call c = {.n = len, .kv_start = start, .inputs = in, .n_inputs = 2, .slot = slot};
        omnic_status s = omnic__module_call(&m->prefill, &c, &err);
        if (s != OMNIC_OK) fprintf(stderr, "prefill: %s\n", err.msg);
        assert_int_equal(s, OMNIC_OK);
    }
    const omnic__tensor *logits = omnic__module_output(&m->prefill, 0);
    assert_int_equal(logits->dims[1], m->dec.cfg.vocab);
    memcpy(out, logits->data, (size_t)m->dec.cfg.vocab * sizeof(float));
}

static omnic__kv_slot new_slot(const omnic__model *m)
{
    omnic__kv_slot s;
    omnic_err err;
    const omnic__text_config *c = &m->dec.cfg;
    assert_int_equal(omnic__kv_slot_init(&s, (int)c->n_layers, CTX, c->n_kv_heads, c->head_dim, m->kv_dtype, &err),
                     OMNIC_OK);
    return s;
}

static double max_rel(const float *a, const float *b, int64_t n)
{
    double scale = 0, diff = 0;
    for (int64_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs((double)b[i]));
        diff = fmax(diff, fabs((double)a[i] - b[i]));
    }
    return diff / (scale > 0 ? scale : 1);
}

static int argmax(const float *x, int64_t n)
{
    int best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = (int)i;
    return best;
}

/* cpu and ref agree; chunking does not change the result; KV rows land in the slot. */
static void check_family(const char *name)
{
    omnic__model *cpu = open_model(name, "cpu", OMNIC_DTYPE_F32);
    omnic__model *ref = open_model(name, "ref", OMNIC_DTYPE_F32);
    int64_t V = cpu->dec.cfg.vocab;
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b), *c = malloc((size_t)V * sizeof *c);
    omnic__kv_slot s1 = new_slot(cpu), s2 = new_slot(ref);
    prefill(cpu, &s1, T, T, a);
    prefill(ref, &s2, T, T, b);
    assert_int_equal(s1.len, T);
    double r = max_rel(a, b, V);
    fprintf(stderr, "%s: cpu vs ref logits max rel diff %.3g\n", name, r);
    assert_true(r < 1e-4);
    assert_int_equal(argmax(a, V), argmax(b, V));
    /* KV rows written match between backends */
    double kr = max_rel(s1.k[0].data, s2.k[0].data, T * cpu->dec.cfg.n_kv_heads * cpu->dec.cfg.head_dim);
    assert_true(kr < 1e-4);
    int chunks[] = {1, 3, 7};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        omnic__kv_slot_clear(&s1);
        prefill(cpu, &s1, T, chunks[i], c);
        double rc = max_rel(c, a, V);
        fprintf(stderr, "%s: chunk %d vs whole max rel diff %.3g\n", name, chunks[i], rc);
        assert_true(rc < 1e-5);
        assert_int_equal(argmax(c, V), argmax(a, V));
    }
    /* dump for the numpy reference: last-row logits and every layer's K/V */
    char dir[400], path[500];
    snprintf(dir, sizeof dir, "%s/%s-dump", tmp, name);
    sh("mkdir -p %s", dir);
    omnic__tensor lt;
    omnic_err err;
    int64_t ld[2] = {1, V};
    omnic__tensor_init(&lt, OMNIC_DTYPE_F32, 2, ld, &err);
    lt.data = a;
    snprintf(path, sizeof path, "%s/prefill_logits.npy", dir);
    assert_int_equal(omnic__npy_write(path, &lt, &err), OMNIC_OK);
    omnic__kv_slot_clear(&s1);
    prefill(cpu, &s1, T, T, a);
    for (int l = 0; l < s1.n_layers; l++) {
        for (int kv = 0; kv < 2; kv++) {
            omnic__tensor view = kv ? s1.v[l] : s1.k[l];
            view.dims[0] = T;
            snprintf(path, sizeof path, "%s/kv_l%d_%c.npy", dir, l, kv ? 'v' : 'k');
            assert_int_equal(omnic__npy_write(path, &view, &err), OMNIC_OK);
        }
    }
    FILE *f = fopen("tools/ref/decoder.py", "r");
    if (f) {
        fclose(f);
        char toks[128] = "";
        for (int i = 0; i < T; i++) snprintf(toks + strlen(toks), sizeof toks - strlen(toks), i ? ",%d" : "%d", TOKENS[i]);
        sh(PY " tools/ref/decoder.py --model %s/%s --tokens %s --compare %s", tmp, name, toks, dir);
    }
    omnic__kv_slot_deinit(&s1);
    omnic__kv_slot_deinit(&s2);
    free(a), free(b), free(c);
    omnic__model_close(cpu);
    omnic__model_close(ref);
}

static void test_llama_f32(void **state) { (void)state; check_family("llama"); }
static void test_qwen2_bf16(void **state) { (void)state; check_family("qwen2"); }
static void test_llama_f16_sharded(void **state) { (void)state; check_family("llama-f16"); }

/* Admission: rows past the capacity are refused with the three numbers; nothing changes. */
static void test_capacity(void **state)
{
    (void)state;
    omnic__model *m = open_model("qwen2", "cpu", OMNIC_DTYPE_F16);
    omnic__kv_slot s = new_slot(m);
    float *logits = malloc((size_t)m->dec.cfg.vocab * sizeof *logits);
    prefill(m, &s, T, T, logits);
    omnic_err err;
    static int32_t toks[CTX];
    omnic__tensor tok, pos;
    int64_t d[1] = {CTX - T + 1};
    omnic__tensor_init(&tok, OMNIC_DTYPE_I32, 1, d, &err);
    omnic__tensor_init(&pos, OMNIC_DTYPE_I32, 1, d, &err);
    tok.data = toks;
    pos.data = toks;
    const omnic__tensor *in[2] = {&tok, &pos};
    omnic__call c = {.n = CTX - T + 1, .kv_start = T, .inputs = in, .n_inputs = 2, .slot = &s};
    assert_int_equal(omnic__module_call(&m->prefill, &c, &err), OMNIC_E_CAPACITY);
    assert_non_null(strstr(err.msg, "11 cached + 54 new rows exceed the capacity of 64"));
    assert_int_equal(s.len, T);
    /* token id past the vocabulary */
    toks[0] = (int32_t)m->dec.cfg.vocab;
    c.n = 1;
    tok.dims[0] = pos.dims[0] = 1;
    assert_int_equal(omnic__module_call(&m->prefill, &c, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "tokens"));
    /* kv_start past the slot's history */
    toks[0] = 1;
    c.kv_start = T + 1;
    assert_int_equal(omnic__module_call(&m->prefill, &c, &err), OMNIC_E_INVALID);
    free(logits);
    omnic__kv_slot_deinit(&s);
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
        {"del c['hidden_size']", "missing field 'hidden_size'"},
        {"c['num_attention_heads'] = 5; c.pop('head_dim', None)", "hidden_size 64 is not a multiple of num_attention_heads 5"},
        {"c['num_key_value_heads'] = 3", "num_attention_heads 4 is not a multiple of num_key_value_heads 3"},
        {"c['model_type'] = 'mamba'", "model_type 'mamba' is not supported"},
        {"c['vocab_size'] = 9999", "model.embed_tokens.weight' is f32 [523, 64], expected a float [9999, 64]"},
        {"c['num_hidden_layers'] = 3", "model.layers.2.input_layernorm.weight' is missing"},
        {"c['hidden_act'] = 'relu'", "hidden_act 'relu' is not supported"},
        {"c['rope_scaling'] = {'rope_type': 'yarn', 'factor': 2}", "rope_scaling type 'yarn' is not supported"},
        {"c['hidden_size'] = 'wide'", "hidden_size"},
        {"c['rms_norm_eps'] = -1", "rms_norm_eps"},
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
    omnic__model *a = open_model("llama", "cpu", OMNIC_DTYPE_F32), *b = open_model("odd", "cpu", OMNIC_DTYPE_F32);
    assert_true(b->dec.n_copies > 0);
    int64_t V = a->dec.cfg.vocab;
    float *la = malloc((size_t)V * sizeof *la), *lb = malloc((size_t)V * sizeof *lb);
    omnic__kv_slot sa = new_slot(a), sb = new_slot(b);
    prefill(a, &sa, T, T, la);
    prefill(b, &sb, T, T, lb);
    assert_memory_equal(la, lb, (size_t)V * sizeof *la);
    omnic__kv_slot_deinit(&sa);
    omnic__kv_slot_deinit(&sb);
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
        cmocka_unit_test(test_capacity),
        cmocka_unit_test(test_bad_checkpoints),
        cmocka_unit_test(test_misaligned_weights),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
