/* The `cpu` backend: its kernel table, CPU feature detection and ISA selection.
 * The library is built for baseline x86-64; AVX2 and AVX-512 kernels are picked here at
 * run time from CPUID + XCR0, capped by OMNIC_CPU_ISA=scalar|avx2|avx512 (for testing
 * every path on one machine). */
#include <cblas.h>
#include <cpuid.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/cpu/matmul_q.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/simd.h"
#include "backend/cpu/vec.h"
#include "core/log.h"

static omnic__cpu_isa g_isa = OMNIC_CPU_ISA_SCALAR;
static unsigned g_features;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static const char *const isa_names[OMNIC_CPU_ISA_COUNT] = {
    [OMNIC_CPU_ISA_SCALAR] = "scalar",
    [OMNIC_CPU_ISA_AVX2] = "avx2",
    [OMNIC_CPU_ISA_AVX512] = "avx512",
};
_Static_assert(sizeof isa_names / sizeof isa_names[0] == OMNIC_CPU_ISA_COUNT, "isa_names out of step");

static const omnic__cpu_vec *const vec_tables[OMNIC_CPU_ISA_COUNT] = {
    [OMNIC_CPU_ISA_SCALAR] = &omnic__cpu_vec_scalar,
    [OMNIC_CPU_ISA_AVX2] = &omnic__cpu_vec_avx2,
    [OMNIC_CPU_ISA_AVX512] = &omnic__cpu_vec_avx512,
};
_Static_assert(sizeof vec_tables / sizeof vec_tables[0] == OMNIC_CPU_ISA_COUNT, "vec_tables out of step");

const char *omnic__cpu_isa_name(omnic__cpu_isa isa)
{
    return (unsigned)isa < OMNIC_CPU_ISA_COUNT ? isa_names[isa] : "?";
}

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

/* Best ISA the CPU and the OS (saved register state) support. */
static omnic__cpu_isa detect(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return OMNIC_CPU_ISA_SCALAR;
    bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
    if (!(fma && osxsave && avx && f16c)) return OMNIC_CPU_ISA_SCALAR;
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return OMNIC_CPU_ISA_SCALAR; /* XMM + YMM state */
    if (__get_cpuid_max(0, NULL) < 7) return OMNIC_CPU_ISA_SCALAR;
    __cpuid_count(7, 0, a, b, c, d);
    if (!(b & (1u << 5))) return OMNIC_CPU_ISA_SCALAR; /* AVX2 */
    bool f = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
    if (f && dq && bw && vl && (xcr0 & 0xe6) == 0xe6) return OMNIC_CPU_ISA_AVX512; /* + opmask, ZMM state */
    return OMNIC_CPU_ISA_AVX2;
}

/* AVX512_VNNI / AVX512_VBMI / AMX-INT8 on an AVX-512 CPU; AMX also needs the kernel to grant
 * this process the tile data state (Linux 5.16+: arch_prctl ARCH_REQ_XCOMP_PERM). */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
static unsigned detect_features(void)
{
    unsigned a, b, c, d, f = 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (c & (1u << 11)) f |= OMNIC_CPU_VNNI;
    if (c & (1u << 1)) f |= OMNIC_CPU_VBMI;
    bool amx = (d & (1u << 24)) && (d & (1u << 25)); /* AMX-TILE, AMX-INT8 */
    const char *env = getenv("OMNIC_CPU_AMX");
    if (amx && (f & OMNIC_CPU_VNNI) && (f & OMNIC_CPU_VBMI) && !(env && !strcmp(env, "0")) &&
        syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 &&
        (xgetbv0() & 0x60000) == 0x60000)
        f |= OMNIC_CPU_AMX;
    return f;
}

static void init_once(void)
{
    omnic__cpu_isa best = detect(), isa = best;
    const char *cap = getenv("OMNIC_CPU_ISA");
    if (cap && *cap) {
        int want = -1;
        for (int i = 0; i < OMNIC_CPU_ISA_COUNT; i++)
            if (!strcmp(cap, isa_names[i])) want = i;
        if (want < 0)
            OMNIC_LOG_W("OMNIC_CPU_ISA=%s is not scalar, avx2 or avx512; using %s", cap, isa_names[best]);
        else if (want > (int)best)
            OMNIC_LOG_W("OMNIC_CPU_ISA=%s is not supported by this CPU; using %s", cap, isa_names[best]);
        else
            isa = (omnic__cpu_isa)want;
    }
    g_isa = isa;
    g_features = isa == OMNIC_CPU_ISA_AVX512 ? detect_features() : 0;
    /* Each kernel thread calls BLAS on its own slice: BLAS itself must not spawn threads. */
    openblas_set_num_threads(1);
    OMNIC_LOG_D("cpu backend: isa %s (cpu supports %s)%s%s%s", isa_names[isa], isa_names[best],
                g_features & OMNIC_CPU_VNNI ? " +vnni" : "", g_features & OMNIC_CPU_VBMI ? " +vbmi" : "",
                g_features & OMNIC_CPU_AMX ? " +amx" : "");
}

