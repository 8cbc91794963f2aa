/* Graph building: leaves, views and op nodes with shape inference and checks. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/quant.h"
#include "runtime/graph.h"

omnic_status omnic__graph_init(omnic__graph *g, int64_t capacity, omnic_err *err)
{
    memset(g, 0, sizeof *g);
    if (capacity < 1 || capacity > INT32_MAX)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "graph capacity %lld outside 1..%d", (long long)capacity,
                          INT32_MAX);
    g->capacity = capacity;
    g->row_multiple = 1;
    return OMNIC_OK;
}

void omnic__graph_deinit(omnic__graph *g)
{
    for (int i = 0; i < g->n_tensors; i++)
        omnic_free(g->tensors[i]);
    omnic_free(g->tensors);
    omnic_free(g->nodes);
    memset(g, 0, sizeof *g);
}

omnic_status omnic__graph_status(const omnic__graph *g, omnic_err *err)
{
    if (g->status != OMNIC_OK && err) *err = g->err;
    return g->status;
}

__attribute__((format(printf, 2, 3))) static void *gfail(omnic__graph *g, const char *fmt, ...)
{
    if (g->status != OMNIC_OK) return NULL;
    char msg[OMNIC_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g->status = OMNIC_FAIL(&g->err, OMNIC_E_INVALID, "graph: %s", msg);
    return NULL;
}

static void *gnomem(omnic__graph *g)
{
    if (g->status == OMNIC_OK) g->status = OMNIC_FAIL(&g->err, OMNIC_E_NOMEM, "graph: out of memory");
    return NULL;
}

omnic__gtensor *omnic__g_of(omnic__graph *g, const omnic__tensor *t)
{
    (void)g;
    return (omnic__gtensor *)(uintptr_t)t; /* t is the first member of its gtensor */
}

int omnic__g_index(const omnic__graph *g, const omnic__tensor *t)
{
    (void)g;
    return ((const omnic__gtensor *)t)->id;
}

static const char *tname(const omnic__tensor *t)
{
    return t->name[0] ? t->name : "(unnamed)";
}

static omnic__gtensor *new_tensor(omnic__graph *g, omnic__gkind kind, omnic_dtype dt, int ndim,
                                  const int64_t *dims, omnic__var var)
{
    if (g->status != OMNIC_OK) return NULL;
    if (g->n_tensors == g->cap_tensors) {
        int cap = g->cap_tensors ? 2 * g->cap_tensors : 256;
        if (cap > 4 * OMNIC_MAX_GRAPH_NODES)
            return gfail(g, "more than %d tensors", 4 * OMNIC_MAX_GRAPH_NODES);
        omnic__gtensor **nt = omnic_realloc(g->tensors, (size_t)cap * sizeof *nt);
        if (!nt) return gnomem(g);
        g->tensors = nt;
        g->cap_tensors = cap;
    }
    omnic__gtensor *gt = omnic_alloc_array(1, sizeof *gt);
    if (!gt) return gnomem(g);
    omnic_err e;
    if (omnic__tensor_init(&gt->t, dt, ndim, dims, &e) != OMNIC_OK) {
        omnic_free(gt);
        return gfail(g, "%s", e.msg);
    }
    size_t nbytes;
    if (omnic__tensor_nbytes(&gt->t, &nbytes, &e) != OMNIC_OK) {
        omnic_free(gt);
        return gfail(g, "%s", e.msg);
    }
    if (var != OMNIC_VAR_NONE && (ndim < 1 || dims[0] != g->capacity)) {
        omnic_free(gt);
        return gfail(g, "a variable-length tensor needs dims[0] == capacity %lld", (long long)g->capacity);
    }
    gt->id = g->n_tensors;
    gt->kind = kind;
    gt->var = var;
    gt->cap_rows = ndim ? dims[0] : 1;
    gt->var_div = 1;
    gt->base = -1;
    gt->def = gt->last_use = -1;
    g->tensors[g->n_tensors++] = gt;
    return gt;
}

static omnic__gnode *new_node(omnic__graph *g, omnic__op op, omnic__tensor *dst, int nsrc,
                              omnic__tensor *const *src)
{
    if (g->status != OMNIC_OK) return NULL;
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 256;
        if (cap > OMNIC_MAX_GRAPH_NODES) return gfail(g, "more than %d nodes", OMNIC_MAX_GRAPH_NODES);
        omnic__gnode *nn = omnic_realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return gnomem(g);
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    omnic__gnode *n = &g->nodes[g->n_nodes++];
    memset(n, 0, sizeof *n);
    n->node.op = op;
    n->node.dst = dst;
    n->dst = omnic__g_of(g, dst)->id;
    for (int i = 0; i < OMNIC_MAX_SRC; i++) {
        n->src[i] = -1;
        if (i < nsrc && src[i]) {
            n->node.src[i] = src[i];
            n->src[i] = omnic__g_of(g, src[i])->id;
        }
    }
    return n;
}

/* A new intermediate with x's variability and the given shape. */
static omnic__tensor *result(omnic__graph *g, const omnic__tensor *like, omnic_dtype dt, int ndim,
                             const int64_t *dims)
{
    const omnic__gtensor *gl = omnic__g_of(g, like);
    if (gl->var != OMNIC_VAR_NONE && gl->var_div != 1 && (ndim < 1 || dims[0] != like->dims[0]))
        return gfail(g, "a result of grouped rows %s must keep its row count", tname(like));
    omnic__gtensor *gt = gl->var_div == 1
                             ? new_tensor(g, OMNIC_GT_INTERMEDIATE, dt, ndim, dims, gl->var)
                             : new_tensor(g, OMNIC_GT_INTERMEDIATE, dt, ndim, dims, OMNIC_VAR_NONE);
    if (!gt) return NULL;
    if (gl->var_div != 1) { /* rows follow n / var_div: dims[0] is capacity / var_div */
        gt->var = gl->var;
        gt->var_div = gl->var_div;
    }
    return &gt->t;
}

omnic__tensor *omnic__g_input(omnic__graph *g, const char *name, omnic_dtype dt, int ndim,
                              const int64_t *dims, omnic__var var)
{
    omnic__gtensor *gt = new_tensor(g, OMNIC_GT_INPUT, dt, ndim, dims, var);
    if (!gt) return NULL;
    snprintf(gt->t.name, sizeof gt->t.name, "%s", name);
    return &gt->t;
}

omnic__tensor *omnic__g_weight(omnic__graph *g, const omnic__tensor *w)
{
    if (!w) return gfail(g, "missing weight");
    omnic__gtensor *gt = new_tensor(g, OMNIC_GT_WEIGHT, w->dtype, w->ndim, w->dims, OMNIC_VAR_NONE);
    if (!gt) return NULL;
    gt->t.data = w->data;
    memcpy(gt->t.name, w->name, sizeof gt->t.name);
    return &gt->t;
}

