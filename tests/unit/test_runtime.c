/* Runtime: graph building errors, liveness planning, signature checks on every call,
 * variable lengths (a module planned for capacity C runs n <= C rows), no allocation
 * during a call, cancellation, and the bundle identity. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "runtime/bundle.h"
#include "runtime/module.h"

#define CAP 64
#define K 8
#define N 6

static float W[N * K], B[N];

/* y = silu(x . W^T + b), x [n, K] -> y [n, N]; also ids -> rows of W. */
static void build_mlp(omnic__module *m, const omnic__backend_ops *be, omnic__threadpool *pool)
{
    omnic_err err;
    assert_int_equal(omnic__module_init(m, "test.mlp", "omnic.test.mlp/1", CAP, &err), OMNIC_OK);
    omnic__graph *g = &m->graph;
    for (int i = 0; i < N * K; i++)
        W[i] = (float)((i * 37) % 17 - 8) / 8.0f;
    for (int i = 0; i < N; i++)
        B[i] = (float)i / 10.0f;
    static omnic__tensor w, b;
    int64_t wd[2] = {N, K}, bd[1] = {N};
    omnic__tensor_init(&w, OMNIC_DTYPE_F32, 2, wd, &err);
    omnic__tensor_init(&b, OMNIC_DTYPE_F32, 1, bd, &err);
    w.data = W;
    b.data = B;
    int64_t xd[2] = {CAP, K};
    omnic__tensor *x = omnic__g_input(g, "x", OMNIC_DTYPE_F32, 2, xd, OMNIC_VAR_T);
    omnic__tensor *y = omnic__g_unary(g, OMNIC_OP_SILU,
                                      omnic__g_matmul(g, x, omnic__g_weight(g, &w), omnic__g_weight(g, &b)));
    omnic__g_mark_output(g, y, "y");
    assert_int_equal(omnic__module_finalize(m, be, pool, &err), OMNIC_OK);
    assert_int_equal(omnic__module_constrain(m, "x", 0, true, &err), OMNIC_OK);
}

static void expect_mlp(const float *x, const omnic__tensor *y, int64_t n)
{
    assert_int_equal(y->dims[0], n); /* the output has the call's length, not the capacity */
    const float *yd = y->data;
    for (int64_t r = 0; r < n; r++)
        for (int j = 0; j < N; j++) {
            double acc = B[j];
            for (int k = 0; k < K; k++)
                acc += (double)x[r * K + k] * W[j * K + k];
            double want = acc / (1 + exp(-acc));
            assert_true(fabs(yd[r * N + j] - want) < 1e-5);
        }
}

static void run_variable_lengths(const char *backend, int threads)
{
    omnic_err err;
    omnic__threadpool *pool;
    assert_int_equal(omnic__threadpool_create(&pool, threads, &err), OMNIC_OK);
    omnic__module m;
    build_mlp(&m, omnic__backend_by_name(backend), pool);
    static float xs[CAP * K];
    for (int i = 0; i < CAP * K; i++)
        xs[i] = sinf((float)i);
    int64_t lens[] = {1, 2, 7, CAP - 1, CAP};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        omnic__tensor x;
        int64_t d[2] = {lens[i], K};
        omnic__tensor_init(&x, OMNIC_DTYPE_F32, 2, d, &err);
        x.data = xs;
        const omnic__tensor *in[1] = {&x};
        omnic__call c = {.n = lens[i], .inputs = in, .n_inputs = 1};
        omnic__alloc_fail_after(0); /* an admitted call never allocates */
        omnic_status s = omnic__module_call(&m, &c, &err);
        omnic__alloc_fail_after(-1);
        assert_int_equal(s, OMNIC_OK);
        expect_mlp(xs, omnic__module_output(&m, 0), lens[i]);
    }
    omnic__module_deinit(&m);
    omnic__threadpool_destroy(pool);
}

static void test_variable_lengths_ref(void **state)
{
    (void)state;
    run_variable_lengths("ref", 1);
}
static void test_variable_lengths_cpu(void **state)
{
    (void)state;
    run_variable_lengths("cpu", 2);
}

