/* The reference backend: the numeric oracle. Plain C, one thread, reductions in
 * double, each result rounded to f32 once. Its ops table is indexed by omnic__op. */
#include "backend/ref/ref.h"

/* The table below names every op; a new op breaks the build here until it has a kernel. */
_Static_assert(OMNIC_OP_SIGMOID + 1 == OMNIC_OP_COUNT, "new op: add its ref kernel to ref_ops");

static const omnic__backend_ops ref_ops = {
    .version = OMNIC_BACKEND_OPS_VERSION,
    .name = "ref",
    .single_threaded = true,
    .kernel =
        {
            [OMNIC_OP_NONE] = NULL, /* leaves have no kernel */
            [OMNIC_OP_MATMUL] = omnic__ref_matmul,
            [OMNIC_OP_ADD] = omnic__ref_binary,
            [OMNIC_OP_MUL] = omnic__ref_binary,
            [OMNIC_OP_SCALE] = omnic__ref_unary,
            [OMNIC_OP_RMSNORM] = omnic__ref_rmsnorm,
            [OMNIC_OP_LAYERNORM] = omnic__ref_layernorm,
            [OMNIC_OP_SOFTMAX] = omnic__ref_softmax,
            [OMNIC_OP_ROPE] = omnic__ref_rope,
            [OMNIC_OP_ATTENTION] = omnic__ref_attention,
            [OMNIC_OP_SILU] = omnic__ref_unary,
            [OMNIC_OP_GELU] = omnic__ref_unary,
            [OMNIC_OP_GELU_TANH] = omnic__ref_unary,
            [OMNIC_OP_GELU_QUICK] = omnic__ref_unary,
            [OMNIC_OP_SWIGLU] = omnic__ref_gated,
            [OMNIC_OP_GEGLU] = omnic__ref_gated,
            [OMNIC_OP_GET_ROWS] = omnic__ref_get_rows,
            [OMNIC_OP_PATCH_EMBED] = omnic__ref_patch_embed,
            [OMNIC_OP_CONCAT] = omnic__ref_concat,
            [OMNIC_OP_SLICE] = omnic__ref_slice,
            [OMNIC_OP_PERMUTE] = omnic__ref_permute,
            [OMNIC_OP_ARGMAX] = omnic__ref_argmax,
            [OMNIC_OP_CPY] = omnic__ref_cpy,
            [OMNIC_OP_SOFTCAP] = omnic__ref_unary,
            [OMNIC_OP_SET_ROWS] = omnic__ref_set_rows,
            [OMNIC_OP_POOL_AVG] = omnic__ref_pool_avg,
            [OMNIC_OP_GAUSS_TOPK] = omnic__ref_gauss_topk,
            [OMNIC_OP_RMS_MATCH] = omnic__ref_rms_match,
            [OMNIC_OP_MOE_ROUTE] = omnic__ref_moe_route,
            [OMNIC_OP_MOE_WEIGHTS] = omnic__ref_moe_weights,
            [OMNIC_OP_MATMUL_ID] = omnic__ref_matmul_id,
            [OMNIC_OP_MOE_SUM] = omnic__ref_moe_sum,
            [OMNIC_OP_RELU] = omnic__ref_unary,
            [OMNIC_OP_DWCONV2D] = omnic__ref_dwconv2d,
            [OMNIC_OP_CONV2D] = omnic__ref_conv2d,
            [OMNIC_OP_CUM_GROUPNORM] = omnic__ref_cum_groupnorm,
            [OMNIC_OP_ATTN_LOCAL] = omnic__ref_attn_local,
            [OMNIC_OP_SIGMOID] = omnic__ref_unary,
        },
    .wsize =
        {
            [OMNIC_OP_MATMUL] = omnic__ref_matmul_wsize,
            [OMNIC_OP_ATTENTION] = omnic__ref_attention_wsize,
            [OMNIC_OP_PATCH_EMBED] = omnic__ref_patch_embed_wsize,
            [OMNIC_OP_MATMUL_ID] = omnic__ref_matmul_id_wsize,
        },
    .init = NULL,
};

const omnic__backend_ops *omnic__backend_ref(void)
{
    return &ref_ops;
}
