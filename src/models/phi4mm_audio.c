/* Phi-4-multimodal's audio encoder (models/phi4mm_audio.h): config, weights, the audio.embed and
 * audio.encode graphs, and the host driver (normalisation, padding, 500-row chunks). */
#include <math.h>
#include <string.h>

#include "io/json.h"
#include "models/config_keys.h"
#include "models/phi4mm_audio.h"
#include "runtime/graph.h"

/* ---- config ------------------------------------------------------------------------------- */

static omnic_status expect_str(const json_t *c, const char *key, const char *dflt, const char *const *ok,
                               const char *what, omnic_err *err)
{
    const char *v;
    OMNIC_TRY(omnic__json_get_str(c, key, false, dflt, what, &v, err));
    for (; *ok; ok++)
        if (!strcmp(v, *ok)) return OMNIC_OK;
    return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: %s \"%s\" is not supported (only \"%s\")", what, key, v,
                      ok[-1]);
}

omnic_status omnic__p4a_config_parse(const json_t *ac, const char *what, int64_t text_hidden,
                                     omnic__p4a_config *c, omnic_err *err)
{
    static const char *const keys[] = {"hidden_size",
                                       "intermediate_size",
                                       "num_blocks",
                                       "num_attention_heads",
                                       "activation",
                                       "chunk_size",
                                       "left_chunk",
                                       "dropout_rate",
                                       "ext_pw_out_channel",
                                       "depthwise_separable_out_channel",
                                       "depthwise_multiplier",
                                       "kernel_size",
                                       "conv_activation",
                                       "input_size",
                                       "conv_glu_type",
                                       "time_reduction",
                                       "bias_max_distance",
                                       "bias_symmetric",
                                       "nemo_activation",
                                       "nemo_conv_channels",
                                       "nemo_final_size",
                                       "downsample_rate",
                                       "audio_token_id",
                                       "feature_layer",
                                       NULL};
    const char *const *const lists[] = {omnic__config_keys_generic, keys, NULL};
    memset(c, 0, sizeof *c);
    OMNIC_TRY(omnic__config_check_generic(ac, what, err));
    OMNIC_TRY(omnic__json_check_keys(ac, what, lists, err));
    /* HF Phi4MultimodalAudioConfig defaults */
    OMNIC_TRY(omnic__json_get_i64(ac, "hidden_size", false, 1024, 1, 1 << 16, what, &c->hidden, err));
    OMNIC_TRY(
        omnic__json_get_i64(ac, "intermediate_size", false, 1536, 1, 1 << 20, what, &c->intermediate, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "num_blocks", false, 24, 1, OMNIC_MAX_LAYERS, what, &c->n_blocks, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "num_attention_heads", false, 16, 1, 1024, what, &c->n_heads, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "input_size", false, 80, 1, 4096, what, &c->input_size, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "time_reduction", false, 8, 2, 16, what, &c->time_reduction, err));
    OMNIC_TRY(
        omnic__json_get_i64(ac, "nemo_conv_channels", false, 1024, 1, 1 << 16, what, &c->conv_channels, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "kernel_size", false, 3, 1, 64, what, &c->kernel_size, err));
    OMNIC_TRY(
        omnic__json_get_i64(ac, "bias_max_distance", false, 1000, 1, 1 << 20, what, &c->max_distance, err));
    static const char *const swish[] = {"swish", NULL}, *const relu[] = {"relu", NULL};
    OMNIC_TRY(expect_str(ac, "activation", "swish", swish, what, err));
    OMNIC_TRY(expect_str(ac, "conv_activation", "swish", swish, what, err));
    OMNIC_TRY(expect_str(ac, "conv_glu_type", "swish", swish, what, err));
    OMNIC_TRY(expect_str(ac, "nemo_activation", "relu", relu, what, err));
    /* streaming chunks would restrict attention; -1 (HF's default and the release) sees all */
    OMNIC_TRY(omnic__json_expect(ac, "chunk_size", "-1", what, err));
    OMNIC_TRY(omnic__json_expect(ac, "bias_symmetric", "false", what, err));
    OMNIC_TRY(omnic__json_expect(ac, "depthwise_multiplier", "1", what, err));
    OMNIC_TRY(omnic__json_expect(ac, "downsample_rate", "1", what, err));
    int64_t ext, sep;
    OMNIC_TRY(omnic__json_get_i64(ac, "ext_pw_out_channel", false, 1024, 1, 1 << 16, what, &ext, err));
    OMNIC_TRY(
        omnic__json_get_i64(ac, "depthwise_separable_out_channel", false, 1024, 1, 1 << 16, what, &sep, err));
    if (ext != c->hidden || sep != c->hidden)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: ext_pw_out_channel %lld and depthwise_separable_out_channel %lld must equal "
                          "hidden_size %lld (the conv module's residual)",
                          what, (long long)ext, (long long)sep, (long long)c->hidden);
    if (c->hidden % c->n_heads)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: hidden_size %lld is not a multiple of %lld heads", what,
                          (long long)c->hidden, (long long)c->n_heads);
    c->head_dim = c->hidden / c->n_heads;
    int64_t r = c->time_reduction, s = 0;
    while (r > 1 && r % 2 == 0)
        r /= 2, s++;
    if (r != 1 || s > OMNIC_P4A_MAX_STAGES)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: time_reduction %lld is not a power of 2 up to %d",
                          what, (long long)c->time_reduction, 1 << OMNIC_P4A_MAX_STAGES);
    c->stages = s;
    int64_t f = c->input_size;
    for (int64_t k = 0; k < s; k++)
        f = (f - 1) / 2 + 1;
    c->final_size = f;
    int64_t declared;
    OMNIC_TRY(omnic__json_get_i64(ac, "nemo_final_size", false, f, 1, 1 << 20, what, &declared, err));
    if (declared != f)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: nemo_final_size %lld, but %lld bins reduced %lld times give %lld", what,
                          (long long)declared, (long long)c->input_size, (long long)s, (long long)f);
    if (text_hidden < 1 || text_hidden > (1 << 20))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: text hidden size %lld", what, (long long)text_hidden);
    c->text_hidden = text_hidden;
    c->prefix = "model.embed_tokens_extend.audio_embed.encoder.";
    c->proj_prefix = "model.embed_tokens_extend.audio_embed.";
    return OMNIC_OK;
}