static void test_signature_checks(void **state)
{
    (void)state;
    omnic_err err;
    omnic__module m;
    build_mlp(&m, omnic__backend_ref(), NULL);
    static float xs[(CAP + 1) * K];
    omnic__tensor x;
    int64_t d[2] = {3, K};
    omnic__tensor_init(&x, OMNIC_DTYPE_F32, 2, d, &err);
    x.data = xs;
    const omnic__tensor *in[1] = {&x};
    /* rows disagree with n */
    omnic__call c = {.n = 4, .inputs = in, .n_inputs = 1};
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "f32 [4, 8], got f32 [3, 8]"));
    /* over capacity: names the numbers */
    x.dims[0] = CAP + 1;
    c.n = CAP + 1;
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_E_CAPACITY);
    assert_non_null(strstr(err.msg, "65 rows in one call, the module takes 1..64"));
    /* wrong dtype */
    x.dims[0] = 3;
    c.n = 3;
    x.dtype = OMNIC_DTYPE_F16;
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "must be f32"));
    x.dtype = OMNIC_DTYPE_F32;
    /* wrong inner dim */
    x.dims[1] = K + 1;
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_E_INVALID);
    x.dims[1] = K;
    /* non-finite values where the contract says finite */
    xs[5] = NAN;
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "'x'[5] is not finite"));
    xs[5] = 0;
    /* missing data, wrong input count */
    x.data = NULL;
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_E_INVALID);
    x.data = xs;
    c.n_inputs = 0;
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_E_INVALID);
    c.n_inputs = 1;
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_OK);
    omnic__module_deinit(&m);
}

/* Integer inputs are range-checked against the signature before any kernel runs. */
static void test_index_range(void **state)
{
    (void)state;
    omnic_err err;
    omnic__module m;
    assert_int_equal(omnic__module_init(&m, "test.gather", "omnic.test.gather/1", CAP, &err), OMNIC_OK);
    static float table[10 * 4];
    for (int i = 0; i < 40; i++)
        table[i] = (float)i;
    omnic__tensor t;
    int64_t td[2] = {10, 4}, id[1] = {CAP};
    omnic__tensor_init(&t, OMNIC_DTYPE_F32, 2, td, &err);
    t.data = table;
    omnic__tensor *ids = omnic__g_input(&m.graph, "ids", OMNIC_DTYPE_I32, 1, id, OMNIC_VAR_T);
    omnic__g_mark_output(&m.graph, omnic__g_get_rows(&m.graph, omnic__g_weight(&m.graph, &t), ids), "rows");
    assert_int_equal(omnic__module_finalize(&m, omnic__backend_cpu(), NULL, &err), OMNIC_OK);
    assert_int_equal(omnic__module_constrain(&m, "ids", 10, false, &err), OMNIC_OK);
    int32_t v[3] = {1, 9, 10};
    omnic__tensor x;
    int64_t xd[1] = {3};
    omnic__tensor_init(&x, OMNIC_DTYPE_I32, 1, xd, &err);
    x.data = v;
    const omnic__tensor *in[1] = {&x};
    omnic__call c = {.n = 3, .inputs = in, .n_inputs = 1};
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "'ids'[2] = 10 is outside [0, 10)"));
    v[2] = 0;
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_OK);
    const float *out = omnic__module_output(&m, 0)->data;
    assert_true(out[0] == 4.0f && out[4] == 36.0f && out[8] == 0.0f);
    omnic__module_deinit(&m);
}

/* A chain of elementwise ops reuses memory: at most three live buffers at a time. */
static void test_liveness_reuse(void **state)
{
    (void)state;
    omnic_err err;
    omnic__module m;
    assert_int_equal(omnic__module_init(&m, "test.chain", "omnic.test.chain/1", CAP, &err), OMNIC_OK);
    int64_t d[2] = {CAP, 64};
    omnic__tensor *x = omnic__g_input(&m.graph, "x", OMNIC_DTYPE_F32, 2, d, OMNIC_VAR_T);
    for (int i = 0; i < 10; i++)
        x = omnic__g_scale(&m.graph, x, 2.0f, 1.0f);
    omnic__g_mark_output(&m.graph, x, "y");
    assert_int_equal(omnic__module_finalize(&m, omnic__backend_cpu(), NULL, &err), OMNIC_OK);
    size_t one = CAP * 64 * sizeof(float);
    assert_int_equal(m.plan.naive_bytes, 10 * one);
    assert_true(m.plan.inter_bytes <= 2 * one);
    assert_int_equal(m.plan.input_bytes, one);
    omnic__module_deinit(&m);
}

