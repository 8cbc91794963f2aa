/* PEFT LoRA adapters into per-target stacks (models/lora.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "io/json.h"
#include "models/lora.h"

/* The four targets of the Phi-3 layout, as PEFT names the modules. */
enum { T_QKV, T_O, T_GU, T_DOWN, N_TARGETS };
static const char *const target_name[N_TARGETS] = {"self_attn.qkv_proj", "self_attn.o_proj",
                                                   "mlp.gate_up_proj", "mlp.down_proj"};

static void free_layer(omnic__lora_layer *L)
{
    omnic__tensor *t[] = {L->a_qkv, L->b_q,    L->b_k,  L->b_v,    L->a_o,   L->b_o,
                          L->a_gu,  L->b_gate, L->b_up, L->a_down, L->b_down};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        omnic__tensor_destroy(t[i]);
}

void omnic__lora_free(omnic__lora *l)
{
    if (!l) return;
    for (int64_t i = 0; l->layers && i < l->n_layers; i++)
        free_layer(&l->layers[i]);
    omnic_free(l->layers);
    omnic_free(l);
}

int64_t omnic__lora_params(const omnic__lora *l)
{
    return l ? l->params : 0;
}

/* ---- element access (the file's bytes may be unaligned) ------------------------------------ */

static float get(const void *p, omnic_dtype dt, int64_t i)
{
    if (dt == OMNIC_DTYPE_F32) {
        float f;
        memcpy(&f, (const char *)p + i * 4, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const char *)p + i * 2, 2);
    return dt == OMNIC_DTYPE_BF16 ? omnic__bf16_to_f32(h) : omnic__f16_to_f32(h);
}

static void set(void *p, omnic_dtype dt, int64_t i, float v)
{
    if (dt == OMNIC_DTYPE_F32) {
        ((float *)p)[i] = v;
        return;
    }
    ((uint16_t *)p)[i] = dt == OMNIC_DTYPE_BF16 ? omnic__f32_to_bf16(v) : omnic__f32_to_f16(v);
}

/* ---- adapter_config.json ------------------------------------------------------------------ */

/* r and lora_alpha, and every setting that would change the numbers at its no-op value. */
static omnic_status parse_config(const char *path, int64_t *r, double *alpha, omnic_err *err)
{
    json_t *c = NULL;
    OMNIC_TRY(omnic__json_load_file(path, OMNIC_MAX_CONFIG_BYTES, &c, err));
    omnic_status s = OMNIC_OK;
    const char *type = "LORA", *bias = "none";
    if ((s = omnic__json_get_str(c, "peft_type", false, "LORA", path, &type, err)) == OMNIC_OK &&
        strcmp(type, "LORA") != 0)
        s = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: peft_type %s is not LORA", path, type);
    if (s == OMNIC_OK) s = omnic__json_get_i64(c, "r", true, 0, 1, 4096, path, r, err);
    if (s == OMNIC_OK) s = omnic__json_get_f64(c, "lora_alpha", true, 0, 1e-6, 1e6, path, alpha, err);
    if (s == OMNIC_OK && (s = omnic__json_get_str(c, "bias", false, "none", path, &bias, err)) == OMNIC_OK &&
        strcmp(bias, "none") != 0)
        s = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: bias \"%s\" (only \"none\": no trained biases)", path,
                       bias);
    static const struct {
        const char *key, *noop;
    } noops[] = {{"fan_in_fan_out", "false"},     {"use_dora", "false"},
                 {"use_rslora", "false"},         {"lora_bias", "false"},
                 {"rank_pattern", "{}"},          {"alpha_pattern", "{}"},
                 {"layers_to_transform", "null"}, {"modules_to_save", "null"},
                 {"layer_replication", "null"},   {"trainable_token_indices", "null"}};
    for (size_t i = 0; s == OMNIC_OK && i < sizeof noops / sizeof noops[0]; i++)
        s = omnic__json_expect(c, noops[i].key, noops[i].noop, path, err);
    json_decref(c);
    return s;
}

/* ---- tensor names ------------------------------------------------------------------------- */

