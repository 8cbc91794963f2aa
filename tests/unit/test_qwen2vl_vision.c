/* Qwen2-VL / Qwen2.5-VL vision towers (models/qwen2vl_vision.c) on tiny checkpoints from
 * tools/mktiny.py --family qwen2_vl / qwen2_5_vl: vision.encode against the independent numpy
 * reference tools/ref/qwen2vl_vision.py (projected rows and last-block features), cpu vs ref
 * backends, several images packed in one call equal to each image alone, the Qwen2.5-VL
 * window order (hand-computed case, permutation round trip, block structure), both weight
 * spellings, and refusals
 * (patch count vs grids, non-finite values, patch width, bad grids, capacity, configs,
 * missing weights, allocation failures). Test patches are random arrays of the processor's
 * layout, not processor output. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_testutil.h"

#include "core/alloc.h"
#include "core/npy.h"
#include "io/checkpoint.h"
#include "io/json.h"
#include "models/qwen2vl_vision.h"

static char tmp[64];

static const struct {
    const char *name, *args;
} CKPTS[] = {
    {"q2", "--family qwen2_vl --dtype f32"},
    {"q25", "--family qwen2_5_vl --dtype f32"},
    {"q2-bf16", "--family qwen2_vl --dtype bf16"},
    {"q25-bf16", "--family qwen2_5_vl --dtype bf16"},
    {"q25-new", "--family qwen2_5_vl --dtype f32 --new-names"},
};
#define N_CKPTS (sizeof CKPTS / sizeof CKPTS[0])

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/omnic-test-qvit-XXXXXX");
    if (!mkdtemp(tmp)) return -1;
    for (size_t i = 0; i < N_CKPTS; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, PY " tools/mktiny.py %s --out %s/%s >/dev/null", CKPTS[i].args, tmp,
                 CKPTS[i].name);
        if (system(cmd) != 0) return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return mt_rmdir(tmp);
}

/* A tower of checkpoint `name` with an encoder on backend `be` for `cap` patch rows. */
typedef struct tower {
    omnic__checkpoint *ck;
    omnic__qvit *v;
    omnic__qvit_encoder enc;
    omnic__threadpool *pool;
} tower;

static void open_tower(tower *t, const char *name, const char *be, int64_t cap)
{
    char dir[300];
    omnic_err err;
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    memset(t, 0, sizeof *t);
    assert_int_equal(omnic__checkpoint_open(dir, &t->ck, &err), OMNIC_OK);
    int64_t text_hidden = json_integer_value(json_object_get(t->ck->config, "hidden_size"));
    omnic_status s = omnic__qvit_create(t->ck->config, t->ck->weights, text_hidden, &t->v, &err);
    if (s != OMNIC_OK) fprintf(stderr, "%s: %s\n", name, err.msg);
    assert_int_equal(s, OMNIC_OK);
    assert_int_equal(omnic__threadpool_create(&t->pool, 2, &err), OMNIC_OK);
    s = omnic__qvit_encoder_init(&t->enc, t->v, cap, omnic__backend_by_name(be), t->pool, &err);
    if (s != OMNIC_OK) fprintf(stderr, "%s: %s\n", name, err.msg);
    assert_int_equal(s, OMNIC_OK);
}

static void close_tower(tower *t)
{
    omnic__qvit_encoder_deinit(&t->enc);
    omnic__qvit_destroy(t->v);
    omnic__threadpool_destroy(t->pool);
    omnic__checkpoint_close(t->ck);
}

static int64_t grid_rows(const int64_t *grids, int n)
{
    int64_t r = 0;
    for (int i = 0; i < n; i++)
        r += grids[3 * i] * grids[3 * i + 1] * grids[3 * i + 2];
    return r;
}

/* Random patches [rows, K] in [-2, 2] (an LCG; seed picks the values). */
static omnic__tensor *patches(int64_t rows, int64_t K, uint32_t seed)
{
    omnic__tensor *t;
    omnic_err err;
    int64_t d[2] = {rows, K};
    assert_int_equal(omnic__tensor_create(&t, OMNIC_DTYPE_F32, 2, d, &err), OMNIC_OK);
    float *p = t->data;
    uint32_t x = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < rows * K; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (float)((double)(x >> 8) / (double)(1u << 24) * 4.0 - 2.0);
    }
    return t;
}

