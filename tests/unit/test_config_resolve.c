/* Config resolution against Hugging Face: every tests/configs/<name>/config.json (published
 * checkpoints' configs, README.md there) goes through omnic__family_find + parse_config (+
 * parse_vision / the Qwen2-VL tower parse) and must equal what transformers resolved from
 * the same file (tests/configs/golden-4.57.6.json for 4.x files, golden-5.2.0.json for the
 * 5.x-style <name>-v5 ones; tools/hf_golden/resolve_configs.py): dimensions, norms, biases,
 * tying, sliding windows per layer, attention scale, soft caps, RoPE type / theta / factors and
 * the inverse frequencies themselves, vision tower and projector settings. No weights.
 * Then configs HF accepts but omnic cannot compute, which must fail naming the key. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/limits.h"
#include "io/json.h"
#include "models/family.h"
#include "models/qwen2vl_vision.h"

static int mismatches;

static void mismatch(const char *name, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void mismatch(const char *name, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: %s: ", name, field);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    mismatches++;
}

/* golden integer / bool / number field vs omnic's value */
static void eq_i(const char *name, const json_t *g, const char *key, int64_t got)
{
    const json_t *v = json_object_get(g, key);
    if (!v) {
        mismatch(name, key, "missing in the golden file");
        return;
    }
    int64_t want = json_is_boolean(v) ? json_is_true(v) : (int64_t)json_number_value(v);
    if (want != got) mismatch(name, key, "HF %lld, omnic %lld", (long long)want, (long long)got);
}

static void eq_f(const char *name, const json_t *g, const char *key, double got, double rel)
{
    const json_t *v = json_object_get(g, key);
    if (!v) {
        mismatch(name, key, "missing in the golden file");
        return;
    }
    double want = json_number_value(v);
    if (!(fabs(want - got) <= rel * fabs(want))) mismatch(name, key, "HF %.9g, omnic %.9g", want, got);
}

static void eq_s(const char *name, const json_t *g, const char *key, const char *got)
{
    const char *want = json_string_value(json_object_get(g, key));
    if (!want || strcmp(want, got) != 0)
        mismatch(name, key, "HF '%s', omnic '%s'", want ? want : "(none)", got);
}

