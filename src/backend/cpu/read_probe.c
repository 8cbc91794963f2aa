/* Read-bandwidth probe: four independent vector sums per thread over its share of a buffer. */
#include "backend/cpu/read_probe.h"

#include "backend/cpu/simd.h"
#include "core/sync.h"

typedef struct probe_ctx {
    const float *buf;
    size_t n;                /* floats */
    volatile float sink[64]; /* each thread's sum, so the loads are not optimized away */
} probe_ctx;

static OMNIC_AVX512 float sum_avx512(const float *p, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 64 <= n; i += 64) {
        s0 = _mm512_add_ps(s0, _mm512_load_ps(p + i));
        s1 = _mm512_add_ps(s1, _mm512_load_ps(p + i + 16));
        s2 = _mm512_add_ps(s2, _mm512_load_ps(p + i + 32));
        s3 = _mm512_add_ps(s3, _mm512_load_ps(p + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static OMNIC_AVX2 float sum_avx2(const float *p, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        s0 = _mm256_add_ps(s0, _mm256_load_ps(p + i));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(p + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_load_ps(p + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_load_ps(p + i + 24));
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

static float sum_scalar(const float *p, size_t n)
{
    float s[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            s[l] += p[i + l];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

static void probe_task(void *ctx, int ith, int nth)
{
    probe_ctx *c = ctx;
    int64_t lo, hi;
    omnic__split_rows((int64_t)(c->n / 64), ith, nth, &lo, &hi); /* 64-float (256 B) blocks */
    const float *p = c->buf + lo * 64;
    const size_t n = (size_t)(hi - lo) * 64;
    const omnic__cpu_isa isa = omnic__cpu_isa_level();
    c->sink[ith % 64] = isa == OMNIC_CPU_ISA_AVX512 ? sum_avx512(p, n)
                        : isa == OMNIC_CPU_ISA_AVX2 ? sum_avx2(p, n)
                                                    : sum_scalar(p, n);
}

double omnic__cpu_read_probe(omnic__threadpool *pool, int nth, const void *buf, size_t bytes)
{
    probe_ctx c = {.buf = buf, .n = bytes / sizeof(float)};
    const double t0 = omnic__now();
    omnic__threadpool_run_n(pool, nth, probe_task, &c);
    return omnic__now() - t0;
}