static void save(const char *dir, const char *name, const omnic__tensor *t)
{
    char path[600];
    omnic_err err;
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    assert_int_equal(omnic__npy_write(path, t, &err), OMNIC_OK);
}

/* Two images packed: a 6x10 patch grid (Qwen2.5-VL: 3x5 merged tokens, windows of 2x2 cut at
 * both edges) and a two-frame 4x4 grid (a video-like t = 2). */
static const int64_t GRIDS[2][3] = {{1, 6, 10}, {2, 4, 4}};

/* cpu and ref encodes of both images in one call; the numpy reference checks both. */
static void check_ckpt(const char *name)
{
    tower c, r;
    open_tower(&c, name, "cpu", 256);
    open_tower(&r, name, "ref", 256);
    const int64_t K = c.v->cfg.patch_dim, n = grid_rows(&GRIDS[0][0], 2), D = c.v->cfg.out_hidden;
    omnic__tensor *pix = patches(n, K, 11);
    const omnic__tensor *pc, *fc, *pr, *fr;
    omnic_err err;
    omnic_status s = omnic__qvit_encode(&c.enc, pix, &GRIDS[0][0], 2, &pc, &fc, &err);
    if (s != OMNIC_OK) fprintf(stderr, "%s: %s\n", name, err.msg);
    assert_int_equal(s, OMNIC_OK);
    assert_int_equal(omnic__qvit_encode(&r.enc, pix, &GRIDS[0][0], 2, &pr, &fr, &err), OMNIC_OK);
    assert_int_equal(pc->dims[0], n / 4);
    assert_int_equal(pc->dims[1], D);
    assert_int_equal(fc->dims[0], n);
    double rp = max_rel(pc->data, pr->data, omnic__tensor_nelem(pc));
    double rf = max_rel(fc->data, fr->data, omnic__tensor_nelem(fc));
    fprintf(stderr, "%s: %lld patches -> %lld rows; cpu vs ref max rel diff: features %.3g, projected %.3g\n",
            name, (long long)n, (long long)pc->dims[0], rf, rp);
    assert_true(rp < 1e-5 && rf < 1e-5);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s-dump", tmp, name);
    sh("mkdir -p %s", dir);
    omnic__tensor g;
    int64_t gd[2] = {2, 3};
    omnic__tensor_init(&g, OMNIC_DTYPE_I64, 2, gd, &err);
    g.data = (void *)(uintptr_t)&GRIDS[0][0];
    save(dir, "patches", pix);
    save(dir, "grid", &g);
    save(dir, "projected", pc);
    save(dir, "vision_features", fc);
    /* f32 kernels vs numpy in float64 with the same f32 RoPE angles: only summation order
     * and exp/erf differ (observed max rel ~1e-6); budget 2e-5 relative to each output's
     * largest value plus 2e-5 of the element */
    double amax = 0;
    for (int64_t i = 0; i < omnic__tensor_nelem(pc); i++)
        amax = fmax(amax, fabs(((const float *)pc->data)[i]));
    sh(PY " tools/ref/qwen2vl_vision.py --model %s/%s --compare %s --atol %g --rtol 2e-5 >&2", tmp, name, dir,
       2e-5 * amax);
    /* the ref backend's outputs too */
    save(dir, "projected", pr);
    save(dir, "vision_features", fr);
    sh(PY " tools/ref/qwen2vl_vision.py --model %s/%s --compare %s --atol %g --rtol 2e-5 >&2", tmp, name, dir,
       2e-5 * amax);
    omnic__tensor_destroy(pix);
    close_tower(&c);
    close_tower(&r);
}

static void test_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_CKPTS; i++)
        check_ckpt(CKPTS[i].name);
}

/* Images packed in one call give the rows of each image encoded alone: bit for bit on the ref
 * backend (rows never mix), within 1e-5 on cpu (matmul blocking depends on the row count). */
