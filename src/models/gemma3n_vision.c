/* Gemma 3n's vision tower (models/gemma3n_vision.h): config, the weights read from the checkpoint's
 * keys, the vision.encode graph. */
#include <math.h>
#include <string.h>

#include "io/json.h"
#include "models/config_keys.h"
#include "models/gemma3n_vision.h"
#include "runtime/graph.h"

/* ---- config ------------------------------------------------------------------------------- */

omnic_status omnic__mnv5_config_parse(const json_t *vc, const char *what, int64_t text_hidden, int64_t image,
                                      omnic__mnv5_config *c, omnic_err *err)
{
    static const char *const keys[] = {"architecture", "do_pooling",   "hidden_size", "vocab_size",
                                       "vocab_offset", "rms_norm_eps", "model_args",  "initializer_range",
                                       "label_names",  "num_classes",  "global_pool", NULL};
    const char *const *const lists[] = {omnic__config_keys_generic, keys, NULL};
    memset(c, 0, sizeof *c);
    OMNIC_TRY(omnic__config_check_generic(vc, what, err));
    OMNIC_TRY(omnic__json_check_keys(vc, what, lists, err));
    const char *arch;
    OMNIC_TRY(omnic__json_get_str(vc, "architecture", false, "mobilenetv5_300m_enc", what, &arch, err));
    if (strcmp(arch, "mobilenetv5_300m_enc"))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: architecture \"%s\" is not supported (mobilenetv5_300m_enc: its strides and "
                          "fusion omnic builds)",
                          what, arch);
    bool pool;
    OMNIC_TRY(omnic__json_get_bool(vc, "do_pooling", false, false, what, &pool, err));
    if (pool)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: do_pooling true (Gemma 3n runs the tower without)",
                          what);
    const json_t *ma = json_object_get(vc, "model_args");
    if (ma && !json_is_null(ma)) { /* widths follow the weights; anything else changes the layout */
        static const char *const mkeys[] = {"channel_multiplier", NULL};
        const char *const *const ml[] = {mkeys, NULL};
        char mw[96];
        snprintf(mw, sizeof mw, "%s model_args", what);
        if (!json_is_object(ma)) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s must be an object", mw);
        OMNIC_TRY(omnic__json_check_keys(ma, mw, ml, err));
    }
    OMNIC_TRY(omnic__json_get_i64(vc, "hidden_size", false, 2048, 1, 1 << 16, what, &c->hidden, err));
    OMNIC_TRY(omnic__json_get_f64(vc, "rms_norm_eps", false, 1e-6, 0, 1, what, &c->embed_eps, err));
    c->image = image;
    c->text_hidden = text_hidden;
    c->out_res = 16; /* MobileNetV5Encoder's msfa_output_resolution */
    c->prefix = "model.vision_tower.timm_model.";
    c->embed_prefix = "model.embed_vision.";
    return OMNIC_OK;
}

/* ---- weights ------------------------------------------------------------------------------ */

typedef struct loader {
    omnic__mnv5 *e;
    const omnic__safetensors *st;
    char name[256];
    omnic_err *err;
} loader;

#define NAME(...) snprintf(l->name, sizeof l->name, __VA_ARGS__)

static const omnic__st_tensor *find(loader *l)
{
    return omnic__st_find(l->st, l->name);
}

static omnic_status bind(loader *l, int ndim, const int64_t *dims, omnic__tensor *out)
{
    return omnic__weight_bind(l->st, l->name, ndim, dims, out, &l->e->copies, l->err);
}

/* A conv stem.conv.weight (l->name) of [O, C, k, k] as taps-major f32 [O, k * k * C]. */
static omnic_status taps_major(loader *l, const int64_t *dims, omnic__tensor **out)
{
    omnic__tensor w;
    OMNIC_TRY(bind(l, 4, dims, &w));
    const int64_t O = dims[0], C = dims[1], kk = dims[2] * dims[3], K = kk * C, all[1] = {O * K},
                  d2[2] = {O, K};
    omnic__tensor *f = NULL;
    OMNIC_TRY(omnic__weight_f32(&w, 0, 1, all, w.name, &f, l->err));
    omnic_status s = omnic__tensor_create(out, OMNIC_DTYPE_F32, 2, d2, l->err);
    if (s == OMNIC_OK) {
        snprintf((*out)->name, sizeof(*out)->name, "%.50s[taps]", w.name);
        const float *src = f->data;
        float *dst = (*out)->data;
        for (int64_t o = 0; o < O; o++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t t = 0; t < kk; t++)
                    dst[o * K + t * C + c] = src[(o * C + c) * kk + t];
    }
    omnic__tensor_destroy(f);
    return s;
}

