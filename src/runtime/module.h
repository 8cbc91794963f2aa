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
 * entry must equal the call's n, of a VAR_KV entry kv_start + n. */
typedef struct omnic__sig_entry {
    char name[64];
    omnic_dtype dtype;
    int ndim;
    int64_t dims[OMNIC_MAX_DIMS];
    omnic__var var;
    int64_t max_value; /* integer inputs: every value must be in [0, max_value); 0: unchecked */
    bool finite;       /* float inputs: every value must be finite */
    int tensor;        /* graph tensor id */
} omnic__sig_entry;

typedef struct omnic__module {
    char name[48];            /* "text.token_prefill" */
    char contract[64];        /* contract version, e.g. "omnic.text.token_prefill/1" */
    omnic__graph graph;
    omnic__sig_entry in[OMNIC_MODULE_MAX_IO], out[OMNIC_MODULE_MAX_IO];
    int n_in, n_out;
    int slot_layers;          /* layers of KV the module reads/writes; 0: uses no slot */
    const omnic__backend_ops *backend; /* borrowed */
    omnic__threadpool *pool;  /* borrowed; NULL: one thread */
    int nth;                  /* threads kernels run with */
    omnic__plan plan;
    uint8_t *mem;             /* owned, plan.total_bytes */
    bool finalized;
} omnic__module;

/* A call: n rows starting at cache row kv_start. */
typedef struct omnic__call {
    int64_t n;                            /* rows in this call, 1..capacity */
    int64_t kv_start;                     /* cache rows already in the slot (0 without a slot) */
    const omnic__tensor *const *inputs;   /* [n_in] in signature order; borrowed */
    int n_inputs;
    omnic__kv_slot *slot;                 /* required when slot_layers > 0; rows [kv_start, kv_start+n) written */
    const atomic_bool *cancel;            /* optional: checked between nodes */
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
 * is readable through omnic__module_output until the next call, and the slot's len is
 * kv_start + n. On failure nothing in the slot beyond row kv_start has meaning. */
omnic_status omnic__module_call(omnic__module *m, const omnic__call *c, omnic_err *err);
/* Output i (borrowed, valid until the next call). */
const omnic__tensor *omnic__module_output(const omnic__module *m, int i);

/* Writes "name(contract): in[...] -> out[...]" lines. */
void omnic__module_print(const omnic__module *m, FILE *f);

#endif