static void check_packed(const char *name, const char *be, double tol)
{
    tower t;
    open_tower(&t, name, be, 256);
    const int64_t K = t.v->cfg.patch_dim, D = t.v->cfg.out_hidden, C = t.v->cfg.hidden;
    const int64_t n0 = grid_rows(GRIDS[0], 1), n1 = grid_rows(GRIDS[1], 1), n = n0 + n1;
    omnic__tensor *pix = patches(n, K, 5);
    const omnic__tensor *p, *f;
    omnic_err err;
    assert_int_equal(omnic__qvit_encode(&t.enc, pix, &GRIDS[0][0], 2, &p, &f, &err), OMNIC_OK);
    float *both = malloc((size_t)(n / 4 * D) * sizeof *both), *feat = malloc((size_t)(n * C) * sizeof *feat);
    memcpy(both, p->data, omnic__tensor_bytes(p));
    memcpy(feat, f->data, omnic__tensor_bytes(f));
    /* image 0 alone: the first n0 rows; image 1 alone: the rest */
    for (int img = 0; img < 2; img++) {
        const int64_t r0 = img ? n0 : 0, rows = img ? n1 : n0;
        omnic__tensor one;
        int64_t d[2] = {rows, K};
        omnic__tensor_init(&one, OMNIC_DTYPE_F32, 2, d, &err);
        one.data = (float *)pix->data + r0 * K;
        assert_int_equal(omnic__qvit_encode(&t.enc, &one, GRIDS[img], 1, &p, &f, &err), OMNIC_OK);
        assert_int_equal(p->dims[0], rows / 4);
        double rp = max_rel(p->data, both + r0 / 4 * D, rows / 4 * D);
        double rf = max_rel(f->data, feat + r0 * C, rows * C);
        fprintf(stderr, "%s/%s: image %d alone vs packed: projected %.3g, features %.3g\n", name, be, img, rp,
                rf);
        if (tol == 0) {
            assert_memory_equal(p->data, both + r0 / 4 * D, omnic__tensor_bytes(p));
            assert_memory_equal(f->data, feat + r0 * C, omnic__tensor_bytes(f));
        } else {
            assert_true(rp <= tol && rf <= tol);
        }
    }
    free(both);
    free(feat);
    omnic__tensor_destroy(pix);
    close_tower(&t);
}

static void test_packed(void **state)
{
    (void)state;
    check_packed("q2", "ref", 0);
    check_packed("q25", "ref", 0);
    check_packed("q2", "cpu", 1e-5);
    check_packed("q25", "cpu", 1e-5);
}

/* Both towers run in slices (every part of every node its own slice: tiled window / frame
 * attention, the reorder, the merger) give bit for bit the whole run's rows, on cpu. */
static void test_slices(void **state)
{
    (void)state;
    const char *names[2] = {"q2", "q25"};
    for (int k = 0; k < 2; k++) {
        tower t;
        open_tower(&t, names[k], "cpu", 256);
        const int64_t K = t.v->cfg.patch_dim, n = grid_rows(GRIDS[0], 1) + grid_rows(GRIDS[1], 1);
        omnic__tensor *pix = patches(n, K, 9);
        const omnic__tensor *p, *f;
        omnic_err err;
        assert_int_equal(omnic__qvit_encode(&t.enc, pix, &GRIDS[0][0], 2, &p, &f, &err), OMNIC_OK);
        const size_t nb = omnic__tensor_bytes(p);
        void *whole = malloc(nb);
        memcpy(whole, p->data, nb);
        assert_int_equal(omnic__qvit_encode_start(&t.enc, pix, &GRIDS[0][0], 2, &err), OMNIC_OK);
        bool done = false;
        int slices = 0;
        while (!done && slices < 1000000) {
            assert_int_equal(omnic__module_run(&t.enc.m, 1e-9, NULL, &done, &err), OMNIC_OK);
            slices++;
        }
        assert_true(slices > t.enc.m.graph.n_nodes);
        assert_memory_equal(omnic__module_output(&t.enc.m, t.enc.out_projected)->data, whole, nb);
        free(whole);
        omnic__tensor_destroy(pix);
        close_tower(&t);
    }
}

/* Both weight spellings (visual.* and model.visual.*; mktiny seeds values by the old name)
 * give the same rows bit for bit. */