/* stem/conv (a ConvNormAct at "<base>.conv.weight" + "<base>.bn.weight", or ER's names): kind 0 depthwise
 * [C, 1, k, k], 1 pointwise [O, C, 1, 1] (viewed [O, C]), 2 full k x k (taps-major). Sets k from the
 * weight; O, C checked against in_c (depthwise: O = C = in_c). */
static omnic_status conv_norm(loader *l, const char *wname, const char *nname, int kind, int64_t in_c,
                              int stride, omnic__mnv5_conv *cv, int64_t *out_c)
{
    snprintf(l->name, sizeof l->name, "%s", wname);
    const omnic__st_tensor *t = find(l);
    if (!t || t->ndim != 4 || t->dims[2] != t->dims[3] || t->dims[2] < 1 || t->dims[2] > 15 ||
        t->dims[2] % 2 == 0 || (kind == 0 ? t->dims[0] != in_c || t->dims[1] != 1 : t->dims[1] != in_c) ||
        (kind == 1 && t->dims[2] != 1))
        return OMNIC_FAIL(l->err, t ? OMNIC_E_INVALID : OMNIC_E_NOT_FOUND,
                          "%s: a %s conv of %lld input channels (odd square kernel) is expected", wname,
                          kind == 0   ? "depthwise"
                          : kind == 1 ? "1x1"
                                      : "k x k",
                          (long long)in_c);
    const int64_t d4[4] = {t->dims[0], t->dims[1], t->dims[2], t->dims[3]};
    cv->k = (int)t->dims[2];
    cv->stride = stride;
    if (kind == 2) {
        OMNIC_TRY(taps_major(l, d4, &cv->taps));
    } else {
        OMNIC_TRY(bind(l, 4, d4, &cv->w));
        if (kind == 1) { /* [O, C, 1, 1] as the matmul's [O, C] */
            cv->w.ndim = 2;
            cv->w.dims[2] = cv->w.dims[3] = 1;
        }
    }
    *out_c = t->dims[0];
    const int64_t nd[1] = {t->dims[0]};
    snprintf(l->name, sizeof l->name, "%s", nname);
    return bind(l, 1, nd, &cv->norm);
}

static bool present(loader *l)
{
    return find(l) != NULL;
}