omnic__tensor *omnic__g_kv_layer(omnic__graph *g, bool is_v, int layer, omnic_dtype dt, int64_t pool_rows,
                                 int64_t n_kv, int64_t head_dim)
{
    int64_t dims[3] = {pool_rows, n_kv, head_dim};
    omnic__gtensor *gt = new_tensor(g, is_v ? OMNIC_GT_KV_V : OMNIC_GT_KV_K, dt, 3, dims, OMNIC_VAR_NONE);
    if (!gt) return NULL;
    gt->layer = layer;
    snprintf(gt->t.name, sizeof gt->t.name, "kv_l%d_%c", layer, is_v ? 'v' : 'k');
    return &gt->t;
}

static omnic__tensor *kv_rows(omnic__graph *g, omnic__gkind kind, const char *name)
{
    int64_t dims[1] = {g->capacity};
    omnic__gtensor *gt = new_tensor(g, kind, OMNIC_DTYPE_I32, 1, dims, OMNIC_VAR_T);
    if (!gt) return NULL;
    snprintf(gt->t.name, sizeof gt->t.name, "%s", name);
    return &gt->t;
}

omnic__tensor *omnic__g_kv_index(omnic__graph *g)
{
    return kv_rows(g, OMNIC_GT_KV_INDEX, "kv_index");
}
omnic__tensor *omnic__g_kv_begin(omnic__graph *g)
{
    return kv_rows(g, OMNIC_GT_KV_BEGIN, "kv_begin");
}

omnic__tensor *omnic__g_view_rows(omnic__graph *g, omnic__tensor *x, int64_t row0, int64_t n_rows)
{
    if (!x) return NULL;
    omnic__gtensor *bx = omnic__g_of(g, x);
    if (bx->var != OMNIC_VAR_NONE) return gfail(g, "a row view of variable-length %s", tname(x));
    if (x->ndim < 1 || row0 < 0 || n_rows < 0 || row0 + n_rows > x->dims[0])
        return gfail(g, "row view [%lld, +%lld) outside %s's %lld rows", (long long)row0, (long long)n_rows,
                     tname(x), (long long)(x->ndim ? x->dims[0] : 0));
    int64_t dims[OMNIC_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    dims[0] = n_rows;
    omnic__gtensor *gt = new_tensor(g, OMNIC_GT_VIEW, x->dtype, x->ndim, dims, OMNIC_VAR_NONE);
    if (!gt) return NULL;
    gt->base = bx->id;
    gt->view_row = row0;
    snprintf(gt->t.name, sizeof gt->t.name, "%.40s[rows]", x->name);
    return &gt->t;
}

omnic__tensor *omnic__g_reshape(omnic__graph *g, omnic__tensor *x, int ndim, const int64_t *dims)
{
    if (!x) return NULL;
    omnic__gtensor *bx = omnic__g_of(g, x);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= dims[i];
    if (n != omnic__tensor_nelem(x)) return gfail(g, "reshape of %s changes its element count", tname(x));
    if (bx->var != OMNIC_VAR_NONE && (ndim < 1 || dims[0] != x->dims[0]))
        return gfail(g, "reshape of variable-length %s must keep dims[0]", tname(x));
    omnic__gtensor *gt =
        new_tensor(g, OMNIC_GT_VIEW, x->dtype, ndim, dims, bx->var_div == 1 ? bx->var : OMNIC_VAR_NONE);
    if (!gt) return NULL;
    gt->var = bx->var;
    gt->var_div = bx->var_div;
    gt->base = bx->id;
    memcpy(gt->t.name, x->name, sizeof gt->t.name);
    return &gt->t;
}

omnic__tensor *omnic__g_group_rows(omnic__graph *g, omnic__tensor *x, int64_t k)
{
    if (!x) return NULL;
    omnic__gtensor *bx = omnic__g_of(g, x);
    if (x->ndim != 2 || k < 1 || x->dims[0] % k ||
        (bx->var != OMNIC_VAR_NONE && bx->var_div != 1 && bx->kind == OMNIC_GT_VIEW))
        return gfail(g, "group_rows: %s must be 2-D with rows a multiple of %lld (not a grouped view)",
                     tname(x), (long long)k);
    int64_t dims[2] = {x->dims[0] / k, x->dims[1] * k};
    omnic__gtensor *gt = new_tensor(g, OMNIC_GT_VIEW, x->dtype, 2, dims, OMNIC_VAR_NONE);
    if (!gt) return NULL;
    gt->base = bx->id;
    memcpy(gt->t.name, x->name, sizeof gt->t.name);
    if (bx->var != OMNIC_VAR_NONE) { /* a result of grouped rows groups further: n / (div * k) */
        gt->var = bx->var;
        gt->var_div = bx->var_div * k;
        int64_t a = g->row_multiple, b = gt->var_div; /* row_multiple = lcm(row_multiple, var_div) */
        while (b) {
            int64_t r = a % b;
            a = b;
            b = r;
        }
        g->row_multiple = g->row_multiple / a * gt->var_div;
    }
    return &gt->t;
}

void omnic__g_mark_output(omnic__graph *g, omnic__tensor *t, const char *name)
{
    if (!t) return;
    omnic__gtensor *gt = omnic__g_of(g, t);
    if (gt->kind != OMNIC_GT_INTERMEDIATE) {
        gfail(g, "output %s must be produced by a node", name);
        return;
    }
    gt->is_output = true;
    snprintf(gt->t.name, sizeof gt->t.name, "%s", name);
}

static bool is_float_w(omnic_dtype t)
{
    return t == OMNIC_DTYPE_F32 || t == OMNIC_DTYPE_F16 || t == OMNIC_DTYPE_BF16;
}
/* Matmul weights and get_rows tables may also be block-quantized (q8_0, q4_0, and q4_0x16 /
 * q8_0x16 with whole groups of 16 rows). */
static bool is_table_w(const omnic__tensor *w)
{
    if (w->dtype == OMNIC_DTYPE_Q4_0X16 || w->dtype == OMNIC_DTYPE_Q8_0X16)
        return w->ndim == 2 && w->dims[0] % OMNIC_X16_ROWS == 0;
    return is_float_w(w->dtype) || w->dtype == OMNIC_DTYPE_Q8_0 || w->dtype == OMNIC_DTYPE_Q4_0;
}

static bool need_f32(omnic__graph *g, const omnic__tensor *x, const char *op)
{
    if (x->dtype == OMNIC_DTYPE_F32) return true;
    gfail(g, "%s: %s is %s, expected f32", op, tname(x), omnic_dtype_name(x->dtype));
    return false;
}

omnic__tensor *omnic__g_matmul(omnic__graph *g, omnic__tensor *a, omnic__tensor *w, omnic__tensor *bias)
{
    if (!a || !w) return NULL;
    if (!need_f32(g, a, "matmul")) return NULL;
    if (w->ndim != 2 || !is_table_w(w))
        return gfail(g, "matmul: weight %s must be a 2-D float or quantized weight", tname(w));
    if (omnic__tensor_cols(a) != w->dims[1])
        return gfail(g, "matmul: %s has %lld cols, weight %s expects %lld", tname(a),
                     (long long)omnic__tensor_cols(a), tname(w), (long long)w->dims[1]);
    if (bias && (bias->dtype != OMNIC_DTYPE_F32 || omnic__tensor_nelem(bias) != w->dims[0]))
        return gfail(g, "matmul: bias %s must be f32 [%lld]", tname(bias), (long long)w->dims[0]);
    int64_t dims[OMNIC_MAX_DIMS];
    memcpy(dims, a->dims, sizeof dims);
    dims[a->ndim - 1] = w->dims[0];
    omnic__tensor *d = result(g, a, OMNIC_DTYPE_F32, a->ndim, dims);
    omnic__tensor *src[3] = {a, w, bias};
    omnic__gnode *n = new_node(g, OMNIC_OP_MATMUL, d, 3, src);
    if (!n) return NULL;
    n->node.ip[0] = g->batch_invariant;
    return d;
}

static omnic__tensor *binary(omnic__graph *g, omnic__op op, omnic__tensor *a, omnic__tensor *b)
{
    if (!a || !b) return NULL;
    if (!need_f32(g, a, omnic__op_names[op]) || !is_float_w(b->dtype)) return gfail(g, "binary op dtypes");
    bool same =
        omnic__tensor_nelem(a) == omnic__tensor_nelem(b) && omnic__g_of(g, a)->var == omnic__g_of(g, b)->var;
    bool row = b->ndim >= 1 && omnic__tensor_nelem(b) == omnic__tensor_cols(a) &&
               omnic__g_of(g, b)->var == OMNIC_VAR_NONE;
    /* one value per row: b [rows of a, 1], varying with a */
    bool col = b->ndim == a->ndim && omnic__tensor_cols(b) == 1 &&
               omnic__tensor_rows(b) == omnic__tensor_rows(a) &&
               omnic__g_of(g, a)->var == omnic__g_of(g, b)->var;
    if (!same && !row && !col)
        return gfail(g, "%s: %s does not broadcast onto %s", omnic__op_names[op], tname(b), tname(a));
    omnic__tensor *d = result(g, a, OMNIC_DTYPE_F32, a->ndim, a->dims);
    omnic__tensor *src[2] = {a, b};
    return new_node(g, op, d, 2, src) ? d : NULL;
}

omnic__tensor *omnic__g_add(omnic__graph *g, omnic__tensor *a, omnic__tensor *b)
{
    return binary(g, OMNIC_OP_ADD, a, b);
}
omnic__tensor *omnic__g_mul(omnic__graph *g, omnic__tensor *a, omnic__tensor *b)
{
    return binary(g, OMNIC_OP_MUL, a, b);
}

omnic__tensor *omnic__g_scale(omnic__graph *g, omnic__tensor *a, float mul, float add)
{
    if (!a || !need_f32(g, a, "scale")) return NULL;
    omnic__tensor *d = result(g, a, OMNIC_DTYPE_F32, a->ndim, a->dims);
    omnic__gnode *n = new_node(g, OMNIC_OP_SCALE, d, 1, &a);
    if (!n) return NULL;
    n->node.fp[0] = mul;
    n->node.fp[1] = add;
    return d;
}

static bool row_param(omnic__graph *g, const omnic__tensor *x, const omnic__tensor *w, const char *op)
{
    if (!w) return true;
    if (is_float_w(w->dtype) && omnic__tensor_nelem(w) == omnic__tensor_cols(x)) return true;
    gfail(g, "%s: %s must be a float vector of %lld", op, tname(w), (long long)omnic__tensor_cols(x));
    return false;
}

omnic__tensor *omnic__g_rmsnorm(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, float eps, bool one_plus)
{
    if (!x || !need_f32(g, x, "rmsnorm") || !row_param(g, x, w, "rmsnorm")) return NULL;
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, x->ndim, x->dims);
    omnic__tensor *src[2] = {x, w};
    omnic__gnode *n = new_node(g, OMNIC_OP_RMSNORM, d, 2, src);
    if (!n) return NULL;
    n->node.fp[0] = eps;
    n->node.ip[0] = one_plus;
    return d;
}

