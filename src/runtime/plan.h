/* Memory planning for a graph at its capacity shapes: every intermediate gets an offset
 * in one shared region, reused once its last reader has run (liveness, first fit);
 * inputs get their own region; the kernel work buffer is the largest any node needs. */
#ifndef OMNIC_RUNTIME_PLAN_H
#define OMNIC_RUNTIME_PLAN_H

#include "runtime/graph.h"

typedef struct omnic__plan {
    size_t inter_bytes; /* intermediates, shared by liveness */
    size_t input_bytes; /* module inputs */
    size_t work_bytes;  /* kernel work buffer */
    size_t total_bytes; /* sum of the three (each region 64-byte aligned) */
    size_t naive_bytes; /* intermediates without reuse, for reporting the saving */
} omnic__plan;

/* Sets def/last_use/offset of every tensor of g and fills *out. nth: threads the
 * kernels will run with (work buffers depend on it). */
omnic_status omnic__plan_graph(omnic__graph *g, const omnic__backend_ops *b, int nth, omnic__plan *out,
                               omnic_err *err);

#endif
