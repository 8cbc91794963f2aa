/* LLaVA vision: the vision.encode module of CLIP and SigLIP towers (tools/mktiny.py
 * --family llava) against the independent numpy reference tools/ref/vision.py (features,
 * projected rows, merged prompt embeddings), cpu vs ref backend, a whole image prompt through
 * text.embeddings_prefill (cpu vs ref: logits and greedy tokens), both weight spellings,
 * the capability predicate, and config / input errors. */
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

#include "core/alloc.h"
#include "core/npy.h"
#include "core/limits.h"
#include "models/clip_media.h"
#include "models/model.h"


static char tmp[64];

static const struct { const char *name, *args; } CKPTS[] = {
    {"clip-llama", "--vision clip --text llama --dtype f32"},
    {"clip-qwen2", "--vision clip --text qwen2 --dtype f32"},
    {"siglip-llama", "--vision siglip --text llama --dtype f32"},
    {"siglip-qwen2", "--vision siglip --text qwen2 --dtype f32"},
    {"clip-llama-bf16", "--vision clip --text llama --dtype bf16"},
    {"clip-llama-new", "--vision clip --text llama --dtype f32 --new-names"},
    {"siglip-qwen2-new", "--vision siglip --text qwen2 --dtype bf16 --new-names"},
    {"siglip-qwen2-bf16", "--vision siglip --text qwen2 --dtype bf16"},
};
#define N_CKPTS (sizeof CKPTS / sizeof CKPTS[0])

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/omnic-test-vision-XXXXXX");
    if (!mkdtemp(tmp)) return -1;
    for (size_t i = 0; i < N_CKPTS; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, PY " tools/mktiny.py --family llava %s --out %s/%s >/dev/null", CKPTS[i].args, tmp,
                 CKPTS[i].name);
        if (system(cmd) != 0) return -1;
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, PY " tools/mktiny.py --family llama --dtype f32 --out %s/text-llama >/dev/null", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return mt_rmdir(tmp);
}

static omnic_status try_open(const char *dir, const char *backend, omnic__model **m, omnic_err *err)
{
    omnic__model_opts o = {.backend = backend, .threads = 2, .ctx = 64, .kv_dtype = OMNIC_DTYPE_F32, .chunk = 8};
    return omnic__model_open(dir, &o, m, err);
}

static omnic__model *open_model(const char *name, const char *backend)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    omnic__model *m = NULL;
    omnic_err err;
    omnic_status s = try_open(dir, backend, &m, &err);
    if (s != OMNIC_OK) fprintf(stderr, "open %s: %s\n", dir, err.msg);
    assert_int_equal(s, OMNIC_OK);
    return m;
}

/* vision.encode on pixel_values through the family interface (models/media.h). */
static omnic_status encode_image(omnic__model *m, omnic__tensor *pix, const omnic__tensor **projected,
                                 const omnic__tensor **features, omnic_err *err)
{
    omnic__media_item it = {.modality = OMNIC_MODALITY_IMAGE, .input = pix, .grid = {1, 1, 1}};
    return omnic__media_encode(m, &it, projected, features, err);
}

/* Deterministic pixel values in [-2, 2] (an LCG; seed picks the image). */
static omnic__tensor *pixels(const omnic__model *m, uint32_t seed)
{
    omnic__tensor *t;
    omnic_err err;
    int64_t d[3] = {3, omnic__clip_media_of(m)->image_size, omnic__clip_media_of(m)->image_size};
    assert_int_equal(omnic__tensor_create(&t, OMNIC_DTYPE_F32, 3, d, &err), OMNIC_OK);
    float *p = t->data;
    uint32_t x = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < omnic__tensor_nelem(t); i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (float)((double)(x >> 8) / (double)(1u << 24) * 4.0 - 2.0);
    }
    return t;
}

static void save(const char *dir, const char *name, const omnic__tensor *t)
{
    char path[600];
    omnic_err err;
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    assert_int_equal(omnic__npy_write(path, t, &err), OMNIC_OK);
}