omnic__tensor *omnic__g_layernorm(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, omnic__tensor *b,
                                  float eps)
{
    if (!x || !need_f32(g, x, "layernorm") || !row_param(g, x, w, "layernorm") ||
        !row_param(g, x, b, "layernorm"))
        return NULL;
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, x->ndim, x->dims);
    omnic__tensor *src[3] = {x, w, b};
    omnic__gnode *n = new_node(g, OMNIC_OP_LAYERNORM, d, 3, src);
    if (!n) return NULL;
    n->node.fp[0] = eps;
    return d;
}

omnic__tensor *omnic__g_softmax(omnic__graph *g, omnic__tensor *x, float scale)
{
    if (!x || !need_f32(g, x, "softmax")) return NULL;
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, x->ndim, x->dims);
    omnic__gnode *n = new_node(g, OMNIC_OP_SOFTMAX, d, 1, &x);
    if (!n) return NULL;
    n->node.fp[0] = scale;
    return d;
}

/* Every RoPE form: 1-D positions [T] (sections NULL) or M-RoPE coordinates [T, 3] with
 * sections; one table, or two with a per-row selector. */
static omnic__tensor *rope_node(omnic__graph *g, omnic__tensor *x, omnic__tensor *pos, int n_rot, int mode,
                                float theta, omnic__tensor *inv_freq, omnic__tensor *sel, const int *sections,
                                float attn_factor)
{
    if (!x || !pos || !need_f32(g, x, "rope")) return NULL;
    if (x->ndim != 3) return gfail(g, "rope: %s must be [T, heads, head_dim]", tname(x));
    const int pdim = sections ? 2 : 1;
    if (pos->dtype != OMNIC_DTYPE_I32 || pos->ndim != pdim || pos->dims[0] != x->dims[0] ||
        (sections && pos->dims[1] != 3))
        return gfail(g, "rope: positions %s must be i32 [%lld%s]", tname(pos), (long long)x->dims[0],
                     sections ? ", 3" : "");
    if (n_rot < 2 || n_rot % 2 || n_rot > x->dims[2] || (mode != 0 && mode != 1))
        return gfail(g, "rope: n_rot %d / mode %d invalid for head_dim %lld", n_rot, mode,
                     (long long)x->dims[2]);
    if (sections && (sections[0] < 0 || sections[1] < 0 || sections[2] < 0 ||
                     sections[0] + sections[1] + sections[2] != n_rot / 2))
        return gfail(g,
                     "rope: mrope sections %d + %d + %d must be non-negative and sum to %d (rotary dims / 2)",
                     sections[0], sections[1], sections[2], n_rot / 2);
    const int tables = sel ? 2 : 1;
    if (sel && (!inv_freq || sel->dtype != OMNIC_DTYPE_I32 || sel->ndim != 1 || sel->dims[0] != x->dims[0]))
        return gfail(g, "rope: table selector %s must be i32 [%lld] beside a table", tname(sel),
                     (long long)x->dims[0]);
    if (inv_freq &&
        (inv_freq->dtype != OMNIC_DTYPE_F32 || omnic__tensor_nelem(inv_freq) != tables * (n_rot / 2)))
        return gfail(g, "rope: inv_freq %s must be f32 [%d x %d]", tname(inv_freq), tables, n_rot / 2);
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, x->ndim, x->dims);
    omnic__tensor *src[4] = {x, pos, inv_freq, sel};
    omnic__gnode *n = new_node(g, OMNIC_OP_ROPE, d, sel ? 4 : 3, src);
    if (!n) return NULL;
    n->node.ip[0] = n_rot;
    n->node.ip[1] = mode;
    for (int k = 0; sections && k < 3; k++)
        n->node.ip[2 + k] = sections[k];
    n->node.fp[0] = theta;
    n->node.fp[1] = attn_factor;
    return d;
}