int64_t omnic__p4a_rows(const omnic__p4a_config *c, int64_t T)
{
    return (T + c->time_reduction - 1) / c->time_reduction;
}

/* ---- weights ------------------------------------------------------------------------------ */

typedef struct loader {
    omnic__p4a *e;
    const omnic__safetensors *st;
    char name[256];
    omnic_err *err;
} loader;

static omnic_status bind(loader *l, int ndim, const int64_t *dims, omnic__tensor *out)
{
    return omnic__weight_bind(l->st, l->name, ndim, dims, out, &l->e->copies, l->err);
}

/* An owned f32 copy of elements [first, first + n) of the tensor named l->name of dims. */
static omnic_status bind_f32(loader *l, int ndim, const int64_t *dims, int64_t first, int64_t n,
                             omnic__tensor **out)
{
    omnic__tensor view;
    OMNIC_TRY(bind(l, ndim, dims, &view));
    const int64_t one[1] = {n};
    return omnic__weight_f32(&view, first, 1, one, l->name, out, l->err);
}

/* Rows [r0, r0 + rows) of a bound weight, viewed 2-D [rows, cols]. */
static void row_block(const omnic__tensor *w, int64_t r0, int64_t rows, int64_t cols, const char *tag,
                      omnic__tensor *out)
{
    *out = *w;
    out->ndim = 2;
    for (int i = 0; i < OMNIC_MAX_DIMS; i++)
        out->dims[i] = 1;
    out->dims[0] = rows;
    out->dims[1] = cols;
    out->data = (uint8_t *)w->data + (size_t)(r0 * cols) * omnic_dtype_size(w->dtype);
    snprintf(out->name, sizeof out->name, "%.56s[%s]", w->name, tag);
}

#define NAME(...) snprintf(l->name, sizeof l->name, __VA_ARGS__) /* into l->name, which bind reads */

/* A Linear [out, in] with bias; the weight split into row blocks at `split` (0: one block). */
static omnic_status linear(loader *l, const char *w_name, const char *b_name, int64_t out, int64_t in,
                           int64_t split, omnic__tensor *w0, omnic__tensor *w1, omnic__tensor **b0,
                           omnic__tensor **b1)
{
    const int64_t wd[2] = {out, in}, bd[1] = {out};
    omnic__tensor w;
    snprintf(l->name, sizeof l->name, "%s", w_name);
    OMNIC_TRY(bind(l, 2, wd, &w));
    row_block(&w, 0, split ? split : out, in, split ? "0" : "all", w0);
    if (split) row_block(&w, split, out - split, in, "1", w1);
    snprintf(l->name, sizeof l->name, "%s", b_name);
    OMNIC_TRY(bind_f32(l, 1, bd, 0, split ? split : out, b0));
    if (split) OMNIC_TRY(bind_f32(l, 1, bd, split, out - split, b1));
    return OMNIC_OK;
}

static omnic_status layer_norm(loader *l, const char *stem, int64_t n, omnic__tensor *w, omnic__tensor *b)
{
    const int64_t d[1] = {n};
    char base[200];
    snprintf(base, sizeof base, "%s", stem);
    OMNIC_TRY((NAME("%s.weight", base), bind(l, 1, d, w)));
    return (NAME("%s.bias", base), bind(l, 1, d, b));
}

