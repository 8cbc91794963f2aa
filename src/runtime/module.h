/* Modules: one entry point (a planned graph) with a signature checked on every call.
 * A module owns its graph and one block of memory planned at finalize time
 * (intermediates | inputs | work buffer); a call never allocates. Not reentrant: one
 * call at a time (the engine's scheduler thread owns modules). */
#ifndef OMNIC_RUNTIME_MODULE_H
#define OMNIC_RUNTIME_MODULE_H

#include <stdatomic.h>
#include <stdio.h>

#include "core/threadpool.h"
#include "runtime/graph.h"
#include "runtime/kv.h"
#include "runtime/plan.h"

#define OMNIC_MODULE_MAX_IO 16

/* One named tensor of a signature. dims are the largest allowed; dims[0] of a VAR_T
 * entry must equal the call's n. */
typedef struct omnic__sig_entry {
    char name[64];
    omnic_dtype dtype;
    int ndim;
    int64_t dims[OMNIC_MAX_DIMS];
    omnic__var var;
    int64_t var_div;   /* VAR_T: dims[0] = n / var_div (outputs after omnic__g_group_rows) */
    int64_t max_value; /* integer inputs: every value must be in [0, max_value); 0: unchecked */
    bool finite;       /* float inputs: every value must be finite */
    int tensor;        /* graph tensor id */
} omnic__sig_entry;

typedef struct omnic__module {
    char name[48];     /* "text.token_prefill" */
    char contract[64]; /* contract version, e.g. "omnic.text.token_prefill/1" */
    omnic__graph graph;
    omnic__sig_entry in[OMNIC_MODULE_MAX_IO], out[OMNIC_MODULE_MAX_IO];
    int n_in, n_out;
    int kv_layers;   /* KV pool layers the module reads/writes; 0: uses no KV */
    int64_t kv_rows; /* pool rows (n_slots * capacity) it was built for */
    omnic_dtype kv_dtype;
    int64_t kv_heads, kv_head_dim;
    const omnic__backend_ops *backend; /* borrowed */
    omnic__threadpool *pool;           /* borrowed; NULL: one thread */
    int nth;                           /* threads kernels run with */
    omnic__plan plan;
    uint8_t *mem; /* owned, plan.total_bytes */
    bool finalized;
    int next_node;       /* a started call (omnic__module_start): the next node to run; -1: none */
    int next_part;       /* ... and the next of its parts (a sliced run splits each node into parts) */
    int parts;           /* parts per node of the started call: 1, or OMNIC_SLICE_PARTS when sliced */
    uint8_t *slice_work; /* owned: the work buffer of parts x nth virtual threads (sliced runs) */
    size_t slice_work_bytes;
} omnic__module;

/* A call of n rows. With a KV pool, rows map to cache rows in one of two ways:
 * - one sequence (row_slots NULL): row i is position kv_start + i of slot `slot`
 *   (prefill, chunk by chunk; kv_start <= the slot's length);
 * - per-row slots (row_slots given): rows naming the same slot form one run of adjacent
 *   rows appended to that slot in order: the run's row j goes to position len + j
 *   (batched decode: one row per slot; mixed steps: a prefill run beside decode rows). */
typedef struct omnic__call {
    int64_t n;                          /* rows in this call, 1..capacity */
    const omnic__tensor *const *inputs; /* [n_in] in signature order; borrowed */
    int n_inputs;
    omnic__kv_pool *kv; /* required when the module uses KV */
    int slot;           /* one-sequence calls */
    int64_t kv_start;
    const int32_t *row_slots;  /* [n] per-row calls, or NULL */
    const atomic_bool *cancel; /* optional: checked between nodes */
} omnic__call;

omnic_status omnic__module_init(omnic__module *m, const char *name, const char *contract, int64_t capacity,
                                omnic_err *err);
void omnic__module_deinit(omnic__module *m);

/* After the graph is built: derive the signature (inputs in creation order, marked outputs),
 * plan memory for backend b with pool's threads (pool may be NULL), allocate it. */
omnic_status omnic__module_finalize(omnic__module *m, const omnic__backend_ops *b, omnic__threadpool *pool,
                                    omnic_err *err);
/* Adds a value check to input `name` (before finalize or after). */
omnic_status omnic__module_constrain(omnic__module *m, const char *name, int64_t max_value, bool finite,
                                     omnic_err *err);

/* Checks the call against the signature (dtype, rank, every dim, data present, value
 * ranges, finiteness, capacity), copies inputs, runs every node. On success output i
 * is readable through omnic__module_output until the next call and the slots' lengths
 * are advanced (one sequence: len = kv_start + n; per row: len + 1). On failure no
 * length changes (cache rows past a slot's length may have been written). */
omnic_status omnic__module_call(omnic__module *m, const omnic__call *c, omnic_err *err);
/* A call run in slices (encoders between decode steps): start checks the call, binds it and
 * copies its inputs as omnic__module_call does, without running anything; run then runs nodes
 * in order for about budget_s seconds and sets *done when the last one ran (outputs then
 * readable). A call whose first run has a budget (> 0) runs each node as OMNIC_SLICE_PARTS parts
 * (the kernel's share of parts x nth virtual threads, nth at a time: bit-identical to one
 * whole run, as every kernel is for any thread count), so a slice can end inside a long node;
 * at least one part runs. budget_s <= 0: to the end. Between start and done the module
 * must not be called otherwise; a new start abandons an unfinished call. Modules that use KV
 * are not run this way (E_INTERNAL). run: E_CANCELLED when *cancel was set (checked between
 * nodes; the call is then abandoned), E_INVALID when no call is started. */
omnic_status omnic__module_start(omnic__module *m, const omnic__call *c, omnic_err *err);
omnic_status omnic__module_run(omnic__module *m, double budget_s, const atomic_bool *cancel, bool *done,
                               omnic_err *err);

/* Output i (borrowed, valid until the next call). */
const omnic__tensor *omnic__module_output(const omnic__module *m, int i);
/* Index of the output named name, or -1. */
int omnic__module_find_output(const omnic__module *m, const char *name);
/* The name of output i (borrowed, lives with the module). */
const char *omnic__module_output_name(const omnic__module *m, int i);

/* Writes "name(contract): in[...] -> out[...]" lines. */
void omnic__module_print(const omnic__module *m, FILE *f);

#endif
