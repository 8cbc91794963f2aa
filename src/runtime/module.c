/* Module finalize (signature + plan + memory) and calls (checks, binding, execution). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/limits.h"
#include "core/panic.h"
#include "core/sync.h"
#include "runtime/module.h"

omnic_status omnic__module_init(omnic__module *m, const char *name, const char *contract, int64_t capacity,
                                omnic_err *err)
{
    memset(m, 0, sizeof *m);
    m->next_node = -1;
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->contract, sizeof m->contract, "%s", contract);
    return omnic__graph_init(&m->graph, capacity, err);
}

void omnic__module_deinit(omnic__module *m)
{
    omnic__graph_deinit(&m->graph);
    free(m->mem); /* aligned_alloc'd */
    free(m->slice_work);
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
    e->var_div = t->var_div;
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
    m->kv_layers = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        omnic__gtensor *t = g->tensors[i];
        if (t->kind == OMNIC_GT_INPUT || t->is_output) {
            int *n = t->kind == OMNIC_GT_INPUT ? &m->n_in : &m->n_out;
            if (*n == OMNIC_MODULE_MAX_IO)
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "module %s: more than %d inputs or outputs", m->name,
                                  OMNIC_MODULE_MAX_IO);
            fill_entry(t->kind == OMNIC_GT_INPUT ? &m->in[(*n)++] : &m->out[(*n)++], t);
        }
        if (t->kind == OMNIC_GT_KV_K || t->kind == OMNIC_GT_KV_V) {
            if (m->kv_layers && (t->t.dims[0] != m->kv_rows || t->t.dtype != m->kv_dtype ||
                                 t->t.dims[1] != m->kv_heads || t->t.dims[2] != m->kv_head_dim))
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "module %s: KV layers of different layouts", m->name);
            if (t->layer + 1 > m->kv_layers) m->kv_layers = t->layer + 1;
            m->kv_rows = t->t.dims[0];
            m->kv_dtype = t->t.dtype;
            m->kv_heads = t->t.dims[1];
            m->kv_head_dim = t->t.dims[2];
        }
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
        if (t->kind == OMNIC_GT_INPUT || t->kind == OMNIC_GT_KV_INDEX || t->kind == OMNIC_GT_KV_BEGIN)
            t->t.data = m->mem + m->plan.inter_bytes + t->offset;
    }
    m->finalized = true;
    return OMNIC_OK;
}

static omnic_status check_input(const omnic__module *m, const omnic__sig_entry *e, const omnic__tensor *x,
                                int64_t rows, omnic_err *err)
{
    char want[160], got[160];
    if (!x) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: input '%s' is missing", m->name, e->name);
    bool ok = x->dtype == e->dtype && x->ndim == e->ndim;
    for (int d = 0; ok && d < e->ndim; d++)
        ok = x->dims[d] == (d == 0 && e->var != OMNIC_VAR_NONE ? rows : e->dims[d]);
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
    if (n && !x->data)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: input '%s' has no data", m->name, e->name);
    if (e->max_value > 0 && (x->dtype == OMNIC_DTYPE_I32 || x->dtype == OMNIC_DTYPE_I64)) {
        for (size_t i = 0; i < n; i++) {
            int64_t v =
                x->dtype == OMNIC_DTYPE_I32 ? ((const int32_t *)x->data)[i] : ((const int64_t *)x->data)[i];
            if (v < 0 || v >= e->max_value)
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: input '%s'[%zu] = %lld is outside [0, %lld)",
                                  m->name, e->name, i, (long long)v, (long long)e->max_value);
        }
    }
    if (e->finite && x->dtype == OMNIC_DTYPE_F32) {
        const float *p = x->data;
        for (size_t i = 0; i < n; i++)
            if (!isfinite(p[i]))
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: input '%s'[%zu] is not finite", m->name, e->name,
                                  i);
    }
    return OMNIC_OK;
}

/* Pool row of call row r, and the first row of its slot. off: r's place in its run of
 * rows naming the same slot (per-row calls; 0 otherwise). */
static void kv_row(const omnic__call *c, int64_t r, int64_t off, int32_t *index, int32_t *begin)
{
    const int64_t cap = c->kv->capacity;
    int64_t slot = c->row_slots ? c->row_slots[r] : c->slot;
    int64_t pos = c->row_slots ? c->kv->len[slot] + off : c->kv_start + r;
    *begin = (int32_t)(slot * cap);
    *index = (int32_t)(slot * cap + pos);
}