/* [base_model.model.]model.layers.L.<target>.lora_{A,B}[.key].weight -> layer, target, 'A' / 'B'. */
static bool parse_name(const char *name, const char *key, int64_t *layer, int *target, char *half)
{
    static const char base[] = "base_model.model.", pre[] = "model.layers.";
    if (!strncmp(name, base, sizeof base - 1)) name += sizeof base - 1;
    if (strncmp(name, pre, sizeof pre - 1)) return false;
    name += sizeof pre - 1;
    char *end;
    long long l = strtoll(name, &end, 10);
    if (end == name || *end != '.' || l < 0) return false;
    name = end + 1;
    for (int t = 0; t < N_TARGETS; t++) {
        size_t n = strlen(target_name[t]);
        if (strncmp(name, target_name[t], n)) continue;
        const char *rest = name + n;
        char a[96], b[96];
        snprintf(a, sizeof a, ".lora_A.%s%sweight", key ? key : "", key ? "." : "");
        snprintf(b, sizeof b, ".lora_B.%s%sweight", key ? key : "", key ? "." : "");
        if (!strcmp(rest, a) || !strcmp(rest, b)) {
            *layer = l;
            *target = t;
            *half = rest[6];
            return true;
        }
    }
    return false;
}

/* ---- stacks ------------------------------------------------------------------------------- */

typedef struct dims {
    int64_t in, out;
} dims;

static dims target_dims(const omnic__text_config *c, int t)
{
    const int64_t H = c->hidden, qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim,
                  I = c->intermediate;
    switch (t) {
    case T_QKV:
        return (dims){H, qd + 2 * kvd};
    case T_O:
        return (dims){qd, H};
    case T_GU:
        return (dims){H, 2 * I};
    default:
        return (dims){I, H};
    }
}

static omnic_status alloc_stack(omnic__tensor **out, omnic_dtype dt, int64_t rows, int64_t cols,
                                const char *name, omnic_err *err)
{
    const int64_t d[2] = {rows, cols};
    OMNIC_TRY(omnic__tensor_create(out, dt, 2, d, err)); /* zeroed: padding ranks add exact zeros */
    snprintf((*out)->name, sizeof(*out)->name, "%s", name);
    return OMNIC_OK;
}

/* A [r, in] of adapter a into rows [a * R, a * R + r) of stack [E * R, in]. */
static void put_a(omnic__tensor *stack, int64_t R, int a, const omnic__st_tensor *A)
{
    const int64_t r = A->dims[0], in = A->dims[1];
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < in; j++)
            set(stack->data, stack->dtype, (a * R + i) * in + j, get(A->data, A->dtype, i * in + j));
}

/* Rows [r0, r0 + rows) of B [out, r] times scale into rows [a * rows, ...) of stack [E * rows, R]. */
static void put_b(omnic__tensor *stack, int64_t R, int a, const omnic__st_tensor *B, int64_t r0, int64_t rows,
                  float scale)
{
    const int64_t r = B->dims[1];
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < r; j++)
            set(stack->data, stack->dtype, (a * rows + i) * R + j,
                get(B->data, B->dtype, (r0 + i) * r + j) * scale);
}