/* A prompt of text tokens with one image's placeholders expanded after position 2. */
static int build_prompt(const omnic__model *m, int32_t *toks, int cap)
{
    static const int32_t text[] = {1, 40, 201, 77, 9, 300, 12, 5, 66};
    int n = 0;
    for (int i = 0; i < 3; i++) toks[n++] = text[i];
    for (int64_t i = 0; i < omnic__clip_media_of(m)->image_tokens && n < cap; i++) toks[n++] = omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE);
    for (size_t i = 3; i < sizeof text / sizeof text[0]; i++) toks[n++] = text[i];
    return n;
}

/* Host-side merge (what the engine will do): text rows by lookup, image rows from proj. */
static float *merged_embeds(omnic__model *m, const int32_t *toks, int n, const omnic__tensor *proj)
{
    const int64_t H = m->dec.cfg.hidden;
    float *emb = malloc((size_t)(n * H) * sizeof *emb), *row = malloc((size_t)H * sizeof *row);
    omnic_err err;
    assert_int_equal(omnic__model_merge_embeds(m, toks, n, &proj, 1, emb, &err), OMNIC_OK);
    /* spot check: each text row is its lookup, each image row its projected row */
    int64_t img = 0;
    for (int i = 0; i < n; i++) {
        if (toks[i] == omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE)) {
            assert_memory_equal(emb + i * H, (const float *)proj->data + img++ * H, (size_t)H * sizeof(float));
        } else {
            assert_int_equal(omnic__model_embed_tokens(m, &toks[i], 1, row, &err), OMNIC_OK);
            assert_memory_equal(emb + i * H, row, (size_t)H * sizeof(float));
        }
    }
    assert_int_equal(img, proj->dims[0]);
    free(row);
    return emb;
}

/* Embeddings prefill of emb [n, H] into slot 0 chunk by chunk; logits -> out [V]. */
static void prefill_embeds(omnic__model *m, const float *emb, int n, float *out)
{
    omnic_err err;
    const int64_t H = m->dec.cfg.hidden;
    int32_t pos[256];
    for (int i = 0; i < n; i++) pos[i] = i;
    omnic__kv_pool_clear_slot(&m->kv, 0);
    for (int start = 0; start < n; start += (int)m->chunk) {
        int len = n - start < (int)m->chunk ? n - start : (int)m->chunk;
        omnic__tensor e, p;
        int64_t de[2] = {len, H}, dp[1] = {len};
        omnic__tensor_init(&e, OMNIC_DTYPE_F32, 2, de, &err);
        omnic__tensor_init(&p, OMNIC_DTYPE_I32, 1, dp, &err);
        e.data = (void *)(uintptr_t)(emb + (size_t)start * (size_t)H);
        p.data = pos + start;
        const omnic__tensor *in[2] = {&e, &p};
        omnic__call c = {.n = len, .inputs = in, .n_inputs = 2, .kv = &m->kv, .slot = 0, .kv_start = start};
        omnic_status s = omnic__module_call(&m->embed_prefill, &c, &err);
        if (s != OMNIC_OK) fprintf(stderr, "embeddings prefill: %s\n", err.msg);
        assert_int_equal(s, OMNIC_OK);
    }
    memcpy(out, omnic__module_output(&m->embed_prefill, m->embed_prefill_logits)->data,
           (size_t)m->dec.cfg.vocab * sizeof(float));
}

/* Greedy continuation of n_gen tokens after the prefill logits l (decode module). */
static void greedy(omnic__model *m, float *l, int n_gen, int32_t *out)
{
    omnic_err err;
    for (int i = 0; i < n_gen; i++) {
        out[i] = argmax(l, m->dec.cfg.vocab);
        if (i + 1 == n_gen) break;
        int32_t slot = 0, pos = (int32_t)m->kv.len[0];
        omnic__tensor t, p;
        int64_t d[1] = {1};
        omnic__tensor_init(&t, OMNIC_DTYPE_I32, 1, d, &err);
        omnic__tensor_init(&p, OMNIC_DTYPE_I32, 1, d, &err);
        t.data = &out[i];
        p.data = &pos;
        const omnic__tensor *in[2] = {&t, &p};
        omnic__call c = {.n = 1, .inputs = in, .n_inputs = 2, .kv = &m->kv, .row_slots = &slot};
        assert_int_equal(omnic__module_call(&m->decode, &c, &err), OMNIC_OK);
        memcpy(l, omnic__module_output(&m->decode, 0)->data, (size_t)m->dec.cfg.vocab * sizeof(float));
    }
}