omnic__tensor *omnic__g_rope(omnic__graph *g, omnic__tensor *x, omnic__tensor *pos, int n_rot, int mode,
                             float theta, omnic__tensor *inv_freq, float attn_factor)
{
    return rope_node(g, x, pos, n_rot, mode, theta, inv_freq, NULL, NULL, attn_factor);
}

omnic__tensor *omnic__g_rope_select(omnic__graph *g, omnic__tensor *x, omnic__tensor *pos, int n_rot,
                                    int mode, float theta, omnic__tensor *inv_freq, omnic__tensor *sel,
                                    float attn_factor)
{
    return rope_node(g, x, pos, n_rot, mode, theta, inv_freq, sel, NULL, attn_factor);
}

omnic__tensor *omnic__g_rope_mrope(omnic__graph *g, omnic__tensor *x, omnic__tensor *pos, int n_rot,
                                   float theta, omnic__tensor *inv_freq, const int sections[3],
                                   bool interleaved, float attn_factor)
{
    omnic__tensor *d = rope_node(g, x, pos, n_rot, 0, theta, inv_freq, NULL, sections, attn_factor);
    if (d) g->nodes[g->n_nodes - 1].node.ip[5] = interleaved;
    return d;
}

static omnic__tensor *attention_node(omnic__graph *g, omnic__tensor *q, omnic__tensor *k, omnic__tensor *v,
                                     omnic__tensor *qpos, omnic__tensor *bias, omnic__tensor *kv_begin,
                                     omnic__tensor *span, float scale, bool causal, int window, float softcap)
{
    if (!q || !k || !v || !qpos || !need_f32(g, q, "attention")) return NULL;
    if (q->ndim != 3 || k->ndim != 3 || !omnic__tensor_same_shape(k, v))
        return gfail(g, "attention: q/k/v must be 3-D with k and v alike");
    if (k->dtype != OMNIC_DTYPE_F32 && k->dtype != OMNIC_DTYPE_F16)
        return gfail(g, "attention: K/V dtype %s is not f32 or f16", omnic_dtype_name(k->dtype));
    if (q->dims[2] != k->dims[2] || k->dims[1] < 1 || q->dims[1] % k->dims[1])
        return gfail(g, "attention: %lld heads of %lld over %lld kv heads of %lld do not group",
                     (long long)q->dims[1], (long long)q->dims[2], (long long)k->dims[1],
                     (long long)k->dims[2]);
    if (qpos->dtype != OMNIC_DTYPE_I32 || qpos->ndim != 1 || qpos->dims[0] != q->dims[0])
        return gfail(g, "attention: qpos %s must be i32 [%lld]", tname(qpos), (long long)q->dims[0]);
    /* bias rows follow q's rows: both fixed, or both the call's n (row t at t * S either way) */
    if (bias && (bias->dtype != OMNIC_DTYPE_F32 || bias->ndim != 2 ||
                 omnic__g_of(g, bias)->var != omnic__g_of(g, q)->var || bias->dims[0] != q->dims[0] ||
                 bias->dims[1] != k->dims[0]))
        return gfail(g, "attention: bias %s must be f32 [T, S] with q's row count", tname(bias));
    if (kv_begin &&
        (kv_begin->dtype != OMNIC_DTYPE_I32 || kv_begin->ndim != 1 || kv_begin->dims[0] != q->dims[0]))
        return gfail(g, "attention: kv_begin %s must be i32 [%lld]", tname(kv_begin), (long long)q->dims[0]);
    /* span rows follow q's rows as the bias does, and are relative to kv_begin */
    if (span && (!kv_begin || !causal || span->dtype != OMNIC_DTYPE_I32 || span->ndim != 2 ||
                 omnic__g_of(g, span)->var != omnic__g_of(g, q)->var || span->dims[0] != q->dims[0] ||
                 span->dims[1] != 2))
        return gfail(g, "attention: span %s must be i32 [T, 2] with q's row count, kv_begin and causal",
                     tname(span));
    omnic__tensor *d = result(g, q, OMNIC_DTYPE_F32, 3, q->dims);
    omnic__tensor *src[7] = {q, k, v, qpos, bias, kv_begin, span};
    omnic__gnode *n = new_node(g, OMNIC_OP_ATTENTION, d, 7, src);
    if (!n) return NULL;
    n->node.fp[0] = scale;
    n->node.fp[1] = softcap;
    n->node.ip[0] = causal;
    n->node.ip[1] = window;
    return d;
}

omnic__tensor *omnic__g_attention(omnic__graph *g, omnic__tensor *q, omnic__tensor *k, omnic__tensor *v,
                                  omnic__tensor *qpos, omnic__tensor *bias, omnic__tensor *kv_begin,
                                  float scale, bool causal, int window, float softcap)
{
    return attention_node(g, q, k, v, qpos, bias, kv_begin, NULL, scale, causal, window, softcap);
}

omnic__tensor *omnic__g_attention_spans(omnic__graph *g, omnic__tensor *q, omnic__tensor *k, omnic__tensor *v,
                                        omnic__tensor *qpos, omnic__tensor *kv_begin, omnic__tensor *span,
                                        float scale, int window, float softcap)
{
    return attention_node(g, q, k, v, qpos, NULL, kv_begin, span, scale, true, window, softcap);
}

omnic__tensor *omnic__g_attention_tiled(omnic__graph *g, omnic__tensor *q, omnic__tensor *k, omnic__tensor *v,
                                        omnic__tensor *qpos, omnic__tensor *kv_begin, float scale,
                                        bool causal)
{
    omnic__tensor *d = omnic__g_attention(g, q, k, v, qpos, NULL, kv_begin, scale, causal, 0, 0.0f);
    if (d) g->nodes[g->n_nodes - 1].node.ip[2] = 1; /* the node just added */
    return d;
}