static void test_spellings(void **state)
{
    (void)state;
    tower a, b;
    open_tower(&a, "q25", "cpu", 64);
    open_tower(&b, "q25-new", "cpu", 64);
    assert_string_equal(a.v->cfg.prefix, "visual.");
    assert_string_equal(b.v->cfg.prefix, "model.visual.");
    omnic__tensor *pix = patches(60, a.v->cfg.patch_dim, 4);
    const omnic__tensor *pa, *pb;
    omnic_err err;
    assert_int_equal(omnic__qvit_encode(&a.enc, pix, GRIDS[0], 1, &pa, NULL, &err), OMNIC_OK);
    assert_int_equal(omnic__qvit_encode(&b.enc, pix, GRIDS[0], 1, &pb, NULL, &err), OMNIC_OK);
    assert_memory_equal(pa->data, pb->data, omnic__tensor_bytes(pa));
    omnic__tensor_destroy(pix);
    close_tower(&a);
    close_tower(&b);
}

/* Window order of Qwen2.5-VL (window 56 px = 2x2 merged tokens, merge 2). */
static void test_window_order(void **state)
{
    (void)state;
    tower t;
    open_tower(&t, "q25", "ref", 64);
    const omnic__qvit_config *c = &t.v->cfg;
    assert_int_equal(c->window_merged, 2);
    assert_true(c->full_att[1] && c->full_att[3] && !c->full_att[0] && !c->full_att[2]);
    omnic__qvit_meta m;
    omnic_err err;
    /* hand-computed: grid (1, 4, 8) = 2 x 4 merged tokens, two 2x2 windows: merged tokens
     * 0, 1, 4, 5 then 2, 3, 6, 7, each a group of 4 consecutive patch rows */
    const int64_t g1[3] = {1, 4, 8};
    assert_int_equal(omnic__qvit_meta_init(&m, c, g1, 1, 1000, &err), OMNIC_OK);
    static const int merged[8] = {0, 1, 4, 5, 2, 3, 6, 7};
    for (int r = 0; r < 32; r++) {
        assert_int_equal(m.order[r], merged[r / 4] * 4 + r % 4);
        assert_int_equal(m.win_begin[r], r < 16 ? 0 : 16);
        assert_int_equal(m.win_last[r], r < 16 ? 15 : 31);
        assert_int_equal(m.attn_begin[r], 0);
        assert_int_equal(m.attn_last[r], 31);
    }
    /* merged token 4 = merge block (1, 0): patch rows 16..19 are at grid rows 2, 2, 3, 3 and
     * cols 0, 1, 0, 1; in window order they are rows 8..11 */
    for (int u = 0; u < 4; u++) {
        assert_int_equal(m.unperm[16 + u], 8 + u);
        assert_int_equal(m.pos_h[8 + u], 2 + u / 2);
        assert_int_equal(m.pos_w[8 + u], u % 2);
    }
    omnic__qvit_meta_deinit(&m);

    /* the packed test grids: order is a permutation of whole merge groups, unperm its inverse
     * (round trip both ways), windows are contiguous runs inside their frame block, no larger
     * than 2x2 merged tokens, and positions follow the rows they came from */
    assert_int_equal(omnic__qvit_meta_init(&m, c, &GRIDS[0][0], 2, 1000, &err), OMNIC_OK);
    const int64_t n = m.n;
    assert_int_equal(n, 92);
    int *seen = calloc((size_t)n, sizeof *seen);
    for (int64_t r = 0; r < n; r++) {
        assert_true(m.order[r] >= 0 && m.order[r] < n);
        seen[m.order[r]]++;
        assert_int_equal(m.unperm[m.order[r]], r);
        assert_int_equal(m.order[m.unperm[r]], r);
        assert_int_equal(m.order[r] % 4, r % 4);
        assert_true(m.win_begin[r] <= r && r <= m.win_last[r]);
        assert_true(m.attn_begin[r] <= m.win_begin[r] && m.win_last[r] <= m.attn_last[r]);
        assert_true(m.win_last[r] - m.win_begin[r] + 1 <= 16 &&
                    (m.win_last[r] - m.win_begin[r] + 1) % 4 == 0);
        if (r > 0 && m.win_begin[r] != m.win_begin[r - 1]) assert_int_equal(m.win_begin[r], r);
    }
    for (int64_t p = 0; p < n; p++)
        assert_int_equal(seen[p], 1);
    /* image 0 (6x10 patches = 3x5 merged, windows 2x2): 6 windows of 16, 8, 16, 8, 8, 4 rows;
     * image 1 (two frames of 4x4): one 16-row window per frame, frame blocks of 16 */
    static const int wlen[] = {16, 16, 8, 8, 8, 4, 16, 16};
    int64_t r = 0;
    for (size_t w = 0; w < sizeof wlen / sizeof wlen[0]; w++) {
        assert_int_equal(m.win_begin[r], r);
        assert_int_equal(m.win_last[r] - r + 1, wlen[w]);
        r += wlen[w];
    }
    assert_int_equal(r, n);
    assert_int_equal(m.attn_begin[60], 60);
    assert_int_equal(m.attn_last[60], 75);
    assert_int_equal(m.attn_begin[76], 76);
    assert_int_equal(m.attn_last[76], 91);
    free(seen);
    omnic__qvit_meta_deinit(&m);

    /* Qwen2-VL has no reorder: identity order, windows = frame blocks */
    tower q;
    open_tower(&q, "q2", "ref", 64);
    assert_int_equal(omnic__qvit_meta_init(&m, &q.v->cfg, &GRIDS[0][0], 2, 1000, &err), OMNIC_OK);
    for (int64_t i = 0; i < m.n; i++) {
        assert_int_equal(m.order[i], i);
        assert_int_equal(m.win_begin[i], m.attn_begin[i]);
        assert_int_equal(m.attn_begin[i], i < 60 ? 0 : i < 76 ? 60 : 76);
    }
    /* processor order (t, block row, block col, in-block row, in-block col) */
    assert_int_equal(m.pos_h[5], 0);
    assert_int_equal(m.pos_w[5], 3); /* rows 4..7: merge block (0, 1); row 5: in-block (0, 1) */
    assert_int_equal(m.pos_h[22], 3);
    assert_int_equal(m.pos_w[22], 0); /* rows 20..23: block (1, 0) (5 blocks per row); row 22: (1, 0) */
    omnic__qvit_meta_deinit(&m);
    close_tower(&q);
    close_tower(&t);
}