/* A conv's weight [out, in, k (, k)] bound as-is, and its bias as owned f32. */
static omnic_status conv(loader *l, const char *stem, int ndim, const int64_t *dims, omnic__tensor *w,
                         omnic__tensor **b)
{
    char base[200];
    snprintf(base, sizeof base, "%s", stem);
    OMNIC_TRY((NAME("%s.weight", base), bind(l, ndim, dims, w)));
    const int64_t bd[1] = {dims[0]};
    return (NAME("%s.bias", base), bind_f32(l, 1, bd, 0, dims[0], b));
}

/* A 1x1 (or k = 1) conv weight [out, in, 1 (, 1)] viewed as the matmul's [out, in]. */
static void as_matrix(omnic__tensor *w)
{
    int64_t o = w->dims[0], i = w->dims[1];
    w->ndim = 2;
    for (int k = 0; k < OMNIC_MAX_DIMS; k++)
        w->dims[k] = 1;
    w->dims[0] = o;
    w->dims[1] = i;
}

/* embed.out.weight [H, C * F] (column c * F + f: torch's [C][F] flatten) as an owned copy in its
 * dtype with column f * C + c (the channel-last map's flatten). */
static omnic_status permute_out(const omnic__tensor *w, int64_t C, int64_t F, omnic__tensor **out,
                                omnic_err *err)
{
    const int64_t H = w->dims[0], K = C * F;
    OMNIC_TRY(omnic__tensor_create(out, w->dtype, 2, w->dims, err));
    snprintf((*out)->name, sizeof(*out)->name, "%.50s[f,c]", w->name);
    const size_t es = omnic_dtype_size(w->dtype);
    const uint8_t *src = w->data;
    uint8_t *dst = (*out)->data;
    for (int64_t h = 0; h < H; h++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t f = 0; f < F; f++)
                memcpy(dst + (size_t)(h * K + f * C + c) * es, src + (size_t)(h * K + c * F + f) * es, es);
    return OMNIC_OK;
}

static omnic_status load_block(loader *l, int64_t i, omnic__p4a_block *B)
{
    const omnic__p4a_config *c = &l->e->cfg;
    const char *P = c->prefix;
    const int64_t H = c->hidden, I = c->intermediate, k = c->kernel_size;
    char stem[200], w[200], b[200];
#define STEM(s) (snprintf(stem, sizeof stem, "%sencoders.%lld.%s", P, (long long)i, s), stem)
#define WB(s)                                                                                                \
    (snprintf(w, sizeof w, "%sencoders.%lld.%s.weight", P, (long long)i, s),                                 \
     snprintf(b, sizeof b, "%sencoders.%lld.%s.bias", P, (long long)i, s))
    OMNIC_TRY(layer_norm(l, STEM("feed_forward_in.layer_norm"), H, &B->ffi_ln_w, &B->ffi_ln_b));
    WB("feed_forward_in.gate_up_proj");
    OMNIC_TRY(linear(l, w, b, 2 * I, H, I, &B->ffi_up, &B->ffi_gate, &B->ffi_up_b, &B->ffi_gate_b));
    WB("feed_forward_in.down_proj");
    OMNIC_TRY(linear(l, w, b, H, I, 0, &B->ffi_down, NULL, &B->ffi_down_b, NULL));
    OMNIC_TRY(layer_norm(l, STEM("feed_forward_out.layer_norm"), H, &B->ffo_ln_w, &B->ffo_ln_b));
    WB("feed_forward_out.gate_up_proj");
    OMNIC_TRY(linear(l, w, b, 2 * I, H, I, &B->ffo_up, &B->ffo_gate, &B->ffo_up_b, &B->ffo_gate_b));
    WB("feed_forward_out.down_proj");
    OMNIC_TRY(linear(l, w, b, H, I, 0, &B->ffo_down, NULL, &B->ffo_down_b, NULL));
    OMNIC_TRY(layer_norm(l, STEM("layer_norm_att"), H, &B->att_ln_w, &B->att_ln_b));
    WB("self_attn.q_proj");
    OMNIC_TRY(linear(l, w, b, H, H, 0, &B->wq, NULL, &B->bq, NULL));
    WB("self_attn.k_proj");
    OMNIC_TRY(linear(l, w, b, H, H, 0, &B->wk, NULL, &B->bk, NULL));
    WB("self_attn.v_proj");
    OMNIC_TRY(linear(l, w, b, H, H, 0, &B->wv, NULL, &B->bv, NULL));
    WB("self_attn.o_proj");
    OMNIC_TRY(linear(l, w, b, H, H, 0, &B->wo, NULL, &B->bo, NULL));
    OMNIC_TRY(layer_norm(l, STEM("conv.layer_norm"), H, &B->conv_ln_w, &B->conv_ln_b));
    /* GLU pointwise conv [2H, H, 1]: a = rows [0, H), g = rows [H, 2H) */
    const int64_t glu[3] = {2 * H, H, 1}, gb[1] = {2 * H}, b3[3] = {1, H, 1};
    omnic__tensor gw;
    OMNIC_TRY((NAME("%s.weight", STEM("conv.glu.ext_pw_conv_1d")), bind(l, 3, glu, &gw)));
    row_block(&gw, 0, H, H, "a", &B->glu_a);
    row_block(&gw, H, H, H, "g", &B->glu_g);
    OMNIC_TRY((NAME("%s.bias", STEM("conv.glu.ext_pw_conv_1d")), bind_f32(l, 1, gb, 0, H, &B->glu_a_b)));
    OMNIC_TRY((NAME("%s.bias", STEM("conv.glu.ext_pw_conv_1d")), bind_f32(l, 1, gb, H, H, &B->glu_g_b)));
    OMNIC_TRY((NAME("%s", STEM("conv.glu.b1")), bind_f32(l, 3, b3, 0, H, &B->glu_b1)));
    OMNIC_TRY((NAME("%s", STEM("conv.glu.b2")), bind_f32(l, 3, b3, 0, H, &B->glu_b2)));
    const int64_t dw[3] = {H, 1, k}, pw[3] = {H, H, 1};
    OMNIC_TRY(conv(l, STEM("conv.dw_sep_conv_1d.dw_conv"), 3, dw, &B->dw_w, &B->dw_b));
    OMNIC_TRY(conv(l, STEM("conv.dw_sep_conv_1d.pw_conv"), 3, pw, &B->pw_w, &B->pw_b));
    OMNIC_TRY(conv(l, STEM("conv.ext_pw_conv_1d"), 3, pw, &B->ext_w, &B->ext_b));
    as_matrix(&B->pw_w);
    as_matrix(&B->ext_w);
    OMNIC_TRY(layer_norm(l, STEM("layer_norm"), H, &B->out_ln_w, &B->out_ln_b));
#undef STEM
#undef WB
    return OMNIC_OK;
}