omnic_status omnic__lora_build(const omnic__text_decoder *d, const omnic__lora_source *src, int n,
                               omnic__lora **out, omnic_err *err)
{
    const omnic__text_config *c = &d->cfg;
    if (n < 1 || n > OMNIC_MAX_ADAPTERS)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%d adapters (1..%d)", n, OMNIC_MAX_ADAPTERS);
    if (!c->fused_qkv || !c->fused_gate_up || c->n_experts > 0 || c->altup > 0)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "LoRA adapters run on the Phi-3 layout only (fused qkv_proj and gate_up_proj)");
    omnic__lora *l = omnic_alloc_array(1, sizeof *l);
    if (!l) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for adapters");
    memset(l, 0, sizeof *l);
    l->n = n;
    omnic_status s = OMNIC_OK;
    omnic_dtype dt = OMNIC_DTYPE_COUNT;
    const omnic__safetensors *st[OMNIC_MAX_ADAPTERS];
    const char *names[OMNIC_MAX_ADAPTERS];
    for (int a = 0; a < n && s == OMNIC_OK; a++) {
        snprintf(l->names[a], sizeof l->names[a], "%s", src[a].name);
        names[a] = src[a].name, st[a] = src[a].st;
        l->ranks[a] = src[a].r, l->alphas[a] = src[a].alpha;
        int e;
        if (src[a].r < 1 || src[a].r > 4096 || !(src[a].alpha > 0) ||
            frexp(src[a].alpha / (double)src[a].r, &e) != 0.5) {
            s = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                           "%s: lora_alpha / r = %g / %lld is not a power of 2 (omnic folds the scale into B "
                           "exactly)",
                           src[a].what, src[a].alpha, (long long)src[a].r);
            break;
        }
        if (l->ranks[a] > l->rank) l->rank = l->ranks[a];
        for (size_t i = 0; i < omnic__st_count(st[a]) && s == OMNIC_OK; i++) {
            const omnic__st_tensor *t = omnic__st_at(st[a], i);
            int64_t layer;
            int target;
            char half;
            if (src[a].key && !strstr(t->name, ".lora_A.") && !strstr(t->name, ".lora_B."))
                continue; /* the base checkpoint's own weights */
            if (!parse_name(t->name, src[a].key, &layer, &target, &half) || layer >= c->n_layers) {
                if (src[a].key) continue; /* another adapter's tensors in the base checkpoint */
                s = OMNIC_FAIL(
                    err, OMNIC_E_UNSUPPORTED,
                    "%s: tensor %s is not a lora_A / lora_B weight of qkv_proj, o_proj, gate_up_proj "
                    "or down_proj of layers 0..%lld",
                    src[a].what, t->name, (long long)c->n_layers - 1);
            } else if (t->dtype != OMNIC_DTYPE_F32 && t->dtype != OMNIC_DTYPE_BF16 &&
                       t->dtype != OMNIC_DTYPE_F16)
                s = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: %s is %s (f32, bf16 or f16)", src[a].what,
                               t->name, omnic_dtype_name(t->dtype));
            else
                dt = dt == OMNIC_DTYPE_COUNT || dt == t->dtype ? t->dtype : OMNIC_DTYPE_F32;
        }
    }
    const int64_t E = n, R = l->rank, qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim,
                  I = c->intermediate, H = c->hidden;
    if (s == OMNIC_OK && dt == OMNIC_DTYPE_COUNT)
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: the adapters hold no tensors", src[0].what);
    if (s == OMNIC_OK) {
        l->n_layers = c->n_layers;
        l->layers = omnic_alloc_array((size_t)c->n_layers, sizeof *l->layers);
        if (!l->layers)
            s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for adapter layers");
        else
            memset(l->layers, 0, (size_t)c->n_layers * sizeof *l->layers);
    }
    for (int64_t i = 0; i < c->n_layers && s == OMNIC_OK; i++) {
        omnic__lora_layer *L = &l->layers[i];
        char nm[64];
#define STACK(field, rows, cols, tag)                                                                        \
    (snprintf(nm, sizeof nm, "lora.l%lld.%s", (long long)i, tag),                                            \
     alloc_stack(&L->field, dt, rows, cols, nm, err))
        if ((s = STACK(a_qkv, E * R, H, "a_qkv")) != OMNIC_OK ||
            (s = STACK(b_q, E * qd, R, "b_q")) != OMNIC_OK ||
            (s = STACK(b_k, E * kvd, R, "b_k")) != OMNIC_OK ||
            (s = STACK(b_v, E * kvd, R, "b_v")) != OMNIC_OK ||
            (s = STACK(a_o, E * R, qd, "a_o")) != OMNIC_OK || (s = STACK(b_o, E * H, R, "b_o")) != OMNIC_OK ||
            (s = STACK(a_gu, E * R, H, "a_gu")) != OMNIC_OK ||
            (s = STACK(b_gate, E * I, R, "b_gate")) != OMNIC_OK ||
            (s = STACK(b_up, E * I, R, "b_up")) != OMNIC_OK ||
            (s = STACK(a_down, E * R, I, "a_down")) != OMNIC_OK ||
            (s = STACK(b_down, E * H, R, "b_down")) != OMNIC_OK)
            break;
#undef STACK
        for (int a = 0; a < n && s == OMNIC_OK; a++) {
            const float scale = (float)(l->alphas[a] / (double)l->ranks[a]);
            for (int t = 0; t < N_TARGETS && s == OMNIC_OK; t++) {
                char an[256], bn[256];
                const omnic__st_tensor *A = NULL, *B = NULL;
                static const char *const prefixes[2] = {"base_model.model.", ""};
                const char *key = src[a].key ? src[a].key : "", *dot = src[a].key ? "." : "";
                for (int p = 0; p < 2 && !A && !B; p++) {
                    snprintf(an, sizeof an, "%smodel.layers.%lld.%s.lora_A.%s%sweight", prefixes[p],
                             (long long)i, target_name[t], key, dot);
                    snprintf(bn, sizeof bn, "%smodel.layers.%lld.%s.lora_B.%s%sweight", prefixes[p],
                             (long long)i, target_name[t], key, dot);
                    A = omnic__st_find(st[a], an);
                    B = omnic__st_find(st[a], bn);
                }
                if (!A && !B) continue; /* the adapter leaves this module alone */
                const dims td = target_dims(c, t);
                const int64_t r = l->ranks[a];
                if (!A || !B) {
                    s = OMNIC_FAIL(err, OMNIC_E_INVALID, "%s adapter: %s has no %s half", names[a],
                                   A ? an : bn, A ? "lora_B" : "lora_A");
                    break;
                }
                if (A->ndim != 2 || A->dims[0] != r || A->dims[1] != td.in || B->ndim != 2 ||
                    B->dims[0] != td.out || B->dims[1] != r) {
                    s = OMNIC_FAIL(
                        err, OMNIC_E_INVALID,
                        "%s adapter: %s [%lld, %lld] / lora_B [%lld, %lld] do not fit r %lld and the "
                        "layer's [%lld -> %lld]",
                        names[a], an, (long long)A->dims[0], (long long)A->dims[1], (long long)B->dims[0],
                        (long long)B->dims[1], (long long)r, (long long)td.in, (long long)td.out);
                    break;
                }
                l->params += A->dims[0] * A->dims[1] + B->dims[0] * B->dims[1];
                switch (t) {
                case T_QKV:
                    put_a(L->a_qkv, R, a, A);
                    put_b(L->b_q, R, a, B, 0, qd, scale);
                    put_b(L->b_k, R, a, B, qd, kvd, scale);
                    put_b(L->b_v, R, a, B, qd + kvd, kvd, scale);
                    break;
                case T_O:
                    put_a(L->a_o, R, a, A);
                    put_b(L->b_o, R, a, B, 0, H, scale);
                    break;
                case T_GU: /* gate is the first half of gate_up_proj, up the second */
                    put_a(L->a_gu, R, a, A);
                    put_b(L->b_gate, R, a, B, 0, I, scale);
                    put_b(L->b_up, R, a, B, I, I, scale);
                    break;
                default:
                    put_a(L->a_down, R, a, A);
                    put_b(L->b_down, R, a, B, 0, H, scale);
                    break;
                }
            }
        }
    }
    if (s != OMNIC_OK) {
        omnic__lora_free(l);
        return s;
    }
    *out = l;
    return OMNIC_OK;
}