omnic__tensor *omnic__g_attention_relpos(omnic__graph *g, omnic__tensor *q, omnic__tensor *k,
                                         omnic__tensor *v, omnic__tensor *qpos, omnic__tensor *table,
                                         int max_distance, float scale)
{
    return omnic__g_attention_relpos_spans(g, q, k, v, qpos, table, max_distance, scale, NULL, NULL);
}

omnic__tensor *omnic__g_attention_relpos_spans(omnic__graph *g, omnic__tensor *q, omnic__tensor *k,
                                               omnic__tensor *v, omnic__tensor *qpos, omnic__tensor *table,
                                               int max_distance, float scale, omnic__tensor *kv_begin,
                                               omnic__tensor *span)
{
    if (!table || !q) return NULL;
    if (table->dtype != OMNIC_DTYPE_F32 || table->ndim != 2 || max_distance < 1 ||
        table->dims[0] != 2 * (int64_t)max_distance || table->dims[1] != q->dims[1] ||
        omnic__g_of(g, table)->var != OMNIC_VAR_NONE)
        return gfail(g, "attention: relative-position table %s must be f32 [2 * %d, %lld heads]",
                     tname(table), max_distance, (long long)q->dims[1]);
    /* the [T, S] bias check does not apply: the node reads the table by distance */
    omnic__tensor *d = attention_node(g, q, k, v, qpos, NULL, kv_begin, span, scale, span != NULL, 0, 0.0f);
    if (!d) return NULL;
    omnic__gnode *n = &g->nodes[g->n_nodes - 1];
    n->node.src[4] = table;
    n->src[4] = omnic__g_of(g, table)->id;
    n->node.ip[3] = max_distance;
    return d;
}

omnic__tensor *omnic__g_dwconv2d(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, omnic__tensor *bias,
                                 const omnic__dwconv2d_geom *c)
{
    return omnic__g_dwconv2d_seg(g, x, w, bias, NULL, c);
}

omnic__tensor *omnic__g_dwconv2d_seg(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, omnic__tensor *bias,
                                     omnic__tensor *seg, const omnic__dwconv2d_geom *c)
{
    if (!x || !w || !need_f32(g, x, "dwconv2d")) return NULL;
    const int64_t C = w->dims[0], taps = (int64_t)c->kh * c->kw;
    if (c->kh < 1 || c->kw < 1 || c->sh < 1 || c->sw < 1 || c->pt < 0 || c->pl < 0 || c->in_w < 1 ||
        c->out_w < 1 || (c->in_c != 1 && c->in_c != C) || C < 1 || omnic__tensor_nelem(w) != C * taps ||
        (w->dtype != OMNIC_DTYPE_F32 && w->dtype != OMNIC_DTYPE_F16 && w->dtype != OMNIC_DTYPE_BF16) ||
        x->ndim != 2 || x->dims[1] != (int64_t)c->sh * c->in_w * c->in_c ||
        (c->out_w - 1) * (int64_t)c->sw - c->pl >= c->in_w)
        return gfail(g,
                     "dwconv2d: input %s [Ho, %d x %d x %d], filter %s [C, %d x %d] and output width %d do "
                     "not fit",
                     tname(x), c->sh, c->in_w, c->in_c, tname(w), c->kh, c->kw, c->out_w);
    if (bias && (bias->dtype != OMNIC_DTYPE_F32 || omnic__tensor_nelem(bias) != C))
        return gfail(g, "dwconv2d: bias %s must be f32 [%lld]", tname(bias), (long long)C);
    if (seg && (seg->dtype != OMNIC_DTYPE_I32 || omnic__tensor_nelem(seg) != x->dims[0] ||
                omnic__g_of(g, seg)->var != omnic__g_of(g, x)->var ||
                omnic__g_of(g, seg)->var_div != omnic__g_of(g, x)->var_div))
        return gfail(g, "dwconv2d: segments %s must be i32 with x's %lld rows", tname(seg),
                     (long long)x->dims[0]);
    int64_t dims[2] = {x->dims[0], (int64_t)c->out_w * C};
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, 2, dims);
    omnic__tensor *src[4] = {x, w, bias, seg};
    omnic__gnode *n = new_node(g, OMNIC_OP_DWCONV2D, d, 4, src);
    if (!n) return NULL;
    const int ip[8] = {c->kh, c->kw, c->sh, c->sw, c->pt, c->pl, c->in_w, c->in_c};
    memcpy(n->node.ip, ip, sizeof ip);
    return d;
}

omnic__tensor *omnic__g_unary(omnic__graph *g, omnic__op op, omnic__tensor *x)
{
    if (!x || !need_f32(g, x, omnic__op_names[op])) return NULL;
    if (op != OMNIC_OP_SILU && op != OMNIC_OP_GELU && op != OMNIC_OP_GELU_TANH && op != OMNIC_OP_GELU_QUICK &&
        op != OMNIC_OP_RELU && op != OMNIC_OP_SIGMOID)
        return gfail(g, "%s is not a unary activation", omnic__op_names[op]);
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, x->ndim, x->dims);
    return new_node(g, op, d, 1, &x) ? d : NULL;
}

omnic__tensor *omnic__g_glu(omnic__graph *g, omnic__op op, omnic__tensor *gate, omnic__tensor *up,
                            int variant)
{
    if (!gate || !up || !need_f32(g, gate, "glu") || !need_f32(g, up, "glu")) return NULL;
    if (op != OMNIC_OP_SWIGLU && op != OMNIC_OP_GEGLU)
        return gfail(g, "%s is not a gated unit", omnic__op_names[op]);
    if (!omnic__tensor_same_shape(gate, up))
        return gfail(g, "glu: %s and %s differ in shape", tname(gate), tname(up));
    omnic__tensor *d = result(g, gate, OMNIC_DTYPE_F32, gate->ndim, gate->dims);
    omnic__tensor *src[2] = {gate, up};
    omnic__gnode *n = new_node(g, op, d, 2, src);
    if (!n) return NULL;
    n->node.ip[0] = variant;
    return d;
}

omnic__tensor *omnic__g_get_rows(omnic__graph *g, omnic__tensor *table, omnic__tensor *ids)
{
    if (!table || !ids) return NULL;
    if (table->ndim != 2 || !is_table_w(table))
        return gfail(g, "get_rows: %s must be a 2-D float or quantized table", tname(table));
    if (ids->dtype != OMNIC_DTYPE_I32 || ids->ndim != 1)
        return gfail(g, "get_rows: ids %s must be i32 [T]", tname(ids));
    int64_t dims[2] = {ids->dims[0], table->dims[1]};
    omnic__tensor *d = result(g, ids, OMNIC_DTYPE_F32, 2, dims);
    omnic__tensor *src[2] = {table, ids};
    return new_node(g, OMNIC_OP_GET_ROWS, d, 2, src) ? d : NULL;
}