/* Sets every tensor's call-time dims and data pointers. */
static void bind(omnic__module *m, const omnic__call *c)
{
    omnic__graph *g = &m->graph;
    for (int i = 0; i < g->n_tensors; i++) {
        omnic__gtensor *t = g->tensors[i];
        if (t->var == OMNIC_VAR_T) t->t.dims[0] = c->n / t->var_div;
        if (t->kind == OMNIC_GT_KV_INDEX || t->kind == OMNIC_GT_KV_BEGIN)
            for (int64_t r = 0, off = 0; r < c->n; r++) {
                int32_t index, begin;
                off = c->row_slots && r > 0 && c->row_slots[r] == c->row_slots[r - 1] ? off + 1 : 0;
                kv_row(c, r, off, &index, &begin);
                ((int32_t *)t->t.data)[r] = t->kind == OMNIC_GT_KV_INDEX ? index : begin;
            }
        if (t->kind == OMNIC_GT_KV_K) t->t.data = c->kv->k[t->layer].data;
        if (t->kind == OMNIC_GT_KV_V) t->t.data = c->kv->v[t->layer].data;
        if (t->kind == OMNIC_GT_VIEW) { /* bases have lower ids, so they are bound already */
            const omnic__tensor *b = &g->tensors[t->base]->t;
            size_t row_bytes =
                omnic__dtype_row_bytes(b->dtype, omnic__tensor_nelem(b) / (b->dims[0] ? b->dims[0] : 1));
            t->t.data = (uint8_t *)b->data + (size_t)t->view_row * row_bytes;
        }
    }
    for (int n = 0; n < g->n_nodes; n++) {
        omnic__gnode *nd = &g->nodes[n];
        if (nd->slice_from_end) nd->node.ip[1] = (int32_t)(nd->node.src[0]->dims[0] - nd->node.dst->dims[0]);
    }
}

/* The KV side of a call: pool layout, slot indices, capacity (E_CAPACITY names the numbers). */
static omnic_status check_kv(const omnic__module *m, const omnic__call *c, omnic_err *err)
{
    const omnic__kv_pool *p = c->kv;
    if (!p) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: needs a KV pool", m->name);
    if (p->n_layers < m->kv_layers || (int64_t)p->n_slots * p->capacity != m->kv_rows ||
        p->dtype != m->kv_dtype || p->n_kv != m->kv_heads || p->head_dim != m->kv_head_dim)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "%s: KV pool %d layers x %lld rows %s [%lld, %lld] does not match the module's %d x %lld %s "
            "[%lld, %lld]",
            m->name, p->n_layers, (long long)p->n_slots * p->capacity, omnic_dtype_name(p->dtype),
            (long long)p->n_kv, (long long)p->head_dim, m->kv_layers, (long long)m->kv_rows,
            omnic_dtype_name(m->kv_dtype), (long long)m->kv_heads, (long long)m->kv_head_dim);
    if (!c->row_slots) {
        if (c->slot < 0 || c->slot >= p->n_slots)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: slot %d outside 0..%d", m->name, c->slot,
                              p->n_slots - 1);
        int64_t end;
        if (c->kv_start < 0 || c->kv_start > p->len[c->slot])
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: kv_start %lld is past slot %d's %lld cached rows",
                              m->name, (long long)c->kv_start, c->slot, (long long)p->len[c->slot]);
        if (__builtin_add_overflow(c->kv_start, c->n, &end) || end > p->capacity)
            return OMNIC_FAIL(err, OMNIC_E_CAPACITY,
                              "%s: %lld cached + %lld new rows exceed the capacity of %lld", m->name,
                              (long long)c->kv_start, (long long)c->n, (long long)p->capacity);
        return OMNIC_OK;
    }
    for (int64_t r = 0, run = 0; r < c->n; r++) {
        int32_t s = c->row_slots[r];
        if (s < 0 || s >= p->n_slots)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: row %lld names slot %d outside 0..%d", m->name,
                              (long long)r, s, p->n_slots - 1);
        run = r > 0 && c->row_slots[r - 1] == s ? run + 1 : 0;
        if (run == 0)
            for (int64_t q = 0; q < r; q++)
                if (c->row_slots[q] == s)
                    return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                      "%s: rows %lld and %lld name slot %d but are not adjacent", m->name,
                                      (long long)q, (long long)r, s);
        if (p->len[s] + run + 1 > p->capacity)
            return OMNIC_FAIL(err, OMNIC_E_CAPACITY,
                              "%s: slot %d: %lld cached + %lld new rows exceed the capacity of %lld", m->name,
                              s, (long long)p->len[s], (long long)(run + 1), (long long)p->capacity);
    }
    return OMNIC_OK;
}