static void expect(omnic_status got, omnic_status want, const omnic_err *err, const char *needle)
{
    fprintf(stderr, "  -> %s: %s\n", omnic_status_name(got), got == OMNIC_OK ? "" : err->msg);
    assert_int_equal(got, want);
    assert_non_null(strstr(err->msg, needle));
}

static void test_bad_inputs(void **state)
{
    (void)state;
    tower t;
    open_tower(&t, "q25", "cpu", 64);
    const int64_t K = t.v->cfg.patch_dim;
    const omnic__tensor *p;
    omnic_err err;
    const int64_t g[3] = {1, 6, 10};
    omnic__tensor *x = patches(59, K, 1);
    expect(omnic__qvit_encode(&t.enc, x, g, 1, &p, NULL, &err), OMNIC_E_INVALID, &err, "patches has 59 rows");
    assert_non_null(strstr(err.msg, "= 60"));
    omnic__tensor_destroy(x);
    x = patches(60, K, 1);
    ((float *)x->data)[3 * K + 17] = NAN;
    expect(omnic__qvit_encode(&t.enc, x, g, 1, &p, NULL, &err), OMNIC_E_INVALID, &err,
           "patches[3][17] is not finite");
    ((float *)x->data)[3 * K + 17] = INFINITY;
    expect(omnic__qvit_encode(&t.enc, x, g, 1, &p, NULL, &err), OMNIC_E_INVALID, &err, "patches[3][17]");
    ((float *)x->data)[3 * K + 17] = 0.5f;
    const int64_t g_odd[3] = {1, 5, 12};
    expect(omnic__qvit_encode(&t.enc, x, g_odd, 1, &p, NULL, &err), OMNIC_E_INVALID, &err, "(1, 5, 12)");
    const int64_t g_zero[6] = {1, 6, 10, 0, 2, 2};
    expect(omnic__qvit_encode(&t.enc, x, g_zero, 2, &p, NULL, &err), OMNIC_E_INVALID, &err, "image 1 grid");
    expect(omnic__qvit_encode(&t.enc, x, g, 0, &p, NULL, &err), OMNIC_E_INVALID, &err, "0 images");
    x->dims[1] = K - 1;
    x->dims[0] = 60; /* same bytes, wrong width */
    expect(omnic__qvit_encode(&t.enc, x, g, 1, &p, NULL, &err), OMNIC_E_INVALID, &err, "[N, 1176]");
    omnic__tensor_destroy(x);
    x = patches(80, K, 2);
    const int64_t g_big[3] = {1, 8, 10};
    expect(omnic__qvit_encode(&t.enc, x, g_big, 1, &p, NULL, &err), OMNIC_E_CAPACITY, &err,
           "80 patches in one call exceed the capacity of 64");
    omnic__tensor_destroy(x);
    /* the signature: per-patch inputs follow n, the projected rows n / 4 */
    {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        omnic__module_print(&t.enc.m, f);
        fclose(f);
        fprintf(stderr, "%s", buf);
        assert_non_null(strstr(buf, "patches f32 [n<=64, 1176]"));
        assert_non_null(strstr(buf, "unperm i32 [n<=64] in [0, 64)"));
        assert_non_null(strstr(buf, "vision_features f32 [n<=64, 32]"));
        assert_non_null(strstr(buf, "projected f32 [n/4<=16, 64]"));
        free(buf);
    }
    /* the module itself: a row count that is not a whole number of merged tokens */
    {
        int64_t d2[2] = {6, K}, d1[1] = {6};
        x = patches(6, K, 3);
        int32_t zeros[6] = {0};
        omnic__tensor in[8];
        const omnic__tensor *ins[8];
        omnic__tensor_init(&in[0], OMNIC_DTYPE_F32, 2, d2, &err);
        in[0].data = x->data;
        ins[0] = &in[0];
        for (int i = 1; i < 8; i++) {
            omnic__tensor_init(&in[i], OMNIC_DTYPE_I32, 1, d1, &err);
            in[i].data = zeros;
            ins[i] = &in[i];
        }
        omnic__call call = {.n = 6, .inputs = ins, .n_inputs = 8};
        expect(omnic__module_call(&t.enc.m, &call, &err), OMNIC_E_INVALID, &err,
               "6 rows in one call, the module takes a multiple of 4");
        zeros[2] = 64; /* outside [0, capacity) */
        call.n = 4;
        d2[0] = d1[0] = 4;
        for (int i = 0; i < 8; i++)
            in[i].dims[0] = 4;
        expect(omnic__module_call(&t.enc.m, &call, &err), OMNIC_E_INVALID, &err, "'pos_h'[2] = 64");
        omnic__tensor_destroy(x);
    }
    close_tower(&t);
}