/* blocks.s.b under P: its kind from its keys, every width from the weights. */
static omnic_status load_block(loader *l, const char *P, int s, int b, int64_t in_c, omnic__mnv5_block *B)
{
    char base[128], w[200], n[200];
    snprintf(base, sizeof base, "%sblocks.%d.%d.", P, s, b);
    B->in_c = in_c;
    B->stride = b == 0 ? 2 : 1; /* mobilenetv5_300m_enc: the first block of every stage strides 2 */
#define CN(stem, kind, in, stride, cv, out)                                                                  \
    (snprintf(w, sizeof w, "%s%s.conv.weight", base, stem),                                                  \
     snprintf(n, sizeof n, "%s%s.bn.weight", base, stem), conv_norm(l, w, n, kind, in, stride, cv, out))
    int64_t c;
    if ((NAME("%sconv_exp.weight", base), present(l))) {
        B->kind = OMNIC_MNV5_ER;
        snprintf(w, sizeof w, "%sconv_exp.weight", base), snprintf(n, sizeof n, "%sbn1.weight", base);
        OMNIC_TRY(conv_norm(l, w, n, 2, in_c, B->stride, &B->a, &B->mid_c));
        snprintf(w, sizeof w, "%sconv_pwl.weight", base), snprintf(n, sizeof n, "%sbn2.weight", base);
        OMNIC_TRY(conv_norm(l, w, n, 1, B->mid_c, 1, &B->b, &B->out_c));
    } else if ((NAME("%sattn.query.proj.weight", base), present(l))) {
        B->kind = OMNIC_MNV5_MQA;
        B->stride = 1;
        B->out_c = in_c;
        const int64_t v1[1] = {in_c};
        OMNIC_TRY((NAME("%snorm.weight", base), bind(l, 1, v1, &B->norm)));
        if ((NAME("%sattn.query.norm.weight", base), present(l)) ||
            (NAME("%sattn.query.down_pool", base), present(l)))
            return OMNIC_FAIL(l->err, OMNIC_E_UNSUPPORTED, "%sattn: strided queries are not supported", base);
        static const char *const kv[2] = {"key", "value"};
        for (int i = 0; i < 2; i++) {
            omnic__mnv5_conv *down = i ? &B->v_down : &B->k_down;
            snprintf(w, sizeof w, "%sattn.%s.down_conv.weight", base, kv[i]);
            snprintf(n, sizeof n, "%sattn.%s.norm.weight", base, kv[i]);
            NAME("%s", w);
            if (present(l)) OMNIC_TRY(conv_norm(l, w, n, 0, in_c, 2, down, &c));
        }
        const omnic__st_tensor *tq = (NAME("%sattn.query.proj.weight", base), find(l));
        const omnic__st_tensor *tk = (NAME("%sattn.key.proj.weight", base), find(l));
        const omnic__st_tensor *tv = (NAME("%sattn.value.proj.weight", base), find(l));
        if (!tk || !tv || tk->ndim != 4 || tv->ndim != 4 || tq->ndim != 4 || tk->dims[0] < 1 ||
            tq->dims[0] % tk->dims[0])
            return OMNIC_FAIL(l->err, OMNIC_E_INVALID, "%sattn: query / key / value projections do not fit",
                              base);
        B->key_dim = tk->dims[0], B->value_dim = tv->dims[0], B->heads = tq->dims[0] / tk->dims[0];
        const int64_t q2[4] = {B->heads * B->key_dim, in_c, 1, 1}, k2[4] = {B->key_dim, in_c, 1, 1},
                      v2[4] = {B->value_dim, in_c, 1, 1}, o2[4] = {in_c, B->heads * B->value_dim, 1, 1};
        omnic__tensor *dst[4] = {&B->q, &B->k, &B->v, &B->o};
        const int64_t *dd[4] = {q2, k2, v2, o2};
        static const char *const nm[4] = {"query", "key", "value", "output"};
        for (int i = 0; i < 4; i++) {
            OMNIC_TRY((NAME("%sattn.%s.proj.weight", base, nm[i]), bind(l, 4, dd[i], dst[i])));
            dst[i]->ndim = 2;
        }
    } else if ((NAME("%spw_exp.conv.weight", base), present(l))) {
        B->kind = OMNIC_MNV5_UIR;
        if ((NAME("%sdw_end.conv.weight", base), present(l)) ||
            (NAME("%sse.conv_reduce.weight", base), present(l)))
            return OMNIC_FAIL(l->err, OMNIC_E_UNSUPPORTED, "%s: a UIR block with dw_end or squeeze-excite",
                              base);
        const bool mid = (NAME("%sdw_mid.conv.weight", base), present(l));
        if ((NAME("%sdw_start.conv.weight", base), present(l)))
            OMNIC_TRY(CN("dw_start", 0, in_c, mid ? 1 : B->stride, &B->a, &c));
        else if (!mid && B->stride > 1)
            return OMNIC_FAIL(l->err, OMNIC_E_INVALID,
                              "%s: the stage's first block has no depthwise conv to stride", base);
        OMNIC_TRY(CN("pw_exp", 1, in_c, 1, &B->b, &B->mid_c));
        if (mid) OMNIC_TRY(CN("dw_mid", 0, B->mid_c, B->stride, &B->c, &c));
        OMNIC_TRY(CN("pw_proj", 1, B->mid_c, 1, &B->d, &B->out_c));
    } else {
        return OMNIC_FAIL(l->err, OMNIC_E_NOT_FOUND,
                          "%s: neither an EdgeResidual, a UIR nor an attention block", base);
    }
    if (B->kind != OMNIC_MNV5_ER && (NAME("%slayer_scale.gamma", base), present(l))) {
        const int64_t g1[1] = {B->out_c};
        OMNIC_TRY(bind(l, 1, g1, &B->gamma));
        B->has_gamma = true;
    }
    B->skip = B->stride == 1 && B->in_c == B->out_c;
#undef CN
    return OMNIC_OK;
}