enum { GO = 0, STOP, PAUSE }; /* what every thread does after a part */

typedef struct exec_ctx {
    omnic__module *m;
    omnic__barrier barrier;
    const atomic_bool *cancel;
    int from, from_part; /* first node (and part) to run */
    int parts;           /* parts per node: thread ith runs virtual thread part * nth + ith */
    uint8_t *work;       /* the work buffer for parts x nth virtual threads */
    double deadline;     /* omnic__now() past which no further part starts; 0: none */
    /* Thread 0's decision after part `at`, in slot at % 2: a thread reads it after that part's
     * barrier, and thread 0 writes that slot again only after the next barrier, which every
     * thread passes after reading it (one slot could change under a slow reader). */
    atomic_int decide[2];
    int next;     /* node * parts + part after the last one run (thread 0; read after the run) */
    bool stopped; /* cancelled (thread 0) */
} exec_ctx;

static void exec_task(void *arg, int ith, int nth)
{
    exec_ctx *x = arg;
    omnic__graph *g = &x->m->graph;
    const int P = x->parts, total = g->n_nodes * P;
    omnic__chunks_bind(&x->barrier); /* kernels may share a node's chunks dynamically */
    for (int at = x->from * P + x->from_part; at < total; at++) {
        const omnic__node *node = &g->nodes[at / P].node;
        x->m->backend->kernel[node->op](node, (at % P) * nth + ith, P * nth, x->work);
        if (ith == 0) {
            int d = GO;
            if (x->cancel && atomic_load(x->cancel))
                d = STOP;
            else if (x->deadline > 0 && at + 1 < total && omnic__now() >= x->deadline)
                d = PAUSE;
            atomic_store(&x->decide[at & 1], d);
            x->next = at + 1;
            x->stopped = d == STOP;
        }
        omnic__barrier_wait(&x->barrier);
        if (atomic_load(&x->decide[at & 1]) != GO) break; /* every thread sees the same value */
    }
    omnic__chunks_bind(NULL);
}

/* Runs parts from (m->next_node, m->next_part) until the end, the deadline (0: none) or
 * cancel. */
static omnic_status run_nodes(omnic__module *m, double deadline, const atomic_bool *cancel, omnic_err *err)
{
    const int P = m->parts, total = m->graph.n_nodes * P;
    exec_ctx x = {.m = m,
                  .cancel = cancel,
                  .from = m->next_node,
                  .from_part = m->next_part,
                  .parts = P,
                  .work = P > 1 ? m->slice_work : m->mem + m->plan.inter_bytes + m->plan.input_bytes,
                  .deadline = deadline,
                  .next = m->next_node * P + m->next_part};
    atomic_init(&x.decide[0], GO);
    atomic_init(&x.decide[1], GO);
    omnic__barrier_init(&x.barrier, m->nth);
    if (m->nth > 1)
        omnic__threadpool_run_n(m->pool, m->nth, exec_task, &x);
    else
        exec_task(&x, 0, 1);
    if (x.stopped) {
        m->next_node = -1;
        return OMNIC_FAIL(err, OMNIC_E_CANCELLED, "%s: cancelled", m->name);
    }
    if (x.next < total) { /* paused at a part boundary */
        m->next_node = x.next / P;
        m->next_part = x.next % P;
    } else {
        m->next_node = -1; /* done */
    }
    return OMNIC_OK;
}

/* The work buffer of OMNIC_SLICE_PARTS x nth virtual threads (once per module). */
static omnic_status slice_work(omnic__module *m, omnic_err *err)
{
    if (m->slice_work) return OMNIC_OK;
    size_t need = 0;
    for (int n = 0; n < m->graph.n_nodes; n++) {
        size_t w = omnic__backend_wsize(m->backend, &m->graph.nodes[n].node, OMNIC_SLICE_PARTS * m->nth);
        if (w > need) need = w;
    }
    size_t bytes;
    if (!omnic__align_up(&bytes, need ? need : 1) ||
        !(m->slice_work = aligned_alloc(OMNIC_ARENA_ALIGN, bytes)))
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory for %zu bytes of slice work memory", m->name,
                          need);
    m->slice_work_bytes = bytes;
    return OMNIC_OK;
}