/* Encode on cpu and ref; numpy reference comparison of features, projected and the merged
 * prompt; a whole image prompt through the embeddings prefill on both backends. */
static void check_ckpt(const char *name)
{
    omnic__model *cpu = open_model(name, "cpu"), *ref = open_model(name, "ref");
    omnic_err err;
    assert_true(omnic__model_supports_image(cpu));
    omnic__tensor *pix = pixels(cpu, 7);
    const omnic__tensor *pc, *fc, *pr, *fr;
    assert_int_equal(encode_image(cpu, pix, &pc, &fc, &err), OMNIC_OK);
    assert_int_equal(encode_image(ref, pix, &pr, &fr, &err), OMNIC_OK);
    assert_int_equal(pc->dims[0], omnic__clip_media_of(cpu)->image_tokens);
    assert_int_equal(pc->dims[1], cpu->dec.cfg.hidden);
    double rp = max_rel(pc->data, pr->data, omnic__tensor_nelem(pc));
    double rf = max_rel(fc->data, fr->data, omnic__tensor_nelem(fc));
    fprintf(stderr, "%s: encode cpu vs ref max rel diff: features %.3g, projected %.3g\n", name, rf, rp);
    assert_true(rp < 1e-4 && rf < 1e-4);

    /* prompt: text + one image; merged on the host from the cpu rows */
    int32_t toks[256];
    int n = build_prompt(cpu, toks, 256);
    float *emb = merged_embeds(cpu, toks, n, pc);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s-dump", tmp, name);
    sh("mkdir -p %s", dir);
    save(dir, "pixel_values", pix);
    save(dir, "vision_features", fc);
    save(dir, "projected", pc);
    omnic__tensor tt, et;
    int64_t dt[1] = {n}, de[2] = {n, cpu->dec.cfg.hidden};
    omnic__tensor_init(&tt, OMNIC_DTYPE_I32, 1, dt, &err);
    omnic__tensor_init(&et, OMNIC_DTYPE_F32, 2, de, &err);
    tt.data = toks;
    et.data = emb;
    save(dir, "tokens", &tt);
    save(dir, "inputs_embeds", &et);
    /* f32 tower on both sides, numpy in float64: only summation order and the erf/tanh/exp
     * implementations differ (observed <= ~2e-6); budget 1e-4 absolute + 1e-4 relative */
    sh(PY " tools/ref/vision.py --model %s/%s --compare %s --atol 1e-4 --rtol 1e-4 >&2", tmp, name, dir);

    /* the image prompt through the embeddings prefill: cpu vs ref backends (each merging its
     * own encode rows) agree on logits and on 8 greedy tokens */
    float *er = merged_embeds(ref, toks, n, pr);
    const int64_t V = cpu->dec.cfg.vocab;
    float *lc = malloc((size_t)V * sizeof *lc), *lr = malloc((size_t)V * sizeof *lr);
    prefill_embeds(cpu, emb, n, lc);
    prefill_embeds(ref, er, n, lr);
    double rl = max_rel(lc, lr, V);
    fprintf(stderr, "%s: image prompt (%d rows, %lld image rows): cpu vs ref logits max rel diff %.3g\n", name, n,
            (long long)omnic__clip_media_of(cpu)->image_tokens, rl);
    assert_true(rl < 1e-4);
    int32_t gc[8], gr[8];
    greedy(cpu, lc, 8, gc);
    greedy(ref, lr, 8, gr);
    assert_memory_equal(gc, gr, sizeof gc);
    free(lc);
    free(lr);
    free(er);
    free(emb);
    omnic__tensor_destroy(pix);
    omnic__model_close(cpu);
    omnic__model_close(ref);
}

static void test_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_CKPTS; i++) check_ckpt(CKPTS[i].name);
}

/* Old and new weight spellings hold the same values (mktiny seeds by the old name):
 * the same projected rows, bit for bit, and the same prompt logits. */
/* The encoder run in slices (omnic__module_start + omnic__module_run with a budget that stops
 * after every part of every node: OMNIC_SLICE_PARTS x nth virtual threads, nth at a time) gives
 * bit for bit what one whole run gives; a cancel between slices stops it, and a new start
 * begins afresh. */