static omnic_status load(loader *l)
{
    omnic__mnv5 *e = l->e;
    const char *P = e->cfg.prefix;
    char w[200], n[200];
    int64_t c;
    snprintf(w, sizeof w, "%sconv_stem.conv.weight", P), snprintf(n, sizeof n, "%sconv_stem.bn.weight", P);
    OMNIC_TRY(conv_norm(l, w, n, 2, 3, 2, &e->stem, &c));
    const int64_t bd[1] = {c};
    OMNIC_TRY((NAME("%sconv_stem.conv.bias", P),
               omnic__weight_bind_f32(l->st, l->name, 1, bd, &e->stem_b, &e->copies, l->err)));
    int total = 0;
    for (int s = 0; s < OMNIC_MNV5_MAX_STAGES; s++) {
        int nb = 0;
        while (nb < 256 && ((NAME("%sblocks.%d.%d.pw_exp.conv.weight", P, s, nb), present(l)) ||
                            (NAME("%sblocks.%d.%d.conv_exp.weight", P, s, nb), present(l)) ||
                            (NAME("%sblocks.%d.%d.attn.query.proj.weight", P, s, nb), present(l))))
            nb++;
        if (!nb) break;
        e->stage_len[e->n_stages++] = nb;
        total += nb;
    }
    if (e->n_stages < 2)
        return OMNIC_FAIL(l->err, OMNIC_E_NOT_FOUND, "%sblocks: %d stages found (the fusion needs 2)", P,
                          e->n_stages);
    e->blocks = omnic_alloc_array((size_t)total, sizeof *e->blocks);
    if (!e->blocks) return OMNIC_FAIL(l->err, OMNIC_E_NOMEM, "out of memory for %d vision blocks", total);
    memset(e->blocks, 0, (size_t)total * sizeof *e->blocks);
    for (int s = 0, k = 0; s < e->n_stages; s++)
        for (int b = 0; b < e->stage_len[s]; b++, k++) {
            OMNIC_TRY(load_block(l, P, s, b, c, &e->blocks[k]));
            c = e->blocks[k].out_c;
            e->n_blocks = k + 1;
        }
    /* the fusion: the last two stages' outputs, concatenated (c: the last one's channels) */
    int64_t mid, out, cat = c + e->blocks[e->n_blocks - 1 - e->stage_len[e->n_stages - 1]].out_c;
    snprintf(w, sizeof w, "%smsfa.ffn.pw_exp.conv.weight", P),
        snprintf(n, sizeof n, "%smsfa.ffn.pw_exp.bn.weight", P);
    OMNIC_TRY(conv_norm(l, w, n, 1, cat, 1, &e->msfa_exp, &mid));
    snprintf(w, sizeof w, "%smsfa.ffn.pw_proj.conv.weight", P),
        snprintf(n, sizeof n, "%smsfa.ffn.pw_proj.bn.weight", P);
    OMNIC_TRY(conv_norm(l, w, n, 1, mid, 1, &e->msfa_proj, &out));
    if (out != e->cfg.hidden)
        return OMNIC_FAIL(l->err, OMNIC_E_INVALID,
                          "%smsfa gives %lld channels, vision_config.hidden_size is %lld", P, (long long)out,
                          (long long)e->cfg.hidden);
    const int64_t hd[1] = {out}, pj[2] = {e->cfg.text_hidden, out};
    OMNIC_TRY((NAME("%smsfa.norm.weight", P), bind(l, 1, hd, &e->msfa_norm)));
    OMNIC_TRY((NAME("%ssoft_embedding_norm.weight", e->cfg.embed_prefix), bind(l, 1, hd, &e->soft_norm)));
    return (NAME("%sembedding_projection.weight", e->cfg.embed_prefix), bind(l, 2, pj, &e->proj));
}

void omnic__mnv5_deinit(omnic__mnv5 *e)
{
    if (!e) return;
    omnic__tensor_destroy(e->stem.taps);
    omnic__tensor_destroy(e->stem_b);
    for (int k = 0; e->blocks && k < e->n_blocks; k++)
        omnic__tensor_destroy(e->blocks[k].a.taps);
    omnic_free(e->blocks);
    for (int i = 0; i < e->n_consts; i++)
        omnic__tensor_destroy(e->consts[i]);
    omnic_free(e->consts);
    omnic__weight_copies_free(&e->copies);
    memset(e, 0, sizeof *e);
}