static void free_block(omnic__p4a_block *B)
{
    omnic__tensor *owned[] = {B->ffi_up_b,   B->ffi_gate_b, B->ffi_down_b, B->ffo_up_b, B->ffo_gate_b,
                              B->ffo_down_b, B->bq,         B->bk,         B->bv,       B->bo,
                              B->glu_a_b,    B->glu_g_b,    B->glu_b1,     B->glu_b2,   B->dw_b,
                              B->pw_b,       B->ext_b};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        omnic__tensor_destroy(owned[i]);
}

void omnic__p4a_deinit(omnic__p4a *e)
{
    if (!e) return;
    omnic_free(e->mean);
    omnic_free(e->invstd);
    for (int i = 0; i < 2 * OMNIC_P4A_MAX_STAGES; i++)
        omnic__tensor_destroy(e->conv_b[i]);
    for (int i = 0; i < 2; i++) {
        omnic__tensor_destroy(e->proj_up_b[i]);
        omnic__tensor_destroy(e->proj_down_b[i]);
    }
    omnic__tensor_destroy(e->out_w);
    omnic__tensor_destroy(e->out_b);
    omnic__tensor_destroy(e->rel_table);
    if (e->blocks)
        for (int64_t i = 0; i < e->cfg.n_blocks; i++)
            free_block(&e->blocks[i]);
    omnic_free(e->blocks);
    omnic__weight_copies_free(&e->copies);
    memset(e, 0, sizeof *e);
}