/* Build errors are sticky and name the shapes. */
static void test_build_errors(void **state)
{
    (void)state;
    omnic_err err;
    omnic__module m;
    assert_int_equal(omnic__module_init(&m, "test.bad", "omnic.test.bad/1", CAP, &err), OMNIC_OK);
    int64_t d[2] = {CAP, 8};
    static float wdata[5 * 7];
    omnic__tensor w;
    int64_t wd[2] = {5, 7};
    omnic__tensor_init(&w, OMNIC_DTYPE_F32, 2, wd, &err);
    w.data = wdata;
    snprintf(w.name, sizeof w.name, "proj.weight");
    omnic__tensor *x = omnic__g_input(&m.graph, "x", OMNIC_DTYPE_F32, 2, d, OMNIC_VAR_T);
    omnic__tensor *y = omnic__g_matmul(&m.graph, x, omnic__g_weight(&m.graph, &w), NULL);
    assert_null(y);
    assert_null(omnic__g_unary(&m.graph, OMNIC_OP_SILU, y)); /* NULL passes through */
    assert_int_equal(omnic__module_finalize(&m, omnic__backend_cpu(), NULL, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "x has 8 cols, weight proj.weight expects 7"));
    omnic__module_deinit(&m);
    assert_int_equal(omnic__module_init(&m, "test.bad", "omnic.test.bad/1", 0, &err), OMNIC_E_INVALID);
}

/* Strided convolutions over a variable-length input, as an audio encoder's conv subsampling runs
 * them: x [n, W] (one channel) grouped 2 rows per output row, a 3x3 stride-2 conv to C channels,
 * ReLU, the result grouped again for a depthwise 3x3 stride-2 conv (rows n / 4, the graph's row
 * multiple 4), against a direct evaluation of the same convolutions for every n the module takes. */
static void test_strided_conv(void **state)
{
    (void)state;
    enum { CAPR = 16, W0 = 8, C = 3 };
    omnic_err err;
    omnic__module m;
    static float w1[C * 9], b1[C], w2[C * 9];
    for (int i = 0; i < C * 9; i++) {
        w1[i] = (float)((i * 7) % 11 - 5) / 4.0f;
        w2[i] = (float)((i * 5) % 13 - 6) / 8.0f;
    }
    for (int c = 0; c < C; c++)
        b1[c] = (float)c / 2.0f - 0.5f;
    omnic__tensor tw1, tb1, tw2;
    const int64_t dw[2] = {C, 9}, db[1] = {C};
    omnic__tensor_init(&tw1, OMNIC_DTYPE_F32, 2, dw, &err);
    omnic__tensor_init(&tb1, OMNIC_DTYPE_F32, 1, db, &err);
    omnic__tensor_init(&tw2, OMNIC_DTYPE_F32, 2, dw, &err);
    tw1.data = w1, tb1.data = b1, tw2.data = w2;
    assert_int_equal(omnic__module_init(&m, "test.conv", "omnic.test.conv/1", CAPR, &err), OMNIC_OK);
    omnic__graph *g = &m.graph;
    const int64_t dx[2] = {CAPR, W0};
    omnic__tensor *x = omnic__g_input(g, "x", OMNIC_DTYPE_F32, 2, dx, OMNIC_VAR_T);
    const omnic__dwconv2d_geom c1 = {3, 3, 2, 2, 1, 1, W0, 1, W0 / 2},
                               c2 = {3, 3, 2, 2, 1, 1, W0 / 2, C, W0 / 4};
    omnic__tensor *h = omnic__g_dwconv2d(g, omnic__g_group_rows(g, x, 2), omnic__g_weight(g, &tw1),
                                         omnic__g_weight(g, &tb1), &c1);
    h = omnic__g_unary(g, OMNIC_OP_RELU, h);
    assert_non_null(h);
    assert_int_equal(h->dims[0], CAPR / 2);
    h = omnic__g_dwconv2d(g, omnic__g_group_rows(g, h, 2), omnic__g_weight(g, &tw2), NULL, &c2);
    assert_non_null(h);
    assert_int_equal(h->dims[0], CAPR / 4);
    assert_int_equal(h->dims[1], (W0 / 4) * C);
    omnic__g_mark_output(g, h, "y");
    assert_int_equal(g->row_multiple, 4);
    assert_int_equal(omnic__module_finalize(&m, omnic__backend_ref(), NULL, &err), OMNIC_OK);
    float xs[CAPR * W0];
    for (int i = 0; i < CAPR * W0; i++)
        xs[i] = (float)((i * 13) % 17 - 8) / 4.0f;
    for (int64_t n = 4; n <= CAPR; n += 4) {
        omnic__tensor in;
        const int64_t dn[2] = {n, W0};
        omnic__tensor_init(&in, OMNIC_DTYPE_F32, 2, dn, &err);
        in.data = xs;
        const omnic__tensor *ins[1] = {&in};
        omnic__call call = {.n = n, .inputs = ins, .n_inputs = 1};
        assert_int_equal(omnic__module_call(&m, &call, &err), OMNIC_OK);
        const omnic__tensor *o = omnic__module_output(&m, 0);
        assert_int_equal(o->dims[0], n / 4);
        /* direct: stage 1 [n/2, W0/2, C], stage 2 [n/4, W0/4, C], zero outside, f64 sums */
        double s1[CAPR / 2][W0 / 2][C];
        for (int64_t r = 0; r < n / 2; r++)
            for (int q = 0; q < W0 / 2; q++)
                for (int c = 0; c < C; c++) {
                    double a = b1[c];
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++) {
                            int64_t rr = 2 * r + i - 1, cc = 2 * q + j - 1;
                            if (rr >= 0 && rr < n && cc >= 0 && cc < W0)
                                a += (double)xs[rr * W0 + cc] * w1[c * 9 + i * 3 + j];
                        }
                    s1[r][q][c] = (float)(a < 0 ? 0 : a);
                }
        for (int64_t r = 0; r < n / 4; r++)
            for (int q = 0; q < W0 / 4; q++)
                for (int c = 0; c < C; c++) {
                    double a = 0;
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++) {
                            int64_t rr = 2 * r + i - 1, cc = 2 * q + j - 1;
                            if (rr >= 0 && rr < n / 2 && cc >= 0 && cc < W0 / 2)
                                a += s1[rr][cc][c] * w2[c * 9 + i * 3 + j];
                        }
                    float got = ((const float *)o->data)[(r * (W0 / 4) + q) * C + c];
                    if (fabs(got - a) > 1e-5 * (1 + fabs(a)))
                        fail_msg("n=%lld (%lld,%d,%d): %g vs %g", (long long)n, (long long)r, q, c, got, a);
                }
    }
    omnic__module_deinit(&m);
}