omnic_status omnic__lora_load(const omnic__text_decoder *d, const char *const *dirs, const char *const *names,
                              int n, omnic__lora **out, omnic_err *err)
{
    if (n < 1 || n > OMNIC_MAX_ADAPTERS)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%d adapters (1..%d)", n, OMNIC_MAX_ADAPTERS);
    omnic__safetensors *st[OMNIC_MAX_ADAPTERS] = {0};
    omnic__lora_source src[OMNIC_MAX_ADAPTERS];
    char paths[OMNIC_MAX_ADAPTERS][4096], path[4096];
    omnic_status s = OMNIC_OK;
    for (int a = 0; a < n && s == OMNIC_OK; a++) {
        src[a] = (omnic__lora_source){.name = names[a], .what = paths[a]};
        snprintf(path, sizeof path, "%s/adapter_config.json", dirs[a]);
        if ((s = parse_config(path, &src[a].r, &src[a].alpha, err)) != OMNIC_OK) break;
        snprintf(paths[a], sizeof paths[a], "%s/adapter_model.safetensors", dirs[a]);
        if ((s = omnic__st_open_file(paths[a], &st[a], err)) != OMNIC_OK) break;
        src[a].st = st[a];
    }
    if (s == OMNIC_OK) s = omnic__lora_build(d, src, n, out, err);
    for (int a = 0; a < n; a++)
        omnic__st_close(st[a]);
    return s;
}