omnic__cpu_isa omnic__cpu_isa_level(void)
{
    pthread_once(&g_once, init_once);
    return g_isa;
}

unsigned omnic__cpu_features(void)
{
    (void)omnic__cpu_isa_level();
    return g_features;
}

const omnic__cpu_vec *omnic__cpu_vec_get(void)
{
    return vec_tables[omnic__cpu_isa_level()];
}

static void cpu_init(void)
{
    (void)omnic__cpu_isa_level();
}

_Static_assert(OMNIC_OP_COUNT == OMNIC_OP_SIGMOID + 1, "new op: add its cpu kernel below");

static const omnic__backend_ops cpu_ops = {
    .version = OMNIC_BACKEND_OPS_VERSION,
    .name = "cpu",
    .single_threaded = false,
    .kernel =
        {
            [OMNIC_OP_MATMUL] = omnic__cpu_matmul,
            [OMNIC_OP_ADD] = omnic__cpu_add,
            [OMNIC_OP_MUL] = omnic__cpu_mul,
            [OMNIC_OP_SCALE] = omnic__cpu_scale,
            [OMNIC_OP_RMSNORM] = omnic__cpu_rmsnorm,
            [OMNIC_OP_LAYERNORM] = omnic__cpu_layernorm,
            [OMNIC_OP_SOFTMAX] = omnic__cpu_softmax,
            [OMNIC_OP_ROPE] = omnic__cpu_rope,
            [OMNIC_OP_ATTENTION] = omnic__cpu_attention,
            [OMNIC_OP_SILU] = omnic__cpu_unary,
            [OMNIC_OP_GELU] = omnic__cpu_unary,
            [OMNIC_OP_GELU_TANH] = omnic__cpu_unary,
            [OMNIC_OP_GELU_QUICK] = omnic__cpu_unary,
            [OMNIC_OP_SWIGLU] = omnic__cpu_gated,
            [OMNIC_OP_GEGLU] = omnic__cpu_gated,
            [OMNIC_OP_GET_ROWS] = omnic__cpu_get_rows,
            [OMNIC_OP_PATCH_EMBED] = omnic__cpu_patch_embed,
            [OMNIC_OP_CONCAT] = omnic__cpu_concat,
            [OMNIC_OP_SLICE] = omnic__cpu_slice,
            [OMNIC_OP_PERMUTE] = omnic__cpu_permute,
            [OMNIC_OP_ARGMAX] = omnic__cpu_argmax,
            [OMNIC_OP_CPY] = omnic__cpu_cpy,
            [OMNIC_OP_SOFTCAP] = omnic__cpu_unary,
            [OMNIC_OP_SET_ROWS] = omnic__cpu_set_rows,
            [OMNIC_OP_POOL_AVG] = omnic__cpu_pool_avg,
            [OMNIC_OP_GAUSS_TOPK] = omnic__cpu_gauss_topk,
            [OMNIC_OP_RMS_MATCH] = omnic__cpu_rms_match,
            [OMNIC_OP_MOE_ROUTE] = omnic__cpu_moe_route,
            [OMNIC_OP_MOE_WEIGHTS] = omnic__cpu_moe_weights,
            [OMNIC_OP_MATMUL_ID] = omnic__cpu_matmul_id,
            [OMNIC_OP_MOE_SUM] = omnic__cpu_moe_sum,
            [OMNIC_OP_RELU] = omnic__cpu_unary,
            [OMNIC_OP_DWCONV2D] = omnic__cpu_dwconv2d,
            [OMNIC_OP_CONV2D] = omnic__cpu_conv2d,
            [OMNIC_OP_CUM_GROUPNORM] = omnic__cpu_cum_groupnorm,
            [OMNIC_OP_ATTN_LOCAL] = omnic__cpu_attn_local,
            [OMNIC_OP_SIGMOID] = omnic__cpu_unary,
        },
    .wsize =
        {
            [OMNIC_OP_MATMUL] = omnic__cpu_matmul_wsize,
            [OMNIC_OP_ATTENTION] = omnic__cpu_attention_wsize,
            [OMNIC_OP_ROPE] = omnic__cpu_rope_wsize,
            [OMNIC_OP_PATCH_EMBED] = omnic__cpu_patch_embed_wsize,
            [OMNIC_OP_MATMUL_ID] = omnic__cpu_matmul_id_wsize,
            [OMNIC_OP_DWCONV2D] = omnic__cpu_dwconv2d_wsize,
            [OMNIC_OP_CONV2D] = omnic__cpu_conv2d_wsize,
            [OMNIC_OP_CUM_GROUPNORM] = omnic__cpu_cum_groupnorm_wsize,
            [OMNIC_OP_ATTN_LOCAL] = omnic__cpu_attn_local_wsize,
        },
    .init = cpu_init,
    .weight_dtype = omnic__cpu_weight_dtype,
};

const omnic__backend_ops *omnic__backend_cpu(void)
{
    return &cpu_ops;
}