static void test_slices(void **state)
{
    (void)state;
    omnic__model *m = open_model("clip-llama", "cpu");
    omnic__tensor *pix = pixels(m, 3);
    const omnic__tensor *proj, *feat;
    omnic_err err;
    assert_int_equal(encode_image(m, pix, &proj, &feat, &err), OMNIC_OK);
    const size_t nb = omnic__tensor_bytes(proj);
    void *whole = malloc(nb);
    memcpy(whole, proj->data, nb);
    omnic__media_item it = {.modality = OMNIC_MODALITY_IMAGE, .input = pix, .grid = {1, 1, 1}};
    omnic__module *mod;
    int pi, fi;
    assert_int_equal(omnic__media_encode_start(m, &it, &mod, &pi, &fi, &err), OMNIC_OK);
    bool done = false;
    int slices = 0;
    while (!done) {
        assert_int_equal(omnic__module_run(mod, 1e-9, NULL, &done, &err), OMNIC_OK);
        slices++;
    }
    assert_int_equal(slices, mod->graph.n_nodes * OMNIC_SLICE_PARTS); /* one part of a node per slice */
    assert_memory_equal(omnic__module_output(mod, pi)->data, whole, nb);
    assert_int_equal(omnic__module_run(mod, 0, NULL, &done, &err), OMNIC_E_INVALID); /* nothing started */
    atomic_bool cancel = false;
    assert_int_equal(omnic__media_encode_start(m, &it, &mod, &pi, &fi, &err), OMNIC_OK);
    assert_int_equal(omnic__module_run(mod, 1e-9, &cancel, &done, &err), OMNIC_OK);
    assert_false(done);
    atomic_store(&cancel, true);
    assert_int_equal(omnic__module_run(mod, 1e-9, &cancel, &done, &err), OMNIC_E_CANCELLED);
    assert_int_equal(omnic__module_run(mod, 0, NULL, &done, &err), OMNIC_E_INVALID);
    assert_int_equal(omnic__media_encode_start(m, &it, &mod, &pi, &fi, &err), OMNIC_OK); /* afresh */
    assert_int_equal(omnic__module_run(mod, 0, NULL, &done, &err), OMNIC_OK);
    assert_true(done);
    assert_memory_equal(omnic__module_output(mod, pi)->data, whole, nb);
    free(whole);
    omnic__tensor_destroy(pix);
    omnic__model_close(m);
}

static void test_spellings(void **state)
{
    (void)state;
    omnic__model *a = open_model("clip-llama", "cpu"), *b = open_model("clip-llama-new", "cpu");
    omnic__tensor *pix = pixels(a, 3);
    const omnic__tensor *pa, *pb;
    omnic_err err;
    assert_int_equal(encode_image(a, pix, &pa, NULL, &err), OMNIC_OK);
    assert_int_equal(encode_image(b, pix, &pb, NULL, &err), OMNIC_OK);
    assert_memory_equal(pa->data, pb->data, omnic__tensor_bytes(pa));
    assert_string_equal(a->dec.cfg.prefix, "language_model.model.");
    assert_string_equal(b->dec.cfg.prefix, "model.language_model.");
    assert_string_not_equal(a->identity, b->identity); /* weight names are part of the identity */
    omnic__tensor_destroy(pix);
    omnic__model_close(a);
    omnic__model_close(b);
}

