/* Module finalize (signature + plan + memory) and calls (checks, binding, execution). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/panic.h"
#include "runtime/module.h"

omnic_status omnic__module_init(omnic__module *m, const char *name, const char *contract, int64_t capacity,
                                omnic_err *err)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->contract, sizeof m->contract, "%s", contract);
    return omnic__graph_init(&m->graph, capacity, err);
}

void omnic__module_deinit(omnic__module *m)
{
    omnic__graph_deinit(&m->graph);
    free(m->mem); /* aligned_alloc'd */
    memset(m, 0, sizeof *m);
}

static void fill_entry(omnic__sig_entry *e, const omnic__gtensor *t)
{
    memset(e, 0, sizeof *e);
    memcpy(e->name, t->t.name, sizeof t->t.name);
    e->dtype = t->t.dtype;
    e->ndim = t->t.ndim;
    memcpy(e->dims, t->t.dims, sizeof e->dims);
    e->var = t->var;
    e->tensor = t->id;
}

omnic_status omnic__module_constrain(omnic__module *m, const char *name, int64_t max_value, bool finite,
                                     omnic_err *err)
{
    for (int i = 0; i < m->n_in; i++)
        if (!strcmp(m->in[i].name, name)) {
            m->in[i].max_value = max_value;
            m->in[i].finite = finite;
            return OMNIC_OK;
        }
    return OMNIC_FAIL(err, OMNIC_E_INVALID, "module %s has no input '%s'", m->name, name);
}

omnic_status omnic__module_finalize(omnic__module *m, const omnic__backend_ops *b, omnic__threadpool *pool,
                                    omnic_err *err)
{
    omnic__graph *g = &m->graph;
    OMNIC_TRY(omnic__graph_status(g, err));
    m->n_in = m->n_out = 0;
    m->slot_layers = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        omnic__gtensor *t = g->tensors[i];
        if (t->kind == OMNIC_GT_INPUT || t->is_output) {
            int *n = t->kind == OMNIC_GT_INPUT ? &m->n_in : &m->n_out;
            if (*n == OMNIC_MODULE_MAX_IO)
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "module %s: more than %d inputs or outputs", m->name,
                                  OMNIC_MODULE_MAX_IO);
            fill_entry(t->kind == OMNIC_GT_INPUT ? &m->in[(*n)++] : &m->out[(*n)++], t);
        }
        if ((t->kind == OMNIC_GT_SLOT_K || t->kind == OMNIC_GT_SLOT_V) && t->layer + 1 > m->slot_layers)
            m->slot_layers = t->layer + 1;
    }
    m->backend = b;
    m->pool = pool;
    m->nth = (!pool || b->single_threaded) ? 1 : omnic__threadpool_size(pool);
    OMNIC_TRY(omnic__plan_graph(g, b, m->nth, &m->plan, err));
    free(m->mem);
    m->mem = NULL;
    if (m->plan.total_bytes) {
        void *probe = omnic_malloc(1); /* honour the allocation fault hook */
        if (!probe) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "module %s: out of memory", m->name);
        omnic_free(probe);
        m->mem = aligned_alloc(OMNIC_ARENA_ALIGN, m->plan.total_bytes);
        if (!m->mem)
            return OMNIC_FAIL(err, OMNIC_E_NOMEM, "module %s: out of memory for %zu planned bytes", m->name,
                              m->plan.total_bytes);
    }
    for (int i = 0; i < g->n_tensors; i++) {
        omnic__gtensor *t = g->tensors[i];
        if (t->kind == OMNIC_GT_INTERMEDIATE) t->t.data = m->mem + t->offset;
        if (t->kind == OMNIC_GT_INPUT || t->kind == OMNIC_GT_KV_INDEX)
            t->t.data = m->mem + m->plan.inter_bytes + t->offset;
    }
    m->finalized = true;
    return OMNIC_OK;
}

static const char *var_name(omnic__var v) { return v == OMNIC_VAR_T ? "n" : v == OMNIC_VAR_KV ? "kv" : ""; }

