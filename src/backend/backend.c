/* Backend registry: op names, lookup of the CPU-side backends by name, and the
 * work-buffer size query with its default for ops that need none. */
#include <string.h>

#include "backend/backend.h"

const char *const omnic__op_names[OMNIC_OP_COUNT] = {
    [OMNIC_OP_NONE] = "none",
    [OMNIC_OP_MATMUL] = "matmul",
    [OMNIC_OP_ADD] = "add",
    [OMNIC_OP_MUL] = "mul",
    [OMNIC_OP_SCALE] = "scale",
    [OMNIC_OP_RMSNORM] = "rmsnorm",
    [OMNIC_OP_LAYERNORM] = "layernorm",
    [OMNIC_OP_SOFTMAX] = "softmax",
    [OMNIC_OP_ROPE] = "rope",
    [OMNIC_OP_ATTENTION] = "attention",
    [OMNIC_OP_SILU] = "silu",
    [OMNIC_OP_GELU] = "gelu",
    [OMNIC_OP_GELU_TANH] = "gelu_tanh",
    [OMNIC_OP_GELU_QUICK] = "gelu_quick",
    [OMNIC_OP_SWIGLU] = "swiglu",
    [OMNIC_OP_GEGLU] = "geglu",
    [OMNIC_OP_GET_ROWS] = "get_rows",
    [OMNIC_OP_PATCH_EMBED] = "patch_embed",
    [OMNIC_OP_CONCAT] = "concat",
    [OMNIC_OP_SLICE] = "slice",
    [OMNIC_OP_PERMUTE] = "permute",
    [OMNIC_OP_ARGMAX] = "argmax",
    [OMNIC_OP_CPY] = "cpy",
    [OMNIC_OP_SOFTCAP] = "softcap",
    [OMNIC_OP_POOL_AVG] = "pool_avg",
    [OMNIC_OP_SET_ROWS] = "set_rows",
    [OMNIC_OP_GAUSS_TOPK] = "gauss_topk",
    [OMNIC_OP_RMS_MATCH] = "rms_match",
    [OMNIC_OP_MOE_ROUTE] = "moe_route",
    [OMNIC_OP_MOE_WEIGHTS] = "moe_weights",
    [OMNIC_OP_MATMUL_ID] = "matmul_id",
    [OMNIC_OP_MOE_SUM] = "moe_sum",
    [OMNIC_OP_RELU] = "relu",
    [OMNIC_OP_DWCONV2D] = "dwconv2d",
    [OMNIC_OP_CONV2D] = "conv2d",
    [OMNIC_OP_CUM_GROUPNORM] = "cum_groupnorm",
    [OMNIC_OP_ATTN_LOCAL] = "attn_local",
    [OMNIC_OP_SIGMOID] = "sigmoid",
};
/* A new op without a name here shows up as a NULL entry; the kernel-table test walks it. */
_Static_assert(sizeof omnic__op_names / sizeof omnic__op_names[0] == OMNIC_OP_COUNT,
               "omnic__op_names out of step with omnic__op");
_Static_assert(OMNIC_OP_SIGMOID + 1 == OMNIC_OP_COUNT, "new op: add its name to omnic__op_names");

const omnic__backend_ops *omnic__backend_by_name(const char *name)
{
    if (!name) return NULL;
    if (strcmp(name, "ref") == 0) return omnic__backend_ref();
    if (strcmp(name, "cpu") == 0) return omnic__backend_cpu();
    return NULL;
}

size_t omnic__backend_wsize(const omnic__backend_ops *b, const omnic__node *n, int nth)
{
    if (n->op <= OMNIC_OP_NONE || n->op >= OMNIC_OP_COUNT) return 0;
    omnic__wsize_fn f = b->wsize[n->op];
    return f ? f(n, nth) : 0;
}