static omnic_status load(loader *l)
{
    omnic__p4a *e = l->e;
    const omnic__p4a_config *c = &e->cfg;
    const char *P = c->prefix;
    const int64_t In = c->input_size, C = c->conv_channels, H = c->hidden, F = c->final_size;
    /* global mean / invstd (buffers) as f32 for the host's normalisation */
    const int64_t nd[1] = {In};
    omnic__tensor *m = NULL, *s = NULL;
    OMNIC_TRY((NAME("%sencoder_embedding.global_mean", P), bind_f32(l, 1, nd, 0, In, &m)));
    omnic_status rc = (NAME("%sencoder_embedding.global_invstd", P), bind_f32(l, 1, nd, 0, In, &s));
    if (rc == OMNIC_OK) {
        e->mean = omnic_alloc_array((size_t)In, sizeof(float));
        e->invstd = omnic_alloc_array((size_t)In, sizeof(float));
        if (!e->mean || !e->invstd)
            rc = OMNIC_FAIL(l->err, OMNIC_E_NOMEM, "out of memory for the audio normalisation");
        else
            memcpy(e->mean, m->data, (size_t)In * sizeof(float)),
                memcpy(e->invstd, s->data, (size_t)In * sizeof(float));
    }
    omnic__tensor_destroy(m);
    omnic__tensor_destroy(s);
    OMNIC_TRY(rc);
    /* NeMo subsampling: conv.0 [C, 1, 3, 3]; stage k >= 1: conv.(3k - 1) depthwise, conv.3k pointwise */
    const int64_t c0[4] = {C, 1, 3, 3}, pw[4] = {C, C, 1, 1};
    char stem[200];
    OMNIC_TRY((snprintf(stem, sizeof stem, "%sembed.conv.0", P),
               conv(l, stem, 4, c0, &e->conv_w[0], &e->conv_b[0])));
    for (int64_t k = 1; k < c->stages; k++) {
        snprintf(stem, sizeof stem, "%sembed.conv.%lld", P, (long long)(3 * k - 1));
        OMNIC_TRY(conv(l, stem, 4, c0, &e->conv_w[2 * k - 1], &e->conv_b[2 * k - 1]));
        snprintf(stem, sizeof stem, "%sembed.conv.%lld", P, (long long)(3 * k));
        OMNIC_TRY(conv(l, stem, 4, pw, &e->conv_w[2 * k], &e->conv_b[2 * k]));
        as_matrix(&e->conv_w[2 * k]);
    }
    const int64_t od[2] = {H, C * F}, hd[1] = {H};
    omnic__tensor ow;
    OMNIC_TRY((NAME("%sembed.out.weight", P), bind(l, 2, od, &ow)));
    OMNIC_TRY(permute_out(&ow, C, F, &e->out_w, l->err));
    OMNIC_TRY((NAME("%sembed.out.bias", P), bind_f32(l, 1, hd, 0, H, &e->out_b)));
    /* T5 table [2M, heads] + 1.0f: HF adds its all-true mask (as 1.0) to the bias */
    const int64_t td[2] = {2 * c->max_distance, c->n_heads};
    omnic__tensor tw;
    OMNIC_TRY((NAME("%srelative_attention_bias_layer.bias_values.weight", P), bind(l, 2, td, &tw)));
    OMNIC_TRY(omnic__weight_f32(&tw, 0, 2, td, l->name, &e->rel_table, l->err));
    float *t = e->rel_table->data;
    for (int64_t i = 0; i < td[0] * td[1]; i++)
        t[i] = t[i] + 1.0f;
    e->blocks = omnic_alloc_array((size_t)c->n_blocks, sizeof *e->blocks);
    if (!e->blocks)
        return OMNIC_FAIL(l->err, OMNIC_E_NOMEM, "out of memory for %lld conformer blocks",
                          (long long)c->n_blocks);
    memset(e->blocks, 0, (size_t)c->n_blocks * sizeof *e->blocks);
    for (int64_t i = 0; i < c->n_blocks; i++)
        OMNIC_TRY(load_block(l, i, &e->blocks[i]));
    static const char *const mode[2] = {"speech", "vision_speech"};
    for (int p = 0; p < 2; p++) {
        char w[200], b[200];
        snprintf(w, sizeof w, "%sup_proj_for_%s.weight", c->proj_prefix, mode[p]);
        snprintf(b, sizeof b, "%sup_proj_for_%s.bias", c->proj_prefix, mode[p]);
        OMNIC_TRY(linear(l, w, b, c->text_hidden, H, 0, &e->proj_up[p], NULL, &e->proj_up_b[p], NULL));
        snprintf(w, sizeof w, "%sdown_proj_for_%s.weight", c->proj_prefix, mode[p]);
        snprintf(b, sizeof b, "%sdown_proj_for_%s.bias", c->proj_prefix, mode[p]);
        OMNIC_TRY(linear(l, w, b, c->text_hidden, c->text_hidden, 0, &e->proj_down[p], NULL,
                         &e->proj_down_b[p], NULL));
    }
    return OMNIC_OK;
}

omnic_status omnic__p4a_load(omnic__p4a *e, const omnic__p4a_config *cfg, const omnic__safetensors *st,
                             omnic_err *err)
{
    memset(e, 0, sizeof *e);
    e->cfg = *cfg;
    loader l = {.e = e, .st = st, .err = err};
    omnic_status rc = load(&l);
    if (rc != OMNIC_OK) omnic__p4a_deinit(e);
    return rc;
}

#undef NAME

/* ---- graph -------------------------------------------------------------------------------- */

#define W(t) omnic__g_weight(g, (t))