omnic_status omnic__mnv5_load(omnic__mnv5 *e, const omnic__mnv5_config *cfg, const omnic__safetensors *st,
                              omnic_err *err)
{
    memset(e, 0, sizeof *e);
    e->cfg = *cfg;
    loader l = {.e = e, .st = st, .err = err};
    omnic_status rc = load(&l);
    if (rc != OMNIC_OK) omnic__mnv5_deinit(e);
    return rc;
}

#undef NAME

/* ---- graph -------------------------------------------------------------------------------- */

#define W(t) omnic__g_weight(g, (t))

/* A map of pixel rows [h * w, c] and its geometry. */
typedef struct fmap {
    omnic__tensor *x;
    int64_t h, w, c;
} fmap;

/* TF-"same": the total padding of one side of i with kernel k and stride s, and what goes first. */
static int64_t same_pad(int64_t i, int k, int s)
{
    const int64_t p = ((i + s - 1) / s - 1) * s + k - i;
    return p > 0 ? p / 2 : 0;
}

static omnic__tensor *act(omnic__graph *g, omnic__tensor *x)
{
    return omnic__g_unary(g, OMNIC_OP_GELU_TANH, x);
}

static omnic__tensor *norm(omnic__graph *g, omnic__tensor *x, const omnic__tensor *w)
{
    return omnic__g_rmsnorm(g, x, W(w), 1e-6f, false);
}

/* A k x k conv (depthwise, or full with taps) of stride s with TF-same padding: [h * w, c] -> [ho * wo, o].
 */
static fmap spatial(omnic__graph *g, fmap in, const omnic__mnv5_conv *cv, const omnic__tensor *bias)
{
    const int s = cv->stride, k = cv->k;
    const int64_t ho = (in.h + s - 1) / s, wo = (in.w + s - 1) / s;
    fmap out = {NULL, ho, wo, cv->taps ? cv->taps->dims[0] : in.c};
    if (in.h % s) return out; /* (the graph's error below: sizes divide in mobilenetv5_300m_enc) */
    const int64_t d[2] = {in.h / s, s * in.w * in.c};
    omnic__tensor *x = omnic__g_reshape(g, in.x, 2, d);
    const omnic__dwconv2d_geom geo = {
        k, k, s, s, (int)same_pad(in.h, k, s), (int)same_pad(in.w, k, s), (int)in.w, (int)in.c, (int)wo};
    x = cv->taps ? omnic__g_conv2d(g, x, W(cv->taps), bias ? W(bias) : NULL, &geo)
                 : omnic__g_dwconv2d(g, x, W(&cv->w), NULL, &geo);
    const int64_t d2[2] = {ho * wo, out.c};
    out.x = omnic__g_reshape(g, x, 2, d2);
    return out;
}

/* conv -> norm (-> act) */
static fmap cna(omnic__graph *g, fmap in, const omnic__mnv5_conv *cv, bool pointwise, bool with_act,
                const omnic__tensor *bias)
{
    fmap out = in;
    if (pointwise) {
        out.x = omnic__g_matmul(g, in.x, W(&cv->w), NULL);
        out.c = cv->w.dims[0];
    } else {
        out = spatial(g, in, cv, bias);
    }
    out.x = norm(g, out.x, &cv->norm);
    if (with_act) out.x = act(g, out.x);
    return out;
}

/* An owned i32 table of n values f(i) kept by the tower (attention query positions, upsampling rows). */
static omnic__tensor *const_i32(omnic__graph *g, omnic__mnv5 *e, int64_t n, int64_t lo_w, int64_t hi_w)
{
    for (int i = 0; !lo_w && i < e->n_consts; i++) /* query positions: one table per length */
        if (!strcmp(e->consts[i]->name, "mnv5_qpos") && e->consts[i]->dims[0] == n) return W(e->consts[i]);
    omnic__tensor **grown = omnic_realloc(e->consts, ((size_t)e->n_consts + 1) * sizeof *grown);
    if (!grown) return NULL;
    e->consts = grown;
    omnic__tensor *t = NULL;
    omnic_err err;
    const int64_t d[1] = {n};
    if (omnic__tensor_create(&t, OMNIC_DTYPE_I32, 1, d, &err) != OMNIC_OK) return NULL;
    e->consts[e->n_consts++] = t;
    int32_t *v = t->data;
    for (int64_t i = 0; i < n; i++) /* lo_w > 0: row of pixel i of a hi_w-wide map in a map half as wide */
        v[i] = lo_w ? (int32_t)((i / hi_w / 2) * lo_w + (i % hi_w) / 2) : 0;
    snprintf(t->name, sizeof t->name, lo_w ? "mnv5_upsample" : "mnv5_qpos");
    return W(t);
}