omnic__tensor *omnic__g_get_rows_over(omnic__graph *g, omnic__tensor *table, omnic__tensor *ids,
                                      omnic__tensor *base, int32_t offset)
{
    omnic__tensor *d = omnic__g_get_rows(g, table, ids);
    if (!d || !base) return NULL;
    if (base->dtype != OMNIC_DTYPE_F32 || base->ndim != 2 || base->dims[1] != table->dims[1] ||
        base->dims[0] != ids->dims[0] || omnic__g_of(g, base)->var != omnic__g_of(g, ids)->var)
        return gfail(g, "get_rows: base %s must be f32 [%lld, %lld] like the ids", tname(base),
                     (long long)ids->dims[0], (long long)table->dims[1]);
    omnic__gnode *n = &g->nodes[g->n_nodes - 1];
    n->node.src[2] = base;
    n->src[2] = omnic__g_of(g, base)->id;
    n->node.ip[0] = offset;
    return d;
}

omnic__tensor *omnic__g_slice_last_rows(omnic__graph *g, omnic__tensor *x, int64_t n_rows)
{
    if (!x) return NULL;
    if (x->ndim < 1 || n_rows < 1 || n_rows > x->dims[0])
        return gfail(g, "slice: last %lld rows of %s", (long long)n_rows, tname(x));
    int64_t dims[OMNIC_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    dims[0] = n_rows;
    omnic__gtensor *gt = new_tensor(g, OMNIC_GT_INTERMEDIATE, x->dtype, x->ndim, dims, OMNIC_VAR_NONE);
    if (!gt) return NULL;
    omnic__gnode *n = new_node(g, OMNIC_OP_SLICE, &gt->t, 1, &x);
    if (!n) return NULL;
    n->node.ip[0] = 0;
    n->node.ip[1] = (int32_t)(x->dims[0] - n_rows);
    n->slice_from_end = true;
    return &gt->t;
}

omnic__tensor *omnic__g_slice(omnic__graph *g, omnic__tensor *x, int dim, int64_t start, int64_t len)
{
    if (!x) return NULL;
    if (dim < 1 || dim >= x->ndim || start < 0 || len < 1 || start + len > x->dims[dim])
        return gfail(g, "slice: [%lld, %lld) of dim %d of %s", (long long)start, (long long)(start + len),
                     dim, tname(x));
    int64_t dims[OMNIC_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    dims[dim] = len;
    omnic__tensor *d = result(g, x, x->dtype, x->ndim, dims);
    omnic__gnode *n = new_node(g, OMNIC_OP_SLICE, d, 1, &x);
    if (!n) return NULL;
    n->node.ip[0] = dim;
    n->node.ip[1] = (int32_t)start;
    return d;
}

omnic__tensor *omnic__g_gauss_topk(omnic__graph *g, omnic__tensor *x, float z)
{
    if (!x || !need_f32(g, x, "gauss_topk")) return NULL;
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, x->ndim, x->dims);
    omnic__gnode *n = new_node(g, OMNIC_OP_GAUSS_TOPK, d, 1, &x);
    if (!n) return NULL;
    n->node.fp[0] = z;
    return d;
}

omnic__tensor *omnic__g_rms_match(omnic__graph *g, omnic__tensor *x, omnic__tensor *ref, float floor)
{
    if (!x || !ref || !need_f32(g, x, "rms_match") || !need_f32(g, ref, "rms_match")) return NULL;
    if (omnic__tensor_nelem(x) != omnic__tensor_nelem(ref) ||
        omnic__tensor_cols(x) != omnic__tensor_cols(ref) ||
        omnic__g_of(g, x)->var != omnic__g_of(g, ref)->var)
        return gfail(g, "rms_match: %s and %s must have one shape", tname(x), tname(ref));
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, x->ndim, x->dims);
    omnic__tensor *src[2] = {x, ref};
    omnic__gnode *n = new_node(g, OMNIC_OP_RMS_MATCH, d, 2, src);
    if (!n) return NULL;
    n->node.fp[0] = floor;
    return d;
}

omnic__tensor *omnic__g_moe_route(omnic__graph *g, omnic__tensor *logits, int k)
{
    if (!logits || !need_f32(g, logits, "moe_route")) return NULL;
    if (logits->ndim != 2 || k < 1 || k > logits->dims[1] || k > OMNIC_MAX_EXPERTS_PER_TOKEN)
        return gfail(g, "moe_route: top-%d of %s (at most %d, and at most the experts)", k, tname(logits),
                     OMNIC_MAX_EXPERTS_PER_TOKEN);
    int64_t dims[2] = {logits->dims[0], k};
    omnic__tensor *d = result(g, logits, OMNIC_DTYPE_I32, 2, dims);
    omnic__gnode *n = new_node(g, OMNIC_OP_MOE_ROUTE, d, 1, &logits);
    if (!n) return NULL;
    n->node.ip[0] = k;
    return d;
}

omnic__tensor *omnic__g_moe_weights(omnic__graph *g, omnic__tensor *logits, omnic__tensor *ids, bool norm)
{
    if (!logits || !ids || !need_f32(g, logits, "moe_weights")) return NULL;
    if (ids->dtype != OMNIC_DTYPE_I32 || ids->ndim != 2 || ids->dims[0] != logits->dims[0])
        return gfail(g, "moe_weights: ids %s must be i32 [rows of %s, k]", tname(ids), tname(logits));
    omnic__tensor *d = result(g, ids, OMNIC_DTYPE_F32, 2, ids->dims);
    omnic__tensor *src[2] = {logits, ids};
    omnic__gnode *n = new_node(g, OMNIC_OP_MOE_WEIGHTS, d, 2, src);
    if (!n) return NULL;
    n->node.ip[0] = norm;
    return d;
}

omnic__tensor *omnic__g_matmul_id(omnic__graph *g, omnic__tensor *a, omnic__tensor *w, omnic__tensor *ids,
                                  int64_t n_out, bool per_slot)
{
    if (!a || !w || !ids || !need_f32(g, a, "matmul_id")) return NULL;
    const int64_t T = ids->dims[0], k = ids->ndim == 2 ? ids->dims[1] : 0;
    const bool x16 = w->dtype == OMNIC_DTYPE_Q4_0X16 || w->dtype == OMNIC_DTYPE_Q8_0X16;
    if (ids->dtype != OMNIC_DTYPE_I32 || ids->ndim != 2 || w->ndim != 2 || !is_table_w(w) || n_out < 1 ||
        w->dims[0] % n_out || (x16 && n_out % OMNIC_X16_ROWS) || omnic__tensor_cols(a) != w->dims[1] ||
        omnic__tensor_rows(a) != (per_slot ? T * k : T) || omnic__g_of(g, a)->var != omnic__g_of(g, ids)->var)
        return gfail(g, "matmul_id: %s x experts %s ([E * %lld, K]) routed by %s", tname(a), tname(w),
                     (long long)n_out, tname(ids));
    int64_t dims[3] = {T, k, n_out};
    omnic__tensor *d = result(g, ids, OMNIC_DTYPE_F32, 3, dims);
    omnic__tensor *src[3] = {a, w, ids};
    omnic__gnode *n = new_node(g, OMNIC_OP_MATMUL_ID, d, 3, src);
    if (!n) return NULL;
    n->node.ip[0] = (int32_t)n_out;
    n->node.ip[1] = per_slot;
    n->node.ip[2] = g->batch_invariant;
    return d;
}