/* Capability predicate, encode input checks, text-only models. */
static void test_predicate_and_inputs(void **state)
{
    (void)state;
    omnic__model *t = open_model("text-llama", "cpu");
    omnic_err err;
    assert_false(omnic__model_supports_image(t));
    assert_null(omnic__clip_media_of(t));
    const omnic__tensor *p;
    omnic__model *c = open_model("clip-llama", "cpu");
    omnic__tensor *pix = pixels(c, 1);
    omnic__model_close(c);
    assert_int_equal(encode_image(t, pix, &p, NULL, &err), OMNIC_E_UNSUPPORTED);
    omnic__tensor_destroy(pix);
    omnic__model_close(t);

    omnic__model *m = open_model("siglip-llama", "cpu");
    /* merge: placeholder count vs feature rows, item shape */
    {
        int32_t toks[256];
        int n = build_prompt(m, toks, 256);
        const int64_t H = m->dec.cfg.hidden;
        float *emb = malloc((size_t)((n > 20 ? n : 20) * H) * sizeof *emb);
        omnic__tensor *rows;
        int64_t rd[2] = {omnic__clip_media_of(m)->image_tokens, H};
        assert_int_equal(omnic__tensor_create(&rows, OMNIC_DTYPE_F32, 2, rd, &err), OMNIC_OK);
        const omnic__tensor *two[2] = {rows, rows};
        assert_int_equal(omnic__model_merge_embeds(m, toks, n, two, 2, emb, &err), OMNIC_E_INVALID);
        assert_non_null(strstr(err.msg, "9 image tokens, 18 feature rows"));
        assert_int_equal(omnic__model_merge_embeds(m, toks, n, two, 0, emb, &err), OMNIC_E_INVALID);
        rows->dims[1] = H - 1;
        assert_int_equal(omnic__model_merge_embeds(m, toks, n, two, 1, emb, &err), OMNIC_E_INVALID);
        rows->dims[1] = H;
        /* two images: the first placeholder run takes item 0's rows, the second item 1's */
        omnic__tensor *rows2;
        assert_int_equal(omnic__tensor_create(&rows2, OMNIC_DTYPE_F32, 2, rd, &err), OMNIC_OK);
        for (int64_t i = 0; i < omnic__tensor_nelem(rows); i++) {
            ((float *)rows->data)[i] = 1.0f + (float)i;
            ((float *)rows2->data)[i] = -1.0f - (float)i;
        }
        int32_t two_img[2 + 2 * 9];
        int k = 0;
        for (int img = 0; img < 2; img++) {
            two_img[k++] = 7;
            for (int64_t i = 0; i < omnic__clip_media_of(m)->image_tokens; i++) two_img[k++] = omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE);
        }
        const omnic__tensor *both[2] = {rows, rows2};
        assert_int_equal(omnic__clip_media_of(m)->image_tokens, 9);
        assert_int_equal(omnic__model_merge_embeds(m, two_img, k, both, 2, emb, &err), OMNIC_OK);
        assert_memory_equal(emb + 1 * H, rows->data, (size_t)(9 * H) * sizeof(float));
        assert_memory_equal(emb + 11 * H, rows2->data, (size_t)(9 * H) * sizeof(float));
        two_img[5] = 7; /* 17 placeholders for 18 rows */
        assert_int_equal(omnic__model_merge_embeds(m, two_img, k, both, 2, emb, &err), OMNIC_E_INVALID);
        assert_non_null(strstr(err.msg, "17 image tokens, 18 feature rows in 2 items"));
        omnic__tensor_destroy(rows2);
        omnic__tensor_destroy(rows);
        free(emb);
    }
    pix = pixels(m, 2);
    ((float *)pix->data)[17] = INFINITY;
    assert_int_equal(encode_image(m, pix, &p, NULL, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "pixel_values"));
    omnic__tensor_destroy(pix);
    omnic__tensor *small;
    int64_t d[3] = {3, omnic__clip_media_of(m)->image_size - 1, omnic__clip_media_of(m)->image_size};
    assert_int_equal(omnic__tensor_create(&small, OMNIC_DTYPE_F32, 3, d, &err), OMNIC_OK);
    assert_int_equal(encode_image(m, small, &p, NULL, &err), OMNIC_E_INVALID);
    omnic__tensor_destroy(small);
    omnic__model_close(m);

    /* without preprocessor_config.json the weights load but images are not advertised */
    char dir[300];
    snprintf(dir, sizeof dir, "%s/noproc", tmp);
    sh("cp -r %s/clip-qwen2 %s && rm %s/preprocessor_config.json", tmp, dir, dir);
    assert_int_equal(try_open(dir, "cpu", &m, &err), OMNIC_OK);
    assert_non_null(omnic__clip_media_of(m));
    assert_false(omnic__model_supports_image(m));
    omnic__model_close(m);
}

/* Edits config.json of a copy of clip-llama with a python expression on `c`, opens it and
 * expects status `want` with `needle` in the message. */
