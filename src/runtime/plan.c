/* Liveness-based first-fit placement of a graph's intermediates. */
#include <string.h>

#include "core/arena.h"
#include "runtime/plan.h"

/* The tensor that owns the storage t lives in (follows views). */
static omnic__gtensor *storage_of(omnic__graph *g, omnic__gtensor *t)
{
    while (t->kind == OMNIC_GT_VIEW)
        t = g->tensors[t->base];
    return t;
}

typedef struct block {
    size_t off, size;
    int owner; /* tensor id */
} block;

/* First fit among the live blocks (kept sorted by offset); returns the offset. */
static size_t place(block *live, int *n_live, size_t size, int owner, size_t *high)
{
    size_t off = 0;
    int at = 0;
    for (; at < *n_live; at++) {
        if (live[at].off >= off + size) break;
        if (live[at].off + live[at].size > off) off = live[at].off + live[at].size;
    }
    memmove(&live[at + 1], &live[at], (size_t)(*n_live - at) * sizeof *live);
    live[at] = (block){off, size, owner};
    (*n_live)++;
    if (off + size > *high) *high = off + size;
    return off;
}

static void release(block *live, int *n_live, int owner)
{
    for (int i = 0; i < *n_live; i++)
        if (live[i].owner == owner) {
            memmove(&live[i], &live[i + 1], (size_t)(*n_live - i - 1) * sizeof *live);
            (*n_live)--;
            return;
        }
}

omnic_status omnic__plan_graph(omnic__graph *g, const omnic__backend_ops *b, int nth, omnic__plan *out,
                               omnic_err *err)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < g->n_tensors; i++)
        g->tensors[i]->def = g->tensors[i]->last_use = -1;
    /* Liveness on storage owners: a read or write through a view touches its base. */
    for (int n = 0; n < g->n_nodes; n++) {
        omnic__gnode *nd = &g->nodes[n];
        omnic__gtensor *d = storage_of(g, g->tensors[nd->dst]);
        if (d->def < 0) d->def = n;
        if (d->last_use < n) d->last_use = n;
        for (int s = 0; s < OMNIC_MAX_SRC; s++) {
            if (nd->src[s] < 0) continue;
            omnic__gtensor *t = storage_of(g, g->tensors[nd->src[s]]);
            if (t->kind == OMNIC_GT_INTERMEDIATE && t->def < 0)
                return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "plan: node %d reads %s before any node writes it",
                                  n, t->t.name);
            if (t->last_use < n) t->last_use = n;
        }
    }
    for (int i = 0; i < g->n_tensors; i++) {
        omnic__gtensor *t = g->tensors[i];
        if (t->is_output) storage_of(g, t)->last_use = g->n_nodes; /* outputs outlive the call */
    }
    /* Walk the nodes: place each result at its definition, release storage after its last read. */
    block *live = omnic_alloc_array((size_t)g->n_tensors + 1, sizeof *live);
    if (!live) {
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "plan: out of memory for %d tensors", g->n_tensors);
    }
    int n_live = 0;
    size_t high = 0;
    for (int n = 0; n < g->n_nodes; n++) {
        omnic__gtensor *d = storage_of(g, g->tensors[g->nodes[n].dst]);
        if (d->kind == OMNIC_GT_INTERMEDIATE && d->def == n) {
            size_t bytes;
            if (!omnic__align_up(&bytes, omnic__tensor_bytes(&d->t))) bytes = SIZE_MAX;
            d->offset = place(live, &n_live, bytes ? bytes : OMNIC_ARENA_ALIGN, d->id, &high);
            out->naive_bytes += bytes;
        }
        /* release everything whose last use is this node (after placing the result, so a
         * result never overlaps the sources it is computed from) */
        for (int s = 0; s < OMNIC_MAX_SRC; s++) {
            if (g->nodes[n].src[s] < 0) continue;
            omnic__gtensor *t = storage_of(g, g->tensors[g->nodes[n].src[s]]);
            if (t->kind == OMNIC_GT_INTERMEDIATE && t->last_use == n) release(live, &n_live, t->id);
        }
        if (d->kind == OMNIC_GT_INTERMEDIATE && d->last_use == n) release(live, &n_live, d->id);
    }
    omnic_free(live);
    out->inter_bytes = high;
    size_t in_off = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        omnic__gtensor *t = g->tensors[i];
        if (t->kind != OMNIC_GT_INPUT && t->kind != OMNIC_GT_KV_INDEX && t->kind != OMNIC_GT_KV_BEGIN)
            continue;
        size_t bytes;
        if (!omnic__align_up(&bytes, omnic__tensor_bytes(&t->t)))
            return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "plan: input %s too large", t->t.name);
        t->offset = in_off;
        in_off += bytes ? bytes : OMNIC_ARENA_ALIGN;
    }
    out->input_bytes = in_off;
    for (int n = 0; n < g->n_nodes; n++) {
        size_t w = omnic__backend_wsize(b, &g->nodes[n].node, nth);
        if (w > out->work_bytes) out->work_bytes = w;
    }
    size_t w_aligned;
    if (!omnic__align_up(&w_aligned, out->work_bytes) ||
        !omnic_size_add(&out->total_bytes, out->inter_bytes, out->input_bytes) ||
        !omnic_size_add(&out->total_bytes, out->total_bytes, w_aligned))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "plan: total size overflows");
    out->work_bytes = w_aligned;
    return OMNIC_OK;
}