static void test_cancel(void **state)
{
    (void)state;
    omnic_err err;
    omnic__module m;
    build_mlp(&m, omnic__backend_cpu(), NULL);
    static float xs[K];
    omnic__tensor x;
    int64_t d[2] = {1, K};
    omnic__tensor_init(&x, OMNIC_DTYPE_F32, 2, d, &err);
    x.data = xs;
    const omnic__tensor *in[1] = {&x};
    atomic_bool cancel;
    atomic_init(&cancel, true);
    omnic__call c = {.n = 1, .inputs = in, .n_inputs = 1, .cancel = &cancel};
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_E_CANCELLED);
    atomic_store(&cancel, false);
    assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_OK);
    omnic__module_deinit(&m);
}

/* Every identity field changes the hash; equal descriptions hash equal. */
static void test_identity(void **state)
{
    (void)state;
    int64_t dims[2] = {4, 8};
    omnic__weight_desc w = {"w", OMNIC_DTYPE_BF16, 2, dims, "as-stored"};
    omnic__bundle_desc base = {.arch_config = "{\"a\":1}",
                               .weights = &w,
                               .n_weights = 1,
                               .compute_dtypes = "f32",
                               .capacity = 128,
                               .position_mode = "1d",
                               .mask_mode = "causal",
                               .kv_layout = "slot",
                               .kv_dtype = OMNIC_DTYPE_F16,
                               .modules = "text.token_prefill"};
    char h0[65], h1[65];
    omnic__bundle_identity(&base, h0);
    omnic__bundle_identity(&base, h1);
    assert_string_equal(h0, h1);
    assert_int_equal(strlen(h0), 64);
    omnic__bundle_desc v[8];
    for (int i = 0; i < 8; i++)
        v[i] = base;
    v[0].capacity = 129;
    v[1].position_mode = "mrope3";
    v[2].kv_dtype = OMNIC_DTYPE_F32;
    v[3].arch_config = "{\"a\":2}";
    v[4].mask_mode = "causal+bias";
    v[5].adapters = "speech:r8";
    v[6].n_weights = 0;
    v[7].encoder_buckets = "224";
    for (int i = 0; i < 8; i++) {
        omnic__bundle_identity(&v[i], h1);
        assert_string_not_equal(h0, h1);
    }
    omnic__weight_desc w2 = w;
    w2.transform = "q8_0";
    base.weights = &w2;
    omnic__bundle_identity(&base, h1);
    assert_string_not_equal(h0, h1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variable_lengths_ref),
        cmocka_unit_test(test_variable_lengths_cpu),
        cmocka_unit_test(test_signature_checks),
        cmocka_unit_test(test_index_range),
        cmocka_unit_test(test_liveness_reuse),
        cmocka_unit_test(test_build_errors),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_strided_conv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