/* a float list (RoPE inverse frequencies) vs omnic's [n]; f32 on both sides */
static void eq_list(const char *name, const json_t *g, const char *key, const float *got, int64_t n)
{
    const json_t *a = json_object_get(g, key);
    if (!json_is_array(a) || (int64_t)json_array_size(a) != n) {
        mismatch(name, key, "HF has %zu entries, omnic %lld", json_array_size(a), (long long)n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double want = json_number_value(json_array_get(a, (size_t)i));
        if (!(fabs(want - got[i]) <= 2e-7 * fabs(want))) {
            mismatch(name, key, "[%lld] HF %.9g, omnic %.9g", (long long)i, want, (double)got[i]);
            return;
        }
    }
}

static const char *rope_name(omnic__rope_type t)
{
    static const char *const names[] = {"default", "llama3", "linear", "longrope"};
    return names[t];
}

static const char *op_name(omnic__op op)
{
    switch (op) {
    case OMNIC_OP_GELU_QUICK:
        return "quick_gelu";
    case OMNIC_OP_GELU:
        return "gelu";
    case OMNIC_OP_GELU_TANH:
        return "gelu_pytorch_tanh";
    case OMNIC_OP_SILU:
        return "silu";
    case OMNIC_OP_SWIGLU:
        return "silu"; /* Qwen2.5-VL's gated MLP */
    default:
        return "?";
    }
}

static void check_text(const char *name, const json_t *g, const omnic__text_config *c)
{
    eq_i(name, g, "vocab", c->vocab);
    eq_i(name, g, "hidden", c->hidden);
    eq_i(name, g, "n_layers", c->n_layers);
    eq_i(name, g, "n_heads", c->n_heads);
    eq_i(name, g, "n_kv_heads", c->n_kv_heads);
    eq_i(name, g, "head_dim", c->head_dim);
    eq_i(name, g, "intermediate", c->intermediate);
    eq_i(name, g, "max_pos", c->max_pos);
    eq_i(name, g, "n_rot", c->n_rot);
    eq_f(name, g, "rms_eps", c->rms_eps, 0);
    eq_i(name, g, "tie", c->tie_embeddings);
    eq_s(name, g, "act", c->act == OMNIC_ACT_SILU ? "silu" : "gelu_pytorch_tanh");
    eq_f(name, g, "attn_scale", c->attn_scale, 1e-7);
    eq_i(name, g, "qkv_bias", c->qkv_bias);
    eq_i(name, g, "o_bias", c->o_bias);
    eq_f(name, g, "final_softcap", c->final_softcap, 1e-7);
    eq_f(name, g, "attn_softcap", c->attn_softcap, 1e-7);
    const json_t *ls = json_object_get(g, "layer_sliding");
    bool any = false;
    for (int64_t l = 0; l < c->n_layers; l++) {
        any |= c->layer_sliding[l] != 0;
        if (json_integer_value(json_array_get(ls, (size_t)l)) != c->layer_sliding[l]) {
            mismatch(name, "layer_sliding", "layer %lld: HF %lld, omnic %d", (long long)l,
                     (long long)json_integer_value(json_array_get(ls, (size_t)l)), c->layer_sliding[l]);
            break;
        }
    }
    eq_i(name, g, "sliding_window", any ? c->sliding_window : 0);
    eq_s(name, g, "rope_type", rope_name(c->rope_type));
    eq_f(name, g, "rope_theta", c->rope_theta, 0);
    eq_f(name, g, "attention_scaling", c->rope_attn_factor, 1e-7);
    float f[OMNIC_MAX_HEAD_DIM / 2];
    omnic__text_rope_freqs(c, 0, f);
    eq_list(name, g, "inv_freq", f, c->n_rot / 2);
    if (c->rope_type == OMNIC_ROPE_LONGROPE) {
        eq_i(name, g, "original_max_position_embeddings", c->rope_original_max_pos);
        omnic__text_rope_freqs(c, 1, f);
        eq_list(name, g, "inv_freq_long", f, c->n_rot / 2);
    } else if (json_object_get(g, "inv_freq_long")) {
        mismatch(name, "rope_type", "HF has long factors, omnic's type is %s", rope_name(c->rope_type));
    }
    if (json_object_get(g, "inv_freq_local") || c->rope_local_theta > 0) {
        eq_f(name, g, "rope_local_theta", c->rope_local_theta, 0);
        omnic__text_rope_freqs(c, 2, f);
        eq_list(name, g, "inv_freq_local", f, c->n_rot / 2);
    }
    if (json_object_get(g, "kv_layer")) { /* Gemma 3n */
        eq_i(name, g, "n_kv_layers", c->n_kv_layers);
        eq_i(name, g, "altup", c->altup);
        eq_i(name, g, "altup_active", c->altup_active);
        eq_f(name, g, "altup_coef_clip", c->altup_coef_clip, 1e-7);
        eq_i(name, g, "altup_correct_scale", c->altup_correct_scale);
        eq_i(name, g, "laurel_rank", c->laurel_rank);
        eq_i(name, g, "ple_dim", c->ple_dim);
        eq_i(name, g, "ple_vocab", c->ple_vocab);
        eq_i(name, g, "mm_vocab_offset", c->mm_vocab_offset);
        eq_f(name, g, "embed_scale", c->embed_scale, 1e-7);
        const json_t *kv = json_object_get(g, "kv_layer"), *z = json_object_get(g, "sparsity_z");
        for (int64_t l = 0; l < c->n_layers; l++) {
            if (json_integer_value(json_array_get(kv, (size_t)l)) != c->kv_layer[l])
                mismatch(name, "kv_layer", "layer %lld: HF %lld, omnic %d", (long long)l,
                         (long long)json_integer_value(json_array_get(kv, (size_t)l)), c->kv_layer[l]);
            double want = json_number_value(json_array_get(z, (size_t)l));
            if (!(fabs(want - c->sparsity_z[l]) <= 2e-7 * fabs(want)))
                mismatch(name, "sparsity_z", "layer %lld: HF %.9g, omnic %.9g", (long long)l, want,
                         (double)c->sparsity_z[l]);
        }
    } else if (c->altup) {
        mismatch(name, "altup", "omnic parsed a Gemma 3n config, HF's record has no Gemma 3n fields");
    }
    if (json_object_get(g, "layer_moe")) { /* mixture of experts */
        eq_i(name, g, "n_experts", c->n_experts);
        eq_i(name, g, "experts_per_tok", c->experts_per_tok);
        eq_i(name, g, "moe_intermediate", c->moe_intermediate);
        eq_i(name, g, "norm_topk", c->norm_topk);
        const json_t *lm = json_object_get(g, "layer_moe");
        for (int64_t l = 0; l < c->n_layers; l++)
            if (json_integer_value(json_array_get(lm, (size_t)l)) != (c->n_experts > 0 && c->layer_moe[l]))
                mismatch(name, "layer_moe", "layer %lld differs", (long long)l);
    } else if (c->n_experts) {
        mismatch(name, "n_experts", "omnic parsed experts, HF's record has none");
    }
    const json_t *ms = json_object_get(g, "mrope_section");
    if ((ms != NULL) != c->mrope)
        mismatch(name, "mrope", "HF %s, omnic %s", ms ? "yes" : "no", c->mrope ? "yes" : "no");
    if (ms) eq_i(name, g, "mrope_interleaved", c->mrope_interleaved);
    for (size_t k = 0; ms && k < 3; k++)
        if (json_integer_value(json_array_get(ms, k)) != c->mrope_section[k])
            mismatch(name, "mrope_section", "[%zu] differs", k);
}

/* The tower fields every ViT record has. */
static void check_tower(const char *name, const json_t *g, const omnic__vision_config *v)
{
    eq_s(name, g, "model_type", v->arch == OMNIC_VISION_CLIP ? "clip_vision_model" : "siglip_vision_model");
    eq_i(name, g, "hidden", v->hidden);
    eq_i(name, g, "intermediate", v->intermediate);
    eq_i(name, g, "n_layers", v->n_layers);
    eq_i(name, g, "n_heads", v->n_heads);
    eq_i(name, g, "patch", v->patch);
    eq_i(name, g, "image_size", v->image_size);
    eq_i(name, g, "channels", v->channels);
    eq_f(name, g, "ln_eps", v->ln_eps, 0);
    eq_s(name, g, "act", op_name(v->act));
}

/* Gemma 3: every layer, post-LN, Gemma3MultiModalProjector's pool and rows, the token ids. */
static void check_gemma3_vision(const char *name, const json_t *g, const omnic__vision_config *v)
{
    check_tower(name, g, v);
    if (v->projector != OMNIC_PROJ_GEMMA3 || v->feature_index != v->n_layers || !v->bidirectional)
        mismatch(name, "projector", "omnic: projector %d, %lld of %lld layers, bidirectional %d",
                 (int)v->projector, (long long)v->feature_index, (long long)v->n_layers, v->bidirectional);
    eq_i(name, g, "rows", v->n_out);
    eq_i(name, g, "pool", v->pool);
    eq_f(name, g, "soft_norm_eps", v->ln_eps, 0);
    const json_t *shape = json_object_get(g, "proj_in_shape");
    if (json_integer_value(json_array_get(shape, 0)) != v->hidden ||
        json_integer_value(json_array_get(shape, 1)) != v->text_hidden)
        mismatch(name, "proj_in_shape", "omnic [%lld, %lld]", (long long)v->hidden,
                 (long long)v->text_hidden);
    eq_i(name, g, "image_token_id", v->image_token_id);
    eq_i(name, g, "boi_id", v->boi_id);
    eq_i(name, g, "eoi_id", v->eoi_id);
}

static void check_vit(const char *name, const json_t *g, const omnic__vision_config *v)
{
    const char *kind = json_string_value(json_object_get(g, "kind"));
    if (kind && !strcmp(kind, "gemma3")) {
        check_gemma3_vision(name, g, v);
        return;
    }
    check_tower(name, g, v);
    int64_t layer = json_integer_value(json_object_get(g, "feature_layer"));
    int64_t index = layer < 0 ? v->n_layers + 1 + layer : layer;
    if (index != v->feature_index)
        mismatch(name, "feature_layer", "HF %lld (index %lld), omnic index %lld", (long long)layer,
                 (long long)index, (long long)v->feature_index);
    eq_s(name, g, "strategy", v->keep_first ? "full" : "default");
    eq_s(name, g, "proj_act", op_name(v->proj_act));
    eq_i(name, g, "proj_bias", v->proj_bias);
    eq_i(name, g, "image_token_id", v->image_token_id);
}

static void check_qvit(const char *name, const json_t *g, const omnic__qvit_config *v)
{
    eq_i(name, g, "depth", v->depth);
    eq_i(name, g, "n_heads", v->n_heads);
    eq_i(name, g, "hidden", v->hidden);
    eq_i(name, g, "intermediate", v->intermediate);
    eq_i(name, g, "out_hidden", v->out_hidden);
    eq_i(name, g, "channels", v->channels);
    eq_i(name, g, "patch", v->patch);
    eq_i(name, g, "temporal", v->temporal);
    eq_i(name, g, "merge", v->merge);
    eq_s(name, g, "act", op_name(v->act));
    eq_i(name, g, "image_token_id", v->image_token_id);
    eq_i(name, g, "vision_start_id", v->vision_start_id);
    eq_i(name, g, "vision_end_id", v->vision_end_id);
    if (v->arch == OMNIC_QVIT_QWEN3_VL) { /* learned positions, DeepStack */
        eq_i(name, g, "n_pos", v->n_pos);
        eq_i(name, g, "n_deepstack", v->n_deepstack);
        const json_t *ds = json_object_get(g, "deepstack");
        for (int64_t k = 0; k < v->n_deepstack; k++)
            if (json_integer_value(json_array_get(ds, (size_t)k)) != v->deepstack_layer[k])
                mismatch(name, "deepstack", "merger %lld: HF block %lld, omnic %lld", (long long)k,
                         (long long)json_integer_value(json_array_get(ds, (size_t)k)), (long long)v->deepstack_layer[k]);
    } else if (json_object_get(g, "deepstack")) {
        mismatch(name, "deepstack", "HF has DeepStack mergers, omnic's tower has none");
    }
    if (v->arch != OMNIC_QVIT_QWEN2_5_VL) return;
    eq_i(name, g, "window_size", v->window_size);
    const json_t *fa = json_object_get(g, "fullatt");
    for (int64_t l = 0; l < v->depth; l++) {
        bool want = false;
        for (size_t i = 0; i < json_array_size(fa); i++)
            want |= json_integer_value(json_array_get(fa, i)) == l;
        if (want != v->full_att[l])
            mismatch(name, "fullatt", "block %lld: HF %d, omnic %d", (long long)l, want, v->full_att[l]);
    }
}

/* Parses tests/configs/<name>/config.json as omnic__model_open does, up to the configs. */
static void resolve(const char *name, const json_t *golden)
{
    char path[256];
    snprintf(path, sizeof path, "tests/configs/%s/config.json", name);
    json_t *cfg = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    omnic_status s = omnic__json_load_file(path, OMNIC_MAX_CONFIG_BYTES, &cfg, &err);
    const omnic__family *fam = NULL;
    omnic__text_config text;
    if (s == OMNIC_OK) s = omnic__family_find(cfg, &fam, &err);
    if (s == OMNIC_OK) s = fam->parse_config(cfg, "config.json", &text, &err);
    if (s != OMNIC_OK) {
        mismatch(name, "parse", "omnic refused it: %s", err.msg);
        json_decref(cfg);
        return;
    }
    check_text(name, json_object_get(golden, "text"), &text);
    const json_t *gv = json_object_get(golden, "vision");
    if (fam->parse_vision) {
        omnic__vision_config v;
        if ((s = fam->parse_vision(cfg, "config.json", &text, &v, &err)) != OMNIC_OK)
            mismatch(name, "parse_vision", "%s", err.msg);
        else if (!gv)
            mismatch(name, "vision", "HF recorded no vision tower");
        else
            check_vit(name, gv, &v);
    }
    const bool qwen = fam->media[OMNIC_MODALITY_IMAGE] == &omnic__media_qwen2vl_image;
    if (qwen) {
        omnic__qvit_config q;
        if ((s = omnic__qvit_config_parse(cfg, "config.json", text.hidden, &q, &err)) != OMNIC_OK)
            mismatch(name, "qvit_config_parse", "%s", err.msg);
        else if (!gv)
            mismatch(name, "vision", "HF recorded no vision tower");
        else
            check_qvit(name, gv, &q);
    }
    if (!fam->parse_vision && !qwen && gv) mismatch(name, "vision", "omnic parsed no vision tower");
    json_decref(cfg);
}

static void test_golden(void **state)
{
    (void)state;
    static const char *const files[] = {"tests/configs/golden-4.57.6.json",
                                        "tests/configs/golden-5.2.0.json"};
    int n = 0;
    for (size_t f = 0; f < 2; f++) {
        json_t *g = NULL;
        omnic_err err;
        omnic_err_clear(&err);
        assert_int_equal(omnic__json_load_file(files[f], OMNIC_MAX_CONFIG_BYTES, &g, &err), OMNIC_OK);
        const char *name;
        json_t *rec;
        json_object_foreach(json_object_get(g, "configs"), name, rec)
        {
            if (json_object_get(rec, "error")) continue; /* that transformers refused the file */
            int before = mismatches;
            resolve(name, rec);
            fprintf(stderr, "%-32s %s (transformers %s)\n", name,
                    mismatches == before ? "same as HF" : "DIFFERS",
                    json_string_value(json_object_get(g, "transformers_version")));
            n++;
        }
        json_decref(g);
    }
    assert_true(n >= 34);
    assert_int_equal(mismatches, 0);
}

/* Edits of a published config that HF accepts but that change numerics in ways omnic does not
 * compute: each must fail naming the key (or the value). */
static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *base, *key, *value; /* value: JSON set at key ("" : delete it) */
        const char *expect;
    } cases[] = {
        {"Llama-3.2-1B", "rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 4.0}",
         "rope_scaling type 'yarn'"},
        {"Llama-3.2-1B", "rope_scaling", "{\"rope_type\": \"dynamic\", \"factor\": 2.0}", "type 'dynamic'"},
        {"Llama-3.2-1B", "rope_scaling",
         "{\"rope_type\": \"su\", \"short_factor\": [1], \"long_factor\": [1]}",
         "type 'su'"}, /* only Phi3 renames su */
        {"Llama-3.2-1B", "rope_scaling",
         "{\"rope_type\": \"llama3\", \"factor\": 32.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0, "
         "\"original_max_position_embeddings\": 8192, \"beta_fast\": 32}",
         "key 'beta_fast'"},
        {"Llama-3.2-1B", "hidden_act", "\"gelu\"", "hidden_act 'gelu' is not supported"},
        {"Llama-3.2-1B", "attn_logit_softcapping", "30.0", "key 'attn_logit_softcapping'"},
        {"Llama-3.2-1B", "sliding_window", "4096", "key 'sliding_window'"},
        {"Llama-3.2-1B", "rope_parameters", "{\"rope_type\": \"default\", \"rope_theta\": 10000.0}",
         "both rope_parameters and rope_scaling"},
        {"Qwen2.5-1.5B-Instruct", "use_sliding_window", "true", "use_sliding_window = true"},
        {"Qwen3-0.6B", "layer_types", "[\"sliding_attention\"]", "layer_types has 1 entries for 28 layers"},
        {"Phi-3-mini-4k-instruct", "rope_scaling", "{\"type\": \"dynamic\", \"factor\": 2.0}",
         "type 'dynamic'"},
        {"Phi-3-mini-4k-instruct", "partial_rotary_factor", "0.01", "gives 0 rotary dims"},
        {"Phi-4-mini-instruct", "lm_head_bias", "true", "lm_head_bias = true"},
        {"gemma-3-1b-it", "use_bidirectional_attention", "true", "use_bidirectional_attention = true"},
        {"gemma-3-1b-it", "rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 8.0}", "type 'yarn'"},
        {"gemma-3-1b-it", "hidden_activation", "\"gelu\"", "hidden_activation 'gelu'"},
        {"gemma-3-1b-it-v5", "rope_parameters",
         "{\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 1e6}, \"sliding_attention\": "
         "{\"rope_type\": \"linear\", \"factor\": 2.0, \"rope_theta\": 1e4}}",
         "only rope_type default is supported on sliding layers"},
        {"llava-1.5-7b-hf", "vision_feature_layer", "[-2, -5]", "vision_feature_layer is a list"},
        {"llava-1.5-7b-hf", "tie_word_embeddings", "true", "ambiguous"},
        {"Qwen2-VL-2B-Instruct", "quantization_config", "{\"quant_method\": \"awq\"}", "quantization_config"},
        /* Gemma 3: a pool HF would floor (255 is no square), a CLIP tower, an unknown key, 5.x's
         * top-level tie flag over a text_config that unties */
        {"gemma-3-4b-it", "mm_tokens_per_image", "255", "mm_tokens_per_image 255 must be a square"},
        {"gemma-3-4b-it", "mm_tokens_per_image", "100", "side divides the 64 patches"},
        {"gemma-3-4b-it", "vision_config", "{\"model_type\": \"clip_vision_model\"}", "siglip_vision_model"},
        {"gemma-3-4b-it", "image_seq_len", "256", "key 'image_seq_len'"},
        {"gemma-3-4b-it", "text_config", "{\"model_type\": \"gemma3_text\", \"tie_word_embeddings\": false}",
         "ambiguous"},
        {"gemma-3-4b-it", "text_config", "{\"model_type\": \"gemma3n_text\"}", "model_type 'gemma3n_text'"},
        /* Gemma 3n ("a.b": key b of object a): an unknown layer type, AltUp and sharing settings
         * omnic does not compute, per-layer sizes, a key nobody reads */
        {"gemma-3n-E2B-it", "text_config.layer_types", "[\"chunked_attention\"]",
         "layer_types has 1 entries"},
        {"gemma-3n-E2B-it", "text_config.layer_types",
         "[\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", "
         "\"local\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", "
         "\"sliding_attention\", "
         "\"full_attention\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", "
         "\"sliding_attention\", \"full_attention\", \"sliding_attention\", \"sliding_attention\", "
         "\"sliding_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\", "
         "\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"full_attention\", "
         "\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", "
         "\"full_attention\"]",
         "layer_types[4] must be sliding_attention or full_attention"},
        {"gemma-3n-E2B-it", "text_config.altup_num_inputs", "8", "altup_num_inputs 8: omnic supports 1..4"},
        {"gemma-3n-E2B-it", "text_config.altup_active_idx", "4", "altup_active_idx"},
        {"gemma-3n-E2B-it", "text_config.num_kv_shared_layers", "29", "have none"},
        {"gemma-3n-E2B-it", "text_config.intermediate_size", "[8192, 4096]", "a list of 30 numbers"},
        {"gemma-3n-E2B-it", "text_config.activation_sparsity_pattern", "1.0", "outside [0, 1)"},
        {"gemma-3n-E2B-it", "text_config.altup_router_scale", "1.0", "key 'altup_router_scale'"},
        {"gemma-3n-E2B-it", "text_config.attention_bias", "true", "attention_bias = true"},
        {"gemma-3n-E2B-it", "vision_config", "{\"vocab_offset\": 262000, \"vocab_size\": 128}",
         "must follow the text ones"},
        {"gemma-3n-E2B-it", "tie_word_embeddings", "false", "tie_word_embeddings false"},
        /* Qwen3-MoE: more routed experts than experts, a layer index past the model, unknown key */
        {"Qwen3-30B-A3B", "num_experts_per_tok", "200", "out of range [1, 64]"},
        {"Qwen3-30B-A3B", "num_experts", "4", "num_experts_per_tok 8 exceeds num_experts 4"},
        {"Qwen3-30B-A3B", "mlp_only_layers", "[3, 48]", "mlp_only_layers[1]"},
        {"Qwen3-30B-A3B", "shared_expert_intermediate_size", "512", "key 'shared_expert_intermediate_size'"},
        /* Qwen3-VL: a DeepStack block past the tower, more mergers than text layers, no
         * mrope_section, the other text model type, an unknown vision key, MoE keys checked */
        {"Qwen3-VL-2B-Instruct", "vision_config.deepstack_visual_indexes", "[5, 11, 24]",
         "deepstack_visual_indexes[2] must be a block in 0..23"},
        {"Qwen3-VL-2B-Instruct", "vision_config.deepstack_visual_indexes", "[0, 1, 2, 3, 4, 5, 6, 7, 8]",
         "9 deepstack_visual_indexes (at most 8)"},
        {"Qwen3-VL-2B-Instruct", "text_config.rope_scaling", "{\"rope_type\": \"default\"}", "mrope_section"},
        {"Qwen3-VL-2B-Instruct", "text_config.model_type", "\"qwen3_vl_moe_text\"", "'qwen3_vl_moe_text' is not supported"},
        {"Qwen3-VL-2B-Instruct", "vision_config.window_size", "112", "key 'window_size'"},
        {"Qwen3-VL-2B-Instruct", "tie_word_embeddings", "false", "ambiguous"},
        {"Qwen3-VL-30B-A3B-Instruct", "text_config.num_experts", "4", "num_experts_per_tok 8 exceeds num_experts 4"},
        {"Qwen3-VL-30B-A3B-Instruct", "text_config.mlp_only_layers", "[48]", "mlp_only_layers[0]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/configs/%s/config.json", cases[i].base);
        json_t *cfg = NULL, *v = NULL;
        omnic_err err;
        omnic_err_clear(&err);
        assert_int_equal(omnic__json_load_file(path, OMNIC_MAX_CONFIG_BYTES, &cfg, &err), OMNIC_OK);
        json_error_t je;
        assert_non_null(v = json_loads(cases[i].value, JSON_DECODE_ANY, &je));
        const char *dot = strchr(cases[i].key, '.');
        json_t *obj = cfg;
        if (dot) { /* a key of a sub-object */
            char outer[64];
            snprintf(outer, sizeof outer, "%.*s", (int)(dot - cases[i].key), cases[i].key);
            assert_non_null(obj = json_object_get(cfg, outer));
        }
        assert_int_equal(json_object_set_new(obj, dot ? dot + 1 : cases[i].key, v), 0);
        const omnic__family *fam = NULL;
        omnic__text_config text;
        omnic_status s = omnic__family_find(cfg, &fam, &err);
        if (s == OMNIC_OK) s = fam->parse_config(cfg, "config.json", &text, &err);
        if (s == OMNIC_OK && fam->parse_vision) {
            omnic__vision_config vc;
            s = fam->parse_vision(cfg, "config.json", &text, &vc, &err);
        }
        if (s == OMNIC_OK || !strstr(err.msg, cases[i].expect))
            fprintf(stderr, "case %zu (%s %s): status %d, '%s'\n", i, cases[i].base, cases[i].key, s,
                    err.msg);
        assert_int_not_equal(s, OMNIC_OK);
        assert_non_null(strstr(err.msg, cases[i].expect));
        json_decref(cfg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