static omnic_status check_input(const omnic__module *m, const omnic__sig_entry *e, const omnic__tensor *x,
                                int64_t rows, omnic_err *err)
{
    char want[160], got[160];
    if (!x) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: input '%s' is missing", m->name, e->name);
    bool ok = x->dtype == e->dtype && x->ndim == e->ndim;
    for (int d = 0; ok && d < e->ndim; d++) ok = x->dims[d] == (d == 0 && e->var != OMNIC_VAR_NONE ? rows : e->dims[d]);
    if (!ok) {
        int64_t dims[OMNIC_MAX_DIMS];
        memcpy(dims, e->dims, sizeof dims);
        if (e->var != OMNIC_VAR_NONE) dims[0] = rows;
        omnic__dims_str(want, sizeof want, e->ndim, dims);
        omnic__dims_str(got, sizeof got, x->ndim, x->dims);
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: input '%s' must be %s %s, got %s %s", m->name, e->name,
                          omnic_dtype_name(e->dtype), want, omnic_dtype_name(x->dtype), got);
    }
    size_t n = (size_t)omnic__tensor_nelem(x);
    if (n && !x->data) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: input '%s' has no data", m->name, e->name);
    if (e->max_value > 0 && (x->dtype == OMNIC_DTYPE_I32 || x->dtype == OMNIC_DTYPE_I64)) {
        for (size_t i = 0; i < n; i++) {
            int64_t v = x->dtype == OMNIC_DTYPE_I32 ? ((const int32_t *)x->data)[i] : ((const int64_t *)x->data)[i];
            if (v < 0 || v >= e->max_value)
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: input '%s'[%zu] = %lld is outside [0, %lld)", m->name,
                                  e->name, i, (long long)v, (long long)e->max_value);
        }
    }
    if (e->finite && x->dtype == OMNIC_DTYPE_F32) {
        const float *p = x->data;
        for (size_t i = 0; i < n; i++)
            if (!isfinite(p[i]))
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: input '%s'[%zu] is not finite", m->name, e->name, i);
    }
    return OMNIC_OK;
}

/* Sets every tensor's call-time dims and data pointers. */
static void bind(omnic__module *m, const omnic__call *c)
{
    omnic__graph *g = &m->graph;
    for (int i = 0; i < g->n_tensors; i++) {
        omnic__gtensor *t = g->tensors[i];
        if (t->var == OMNIC_VAR_T) t->t.dims[0] = c->n;
        else if (t->var == OMNIC_VAR_KV) t->t.dims[0] = c->kv_start + c->n;
        if (t->kind == OMNIC_GT_KV_INDEX)
            for (int64_t r = 0; r < c->n; r++) ((int32_t *)t->t.data)[r] = (int32_t)(c->kv_start + r);
        if (t->kind == OMNIC_GT_SLOT_K) t->t.data = c->slot->k[t->layer].data;
        if (t->kind == OMNIC_GT_SLOT_V) t->t.data = c->slot->v[t->layer].data;
        if (t->kind == OMNIC_GT_VIEW) { /* bases have lower ids, so they are bound already */
            const omnic__tensor *b = &g->tensors[t->base]->t;
            int64_t row = t->view_row + (t->view_at_kv_start ? c->kv_start : 0);
            size_t row_bytes = (size_t)(omnic__tensor_nelem(b) / (b->dims[0] ? b->dims[0] : 1)) *
                               omnic_dtype_size(b->dtype);
            t->t.data = (uint8_t *)b->data + (size_t)row * row_bytes;
        }
    }
    for (int n = 0; n < g->n_nodes; n++) {
        omnic__gnode *nd = &g->nodes[n];
        if (nd->slice_from_end) nd->node.ip[1] = (int32_t)(nd->node.src[0]->dims[0] - nd->node.dst->dims[0]);
    }
}

typedef struct exec_ctx {
    omnic__module *m;
    omnic__barrier barrier;
    const atomic_bool *cancel;
    atomic_bool stop;
} exec_ctx;

static void exec_task(void *arg, int ith, int nth)
{
    exec_ctx *x = arg;
    omnic__graph *g = &x->m->graph;
    void *work = x->m->mem + x->m->plan.inter_bytes + x->m->plan.input_bytes;
    for (int n = 0; n < g->n_nodes; n++) {
        const omnic__node *node = &g->nodes[n].node;
        x->m->backend->kernel[node->op](node, ith, nth, work);
        if (ith == 0 && x->cancel && atomic_load(x->cancel)) atomic_store(&x->stop, true);
        omnic__barrier_wait(&x->barrier);
        if (atomic_load(&x->stop)) return; /* every thread sees the same value after the barrier */
    }
}