omnic_status omnic__module_start(omnic__module *m, const omnic__call *c, omnic_err *err)
{
    OMNIC_CHECK(m->finalized);
    m->next_node = -1;
    if (c->n < 1 || c->n > m->graph.capacity)
        return OMNIC_FAIL(err, OMNIC_E_CAPACITY, "%s: %lld rows in one call, the module takes 1..%lld",
                          m->name, (long long)c->n, (long long)m->graph.capacity);
    if (c->n % m->graph.row_multiple)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: %lld rows in one call, the module takes a multiple of %lld", m->name,
                          (long long)c->n, (long long)m->graph.row_multiple);
    if (m->kv_layers > 0) OMNIC_TRY(check_kv(m, c, err));
    if (c->n_inputs != m->n_in)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %d inputs given, signature has %d", m->name, c->n_inputs,
                          m->n_in);
    for (int i = 0; i < m->n_in; i++)
        OMNIC_TRY(check_input(m, &m->in[i], c->inputs[i], c->n, err));
    bind(m, c);
    for (int i = 0; i < m->n_in; i++) {
        omnic__tensor *dst = &m->graph.tensors[m->in[i].tensor]->t;
        size_t bytes = omnic__tensor_bytes(dst);
        if (bytes) memcpy(dst->data, c->inputs[i]->data, bytes);
    }
    m->next_node = 0;
    m->next_part = 0;
    m->parts = 0; /* chosen by the first run */
    return OMNIC_OK;
}

omnic_status omnic__module_run(omnic__module *m, double budget_s, const atomic_bool *cancel, bool *done,
                               omnic_err *err)
{
    *done = false;
    if (m->kv_layers > 0)
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "%s: modules with a KV cache are not run in slices",
                          m->name);
    if (m->next_node < 0) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: no call started", m->name);
    if (!m->parts) {
        m->parts = budget_s > 0 ? OMNIC_SLICE_PARTS : 1;
        if (m->parts > 1) OMNIC_TRY(slice_work(m, err));
    }
    OMNIC_TRY(run_nodes(m, budget_s > 0 ? omnic__now() + budget_s : 0, cancel, err));
    *done = m->next_node < 0;
    return OMNIC_OK;
}

omnic_status omnic__module_call(omnic__module *m, const omnic__call *c, omnic_err *err)
{
    OMNIC_TRY(omnic__module_start(m, c, err));
    m->parts = 1;
    OMNIC_TRY(run_nodes(m, 0, c->cancel, err));
    if (m->kv_layers > 0) {
        if (c->row_slots)
            for (int64_t r = 0; r < c->n; r++)
                c->kv->len[c->row_slots[r]]++;
        else
            c->kv->len[c->slot] = c->kv_start + c->n;
    }
    return OMNIC_OK;
}

const omnic__tensor *omnic__module_output(const omnic__module *m, int i)
{
    OMNIC_CHECK(i >= 0 && i < m->n_out);
    return &m->graph.tensors[m->out[i].tensor]->t;
}

int omnic__module_find_output(const omnic__module *m, const char *name)
{
    for (int i = 0; i < m->n_out; i++)
        if (!strcmp(m->out[i].name, name)) return i;
    return -1;
}

const char *omnic__module_output_name(const omnic__module *m, int i)
{
    return m->out[i].name;
}

static void print_entry(const omnic__sig_entry *e, FILE *f)
{
    fprintf(f, "%s %s [", e->name, omnic_dtype_name(e->dtype));
    for (int d = 0; d < e->ndim; d++) {
        if (d == 0 && e->var != OMNIC_VAR_NONE && e->var_div > 1)
            fprintf(f, "n/%lld<=%lld", (long long)e->var_div, (long long)e->dims[0]);
        else if (d == 0 && e->var != OMNIC_VAR_NONE)
            fprintf(f, "n<=%lld", (long long)e->dims[0]);
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
    if (m->kv_layers)
        fprintf(f, "; KV pool: %d layers x %lld rows %s", m->kv_layers, (long long)m->kv_rows,
                omnic_dtype_name(m->kv_dtype));
    fprintf(f, "\n    out: ");
    for (int i = 0; i < m->n_out; i++) {
        print_entry(&m->out[i], f);
        fprintf(f, i + 1 < m->n_out ? "; " : "");
    }
    fprintf(f,
            "\n    graph: %d nodes, %d tensors; planned %zu bytes (intermediates %zu, reuse saves %zu; "
            "inputs %zu; work %zu)\n",
            m->graph.n_nodes, m->graph.n_tensors, m->plan.total_bytes, m->plan.inter_bytes,
            m->plan.naive_bytes - m->plan.inter_bytes, m->plan.input_bytes, m->plan.work_bytes);
}