/* x + 0.5 f (the macaron feed-forwards: the product exact, rounded once with the add) */
static omnic__tensor *ff(omnic__graph *g, omnic__tensor *x, const omnic__tensor *ln_w,
                         const omnic__tensor *ln_b, const omnic__tensor *up, const omnic__tensor *up_b,
                         const omnic__tensor *gate, const omnic__tensor *gate_b, const omnic__tensor *down,
                         const omnic__tensor *down_b)
{
    omnic__tensor *t = omnic__g_layernorm(g, x, W(ln_w), W(ln_b), 1e-5f);
    omnic__tensor *a = omnic__g_glu(g, OMNIC_OP_SWIGLU, omnic__g_matmul(g, t, W(gate), W(gate_b)),
                                    omnic__g_matmul(g, t, W(up), W(up_b)), 0);
    omnic__tensor *f = omnic__g_matmul(g, a, W(down), W(down_b));
    return omnic__g_add(g, x, omnic__g_scale(g, f, 0.5f, 0.0f));
}

/* Column col of an input grouped r rows per row: [n / r, 1], the value at rows 0, r, 2r, ... */
static omnic__tensor *every_rth(omnic__graph *g, omnic__tensor *in, int64_t r, int64_t col, int64_t len)
{
    return omnic__g_slice(g, omnic__g_group_rows(g, in, r), 1, col, len);
}

/* The NeMo subsampling: [n, In] -> [n / r, H]. */
static omnic__tensor *subsample(omnic__graph *g, const omnic__p4a *e, omnic__tensor *x, omnic__tensor *mask)
{
    const omnic__p4a_config *c = &e->cfg;
    const int64_t C = c->conv_channels;
    int w = (int)c->input_size, w1 = (w - 1) / 2 + 1;
    const omnic__dwconv2d_geom g0 = {3, 3, 2, 2, 1, 1, w, 1, w1};
    omnic__tensor *h =
        omnic__g_dwconv2d(g, omnic__g_group_rows(g, x, 2), W(&e->conv_w[0]), W(e->conv_b[0]), &g0);
    h = omnic__g_unary(g, OMNIC_OP_RELU, h);
    w = w1;
    for (int64_t k = 1; k < c->stages && h; k++) {
        /* rows past stage k's length back to zero (HF's padding) before the next conv reads them */
        h = omnic__g_mul(g, h, every_rth(g, mask, (int64_t)1 << k, k - 1, 1));
        w1 = (w - 1) / 2 + 1;
        const omnic__dwconv2d_geom gk = {3, 3, 2, 2, 1, 1, w, (int)C, w1};
        h = omnic__g_dwconv2d(g, omnic__g_group_rows(g, h, 2), W(&e->conv_w[2 * k - 1]),
                              W(e->conv_b[2 * k - 1]), &gk);
        if (!h) break;
        const int64_t d3[3] = {h->dims[0], w1, C}, d2[2] = {h->dims[0], w1 * C};
        h = omnic__g_matmul(g, omnic__g_reshape(g, h, 3, d3), W(&e->conv_w[2 * k]), W(e->conv_b[2 * k]));
        h = omnic__g_unary(g, OMNIC_OP_RELU, h);
        h = omnic__g_reshape(g, h, 2, d2);
        w = w1;
    }
    return omnic__g_matmul(g, h, W(e->out_w), W(e->out_b));
}