omnic_status omnic__module_call(omnic__module *m, const omnic__call *c, omnic_err *err)
{
    OMNIC_CHECK(m->finalized);
    int64_t cap = m->graph.capacity, end;
    if (c->n < 1 || c->kv_start < 0 || __builtin_add_overflow(c->kv_start, c->n, &end) || end > cap)
        return OMNIC_FAIL(err, OMNIC_E_CAPACITY,
                          "%s: %lld cached + %lld new rows exceed the capacity of %lld", m->name,
                          (long long)c->kv_start, (long long)c->n, (long long)cap);
    if (m->slot_layers > 0) {
        const omnic__kv_slot *s = c->slot;
        if (!s) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: needs a KV slot", m->name);
        if (s->n_layers < m->slot_layers || s->capacity < cap)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: slot has %d layers x %lld rows, module needs %d x %lld",
                              m->name, s->n_layers, (long long)s->capacity, m->slot_layers, (long long)cap);
        if (c->kv_start > s->len)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: kv_start %lld is past the slot's %lld cached rows", m->name,
                              (long long)c->kv_start, (long long)s->len);
        for (int i = 0; i < m->graph.n_tensors; i++) {
            const omnic__gtensor *t = m->graph.tensors[i];
            if ((t->kind == OMNIC_GT_SLOT_K || t->kind == OMNIC_GT_SLOT_V) &&
                (s->dtype != t->t.dtype || s->n_kv != t->t.dims[1] || s->head_dim != t->t.dims[2]))
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: slot layout %s [%lld, %lld] does not match %s %s [%lld, %lld]",
                                  m->name, omnic_dtype_name(s->dtype), (long long)s->n_kv, (long long)s->head_dim,
                                  t->t.name, omnic_dtype_name(t->t.dtype), (long long)t->t.dims[1],
                                  (long long)t->t.dims[2]);
        }
    }
    if (c->n_inputs != m->n_in)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %d inputs given, signature has %d", m->name, c->n_inputs, m->n_in);
    for (int i = 0; i < m->n_in; i++) {
        const omnic__sig_entry *e = &m->in[i];
        int64_t rows = e->var == OMNIC_VAR_KV ? end : c->n;
        OMNIC_TRY(check_input(m, e, c->inputs[i], rows, err));
    }
    bind(m, c);
    for (int i = 0; i < m->n_in; i++) {
        omnic__tensor *dst = &m->graph.tensors[m->in[i].tensor]->t;
        size_t bytes = omnic__tensor_bytes(dst);
        if (bytes) memcpy(dst->data, c->inputs[i]->data, bytes);
    }
    exec_ctx x = {.m = m, .cancel = c->cancel};
    atomic_init(&x.stop, false);
    omnic__barrier_init(&x.barrier, m->nth);
    if (m->nth > 1) omnic__threadpool_run_n(m->pool, m->nth, exec_task, &x);
    else exec_task(&x, 0, 1);
    if (atomic_load(&x.stop)) return OMNIC_FAIL(err, OMNIC_E_CANCELLED, "%s: cancelled", m->name);
    if (c->slot && m->slot_layers > 0) c->slot->len = end;
    return OMNIC_OK;
}

const omnic__tensor *omnic__module_output(const omnic__module *m, int i)
{
    OMNIC_CHECK(i >= 0 && i < m->n_out);
    return &m->graph.tensors[m->out[i].tensor]->t;
}

static void print_entry(const omnic__sig_entry *e, FILE *f)
{
    fprintf(f, "%s %s [", e->name, omnic_dtype_name(e->dtype));
    for (int d = 0; d < e->ndim; d++) {
        if (d == 0 && e->var != OMNIC_VAR_NONE)
            fprintf(f, "%s<=%lld", var_name(e->var), (long long)e->dims[0]);
        else
            fprintf(f, "%lld", (long long)e->dims[d]);
        if (d + 1 < e->ndim) fprintf(f, ", ");
    }
    fprintf(f, "]");
    if (e->max_value > 0) fprintf(f, " in [0, %lld)", (long long)e->max_value);
}

void omnic__module_print(const omnic__module *m, FILE *f)
{
    fprintf(f, "  %s (%s)\n    in:  ", m->name, m->contract);
    for (int i = 0; i < m->n_in; i++) {
        print_entry(&m->in[i], f);
        fprintf(f, i + 1 < m->n_in ? "; " : "");
    }
    if (m->slot_layers) fprintf(f, "; slot: KV of %d layers", m->slot_layers);
    fprintf(f, "\n    out: ");
    for (int i = 0; i < m->n_out; i++) {
        print_entry(&m->out[i], f);
        fprintf(f, i + 1 < m->n_out ? "; " : "");
    }
    fprintf(f, "\n    graph: %d nodes, %d tensors; planned %zu bytes (intermediates %zu, reuse saves %zu; inputs %zu; work %zu)\n",
            m->graph.n_nodes, m->graph.n_tensors, m->plan.total_bytes, m->plan.inter_bytes,
            m->plan.naive_bytes - m->plan.inter_bytes, m->plan.input_bytes, m->plan.work_bytes);
}