/* config.json of a copy of q25 edited with a python expression on `c`; create must fail
 * with `want` and `needle` in the message. */
static void bad_config(const char *src, const char *tag, const char *edit, omnic_status want,
                       const char *needle)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/bad-%s", tmp, tag);
    sh("rm -rf %s && cp -r %s/%s %s", dir, tmp, src, dir);
    if (edit)
        sh(PY " -c \"import json; p='%s/config.json'; c=json.load(open(p)); %s; json.dump(c, open(p, 'w'))\"",
           dir, edit);
    omnic__checkpoint *ck;
    omnic_err err;
    assert_int_equal(omnic__checkpoint_open(dir, &ck, &err), OMNIC_OK);
    omnic__qvit *v = NULL;
    omnic_status s = omnic__qvit_create(ck->config, ck->weights, 64, &v, &err);
    fprintf(stderr, "%s: %s\n", tag, s == OMNIC_OK ? "(opened)" : err.msg);
    omnic__qvit_destroy(v);
    omnic__checkpoint_close(ck);
    assert_int_equal(s, want);
    assert_non_null(strstr(err.msg, needle));
}

static void test_bad_configs(void **state)
{
    (void)state;
    bad_config("q25", "type", "c['model_type']='qwen4_vl'", OMNIC_E_UNSUPPORTED, "qwen4_vl");
    /* a Qwen2.5-VL tower config under the Qwen3-VL type: its window keys are not Qwen3-VL's */
    bad_config("q25", "type3", "c['model_type']='qwen3_vl'", OMNIC_E_UNSUPPORTED, "'fullatt_block_indexes'");
    bad_config("q25", "heads", "c['vision_config']['num_heads']=16", OMNIC_E_INVALID,
               "width 32 over num_heads 16 must give a head_dim that is a multiple of 4");
    bad_config("q25", "fullatt", "c['vision_config']['fullatt_block_indexes']=[1,4]", OMNIC_E_INVALID,
               "fullatt_block_indexes[1]");
    bad_config("q25", "window", "c['vision_config']['window_size']=20", OMNIC_E_INVALID, "window_size 20");
    bad_config("q25", "act", "c['vision_config']['hidden_act']='relu'", OMNIC_E_UNSUPPORTED, "relu");
    bad_config("q25", "out", "c['vision_config']['out_hidden_size']=48", OMNIC_E_INVALID,
               "out_hidden_size 48");
    bad_config("q2", "width", "c['vision_config']['embed_dim']=48", OMNIC_E_INVALID,
               "visual.patch_embed.proj.weight");
    bad_config("q2", "mlp", "c['vision_config']['mlp_ratio']=3", OMNIC_E_INVALID,
               "visual.blocks.0.mlp.fc1.weight");
    /* a missing weight names the tensor (renamed in place: same header length) */
    char dir[300];
    snprintf(dir, sizeof dir, "%s/bad-noweight", tmp);
    sh("rm -rf %s && cp -r %s/q25 %s", dir, tmp, dir);
    sh(PY " -c \"p='%s/model.safetensors'; b=open(p,'rb').read(); n=b'blocks.2.mlp.up_proj.bias';"
          "assert b.count(n)==1; open(p,'wb').write(b.replace(n, b'blocks.2.mlp.up_proj.bia_'))\"",
       dir);
    bad_config("bad-noweight", "noweight2", NULL, OMNIC_E_NOT_FOUND, "visual.blocks.2.mlp.up_proj.bias");
}