omnic__tensor *omnic__g_moe_sum(omnic__graph *g, omnic__tensor *y, omnic__tensor *w)
{
    if (!y || !w || !need_f32(g, y, "moe_sum") || !need_f32(g, w, "moe_sum")) return NULL;
    if (y->ndim != 3 || w->ndim != 2 || y->dims[0] != w->dims[0] || y->dims[1] != w->dims[1])
        return gfail(g, "moe_sum: %s weighted by %s", tname(y), tname(w));
    int64_t dims[2] = {y->dims[0], y->dims[2]};
    omnic__tensor *d = result(g, w, OMNIC_DTYPE_F32, 2, dims);
    omnic__tensor *src[2] = {y, w};
    return new_node(g, OMNIC_OP_MOE_SUM, d, 2, src) ? d : NULL;
}

omnic__tensor *omnic__g_concat(omnic__graph *g, omnic__tensor *a, omnic__tensor *b, int dim)
{
    if (!a || !b) return NULL;
    bool ok = a->dtype == b->dtype && a->ndim == b->ndim && dim >= 0 && dim < a->ndim &&
              omnic__g_of(g, a)->var == OMNIC_VAR_NONE && omnic__g_of(g, b)->var == OMNIC_VAR_NONE;
    for (int i = 0; ok && i < a->ndim; i++)
        ok = i == dim || a->dims[i] == b->dims[i];
    if (!ok)
        return gfail(g, "concat: %s and %s do not join along dim %d (fixed shapes, same dtype)", tname(a),
                     tname(b), dim);
    int64_t dims[OMNIC_MAX_DIMS];
    memcpy(dims, a->dims, sizeof dims);
    dims[dim] = a->dims[dim] + b->dims[dim];
    omnic__tensor *d = result(g, a, a->dtype, a->ndim, dims);
    omnic__tensor *src[2] = {a, b};
    omnic__gnode *n = new_node(g, OMNIC_OP_CONCAT, d, 2, src);
    if (!n) return NULL;
    n->node.ip[0] = dim;
    return d;
}

omnic__tensor *omnic__g_patch_embed(omnic__graph *g, omnic__tensor *img, omnic__tensor *w,
                                    omnic__tensor *bias)
{
    if (!img || !w || !need_f32(g, img, "patch_embed")) return NULL;
    if (img->ndim != 3 || w->ndim != 4 || w->dims[1] != img->dims[0] || w->dims[2] < 1 || w->dims[3] < 1 ||
        img->dims[1] < w->dims[2] || img->dims[2] < w->dims[3] ||
        omnic__g_of(g, img)->var != OMNIC_VAR_NONE ||
        (w->dtype != OMNIC_DTYPE_F32 && w->dtype != OMNIC_DTYPE_F16 && w->dtype != OMNIC_DTYPE_BF16))
        return gfail(g, "patch_embed: image %s [C, H, W] and filter %s [O, C, ph, pw] (float) do not fit",
                     tname(img), tname(w));
    if (bias && (bias->dtype != OMNIC_DTYPE_F32 || omnic__tensor_nelem(bias) != w->dims[0]))
        return gfail(g, "patch_embed: bias %s must be f32 [%lld]", tname(bias), (long long)w->dims[0]);
    int64_t dims[2] = {(img->dims[1] / w->dims[2]) * (img->dims[2] / w->dims[3]), w->dims[0]};
    omnic__tensor *d = result(g, img, OMNIC_DTYPE_F32, 2, dims);
    omnic__tensor *src[3] = {img, w, bias};
    return new_node(g, OMNIC_OP_PATCH_EMBED, d, 3, src) ? d : NULL;
}

omnic__tensor *omnic__g_pool_avg(omnic__graph *g, omnic__tensor *x, int64_t grid, int64_t k)
{
    if (!x || !need_f32(g, x, "pool_avg")) return NULL;
    if (x->ndim != 2 || grid < 1 || k < 1 || grid % k || x->dims[0] != grid * grid ||
        omnic__g_of(g, x)->var != OMNIC_VAR_NONE || grid > INT32_MAX)
        return gfail(g, "pool_avg: %s is not a fixed %lldx%lld grid of rows pooled by %lld", tname(x),
                     (long long)grid, (long long)grid, (long long)k);
    int64_t dims[2] = {(grid / k) * (grid / k), x->dims[1]};
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, 2, dims);
    omnic__gnode *n = new_node(g, OMNIC_OP_POOL_AVG, d, 1, &x);
    if (!n) return NULL;
    n->node.ip[0] = (int32_t)grid;
    n->node.ip[1] = (int32_t)k;
    return d;
}

omnic__tensor *omnic__g_argmax(omnic__graph *g, omnic__tensor *x)
{
    if (!x || !need_f32(g, x, "argmax")) return NULL;
    int64_t rows = omnic__tensor_rows(x);
    if (omnic__g_of(g, x)->var != OMNIC_VAR_NONE && x->ndim != 2)
        return gfail(g, "argmax: variable-length %s must be 2-D", tname(x));
    int64_t dims[1] = {rows};
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_I32, 1, dims);
    return new_node(g, OMNIC_OP_ARGMAX, d, 1, &x) ? d : NULL;
}

omnic__tensor *omnic__g_softcap(omnic__graph *g, omnic__tensor *x, float cap)
{
    if (!x || !need_f32(g, x, "softcap")) return NULL;
    if (!(cap > 0)) return gfail(g, "softcap: cap %g must be positive", (double)cap);
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, x->ndim, x->dims);
    omnic__gnode *n = new_node(g, OMNIC_OP_SOFTCAP, d, 1, &x);
    if (!n) return NULL;
    n->node.fp[0] = cap;
    return d;
}

omnic__tensor *omnic__g_cpy(omnic__graph *g, omnic__tensor *src, omnic__tensor *dst)
{
    if (!src || !dst) return NULL;
    omnic__gtensor *gd = omnic__g_of(g, dst);
    if (gd->kind != OMNIC_GT_VIEW) return gfail(g, "cpy: destination %s must be a view", tname(dst));
    if (omnic__tensor_nelem(src) != omnic__tensor_nelem(dst) || gd->var != omnic__g_of(g, src)->var ||
        !is_float_w(src->dtype) || !is_float_w(dst->dtype))
        return gfail(g, "cpy: %s does not fit %s", tname(src), tname(dst));
    omnic__gnode *n = new_node(g, OMNIC_OP_CPY, dst, 1, &src);
    return n ? dst : NULL;
}