static void bad_config(const char *tag, const char *edit, omnic_status want, const char *needle)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/bad-%s", tmp, tag);
    sh("rm -rf %s && cp -r %s/clip-llama %s", dir, tmp, dir);
    sh(PY " -c \"import json; p='%s/config.json'; c=json.load(open(p)); %s; json.dump(c, open(p, 'w'))\"", dir, edit);
    omnic__model *m = NULL;
    omnic_err err;
    omnic_status s = try_open(dir, "cpu", &m, &err);
    if (s == OMNIC_OK) omnic__model_close(m);
    fprintf(stderr, "%s: %s\n", tag, s == OMNIC_OK ? "(opened)" : err.msg);
    assert_int_equal(s, want);
    assert_non_null(strstr(err.msg, needle));
}

static void test_bad_configs(void **state)
{
    (void)state;
    bad_config("layer-list", "c['vision_feature_layer']=[-2,-1]", OMNIC_E_UNSUPPORTED, "vision_feature_layer");
    bad_config("layer-range", "c['vision_feature_layer']=-5", OMNIC_E_INVALID, "vision_feature_layer");
    bad_config("strategy", "c['vision_feature_select_strategy']='cls'", OMNIC_E_INVALID, "cls");
    bad_config("seq-len", "c['image_seq_length']=10", OMNIC_E_INVALID, "image_seq_length 10");
    bad_config("vision-type", "c['vision_config']['model_type']='dinov2'", OMNIC_E_UNSUPPORTED, "dinov2");
    bad_config("text-type", "c['text_config']['model_type']='gemma3_text'", OMNIC_E_UNSUPPORTED, "gemma3_text");
    bad_config("image-token", "c['image_token_index']=100000", OMNIC_E_INVALID, "image_token_index 100000");
    bad_config("proj-act", "c['projector_hidden_act']='relu6'", OMNIC_E_UNSUPPORTED, "relu6");
    bad_config("vision-width", "c['vision_config']['hidden_size']=48", OMNIC_E_INVALID,
               "vision_tower.vision_model.embeddings.patch_embedding.weight");
    /* a missing vision weight names the tensor (renamed in place: same header length) */
    char dir[300];
    snprintf(dir, sizeof dir, "%s/bad-noweight", tmp);
    sh("rm -rf %s && cp -r %s/clip-llama %s", dir, tmp, dir);
    sh(PY " -c \"p='%s/model.safetensors'; b=open(p,'rb').read(); n=b'encoder.layers.1.mlp.fc2.bias';"
          "assert b.count(n)==1; open(p,'wb').write(b.replace(n, b'encoder.layers.1.mlp.fc2.bia_'))\"",
       dir);
    omnic__model *m = NULL;
    omnic_err err;
    assert_int_equal(try_open(dir, "cpu", &m, &err), OMNIC_E_NOT_FOUND);
    assert_non_null(strstr(err.msg, "vision_tower.vision_model.encoder.layers.1.mlp.fc2.bias"));
}

/* Every allocation of a LLaVA open (tower, projector, encode module) failing in turn gives a
 * clean E_NOMEM with nothing leaked (ASan) and no model; then the open succeeds. */
static void test_oom_open(void **state)
{
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/siglip-qwen2", tmp);
    long n;
    bool done = false;
    for (n = 0; n < 20000 && !done; n++) {
        omnic__model *m = NULL;
        omnic_err err;
        omnic_err_clear(&err);
        omnic__alloc_fail_after(n);
        omnic__model_opts o = {.backend = "ref", .threads = 1, .ctx = 16, .kv_dtype = OMNIC_DTYPE_F32, .chunk = 4};
        omnic_status s = omnic__model_open(dir, &o, &m, &err);
        long injected = omnic__alloc_injected_failures();
        omnic__alloc_fail_after(-1);
        if (s == OMNIC_OK) {
            assert_true(omnic__model_supports_image(m));
            omnic__model_close(m);
            done = injected == 0;
            continue;
        }
        if (s != OMNIC_E_NOMEM || injected == 0) fprintf(stderr, "N=%ld: %s: %s\n", n, omnic_status_name(s), err.msg);
        assert_int_equal(s, OMNIC_E_NOMEM);
        assert_null(m);
    }
    fprintf(stderr, "llava open succeeds at N=%ld allocations\n", n - 1);
    assert_true(done);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_slices),
        cmocka_unit_test(test_spellings),
        cmocka_unit_test(test_predicate_and_inputs),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_oom_open),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