/* Every allocation of tower load + encoder build failing in turn: a clean E_NOMEM, nothing
 * leaked (ASan), then success. */
static void test_oom(void **state)
{
    (void)state;
    char dir[300];
    omnic_err err;
    snprintf(dir, sizeof dir, "%s/q25", tmp);
    omnic__checkpoint *ck;
    assert_int_equal(omnic__checkpoint_open(dir, &ck, &err), OMNIC_OK);
    omnic__tensor *pix = patches(60, 1176, 9);
    const int64_t g[3] = {1, 6, 10};
    bool done = false;
    long n;
    for (n = 0; n < 5000 && !done; n++) {
        omnic__qvit *v = NULL;
        omnic__qvit_encoder e;
        const omnic__tensor *p;
        omnic_err_clear(&err);
        omnic__alloc_fail_after(n);
        omnic_status s = omnic__qvit_create(ck->config, ck->weights, 64, &v, &err);
        if (s == OMNIC_OK) {
            s = omnic__qvit_encoder_init(&e, v, 64, omnic__backend_ref(), NULL, &err);
            if (s == OMNIC_OK) {
                s = omnic__qvit_encode(&e, pix, g, 1, &p, NULL, &err);
                omnic__qvit_encoder_deinit(&e);
            }
        }
        long injected = omnic__alloc_injected_failures();
        omnic__alloc_fail_after(-1);
        omnic__qvit_destroy(v);
        if (s == OMNIC_OK) {
            done = injected == 0;
            continue;
        }
        if (s != OMNIC_E_NOMEM) fprintf(stderr, "N=%ld: %s: %s\n", n, omnic_status_name(s), err.msg);
        assert_int_equal(s, OMNIC_E_NOMEM);
    }
    fprintf(stderr, "qwen2.5-vl tower + encoder succeed at N=%ld allocations\n", n - 1);
    assert_true(done);
    omnic__tensor_destroy(pix);
    omnic__checkpoint_close(ck);
}

/* The runtime piece the merger needs: omnic__g_group_rows over a variable-length tensor (rows
 * follow n / k, calls refuse an n that is not a multiple of k, shapes checked at build). */