static fmap block(omnic__graph *g, omnic__mnv5 *e, const omnic__mnv5_block *B, fmap x)
{
    fmap y = x;
    switch (B->kind) {
    case OMNIC_MNV5_ER:
        y = cna(g, x, &B->a, false, true, NULL);
        y = cna(g, y, &B->b, true, false, NULL);
        break;
    case OMNIC_MNV5_UIR:
        if (B->a.k) y = cna(g, y, &B->a, false, false, NULL);
        y = cna(g, y, &B->b, true, true, NULL);
        if (B->c.k) y = cna(g, y, &B->c, false, true, NULL);
        y = cna(g, y, &B->d, true, false, NULL);
        break;
    case OMNIC_MNV5_MQA: {
        fmap n = {norm(g, x.x, &B->norm), x.h, x.w, x.c};
        fmap kx = n, vx = n;
        if (B->k_down.k) kx = cna(g, n, &B->k_down, false, false, NULL);
        if (B->v_down.k) vx = cna(g, n, &B->v_down, false, false, NULL);
        const int64_t T = x.h * x.w, S = kx.h * kx.w, dq[3] = {T, B->heads, B->key_dim},
                      dk[3] = {S, 1, B->key_dim}, dv[3] = {vx.h * vx.w, 1, B->value_dim},
                      d2[2] = {T, B->heads * B->value_dim};
        omnic__tensor *q = omnic__g_reshape(g, omnic__g_matmul(g, n.x, W(&B->q), NULL), 3, dq);
        omnic__tensor *k = omnic__g_reshape(g, omnic__g_matmul(g, kx.x, W(&B->k), NULL), 3, dk);
        omnic__tensor *v = omnic__g_reshape(g, omnic__g_matmul(g, vx.x, W(&B->v), NULL), 3, dv);
        omnic__tensor *o = omnic__g_attention(g, q, k, v, const_i32(g, e, T, 0, 0), NULL, NULL,
                                              (float)(1.0 / sqrt((double)B->key_dim)), false, 0, 0.0f);
        y.x = omnic__g_matmul(g, omnic__g_reshape(g, o, 2, d2), W(&B->o), NULL);
        break;
    }
    }
    if (B->has_gamma) y.x = omnic__g_mul(g, y.x, W(&B->gamma));
    if (B->skip) y.x = omnic__g_add(g, y.x, x.x);
    return y;
}