omnic__tensor *omnic__g_set_rows(omnic__graph *g, omnic__tensor *dst, omnic__tensor *src, omnic__tensor *idx)
{
    if (!dst || !src || !idx) return NULL;
    omnic__gtensor *gd = omnic__g_of(g, dst);
    if (gd->kind != OMNIC_GT_KV_K && gd->kind != OMNIC_GT_KV_V && gd->kind != OMNIC_GT_WEIGHT)
        return gfail(g, "set_rows: destination %s must be a leaf updated in place", tname(dst));
    if (!need_f32(g, src, "set_rows") || !is_float_w(dst->dtype)) return NULL;
    if (idx->dtype != OMNIC_DTYPE_I32 || idx->ndim != 1 || idx->dims[0] != src->dims[0] ||
        omnic__g_of(g, idx)->var != omnic__g_of(g, src)->var)
        return gfail(g, "set_rows: idx %s must be i32 [%lld] like %s's rows", tname(idx),
                     (long long)src->dims[0], tname(src));
    if (omnic__tensor_nelem(src) / src->dims[0] != omnic__tensor_nelem(dst) / dst->dims[0])
        return gfail(g, "set_rows: rows of %s and %s differ in size", tname(src), tname(dst));
    omnic__tensor *s2[2] = {src, idx};
    return new_node(g, OMNIC_OP_SET_ROWS, dst, 2, s2) ? dst : NULL;
}

omnic__tensor *omnic__g_conv2d(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, omnic__tensor *bias,
                               const omnic__dwconv2d_geom *c)
{
    if (!x || !w || !need_f32(g, x, "conv2d")) return NULL;
    const int64_t O = w->dims[0];
    if (c->kh < 1 || c->kw < 1 || c->sh < 1 || c->sw < 1 || c->pt < 0 || c->pl < 0 || c->in_w < 1 ||
        c->in_c < 1 || c->out_w < 1 || O < 1 || w->dtype != OMNIC_DTYPE_F32 || w->ndim != 2 ||
        w->dims[1] != (int64_t)c->kh * c->kw * c->in_c || x->ndim != 2 ||
        x->dims[1] != (int64_t)c->sh * c->in_w * c->in_c ||
        (c->out_w - 1) * (int64_t)c->sw - c->pl >= c->in_w)
        return gfail(g,
                     "conv2d: input %s [Ho, %d x %d x %d], filter %s [O, %d x %d x %d] (f32) and output "
                     "width %d do not fit",
                     tname(x), c->sh, c->in_w, c->in_c, tname(w), c->kh, c->kw, c->in_c, c->out_w);
    if (bias && (bias->dtype != OMNIC_DTYPE_F32 || omnic__tensor_nelem(bias) != O))
        return gfail(g, "conv2d: bias %s must be f32 [%lld]", tname(bias), (long long)O);
    int64_t dims[2] = {x->dims[0], (int64_t)c->out_w * O};
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, 2, dims);
    omnic__tensor *src[3] = {x, w, bias};
    omnic__gnode *n = new_node(g, OMNIC_OP_CONV2D, d, 3, src);
    if (!n) return NULL;
    const int ip[8] = {c->kh, c->kw, c->sh, c->sw, c->pt, c->pl, c->in_w, c->in_c};
    memcpy(n->node.ip, ip, sizeof ip);
    return d;
}

omnic__tensor *omnic__g_cum_groupnorm(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, float eps)
{
    if (!x || !w || !need_f32(g, x, "cum_groupnorm")) return NULL;
    if (x->ndim != 2 || w->dtype != OMNIC_DTYPE_F32 || w->ndim != 1 || w->dims[0] < 1 ||
        x->dims[1] % w->dims[0] != 0 || !(eps > 0))
        return gfail(g, "cum_groupnorm: input %s must be [T, G * C] for a weight %s of f32 [C], eps > 0",
                     tname(x), tname(w));
    omnic__tensor *d = result(g, x, OMNIC_DTYPE_F32, 2, x->dims);
    omnic__tensor *src[2] = {x, w};
    omnic__gnode *n = new_node(g, OMNIC_OP_CUM_GROUPNORM, d, 2, src);
    if (!n) return NULL;
    n->node.fp[0] = eps;
    return d;
}

omnic__tensor *omnic__g_attn_local(omnic__graph *g, omnic__tensor *q, omnic__tensor *k, omnic__tensor *v,
                                   omnic__tensor *rel, omnic__tensor *valid, float softcap)
{
    if (!q || !k || !v || !rel || !valid) return NULL;
    if (!need_f32(g, q, "attn_local") || !need_f32(g, k, "attn_local") || !need_f32(g, v, "attn_local"))
        return NULL;
    const omnic__gtensor *gq = omnic__g_of(g, q);
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 || memcmp(q->dims, k->dims, sizeof(int64_t) * 3) ||
        memcmp(q->dims, v->dims, sizeof(int64_t) * 3) || omnic__g_of(g, k)->var != gq->var ||
        omnic__g_of(g, v)->var != gq->var)
        return gfail(g, "attn_local: q %s, k %s and v %s must be f32 [T, H, D] alike", tname(q), tname(k),
                     tname(v));
    if (rel->dtype != OMNIC_DTYPE_F32 || rel->ndim != 3 || rel->dims[0] < 1 ||
        rel->dims[0] > OMNIC_ATTN_LOCAL_MAX || rel->dims[1] != q->dims[1] || rel->dims[2] != q->dims[2] ||
        omnic__g_of(g, rel)->var != OMNIC_VAR_NONE)
        return gfail(g, "attn_local: relative terms %s must be f32 [L <= %d, %lld, %lld]", tname(rel),
                     OMNIC_ATTN_LOCAL_MAX, (long long)q->dims[1], (long long)q->dims[2]);
    if (valid->dtype != OMNIC_DTYPE_I32 || omnic__tensor_nelem(valid) != q->dims[0] ||
        omnic__g_of(g, valid)->var != gq->var || omnic__g_of(g, valid)->var_div != gq->var_div)
        return gfail(g, "attn_local: key validity %s must be i32 with q's %lld rows", tname(valid),
                     (long long)q->dims[0]);
    if (!(softcap > 0)) return gfail(g, "attn_local: softcap %g must be > 0", (double)softcap);
    omnic__tensor *d = result(g, q, OMNIC_DTYPE_F32, 3, q->dims);
    omnic__tensor *src[5] = {q, k, v, rel, valid};
    omnic__gnode *n = new_node(g, OMNIC_OP_ATTN_LOCAL, d, 5, src);
    if (!n) return NULL;
    n->node.fp[0] = softcap;
    return d;
}