omnic_status omnic__p4a_build(const omnic__p4a *e, omnic__module *m, omnic_err *err)
{
    const omnic__p4a_config *c = &e->cfg;
    omnic__graph *g = &m->graph;
    const int64_t cap = g->capacity, r = c->time_reduction, H = c->hidden, nh = c->n_heads, hd = c->head_dim;
    if (cap % r)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "audio.encode capacity %lld is not a multiple of %lld",
                          (long long)cap, (long long)r);
    const int64_t xd[2] = {cap, c->input_size}, md[2] = {cap, c->stages}, rd[2] = {cap, 4};
    omnic__tensor *x = omnic__g_input(g, "features", OMNIC_DTYPE_F32, 2, xd, OMNIC_VAR_T);
    omnic__tensor *mask = omnic__g_input(g, "stage_mask", OMNIC_DTYPE_F32, 2, md, OMNIC_VAR_T);
    omnic__tensor *rowinfo = omnic__g_input(g, "row_info", OMNIC_DTYPE_I32, 2, rd, OMNIC_VAR_T);
    const int64_t R = cap / r, d1[1] = {R};
    /* per subsampled row: its position, its chunk's first row, the chunk [0, length) */
    omnic__tensor *pos = omnic__g_reshape(g, every_rth(g, rowinfo, r, 0, 1), 1, d1);
    omnic__tensor *begin = omnic__g_reshape(g, every_rth(g, rowinfo, r, 1, 1), 1, d1);
    omnic__tensor *span = every_rth(g, rowinfo, r, 2, 2);
    /* HF pads the subsampled rows with zeros up to whole chunks */
    x = omnic__g_mul(g, subsample(g, e, x, mask), every_rth(g, mask, r, c->stages - 1, 1));
    if (x) omnic__g_mark_output(g, x, "embed");
    omnic__tensor *table = W(e->rel_table);
    const float scale = (float)(1.0 / sqrt((double)hd));
    const int kk = (int)c->kernel_size;
    for (int64_t i = 0; i < c->n_blocks && x; i++) {
        const omnic__p4a_block *B = &e->blocks[i];
        x = ff(g, x, &B->ffi_ln_w, &B->ffi_ln_b, &B->ffi_up, B->ffi_up_b, &B->ffi_gate, B->ffi_gate_b,
               &B->ffi_down, B->ffi_down_b);
        omnic__tensor *t = omnic__g_layernorm(g, x, W(&B->att_ln_w), W(&B->att_ln_b), 1e-5f);
        const int64_t d3[3] = {R, nh, hd}, d2[2] = {R, H};
        omnic__tensor *q = omnic__g_reshape(g, omnic__g_matmul(g, t, W(&B->wq), W(B->bq)), 3, d3);
        omnic__tensor *k = omnic__g_reshape(g, omnic__g_matmul(g, t, W(&B->wk), W(B->bk)), 3, d3);
        omnic__tensor *v = omnic__g_reshape(g, omnic__g_matmul(g, t, W(&B->wv), W(B->bv)), 3, d3);
        omnic__tensor *o =
            omnic__g_attention_relpos_spans(g, q, k, v, pos, table, (int)c->max_distance, scale, begin, span);
        x = omnic__g_add(g, x, omnic__g_matmul(g, omnic__g_reshape(g, o, 2, d2), W(&B->wo), W(B->bo)));
        /* conv module: GLU pointwise, causal depthwise within the chunk, pointwise, silu, pointwise */
        t = omnic__g_layernorm(g, x, W(&B->conv_ln_w), W(&B->conv_ln_b), 1e-5f);
        omnic__tensor *a = omnic__g_add(g, omnic__g_matmul(g, t, W(&B->glu_a), W(B->glu_a_b)), W(B->glu_b1));
        omnic__tensor *gt = omnic__g_add(g, omnic__g_matmul(g, t, W(&B->glu_g), W(B->glu_g_b)), W(B->glu_b2));
        omnic__tensor *y = omnic__g_glu(g, OMNIC_OP_SWIGLU, gt, a, 0);
        const omnic__dwconv2d_geom cg = {kk, 1, 1, 1, kk - 1, 0, 1, (int)H, 1};
        y = omnic__g_dwconv2d_seg(g, y, W(&B->dw_w), W(B->dw_b), begin, &cg);
        y = omnic__g_unary(g, OMNIC_OP_SILU, omnic__g_matmul(g, y, W(&B->pw_w), W(B->pw_b)));
        x = omnic__g_add(g, x, omnic__g_matmul(g, y, W(&B->ext_w), W(B->ext_b)));
        x = ff(g, x, &B->ffo_ln_w, &B->ffo_ln_b, &B->ffo_up, B->ffo_up_b, &B->ffo_gate, B->ffo_gate_b,
               &B->ffo_down, B->ffo_down_b);
        x = omnic__g_layernorm(g, x, W(&B->out_ln_w), W(&B->out_ln_b), 1e-5f);
        if (i == 0 && x) omnic__g_mark_output(g, x, "block0");
    }
    if (x) omnic__g_mark_output(g, x, "encoded");
    static const char *const out[2] = {"speech", "vision_speech"};
    for (int p = 0; p < 2 && x; p++) {
        omnic__tensor *y =
            omnic__g_unary(g, OMNIC_OP_GELU, omnic__g_matmul(g, x, W(&e->proj_up[p]), W(e->proj_up_b[p])));
        y = omnic__g_matmul(g, y, W(&e->proj_down[p]), W(e->proj_down_b[p]));
        if (y) omnic__g_mark_output(g, y, out[p]);
    }
    return omnic__graph_status(g, err);
}

#undef W

/* ---- host inputs -------------------------------------------------------------------------- */

int64_t omnic__p4a_call_rows(const omnic__p4a_config *c, int64_t T)
{
    const int64_t rows = omnic__p4a_rows(c, T);
    const int64_t padded =
        rows > OMNIC_P4A_CHUNK ? (rows + OMNIC_P4A_CHUNK - 1) / OMNIC_P4A_CHUNK * OMNIC_P4A_CHUNK : rows;
    return padded * c->time_reduction;
}