static void test_group_rows(void **state)
{
    (void)state;
    omnic__module m;
    omnic_err err;
    assert_int_equal(omnic__module_init(&m, "t.group", "t/1", 12, &err), OMNIC_OK);
    const int64_t d[2] = {12, 2};
    omnic__tensor *x = omnic__g_input(&m.graph, "x", OMNIC_DTYPE_F32, 2, d, OMNIC_VAR_T);
    omnic__tensor *y = omnic__g_scale(&m.graph, omnic__g_group_rows(&m.graph, x, 3), 2.0f, 1.0f);
    assert_int_equal(y->dims[0], 4);
    assert_int_equal(y->dims[1], 6);
    omnic__g_mark_output(&m.graph, y, "y");
    assert_int_equal(m.graph.row_multiple, 3);
    assert_int_equal(omnic__module_finalize(&m, omnic__backend_cpu(), NULL, &err), OMNIC_OK);
    float xs[24];
    for (int i = 0; i < 24; i++)
        xs[i] = (float)i;
    for (int64_t n = 3; n <= 12; n += 3) {
        omnic__tensor in;
        const int64_t dn[2] = {n, 2};
        omnic__tensor_init(&in, OMNIC_DTYPE_F32, 2, dn, &err);
        in.data = xs;
        const omnic__tensor *ins[1] = {&in};
        omnic__call c = {.n = n, .inputs = ins, .n_inputs = 1};
        assert_int_equal(omnic__module_call(&m, &c, &err), OMNIC_OK);
        const omnic__tensor *o = omnic__module_output(&m, 0);
        assert_int_equal(o->dims[0], n / 3);
        assert_int_equal(o->dims[1], 6);
        for (int64_t i = 0; i < n * 2; i++)
            assert_true(((const float *)o->data)[i] == 2.0f * (float)i + 1.0f);
    }
    omnic__tensor in;
    const int64_t d4[2] = {4, 2};
    omnic__tensor_init(&in, OMNIC_DTYPE_F32, 2, d4, &err);
    in.data = xs;
    const omnic__tensor *ins[1] = {&in};
    omnic__call c = {.n = 4, .inputs = ins, .n_inputs = 1};
    expect(omnic__module_call(&m, &c, &err), OMNIC_E_INVALID, &err,
           "4 rows in one call, the module takes a multiple of 3");
    omnic__module_deinit(&m);
    /* build-time refusals: capacity not a multiple of k; grouping a grouped view; reshaping the rows */
    assert_int_equal(omnic__module_init(&m, "t.group", "t/1", 10, &err), OMNIC_OK);
    const int64_t d10[2] = {10, 2};
    x = omnic__g_input(&m.graph, "x", OMNIC_DTYPE_F32, 2, d10, OMNIC_VAR_T);
    assert_null(omnic__g_group_rows(&m.graph, x, 4));
    expect(omnic__graph_status(&m.graph, &err), OMNIC_E_INVALID, &err, "rows a multiple of 4");
    omnic__module_deinit(&m);
    assert_int_equal(omnic__module_init(&m, "t.group", "t/1", 8, &err), OMNIC_OK);
    const int64_t d8[2] = {8, 2}, r8[2] = {4, 4};
    x = omnic__g_input(&m.graph, "x", OMNIC_DTYPE_F32, 2, d8, OMNIC_VAR_T);
    y = omnic__g_group_rows(&m.graph, x, 2);
    assert_null(omnic__g_group_rows(&m.graph, y, 2));
    expect(omnic__graph_status(&m.graph, &err), OMNIC_E_INVALID, &err, "not a grouped view");
    omnic__module_deinit(&m);
    assert_int_equal(omnic__module_init(&m, "t.group", "t/1", 8, &err), OMNIC_OK);
    x = omnic__g_input(&m.graph, "x", OMNIC_DTYPE_F32, 2, d8, OMNIC_VAR_T);
    y = omnic__g_group_rows(&m.graph, x, 2);
    const int64_t r2[2] = {2, 8};
    assert_non_null(omnic__g_reshape(&m.graph, y, 2, r8));
    assert_null(omnic__g_reshape(&m.graph, y, 2, r2));
    expect(omnic__graph_status(&m.graph, &err), OMNIC_E_INVALID, &err, "must keep dims[0]");
    omnic__module_deinit(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference),    cmocka_unit_test(test_packed),
        cmocka_unit_test(test_slices),       cmocka_unit_test(test_spellings),
        cmocka_unit_test(test_window_order), cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_bad_configs),  cmocka_unit_test(test_oom),
        cmocka_unit_test(test_group_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