omnic_status omnic__mnv5_build(omnic__mnv5 *e, omnic__module *m, omnic_err *err)
{
    const omnic__mnv5_config *c = &e->cfg;
    omnic__graph *g = &m->graph;
    const int64_t S = c->image, pd[2] = {S * S, 3};
    if (S < 1 || S % ((int64_t)1 << (e->n_stages + 1))) /* the stem and every stage halve the map */
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "vision tower: %lldx%lld images do not halve %d times",
                          (long long)S, (long long)S, e->n_stages + 1);
    fmap x = {omnic__g_input(g, "pixels", OMNIC_DTYPE_F32, 2, pd, OMNIC_VAR_NONE), S, S, 3};
    x = cna(g, x, &e->stem, false, true, e->stem_b);
    if (x.x) omnic__g_mark_output(g, x.x, "stem");
    fmap ends[OMNIC_MNV5_MAX_STAGES];
    for (int s = 0, k = 0; s < e->n_stages; s++) {
        for (int b = 0; b < e->stage_len[s]; b++, k++)
            x = block(g, e, &e->blocks[k], x);
        ends[s] = x;
        char name[16];
        snprintf(name, sizeof name, "stage%d", s);
        if (x.x) omnic__g_mark_output(g, x.x, name);
    }
    fmap hi = ends[e->n_stages - 2], lo = ends[e->n_stages - 1];
    if (hi.h != 2 * lo.h || hi.w != 2 * lo.w || hi.h != hi.w || hi.h % c->out_res)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "vision tower: the fused maps %lldx%lld and %lldx%lld (image %lld) do not pool to %lldx%lld",
            (long long)hi.h, (long long)hi.w, (long long)lo.h, (long long)lo.w, (long long)S,
            (long long)c->out_res, (long long)c->out_res);
    /* nearest upsampling: pixel (r, q) of the high map reads (r / 2, q / 2) of the low one */
    omnic__tensor *up = omnic__g_get_rows(g, lo.x, const_i32(g, e, hi.h * hi.w, lo.w, hi.w));
    fmap f = {omnic__g_concat(g, hi.x, up, 1), hi.h, hi.w, hi.c + lo.c};
    f = cna(g, f, &e->msfa_exp, true, true, NULL);
    f = cna(g, f, &e->msfa_proj, true, false, NULL);
    omnic__tensor *y = omnic__g_pool_avg(g, f.x, hi.h, hi.h / c->out_res);
    y = norm(g, y, &e->msfa_norm);
    if (y) omnic__g_mark_output(g, y, "features");
    /* the embedder's soft path, after Gemma3nModel's scale by sqrt(hidden) */
    y = omnic__g_scale(g, y, (float)sqrt((double)c->hidden), 0.0f);
    y = omnic__g_matmul(g, omnic__g_rmsnorm(g, y, W(&e->soft_norm), (float)c->embed_eps, false), W(&e->proj),
                        NULL);
    y = omnic__g_rmsnorm(g, y, NULL, (float)c->embed_eps, false);
    if (y) omnic__g_mark_output(g, y, "projected");
    return omnic__graph_status(g, err);
}

#undef W

void omnic__mnv5_cost(const omnic__mnv5 *e, double *macs, int64_t *rows, int64_t *width, int64_t *inter)
{
    double m = 0;
    int64_t h = e->cfg.image / 2, best = 0;
    m += (double)h * h * 27 * (double)e->stem.taps->dims[0];
    *rows = 0, *width = 0, *inter = 0;
    for (int s = 0, k = 0; s < e->n_stages; s++)
        for (int b = 0; b < e->stage_len[s]; b++, k++) {
            const omnic__mnv5_block *B = &e->blocks[k];
            if (B->stride == 2) h /= 2;
            const double px = (double)h * (double)h;
            if (B->kind == OMNIC_MNV5_ER) {
                m += px * (double)(B->a.k * B->a.k) * (double)B->in_c * (double)B->mid_c;
                m += px * (double)B->mid_c * (double)B->out_c;
            } else if (B->kind == OMNIC_MNV5_UIR) {
                const double pin = B->stride == 2 && B->c.k ? px * 4 : px;
                if (B->a.k) m += pin * (double)(B->a.k * B->a.k) * (double)B->in_c;
                m += pin * (double)B->in_c * (double)B->mid_c;
                if (B->c.k) m += px * (double)(B->c.k * B->c.k) * (double)B->mid_c;
                m += px * (double)B->mid_c * (double)B->out_c;
                if ((int64_t)px * B->mid_c > best)
                    best = (int64_t)px * B->mid_c, *rows = (int64_t)px, *width = B->in_c, *inter = B->mid_c;
            } else {
                const double kv = B->k_down.k ? px / 4 : px;
                m += px * (double)B->in_c * (double)(B->heads * B->key_dim) +
                     kv * (double)B->in_c * (double)(B->key_dim + B->value_dim) +
                     px * kv * (double)B->heads * (double)(B->key_dim + B->value_dim) +
                     px * (double)(B->heads * B->value_dim) * (double)B->in_c;
                if (B->k_down.k) m += 2 * kv * 9 * (double)B->in_c;
            }
        }
    const double fp = (double)(2 * h) * (double)(2 * h);
    m += fp * (double)e->msfa_exp.w.dims[1] * (double)e->msfa_exp.w.dims[0] +
         fp * (double)e->msfa_proj.w.dims[1] * (double)e->msfa_proj.w.dims[0];
    m += (double)(e->cfg.out_res * e->cfg.out_res) * (double)e->cfg.hidden * (double)e->cfg.text_hidden;
    *macs = m;
}