void omnic__p4a_inputs_free(omnic__p4a_inputs *in)
{
    if (!in) return;
    omnic_free(in->features);
    omnic_free(in->stage_mask);
    omnic_free(in->row_info);
    memset(in, 0, sizeof *in);
}

omnic_status omnic__p4a_inputs_make(const omnic__p4a *e, const float *features, int64_t T,
                                    omnic__p4a_inputs *in, omnic_err *err)
{
    const omnic__p4a_config *c = &e->cfg;
    const int64_t r = c->time_reduction, In = c->input_size, S = c->stages, rows = omnic__p4a_rows(c, T);
    memset(in, 0, sizeof *in);
    if (T < 1) return OMNIC_FAIL(err, OMNIC_E_INVALID, "audio of %lld feature frames", (long long)T);
    const int64_t n = omnic__p4a_call_rows(c, T), R = n / r,
                  L = rows > OMNIC_P4A_CHUNK ? OMNIC_P4A_CHUNK : rows;
    in->n = n;
    in->rows = rows;
    in->features = omnic_alloc_array((size_t)(n * In), sizeof(float));
    in->stage_mask = omnic_alloc_array((size_t)(n * S), sizeof(float));
    in->row_info = omnic_alloc_array((size_t)(n * 4), sizeof(int32_t));
    if (!in->features || !in->stage_mask || !in->row_info) {
        omnic__p4a_inputs_free(in);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld audio frames", (long long)n);
    }
    /* (x - mean) * invstd in f32 as HF's MeanVarianceNormLayer; padded rows are the conv's zeros */
    for (int64_t t = 0; t < n; t++)
        for (int64_t f = 0; f < In; f++) {
            float d = t < T ? features[t * In + f] - e->mean[f] : 0.0f;
            in->features[t * In + f] = t < T ? d * e->invstd[f] : 0.0f;
        }
    memset(in->stage_mask, 0, (size_t)(n * S) * sizeof(float));
    memset(in->row_info, 0, (size_t)(n * 4) * sizeof(int32_t));
    for (int64_t k = 1; k <= S; k++) { /* column k - 1, read at rows q * 2^k: q < ceil(T / 2^k) */
        const int64_t step = (int64_t)1 << k, valid = (T + step - 1) / step;
        for (int64_t q = 0; q < n / step; q++)
            in->stage_mask[q * step * S + (k - 1)] = q < valid ? 1.0f : 0.0f;
    }
    for (int64_t q = 0; q < R; q++) { /* read at rows q * r */
        int32_t *ri = in->row_info + q * r * 4;
        ri[0] = (int32_t)q;
        ri[1] = (int32_t)(q / L * L);
        ri[2] = 0;
        ri[3] = (int32_t)L;
    }
    return OMNIC_OK;
}

omnic_status omnic__p4a_inputs_bind(const omnic__p4a *e, const omnic__p4a_inputs *in, omnic__tensor t[3],
                                    omnic_err *err)
{
    const int64_t xd[2] = {in->n, e->cfg.input_size}, md[2] = {in->n, e->cfg.stages}, rd[2] = {in->n, 4};
    OMNIC_TRY(omnic__tensor_init(&t[0], OMNIC_DTYPE_F32, 2, xd, err));
    OMNIC_TRY(omnic__tensor_init(&t[1], OMNIC_DTYPE_F32, 2, md, err));
    OMNIC_TRY(omnic__tensor_init(&t[2], OMNIC_DTYPE_I32, 2, rd, err));
    t[0].data = in->features;
    t[1].data = in->stage_mask;
    t[2].data = in->row_info;
    return OMNIC_OK;
}

omnic_status omnic__p4a_encode(const omnic__p4a *e, omnic__module *m, const float *features, int64_t T,
                               omnic_err *err)
{
    omnic__p4a_inputs in;
    OMNIC_TRY(omnic__p4a_inputs_make(e, features, T, &in, err));
    omnic__tensor t[3];
    omnic_status rc = omnic__p4a_inputs_bind(e, &in, t, err);
    if (rc == OMNIC_OK && in.n > m->graph.capacity)
        rc = OMNIC_FAIL(err, OMNIC_E_INVALID,
                        "audio of %lld feature frames (%lld padded): the encoder takes up to %lld",
                        (long long)T, (long long)in.n, (long long)m->graph.capacity);
    if (rc == OMNIC_OK) {
        const omnic__tensor *ins[3] = {&t[0], &t[1], &t[2]};
        omnic__call c = {.n = in.n, .inputs = ins, .n_inputs = 3};
        rc = omnic__module_call(m, &c, err);
    }
    omnic__p4a_inputs_free(&in);
    return rc;
}
