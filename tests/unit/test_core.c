/* core: status table, raising errors, checked sizes, allocation and its fault hook, tensors,
 * the arena, the thread pool (jobs, run_n, row splitting, barriers), SHA-256 (FIPS 180-4
 * vectors) and .npy files (round trips, files written by numpy, malformed headers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <pthread.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/arena.h"
#include "core/budget.h"
#include "core/dtype.h"
#include "core/err.h"
#include "core/job_pool.h"
#include "core/limits.h"
#include "core/npy.h"
#include "core/sha256.h"
#include "core/sync.h"
#include "core/tensor.h"
#include "core/threadpool.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* Fails unless rc == code == err->code and err->msg contains every string of the
 * NULL-terminated list that follows code. */
static void check_err(omnic_status rc, const omnic_err *err, const char *file, int line, omnic_status code,
                      ...)
{
    if (rc != code || err->code != code) {
        print_error("%s:%d: status %s (err.code %s), expected %s; msg: %s\n", file, line,
                    omnic_status_name(rc), omnic_status_name(err->code), omnic_status_name(code), err->msg);
        _fail(file, line);
    }
    va_list ap;
    va_start(ap, code);
    for (const char *sub; (sub = va_arg(ap, const char *)) != NULL;) {
        if (!strstr(err->msg, sub)) {
            print_error("%s:%d: message lacks \"%s\": %s\n", file, line, sub, err->msg);
            va_end(ap);
            _fail(file, line);
        }
    }
    va_end(ap);
}
/* EXPECT_ERR(rc, err, code, "substring", ...) */
#define EXPECT_ERR(rc, err, ...) check_err((rc), &(err), __FILE__, __LINE__, __VA_ARGS__, (const char *)NULL)

#define EXPECT_OK(rc, err)                                                                                   \
    do {                                                                                                     \
        omnic_status rc_ = (rc);                                                                             \
        if (rc_ != OMNIC_OK) {                                                                               \
            print_error("%s:%d: %s: %s\n", __FILE__, __LINE__, omnic_status_name(rc_), (err).msg);           \
            _fail(__FILE__, __LINE__);                                                                       \
        }                                                                                                    \
    } while (0)

/* Scratch directory for file tests (mkdtemp), removed by the group teardown. */
static char tmp_dir[64];

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/omnic_core_test_XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    omnic__alloc_fail_after(-1);
    return nftw(tmp_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* tmp_dir/name in one of four rotating static buffers. */
static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int which;
    which = (which + 1) % 4;
    snprintf(buf[which], sizeof buf[which], "%s/%s", tmp_dir, name);
    return buf[which];
}

static void write_file(const char *path, const void *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (len) assert_int_equal(fwrite(bytes, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* The numpy tests need /usr/bin/python3 with numpy (as tools/mktiny.py does): fail, not skip. */
static void require_numpy(void)
{
    if (system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
        print_error("these tests need /usr/bin/python3 with numpy\n");
        fail();
    }
}

/* ---- status and errors ------------------------------------------------------------------ */

static void test_status_table(void **state)
{
    (void)state;
    static const struct {
        omnic_status s;
        const char *name;
        const char *msg;
    } tab[] = {
#define XX(name, value, msg) {OMNIC_##name, "OMNIC_" #name, msg},
        OMNIC_STATUS_MAP(XX)
#undef XX
    };
    size_t n = sizeof tab / sizeof tab[0];
    assert_true(n >= 11);
    assert_int_equal(OMNIC_OK, 0);
    for (size_t i = 0; i < n; i++) {
        if (tab[i].s != OMNIC_OK) assert_true(tab[i].s < 0); /* failures are negative */
        assert_string_equal(omnic_status_name(tab[i].s), tab[i].name);
        assert_string_equal(omnic_status_str(tab[i].s), tab[i].msg);
        assert_true(strlen(tab[i].msg) > 0);
        for (size_t j = 0; j < i; j++) {
            assert_int_not_equal(tab[i].s, tab[j].s);
            assert_string_not_equal(omnic_status_name(tab[i].s), omnic_status_name(tab[j].s));
            assert_string_not_equal(omnic_status_str(tab[i].s), omnic_status_str(tab[j].s));
        }
    }
    const int unknown[] = {1, 2, -12, -100, 12345, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        assert_string_equal(omnic_status_name((omnic_status)unknown[i]), "OMNIC_UNKNOWN");
        assert_non_null(omnic_status_str((omnic_status)unknown[i]));
    }
}

static void test_fail_and_prefix(void **state)
{
    (void)state;
    omnic_err err;
    memset(&err, 0x5a, sizeof err);
    omnic_err_clear(&err);
    assert_int_equal(err.code, OMNIC_OK);
    assert_null(err.file);
    assert_int_equal(err.line, 0);
    assert_string_equal(err.msg, "");
    omnic_err_clear(NULL);

    /* __LINE__ in one macro expansion: the line OMNIC_FAIL records */
#define FAIL_NOTING_LINE(line_out, ...) ((line_out) = __LINE__, OMNIC_FAIL(__VA_ARGS__))
    int line = 0;
    omnic_status rc = FAIL_NOTING_LINE(line, &err, OMNIC_E_CORRUPT, "tensor %s has %d dims", "w", 7);
    assert_true(line > 0);
    assert_int_equal(rc, OMNIC_E_CORRUPT);
    assert_int_equal(err.code, OMNIC_E_CORRUPT);
    assert_string_equal(err.file, __FILE__);
    assert_int_equal(err.line, line);
    assert_string_equal(err.msg, "tensor w has 7 dims");

    /* NULL err: still returns the code */
    assert_int_equal(OMNIC_FAIL(NULL, OMNIC_E_IO, "x %d", 1), OMNIC_E_IO);
    omnic__err_prefix(NULL, "ignored");

    omnic__err_prefix(&err, "%s", "model.safetensors");
    assert_string_equal(err.msg, "model.safetensors: tensor w has 7 dims");
    assert_int_equal(err.code, OMNIC_E_CORRUPT); /* code, file and line stay */
    assert_int_equal(err.line, line);
    omnic__err_prefix(&err, "dir %d", 2);
    assert_string_equal(err.msg, "dir 2: model.safetensors: tensor w has 7 dims");

    /* a message longer than the buffer is truncated and stays NUL-terminated */
    char big[2 * OMNIC_ERR_MSG_MAX];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    OMNIC_FAIL(&err, OMNIC_E_INVALID, "%s", big);
    assert_int_equal(strlen(err.msg), OMNIC_ERR_MSG_MAX - 1);
    omnic__err_prefix(&err, "p");
    assert_int_equal(strlen(err.msg), OMNIC_ERR_MSG_MAX - 1);
    assert_memory_equal(err.msg, "p: xxx", 6);

    /* a prefix longer than the message buffer */
    OMNIC_FAIL(&err, OMNIC_E_INVALID, "short");
    omnic__err_prefix(&err, "%s", big);
    assert_true(strlen(err.msg) < OMNIC_ERR_MSG_MAX);
    assert_true(strstr(err.msg, ": ") != NULL);

    /* an empty message */
    OMNIC_FAIL(&err, OMNIC_E_INVALID, "%s", "");
    omnic__err_prefix(&err, "file");
    assert_string_equal(err.msg, "file: ");
}

/* ---- checked sizes and allocation -------------------------------------------------------- */

static void test_size_arith(void **state)
{
    (void)state;
    size_t r = 77;
    assert_true(omnic_size_mul(&r, 0, SIZE_MAX));
    assert_int_equal(r, 0);
    assert_true(omnic_size_mul(&r, 1, SIZE_MAX));
    assert_true(r == SIZE_MAX);
    assert_true(omnic_size_mul(&r, SIZE_MAX / 3, 3));
    assert_true(r == SIZE_MAX / 3 * 3);
    r = 77;
    assert_false(omnic_size_mul(&r, 2, SIZE_MAX / 2 + 1));
    assert_int_equal(r, 77); /* unchanged on overflow */
    assert_false(omnic_size_mul(&r, SIZE_MAX, SIZE_MAX));
    assert_false(omnic_size_mul(&r, (size_t)1 << 32, (size_t)1 << 32));
    assert_true(omnic_size_mul(&r, (size_t)1 << 31, (size_t)1 << 32));
    assert_true(r == (size_t)1 << 63);
    assert_false(omnic_size_mul(&r, (size_t)1 << 62, 4));
    assert_true(r == (size_t)1 << 63);

    r = 5;
    assert_true(omnic_size_add(&r, SIZE_MAX - 1, 1));
    assert_true(r == SIZE_MAX);
    assert_true(omnic_size_add(&r, SIZE_MAX, 0));
    r = 5;
    assert_false(omnic_size_add(&r, SIZE_MAX, 1));
    assert_false(omnic_size_add(&r, SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 1));
    assert_false(omnic_size_add(&r, 1, SIZE_MAX));
    assert_int_equal(r, 5);
    assert_true(omnic_size_add(&r, SIZE_MAX / 2, SIZE_MAX / 2 + 1));
    assert_true(r == SIZE_MAX);
}

static void test_alloc_limits(void **state)
{
    (void)state;
    omnic__alloc_fail_after(-1);
    assert_null(omnic_malloc(0));
    assert_null(omnic_malloc(OMNIC_MAX_ALLOC + 1));
    assert_null(omnic_malloc(SIZE_MAX));
    assert_null(omnic_alloc_array(0, 8));
    assert_null(omnic_alloc_array(8, 0));
    assert_null(omnic_alloc_array(SIZE_MAX / 2 + 1, 2)); /* overflows */
    assert_null(omnic_alloc_array(SIZE_MAX, SIZE_MAX));
    assert_null(omnic_alloc_array(OMNIC_MAX_ALLOC / 8 + 1, 8)); /* over the cap, no overflow */
    assert_null(omnic_realloc(NULL, 0));
    assert_null(omnic_realloc(NULL, OMNIC_MAX_ALLOC + 1));
    assert_int_equal(omnic__alloc_injected_failures(), 0);

    unsigned char *p = omnic_alloc_array(100, 3);
    assert_non_null(p);
    for (int i = 0; i < 300; i++)
        assert_int_equal(p[i], 0); /* zeroed */
    p[299] = 9;
    unsigned char *q = omnic_realloc(p, 1000);
    assert_non_null(q);
    assert_int_equal(q[299], 9);
    assert_null(omnic_realloc(q, SIZE_MAX)); /* fails, q still owned */
    q[999] = 1;
    omnic_free(q);
    omnic_free(NULL);

    void *m = omnic_malloc(1);
    assert_non_null(m);
    omnic_free(m);
    char *s = omnic_strdup("hello");
    assert_string_equal(s, "hello");
    omnic_free(s);
    s = omnic_strdup("");
    assert_string_equal(s, "");
    omnic_free(s);
}

static void test_alloc_fault_hook(void **state)
{
    (void)state;
    for (long n = 0; n <= 5; n++) {
        void *ok[8] = {0};
        omnic__alloc_fail_after(n);
        assert_int_equal(omnic__alloc_injected_failures(), 0);
        for (long i = 0; i < n; i++) {
            ok[i] = (i % 2) ? omnic_malloc(16) : omnic_alloc_array(2, 8);
            assert_non_null(ok[i]);
        }
        /* after n successes every allocating call fails, whatever the entry point */
        assert_null(omnic_malloc(16));
        assert_null(omnic_alloc_array(4, 4));
        assert_null(omnic_realloc(NULL, 16));
        assert_null(omnic_strdup("abc"));
        assert_null(omnic_malloc(1));
        assert_int_equal(omnic__alloc_injected_failures(), 5);
        if (n > 0) {
            void *r = omnic_realloc(ok[0], 64); /* fails, ok[0] untouched */
            assert_null(r);
            assert_int_equal(omnic__alloc_injected_failures(), 6);
        }
        omnic__alloc_fail_after(-1);
        assert_int_equal(omnic__alloc_injected_failures(), 0);
        for (long i = 0; i < n; i++)
            omnic_free(ok[i]);
        void *m = omnic_malloc(16);
        assert_non_null(m);
        omnic_free(m);
        assert_int_equal(omnic__alloc_injected_failures(), 0);
    }
    /* a large n is never reached */
    omnic__alloc_fail_after(1000000);
    void *m = omnic_malloc(16);
    assert_non_null(m);
    omnic_free(m);
    assert_int_equal(omnic__alloc_injected_failures(), 0);
    omnic__alloc_fail_after(-1);
}

/* ---- tensors ---------------------------------------------------------------------------- */

static void test_tensor_init(void **state)
{
    (void)state;
    omnic_err err;
    omnic__tensor t;
    int64_t d6[6] = {1, 2, 3, 4, 5, 6};
    omnic_err_clear(&err);
    EXPECT_ERR(omnic__tensor_init(&t, OMNIC_DTYPE_F32, 6, d6, &err), err, OMNIC_E_INVALID, "rank 6", "0..5");
    EXPECT_ERR(omnic__tensor_init(&t, OMNIC_DTYPE_F32, -1, d6, &err), err, OMNIC_E_INVALID, "rank -1");
    int64_t neg[3] = {2, -3, 4};
    EXPECT_ERR(omnic__tensor_init(&t, OMNIC_DTYPE_F32, 3, neg, &err), err, OMNIC_E_INVALID, "dim 1", "-3");
    int64_t ok[2] = {2, 3};
    char bad_dt[32];
    snprintf(bad_dt, sizeof bad_dt, "dtype %d", (int)OMNIC_DTYPE_COUNT);
    EXPECT_ERR(omnic__tensor_init(&t, OMNIC_DTYPE_COUNT, 2, ok, &err), err, OMNIC_E_INVALID, bad_dt);
    /* block-quantized dtypes: rows of whole 32-element blocks; bytes per block */
    int64_t q_bad[2] = {4, 48}, q_ok[2] = {3, 64};
    EXPECT_ERR(omnic__tensor_init(&t, OMNIC_DTYPE_Q8_0, 2, q_bad, &err), err, OMNIC_E_INVALID, "q8_0", "32",
               "48");
    EXPECT_ERR(omnic__tensor_init(&t, OMNIC_DTYPE_Q4_0, 0, NULL, &err), err, OMNIC_E_INVALID, "q4_0");
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_Q8_0, 2, q_ok, &err), err);
    size_t qb = 0;
    EXPECT_OK(omnic__tensor_nbytes(&t, &qb, &err), err);
    assert_int_equal(qb, 3 * 2 * 34);
    assert_int_equal(omnic__tensor_bytes(&t), 3 * 2 * 34);
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_Q4_0, 2, q_ok, &err), err);
    assert_int_equal(omnic__tensor_bytes(&t), 3 * 2 * 18);
    t.dims[1] = 40; /* a descriptor edited past init is caught by the checked size */
    EXPECT_ERR(omnic__tensor_nbytes(&t, &qb, &err), err, OMNIC_E_INVALID, "q4_0", "32-element blocks");

    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_I64, 5, d6, &err), err);
    assert_int_equal(t.ndim, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(t.dims[i], d6[i]);
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_BF16, 2, ok, &err), err);
    assert_int_equal(t.dtype, OMNIC_DTYPE_BF16);
    for (int i = 2; i < OMNIC_MAX_DIMS; i++)
        assert_int_equal(t.dims[i], 1); /* trailing dims are 1 */
    assert_null(t.data);
    assert_false(t.owns_data);
    assert_string_equal(t.name, "");
    size_t n = 0, b = 0;
    EXPECT_OK(omnic__tensor_numel(&t, &n, &err), err);
    EXPECT_OK(omnic__tensor_nbytes(&t, &b, &err), err);
    assert_int_equal(n, 6);
    assert_int_equal(b, 12);
    assert_int_equal(omnic__tensor_nelem(&t), 6);
    assert_int_equal(omnic__tensor_bytes(&t), 12);
    assert_int_equal(omnic__tensor_rows(&t), 2);
    assert_int_equal(omnic__tensor_cols(&t), 3);

    /* scalar */
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_F32, 0, NULL, &err), err);
    EXPECT_OK(omnic__tensor_numel(&t, &n, &err), err);
    assert_int_equal(n, 1);
    assert_int_equal(omnic__tensor_rows(&t), 1);
    assert_int_equal(omnic__tensor_cols(&t), 1);
    /* [2, 3, 4]: rows 6, cols 4; [5]: rows 1, cols 5; [0, 7]: 0 rows */
    int64_t d3[3] = {2, 3, 4}, d1[1] = {5}, d0[2] = {0, 7};
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_F32, 3, d3, &err), err);
    assert_int_equal(omnic__tensor_rows(&t), 6);
    assert_int_equal(omnic__tensor_cols(&t), 4);
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_F32, 1, d1, &err), err);
    assert_int_equal(omnic__tensor_rows(&t), 1);
    assert_int_equal(omnic__tensor_cols(&t), 5);
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_F32, 2, d0, &err), err);
    assert_int_equal(omnic__tensor_rows(&t), 0);
    EXPECT_OK(omnic__tensor_nbytes(&t, &b, &err), err);
    assert_int_equal(b, 0);
}

static void test_tensor_overflow(void **state)
{
    (void)state;
    omnic_err err;
    omnic__tensor t;
    size_t n = 99;
    int64_t big[2] = {(int64_t)1 << 62, 4};
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_F32, 2, big, &err), err);
    EXPECT_ERR(omnic__tensor_numel(&t, &n, &err), err, OMNIC_E_TOO_LARGE, "[4611686018427387904, 4]",
               "(unnamed)");
    assert_int_equal(n, 99);
    EXPECT_ERR(omnic__tensor_nbytes(&t, &n, &err), err, OMNIC_E_TOO_LARGE, "[4611686018427387904, 4]");
    snprintf(t.name, sizeof t.name, "model.embed_tokens.weight");
    EXPECT_ERR(omnic__tensor_numel(&t, &n, &err), err, OMNIC_E_TOO_LARGE, "model.embed_tokens.weight");

    /* the element count fits, the byte size does not */
    int64_t d1[1] = {(int64_t)1 << 62};
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_F32, 1, d1, &err), err);
    EXPECT_OK(omnic__tensor_numel(&t, &n, &err), err);
    assert_true(n == (size_t)1 << 62);
    n = 99;
    EXPECT_ERR(omnic__tensor_nbytes(&t, &n, &err), err, OMNIC_E_TOO_LARGE, "f32", "[4611686018427387904]");
    assert_int_equal(n, 99);

    /* overflow appearing only at the last of five dims */
    int64_t d5[5] = {1 << 16, 1 << 16, 1 << 16, 1 << 15, 2};
    EXPECT_OK(omnic__tensor_init(&t, OMNIC_DTYPE_U8, 5, d5, &err), err);
    EXPECT_ERR(omnic__tensor_numel(&t, &n, &err), err, OMNIC_E_TOO_LARGE, "[65536, 65536, 65536, 32768, 2]");

    /* create: too large -> the same error, nothing leaked (ASan) */
    omnic__tensor *p = (omnic__tensor *)0x1;
    EXPECT_ERR(omnic__tensor_create(&p, OMNIC_DTYPE_F32, 2, big, &err), err, OMNIC_E_TOO_LARGE,
               "4611686018427387904");
    assert_ptr_equal(p, (omnic__tensor *)0x1); /* out unchanged */
    /* fits in size_t but over OMNIC_MAX_ALLOC: a clean E_NOMEM naming the bytes */
    int64_t huge[1] = {(int64_t)1 << 40};
    EXPECT_ERR(omnic__tensor_create(&p, OMNIC_DTYPE_F32, 1, huge, &err), err, OMNIC_E_NOMEM, "4398046511104");
    int64_t d6[6] = {1, 1, 1, 1, 1, 1};
    EXPECT_ERR(omnic__tensor_create(&p, OMNIC_DTYPE_F32, 6, d6, &err), err, OMNIC_E_INVALID, "rank 6");
    assert_ptr_equal(p, (omnic__tensor *)0x1);
}

static void test_tensor_create(void **state)
{
    (void)state;
    omnic_err err;
    for (int dt = 0; dt < OMNIC_DTYPE_COUNT; dt++) {
        const int64_t blk = (int64_t)omnic_dtype_block_size((omnic_dtype)dt); /* 32 for q8_0 / q4_0 */
        int64_t d[3] = {2, 3, 5 * blk};
        omnic__tensor *t = NULL;
        EXPECT_OK(omnic__tensor_create(&t, (omnic_dtype)dt, 3, d, &err), err);
        assert_non_null(t);
        assert_non_null(t->data);
        assert_true(t->owns_data);
        assert_int_equal(t->dtype, dt);
        size_t nb = omnic__tensor_bytes(t);
        assert_int_equal(nb, 30 * omnic_dtype_size((omnic_dtype)dt)); /* 30 elements or 30 blocks */
        const unsigned char *bytes = t->data;
        for (size_t i = 0; i < nb; i++)
            assert_int_equal(bytes[i], 0); /* zeroed */
        memset(t->data, 0xab, nb);         /* the whole size is writable (ASan) */
        omnic__tensor *u = NULL;
        EXPECT_OK(omnic__tensor_create(&u, (omnic_dtype)dt, 3, d, &err), err);
        assert_true(omnic__tensor_same_shape(t, u));
        u->dims[1] = 4;
        assert_false(omnic__tensor_same_shape(t, u));
        u->dims[1] = 3;
        u->dtype = (omnic_dtype)((dt + 1) % OMNIC_DTYPE_COUNT);
        assert_false(omnic__tensor_same_shape(t, u));
        u->dtype = (omnic_dtype)dt;
        omnic__tensor_destroy(u);
        omnic__tensor_destroy(t);
    }
    /* zero elements: no data */
    int64_t z[2] = {0, 4};
    omnic__tensor *t = NULL;
    EXPECT_OK(omnic__tensor_create(&t, OMNIC_DTYPE_F32, 2, z, &err), err);
    assert_null(t->data);
    omnic__tensor_destroy(t);
    /* scalar */
    EXPECT_OK(omnic__tensor_create(&t, OMNIC_DTYPE_I64, 0, NULL, &err), err);
    assert_non_null(t->data);
    *(int64_t *)t->data = -1;
    omnic__tensor_destroy(t);
    omnic__tensor_destroy(NULL);

    /* a borrowed view is not freed by destroy */
    static float storage[4];
    EXPECT_OK(omnic__tensor_create(&t, OMNIC_DTYPE_F32, 0, NULL, &err), err);
    omnic_free(t->data);
    t->data = storage;
    t->owns_data = false;
    omnic__tensor_destroy(t);
}

static void test_dims_str(void **state)
{
    (void)state;
    char buf[64];
    int64_t d[3] = {2, 3, 4};
    omnic__dims_str(buf, sizeof buf, 3, d);
    assert_string_equal(buf, "[2, 3, 4]");
    omnic__dims_str(buf, sizeof buf, 0, NULL);
    assert_string_equal(buf, "[]");
    int64_t e[2] = {-1, INT64_MAX};
    omnic__dims_str(buf, sizeof buf, 2, e);
    assert_string_equal(buf, "[-1, 9223372036854775807]");
    int64_t one[1] = {7};
    omnic__dims_str(buf, sizeof buf, 1, one);
    assert_string_equal(buf, "[7]");
    /* every buffer size truncates to a prefix and stays NUL-terminated */
    const char *full = "[2, 3, 4]";
    for (size_t n = 1; n <= strlen(full) + 2; n++) {
        char *small = malloc(n); /* exact size, so ASan sees any overrun */
        assert_non_null(small);
        omnic__dims_str(small, n, 3, d);
        size_t len = strlen(small);
        assert_true(len < n);
        assert_memory_equal(small, full, len);
        free(small);
    }
    buf[0] = 'z';
    omnic__dims_str(buf, 0, 3, d); /* n = 0 writes nothing */
    assert_int_equal(buf[0], 'z');
}

/* ---- arena ------------------------------------------------------------------------------ */

static void test_arena(void **state)
{
    (void)state;
    omnic_err err;
    omnic__arena a;
    size_t r = 0;
    assert_true(omnic__align_up(&r, 0));
    assert_int_equal(r, 0);
    assert_true(omnic__align_up(&r, 1));
    assert_int_equal(r, 64);
    assert_true(omnic__align_up(&r, 64));
    assert_int_equal(r, 64);
    assert_true(omnic__align_up(&r, 65));
    assert_int_equal(r, 128);
    r = 5;
    assert_false(omnic__align_up(&r, SIZE_MAX));
    assert_false(omnic__align_up(&r, SIZE_MAX - 62));
    assert_int_equal(r, 5);
    assert_true(omnic__align_up(&r, SIZE_MAX - 63));

    EXPECT_OK(omnic__arena_init(&a, 1000, &err), err);
    assert_int_equal(a.cap, 1024);
    assert_int_equal(a.used, 0);
    assert_int_equal((uintptr_t)a.base % OMNIC_ARENA_ALIGN, 0);
    uint8_t *p1 = omnic__arena_alloc(&a, 1);
    uint8_t *p2 = omnic__arena_alloc(&a, 100);
    uint8_t *p3 = omnic__arena_alloc(&a, 64);
    assert_non_null(p1);
    assert_non_null(p2);
    assert_non_null(p3);
    assert_ptr_equal(p1, a.base);
    assert_ptr_equal(p2, p1 + 64);
    assert_ptr_equal(p3, p2 + 128);
    assert_int_equal((uintptr_t)p2 % OMNIC_ARENA_ALIGN, 0);
    assert_int_equal((uintptr_t)p3 % OMNIC_ARENA_ALIGN, 0);
    assert_int_equal(a.used, 256);
    memset(p2, 1, 100);
    /* 768 bytes left: 769 does not fit, and a failed alloc changes nothing */
    assert_null(omnic__arena_alloc(&a, 769));
    assert_null(omnic__arena_alloc(&a, SIZE_MAX));
    assert_null(omnic__arena_alloc(&a, SIZE_MAX - 10));
    assert_int_equal(a.used, 256);
    uint8_t *p4 = omnic__arena_alloc(&a, 768);
    assert_non_null(p4);
    memset(p4, 2, 768); /* the last byte is inside the block (ASan) */
    assert_int_equal(a.used, 1024);
    assert_int_equal(a.peak, 1024);
    assert_null(omnic__arena_alloc(&a, 1)); /* full */
    omnic__arena_reset(&a);
    assert_int_equal(a.used, 0);
    assert_int_equal(a.peak, 1024); /* the high-water mark survives a reset */
    assert_ptr_equal(omnic__arena_alloc(&a, 10), a.base);
    assert_int_equal(a.peak, 1024);
    omnic__arena_deinit(&a);
    assert_null(a.base);
    assert_int_equal(a.cap, 0);
    omnic__arena_deinit(&a); /* twice is fine */

    /* peak tracks the maximum across resets */
    EXPECT_OK(omnic__arena_init(&a, 4096, &err), err);
    omnic__arena_alloc(&a, 100);
    omnic__arena_reset(&a);
    omnic__arena_alloc(&a, 300);
    omnic__arena_alloc(&a, 300);
    assert_int_equal(a.peak, 640);
    omnic__arena_reset(&a);
    omnic__arena_alloc(&a, 64);
    assert_int_equal(a.peak, 640);
    omnic__arena_deinit(&a);

    /* empty arena: nothing fits, not even 0 bytes (and no NULL + 0 arithmetic, clang UBSan) */
    EXPECT_OK(omnic__arena_init(&a, 0, &err), err);
    assert_null(omnic__arena_alloc(&a, 1));
    assert_null(omnic__arena_alloc(&a, 0));
    omnic__arena_deinit(&a);
    /* 0 bytes from a non-empty arena: a valid pointer that uses nothing */
    EXPECT_OK(omnic__arena_init(&a, 64, &err), err);
    assert_ptr_equal(omnic__arena_alloc(&a, 0), a.base);
    assert_int_equal(a.used, 0);
    omnic__arena_deinit(&a);

    /* over the allocation cap, and overflow while rounding */
    EXPECT_ERR(omnic__arena_init(&a, OMNIC_MAX_ALLOC + 1, &err), err, OMNIC_E_TOO_LARGE, "68719476737");
    assert_null(a.base);
    EXPECT_ERR(omnic__arena_init(&a, SIZE_MAX, &err), err, OMNIC_E_TOO_LARGE);
    assert_null(a.base);

    /* the fault hook reaches the arena */
    omnic__alloc_fail_after(0);
    EXPECT_ERR(omnic__arena_init(&a, 128, &err), err, OMNIC_E_NOMEM, "128");
    assert_true(omnic__alloc_injected_failures() > 0);
    omnic__alloc_fail_after(-1);
    assert_null(a.base);
    omnic__arena_deinit(&a);
}

/* ---- thread pool ------------------------------------------------------------------------ */

#define MAX_T 8

typedef struct job_ctx {
    _Atomic int calls[MAX_T];
    _Atomic int bad; /* set by a worker on any violated expectation */
    int expect_nth;
    pthread_t caller;
} job_ctx;

static void count_job(void *vctx, int ith, int nth)
{
    job_ctx *c = vctx;
    if (nth != c->expect_nth || ith < 0 || ith >= nth || ith >= MAX_T) {
        atomic_store(&c->bad, 1);
        return;
    }
    if (ith == 0 && !pthread_equal(pthread_self(), c->caller)) atomic_store(&c->bad, 2);
    if (ith != 0 && pthread_equal(pthread_self(), c->caller)) atomic_store(&c->bad, 3);
    atomic_fetch_add(&c->calls[ith], 1);
}

static void reset_ctx(job_ctx *c, int nth)
{
    for (int i = 0; i < MAX_T; i++)
        atomic_store(&c->calls[i], 0);
    atomic_store(&c->bad, 0);
    c->expect_nth = nth;
    c->caller = pthread_self();
}

static void test_threadpool_jobs(void **state)
{
    (void)state;
    omnic_err err;
    assert_true(omnic__cpu_count() >= 1);
    omnic__threadpool *p = (omnic__threadpool *)0x1;
    EXPECT_ERR(omnic__threadpool_create(&p, 0, &err), err, OMNIC_E_INVALID, "0", "256");
    EXPECT_ERR(omnic__threadpool_create(&p, -3, &err), err, OMNIC_E_INVALID, "-3");
    EXPECT_ERR(omnic__threadpool_create(&p, OMNIC_MAX_THREADS + 1, &err), err, OMNIC_E_INVALID, "257");
    assert_ptr_equal(p, (omnic__threadpool *)0x1);
    omnic__threadpool_destroy(NULL);

    static job_ctx c;
    for (int size = 1; size <= 4; size++) {
        EXPECT_OK(omnic__threadpool_create(&p, size, &err), err);
        assert_int_equal(omnic__threadpool_size(p), size);
        /* run: every ith once */
        reset_ctx(&c, size);
        omnic__threadpool_run(p, count_job, &c);
        assert_int_equal(atomic_load(&c.bad), 0);
        for (int i = 0; i < MAX_T; i++)
            assert_int_equal(atomic_load(&c.calls[i]), i < size ? 1 : 0);
        /* run_n on every prefix of the pool */
        for (int nth = 1; nth <= size; nth++) {
            reset_ctx(&c, nth);
            omnic__threadpool_run_n(p, nth, count_job, &c);
            assert_int_equal(atomic_load(&c.bad), 0);
            for (int i = 0; i < MAX_T; i++)
                assert_int_equal(atomic_load(&c.calls[i]), i < nth ? 1 : 0);
        }
        /* 1000 jobs in a row, alternating widths */
        reset_ctx(&c, size);
        for (int j = 0; j < 1000; j++)
            omnic__threadpool_run(p, count_job, &c);
        assert_int_equal(atomic_load(&c.bad), 0);
        for (int i = 0; i < size; i++)
            assert_int_equal(atomic_load(&c.calls[i]), 1000);
        reset_ctx(&c, 0);
        int per[MAX_T] = {0};
        for (int j = 0; j < 1000; j++) {
            int nth = 1 + j % size;
            c.expect_nth = nth;
            omnic__threadpool_run_n(p, nth, count_job, &c);
            for (int i = 0; i < nth; i++)
                per[i]++;
        }
        assert_int_equal(atomic_load(&c.bad), 0);
        for (int i = 0; i < MAX_T; i++)
            assert_int_equal(atomic_load(&c.calls[i]), per[i]);
        omnic__threadpool_destroy(p);
    }
    /* create and destroy without running anything */
    for (int i = 0; i < 20; i++) {
        EXPECT_OK(omnic__threadpool_create(&p, 1 + i % 6, &err), err);
        omnic__threadpool_destroy(p);
    }
}

static void test_split_rows(void **state)
{
    (void)state;
    const int64_t extra[] = {1000, 1023, 1024, 4095, 65537, 151936, 1000003, (int64_t)1 << 40};
    for (int k = 0; k < 200 + (int)(sizeof extra / sizeof extra[0]); k++) {
        int64_t n = k < 200 ? k : extra[k - 200];
        for (int nth = 1; nth <= 33; nth++) {
            int64_t prev_hi = 0, min_len = INT64_MAX, max_len = -1;
            for (int ith = 0; ith < nth; ith++) {
                int64_t lo, hi, lo2, hi2;
                omnic__split_rows(n, ith, nth, &lo, &hi);
                omnic__split_rows(n, ith, nth, &lo2, &hi2);
                assert_int_equal(lo, lo2); /* deterministic */
                assert_int_equal(hi, hi2);
                assert_int_equal(lo, prev_hi); /* contiguous: no gap, no overlap */
                assert_true(lo <= hi);
                prev_hi = hi;
                if (hi - lo < min_len) min_len = hi - lo;
                if (hi - lo > max_len) max_len = hi - lo;
            }
            assert_int_equal(prev_hi, n);        /* covers [0, n) exactly */
            assert_true(max_len - min_len <= 1); /* balanced */
        }
    }
    /* coverage counted element by element for small cases */
    for (int64_t n = 0; n < 50; n++)
        for (int nth = 1; nth <= 12; nth++) {
            int seen[50] = {0};
            for (int ith = 0; ith < nth; ith++) {
                int64_t lo, hi;
                omnic__split_rows(n, ith, nth, &lo, &hi);
                for (int64_t r = lo; r < hi; r++)
                    seen[r]++;
            }
            for (int64_t r = 0; r < n; r++)
                assert_int_equal(seen[r], 1);
        }
}

typedef struct barrier_ctx {
    omnic__barrier b;
    _Atomic int count;
    _Atomic int bad;
    int rounds;
} barrier_ctx;

static void barrier_job(void *vctx, int ith, int nth)
{
    barrier_ctx *c = vctx;
    (void)ith;
    for (int r = 0; r < c->rounds; r++) {
        atomic_fetch_add(&c->count, 1);
        omnic__barrier_wait(&c->b);
        if (atomic_load(&c->count) != (r + 1) * nth) atomic_store(&c->bad, 1);
        omnic__barrier_wait(&c->b); /* nobody starts the next round before all have checked */
    }
}

static void test_barrier(void **state)
{
    (void)state;
    omnic_err err;
    static barrier_ctx c;
    for (int size = 1; size <= 4; size++) {
        omnic__threadpool *p = NULL;
        EXPECT_OK(omnic__threadpool_create(&p, size, &err), err);
        /* one round per job, 1000 jobs, a fresh barrier per job */
        for (int j = 0; j < 1000; j++) {
            omnic__barrier_init(&c.b, size);
            atomic_store(&c.count, 0);
            c.rounds = 1;
            omnic__threadpool_run(p, barrier_job, &c);
            assert_int_equal(atomic_load(&c.count), size);
        }
        /* one barrier reused many times inside one job, also on a subset of the threads */
        for (int nth = 1; nth <= size; nth++) {
            omnic__barrier_init(&c.b, nth);
            atomic_store(&c.count, 0);
            c.rounds = 200;
            omnic__threadpool_run_n(p, nth, barrier_job, &c);
            assert_int_equal(atomic_load(&c.count), 200 * nth);
        }
        assert_int_equal(atomic_load(&c.bad), 0);
        omnic__threadpool_destroy(p);
    }
}

/* Dynamic chunks: every step hands out each chunk of its part exactly once, to whichever thread
 * asks (the last thread stalls now and then, so the others take part of its share); unbound
 * threads get the static ranges. */
#define CHUNK_STEPS 300
#define CHUNK_MAX 97

typedef struct chunks_ctx {
    omnic__barrier b;
    int parts; /* virtual threads: thread ith runs part * nth + ith */
    bool bind;
    _Atomic int taken[CHUNK_STEPS][CHUNK_MAX]; /* chunk -> 1 + the part that took it */
    _Atomic int by_thread[4];
} chunks_ctx;

static int64_t chunk_count(int step)
{
    return step % CHUNK_MAX; /* 0 .. 96 chunks, also fewer than the threads */
}

static void chunks_job(void *vctx, int ith, int nth)
{
    chunks_ctx *c = vctx;
    if (c->bind) omnic__chunks_bind(&c->b);
    for (int step = 0; step < CHUNK_STEPS; step++) {
        const int part = step % c->parts;
        if (ith == nth - 1 && step % 7 == 0) usleep(200);
        omnic__chunks ch;
        int64_t i;
        omnic__chunks_begin(&ch, chunk_count(step), part * nth + ith, c->parts * nth);
        while (omnic__chunks_next(&ch, &i)) {
            atomic_fetch_add(&c->taken[step][i], 1 + part);
            atomic_fetch_add(&c->by_thread[ith], 1);
        }
        omnic__barrier_wait(&c->b);
    }
    omnic__chunks_bind(NULL);
}

static void test_chunks(void **state)
{
    (void)state;
    omnic_err err;
    static chunks_ctx c;
    for (int size = 1; size <= 3; size++) {
        omnic__threadpool *p = NULL;
        EXPECT_OK(omnic__threadpool_create(&p, size, &err), err);
        for (int mode = 0; mode < 3; mode++) { /* bound 1 part, bound 2 parts, unbound */
            memset(&c, 0, sizeof c);
            omnic__barrier_init(&c.b, size);
            c.parts = mode == 1 ? 2 : 1;
            c.bind = mode < 2;
            omnic__threadpool_run(p, chunks_job, &c);
            int64_t total = 0;
            for (int step = 0; step < CHUNK_STEPS; step++) {
                const int part = step % c.parts;
                int64_t lo, hi; /* the part's range (1 part: all) */
                omnic__split_rows(chunk_count(step), part, c.parts, &lo, &hi);
                for (int64_t i = 0; i < CHUNK_MAX; i++)
                    assert_int_equal(atomic_load(&c.taken[step][i]), i >= lo && i < hi ? 1 + part : 0);
                total += hi - lo;
            }
            int64_t sum = 0;
            for (int t = 0; t < size; t++)
                sum += atomic_load(&c.by_thread[t]);
            assert_int_equal(sum, total);
        }
        omnic__threadpool_destroy(p);
    }
    /* unbound: the static ranges of omnic__split_rows, in order */
    for (int nth = 1; nth <= 5; nth++)
        for (int ith = 0; ith < nth; ith++) {
            int64_t lo, hi, i;
            omnic__split_rows(23, ith, nth, &lo, &hi);
            omnic__chunks ch;
            omnic__chunks_begin(&ch, 23, ith, nth);
            while (omnic__chunks_next(&ch, &i))
                assert_int_equal(i, lo++);
            assert_int_equal(lo, hi);
        }
}

/* ---- sha256 ----------------------------------------------------------------------------- */

static void sha_hex(const void *data, size_t n, char out[65])
{
    omnic__sha256 s;
    uint8_t d[32];
    omnic__sha256_init(&s);
    omnic__sha256_update(&s, data, n);
    omnic__sha256_final(&s, d);
    omnic__sha256_hex(d, out);
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[65];
    sha_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha_hex(NULL, 0, hex); /* empty input from a NULL pointer (an empty tensor's data) */
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    {
        omnic__sha256 s;
        uint8_t d[32];
        omnic__sha256_init(&s);
        omnic__sha256_update(&s, "a", 1);
        omnic__sha256_update(&s, NULL, 0);
        omnic__sha256_update(&s, "bc", 2);
        omnic__sha256_update(&s, NULL, 0);
        omnic__sha256_final(&s, d);
        omnic__sha256_hex(d, hex);
        assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha_hex(m448, strlen(m448), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
        "mnopqrstnopqrstu";
    sha_hex(m896, strlen(m896), hex);
    assert_string_equal(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");

    /* 1,000,000 x 'a' in odd-sized chunks (1, 2, 3, ..., 127, then again) */
    static char a[1000];
    memset(a, 'a', sizeof a);
    omnic__sha256 s;
    uint8_t d[32];
    omnic__sha256_init(&s);
    size_t left = 1000000, chunk = 1;
    while (left) {
        size_t n = chunk < left ? chunk : left;
        omnic__sha256_update(&s, a, n);
        left -= n;
        chunk = chunk % 127 + 1;
    }
    assert_int_equal(s.len, 1000000);
    omnic__sha256_final(&s, d);
    omnic__sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* and in 1000-byte and 997-byte chunks */
    omnic__sha256_init(&s);
    for (int i = 0; i < 1000; i++)
        omnic__sha256_update(&s, a, 1000);
    omnic__sha256_final(&s, d);
    omnic__sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    omnic__sha256_init(&s);
    for (left = 1000000; left;) {
        size_t n = left < 997 ? left : 997;
        omnic__sha256_update(&s, a, n);
        left -= n;
    }
    omnic__sha256_final(&s, d);
    omnic__sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Lengths around the padding boundaries (55/56/64/119/120 bytes), digests from Python's
 * hashlib of bytes((i * 7 + 3) & 255 for i in range(n)); each hashed whole and split at
 * every point. */
static void test_sha256_boundaries(void **state)
{
    (void)state;
    static const struct {
        size_t n;
        const char *hex;
    } v[] = {
        {1, "084fed08b978af4d7d196a7446a86b58009e636b611db16211b65a9aadff29c5"},
        {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
        {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
        {57, "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73"},
        {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
        {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
        {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
        {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
        {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
        {127, "a8d23e75d936f303d248888d9b165ee543f4cbafcad3c9dd2a79bd84faa11d07"},
        {128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"},
        {129, "307f8fc2c1622b92762e818d39a185d4d667ad49a4b07ceae1f4afa008a93ec4"},
        {1000, "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371"},
    };
    static uint8_t buf[1000];
    for (int i = 0; i < 1000; i++)
        buf[i] = (uint8_t)((i * 7 + 3) & 255);
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        char hex[65];
        sha_hex(buf, v[k].n, hex);
        assert_string_equal(hex, v[k].hex);
        for (size_t cut = 0; cut <= v[k].n; cut += (v[k].n > 200 ? 37 : 1)) {
            omnic__sha256 s;
            uint8_t d[32];
            omnic__sha256_init(&s);
            omnic__sha256_update(&s, buf, cut);
            omnic__sha256_update(&s, buf + cut, v[k].n - cut);
            omnic__sha256_final(&s, d);
            omnic__sha256_hex(d, hex);
            assert_string_equal(hex, v[k].hex);
        }
    }
}

static void test_sha256_field(void **state)
{
    (void)state;
    omnic__sha256 s;
    uint8_t d1[32], d2[32], d3[32];
    char h1[65], h2[65];
    /* field("ab"), field("c") is the hash of "ab\0c\0" */
    omnic__sha256_init(&s);
    omnic__sha256_field(&s, "ab");
    omnic__sha256_field(&s, "c");
    omnic__sha256_final(&s, d1);
    omnic__sha256_hex(d1, h1);
    sha_hex("ab\0c\0", 5, h2);
    assert_string_equal(h1, h2);
    /* fields cannot run together: ("a", "bc") differs from ("ab", "c") */
    omnic__sha256_init(&s);
    omnic__sha256_field(&s, "a");
    omnic__sha256_field(&s, "bc");
    omnic__sha256_final(&s, d2);
    assert_memory_not_equal(d1, d2, 32);
    /* the empty field still counts */
    omnic__sha256_init(&s);
    omnic__sha256_field(&s, "");
    omnic__sha256_final(&s, d3);
    omnic__sha256_hex(d3, h1);
    sha_hex("\0", 1, h2);
    assert_string_equal(h1, h2);
    /* hex: lowercase, 64 characters, NUL-terminated */
    uint8_t dg[32];
    for (int i = 0; i < 32; i++)
        dg[i] = (uint8_t)(i * 8 + 7);
    char hex[66];
    memset(hex, 'Z', sizeof hex);
    omnic__sha256_hex(dg, hex);
    assert_int_equal(strlen(hex), 64);
    assert_memory_equal(hex, "070f171f272f373f", 16);
    assert_memory_equal(hex + 48, "c7cfd7dfe7eff7ff", 16);
    assert_int_equal(hex[65], 'Z');
}

/* ---- npy -------------------------------------------------------------------------------- */

/* Fills t's data with a dtype-specific deterministic pattern. */
static void fill_pattern(omnic__tensor *t)
{
    size_t n = (size_t)omnic__tensor_nelem(t);
    for (size_t i = 0; i < n; i++) {
        double v = (double)i * 0.25 - 1.0;
        switch (t->dtype) {
        case OMNIC_DTYPE_F32:
            ((float *)t->data)[i] = (float)v;
            break;
        case OMNIC_DTYPE_F16:
            ((uint16_t *)t->data)[i] = omnic__f32_to_f16((float)v);
            break;
        case OMNIC_DTYPE_BF16:
            ((uint16_t *)t->data)[i] = omnic__f32_to_bf16((float)v);
            break;
        case OMNIC_DTYPE_I32:
            ((int32_t *)t->data)[i] = (int32_t)i * -3 + 7;
            break;
        case OMNIC_DTYPE_I64:
            ((int64_t *)t->data)[i] = (int64_t)i * -3000000000LL + 7;
            break;
        case OMNIC_DTYPE_U8:
            ((uint8_t *)t->data)[i] = (uint8_t)(i * 37);
            break;
        case OMNIC_DTYPE_BOOL:
            ((uint8_t *)t->data)[i] = (uint8_t)(i % 3 == 0);
            break;
        default:
            fail();
        }
    }
}

static void test_npy_round_trip(void **state)
{
    (void)state;
    omnic_err err;
    static const struct {
        int ndim;
        int64_t dims[5];
    } shapes[] = {{3, {2, 3, 4}}, {0, {0}}, {1, {7}}, {2, {0, 3}}, {5, {2, 1, 3, 1, 2}}, {1, {1000}}};
    for (int dt = 0; dt < OMNIC_DTYPE_COUNT; dt++) {
        if (omnic_dtype_block_size((omnic_dtype)dt) > 1) continue; /* .npy has no block dtypes (below) */
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            omnic__tensor *t = NULL, *r = NULL;
            EXPECT_OK(omnic__tensor_create(&t, (omnic_dtype)dt, shapes[k].ndim, shapes[k].dims, &err), err);
            fill_pattern(t);
            char name[64];
            snprintf(name, sizeof name, "rt_%s_%zu.npy", omnic_dtype_name((omnic_dtype)dt), k);
            const char *path = tmp_path(name);
            EXPECT_OK(omnic__npy_write(path, t, &err), err);
            EXPECT_OK(omnic__npy_read(path, &r, &err), err);
            assert_int_equal(r->ndim, t->ndim);
            for (int i = 0; i < t->ndim; i++)
                assert_int_equal(r->dims[i], t->dims[i]);
            size_t n = (size_t)omnic__tensor_nelem(t);
            if (dt == OMNIC_DTYPE_BF16) {
                assert_int_equal(r->dtype, OMNIC_DTYPE_F32); /* widened */
                for (size_t i = 0; i < n; i++)
                    assert_true(((float *)r->data)[i] == omnic__bf16_to_f32(((uint16_t *)t->data)[i]));
            } else {
                assert_int_equal(r->dtype, dt);
                if (n) assert_memory_equal(r->data, t->data, omnic__tensor_bytes(t));
            }
            /* the header is padded to a multiple of 64 bytes (format 1.0) */
            FILE *f = fopen(path, "rb");
            assert_non_null(f);
            uint8_t pre[10];
            assert_int_equal(fread(pre, 1, 10, f), 10);
            fclose(f);
            assert_int_equal((10 + (pre[8] | pre[9] << 8)) % 64, 0);
            omnic__tensor_destroy(r);
            omnic__tensor_destroy(t);
        }
    }
    /* unwritable path: E_IO naming it */
    omnic__tensor *t = NULL;
    int64_t d[1] = {3};
    EXPECT_OK(omnic__tensor_create(&t, OMNIC_DTYPE_F32, 1, d, &err), err);
    EXPECT_ERR(omnic__npy_write("/nonexistent-dir/x.npy", t, &err), err, OMNIC_E_IO,
               "/nonexistent-dir/x.npy");
    t->dtype = OMNIC_DTYPE_COUNT;
    char bad_dt[32];
    snprintf(bad_dt, sizeof bad_dt, "dtype %d", (int)OMNIC_DTYPE_COUNT);
    EXPECT_ERR(omnic__npy_write(tmp_path("bad.npy"), t, &err), err, OMNIC_E_UNSUPPORTED, bad_dt);
    t->dtype = OMNIC_DTYPE_F32;
    omnic__tensor_destroy(t);
    int64_t qd[2] = {2, 32};
    EXPECT_OK(omnic__tensor_create(&t, OMNIC_DTYPE_Q8_0, 2, qd, &err), err);
    EXPECT_ERR(omnic__npy_write(tmp_path("q8.npy"), t, &err), err, OMNIC_E_UNSUPPORTED, "no .npy form");
    omnic__tensor_destroy(t);
    omnic__tensor *r = (omnic__tensor *)0x1;
    EXPECT_ERR(omnic__npy_read(tmp_path("missing.npy"), &r, &err), err, OMNIC_E_IO, "missing.npy");
    assert_ptr_equal(r, (omnic__tensor *)0x1);
}

/* numpy reads what omnic writes. */
static void test_npy_numpy_reads_ours(void **state)
{
    (void)state;
    require_numpy();
    omnic_err err;
    int64_t d[3] = {2, 3, 4};
    for (int dt = 0; dt < OMNIC_DTYPE_COUNT; dt++) {
        if (omnic_dtype_block_size((omnic_dtype)dt) > 1) continue; /* no .npy form */
        omnic__tensor *t = NULL;
        EXPECT_OK(omnic__tensor_create(&t, (omnic_dtype)dt, 3, d, &err), err);
        fill_pattern(t);
        char name[64];
        snprintf(name, sizeof name, "ours_%s.npy", omnic_dtype_name((omnic_dtype)dt));
        EXPECT_OK(omnic__npy_write(tmp_path(name), t, &err), err);
        omnic__tensor_destroy(t);
    }
    int64_t sd[1] = {0};
    omnic__tensor *s = NULL;
    EXPECT_OK(omnic__tensor_create(&s, OMNIC_DTYPE_I64, 0, sd, &err), err);
    *(int64_t *)s->data = -42;
    EXPECT_OK(omnic__npy_write(tmp_path("ours_scalar.npy"), s, &err), err);
    omnic__tensor_destroy(s);

    static const char script[] =
        "import sys, numpy as np\n"
        "d = sys.argv[1]\n"
        "i = np.arange(24)\n"
        "v = (i * 0.25 - 1.0)\n"
        "want = {\n"
        "  'f32': v.astype(np.float32), 'f16': v.astype(np.float16), 'bf16': v.astype(np.float32),\n"
        "  'i32': (i * -3 + 7).astype(np.int32), 'i64': i.astype(np.int64) * -3000000000 + 7,\n"
        "  'u8': (i * 37 % 256).astype(np.uint8), 'bool': i % 3 == 0}\n"
        "for k, w in want.items():\n"
        "    a = np.load(d + '/ours_' + k + '.npy')\n"
        "    assert a.shape == (2, 3, 4), (k, a.shape)\n"
        "    assert a.dtype == w.dtype, (k, a.dtype)\n"
        "    assert np.array_equal(a, w.reshape(2, 3, 4)), k\n"
        "s = np.load(d + '/ours_scalar.npy')\n"
        "assert s.shape == () and s.dtype == np.int64 and s == -42\n";
    write_file(tmp_path("check.py"), script, sizeof script - 1);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", tmp_path("check.py"), tmp_dir);
    assert_int_equal(system(cmd), 0);
}

/* Files written by numpy itself. */
static void test_npy_from_numpy(void **state)
{
    (void)state;
    require_numpy();
    static const char script[] =
        "import sys, numpy as np\n"
        "d = sys.argv[1]\n"
        "np.save(d + '/np_f32.npy', np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.5 - 3)\n"
        "np.save(d + '/np_i64.npy', np.array([-5, 0, 2**40, 7], dtype=np.int64))\n"
        "np.save(d + '/np_scalar.npy', np.array(3.5, dtype=np.float32))\n"
        "np.save(d + '/np_f16.npy', np.array([[1.0, -2.5, 65504], [2**-24, 0.1, -0.0]], dtype=np.float16))\n"
        "np.save(d + '/np_i32.npy', np.array([[1, -2], [3, -4]], dtype=np.int32))\n"
        "np.save(d + '/np_u8.npy', np.arange(6, dtype=np.uint8).reshape(3, 2))\n"
        "np.save(d + '/np_bool.npy', np.array([True, False, True]))\n"
        "np.save(d + '/np_empty.npy', np.zeros((0, 3), np.float32))\n"
        "for v in (2, 3):\n"
        "    with open(d + '/np_v%d.npy' % v, 'wb') as f:\n"
        "        np.lib.format.write_array(f, np.arange(5, dtype=np.float32), version=(v, 0))\n"
        "np.save(d + '/np_be.npy', np.arange(3, dtype='>f4'))\n"
        "np.save(d + '/np_fortran.npy', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))\n"
        "np.save(d + '/np_c8.npy', np.zeros(2, np.complex64))\n"
        "np.save(d + '/np_f64.npy', np.zeros(2, np.float64))\n";
    write_file(tmp_path("gen.py"), script, sizeof script - 1);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", tmp_path("gen.py"), tmp_dir);
    assert_int_equal(system(cmd), 0);

    omnic_err err;
    omnic__tensor *t = NULL;
    EXPECT_OK(omnic__npy_read(tmp_path("np_f32.npy"), &t, &err), err);
    assert_int_equal(t->dtype, OMNIC_DTYPE_F32);
    assert_int_equal(t->ndim, 3);
    assert_int_equal(t->dims[0], 2);
    assert_int_equal(t->dims[1], 3);
    assert_int_equal(t->dims[2], 4);
    for (int i = 0; i < 24; i++)
        assert_true(((float *)t->data)[i] == (float)i * 0.5f - 3.0f);
    omnic__tensor_destroy(t);

    EXPECT_OK(omnic__npy_read(tmp_path("np_i64.npy"), &t, &err), err);
    assert_int_equal(t->dtype, OMNIC_DTYPE_I64);
    assert_int_equal(t->ndim, 1);
    assert_int_equal(t->dims[0], 4);
    const int64_t want_i64[4] = {-5, 0, (int64_t)1 << 40, 7};
    assert_memory_equal(t->data, want_i64, sizeof want_i64);
    omnic__tensor_destroy(t);

    EXPECT_OK(omnic__npy_read(tmp_path("np_scalar.npy"), &t, &err), err);
    assert_int_equal(t->dtype, OMNIC_DTYPE_F32);
    assert_int_equal(t->ndim, 0);
    assert_true(*(float *)t->data == 3.5f);
    omnic__tensor_destroy(t);

    EXPECT_OK(omnic__npy_read(tmp_path("np_f16.npy"), &t, &err), err);
    assert_int_equal(t->dtype, OMNIC_DTYPE_F16);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->dims[0], 2);
    assert_int_equal(t->dims[1], 3);
    const uint16_t want_f16[6] = {0x3c00, 0xc100, 0x7bff, 0x0001, 0x2e66, 0x8000};
    assert_memory_equal(t->data, want_f16, sizeof want_f16);
    omnic__tensor_destroy(t);

    EXPECT_OK(omnic__npy_read(tmp_path("np_i32.npy"), &t, &err), err);
    assert_int_equal(t->dtype, OMNIC_DTYPE_I32);
    const int32_t want_i32[4] = {1, -2, 3, -4};
    assert_memory_equal(t->data, want_i32, sizeof want_i32);
    omnic__tensor_destroy(t);

    EXPECT_OK(omnic__npy_read(tmp_path("np_u8.npy"), &t, &err), err);
    assert_int_equal(t->dtype, OMNIC_DTYPE_U8);
    assert_int_equal(t->dims[0], 3);
    assert_int_equal(t->dims[1], 2);
    assert_memory_equal(t->data, "\0\1\2\3\4\5", 6);
    omnic__tensor_destroy(t);

    EXPECT_OK(omnic__npy_read(tmp_path("np_bool.npy"), &t, &err), err);
    assert_int_equal(t->dtype, OMNIC_DTYPE_BOOL);
    assert_memory_equal(t->data, "\1\0\1", 3);
    omnic__tensor_destroy(t);

    EXPECT_OK(omnic__npy_read(tmp_path("np_empty.npy"), &t, &err), err);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->dims[0], 0);
    assert_int_equal(t->dims[1], 3);
    omnic__tensor_destroy(t);

    for (int v = 2; v <= 3; v++) {
        char name[32];
        snprintf(name, sizeof name, "np_v%d.npy", v);
        EXPECT_OK(omnic__npy_read(tmp_path(name), &t, &err), err);
        assert_int_equal(t->ndim, 1);
        assert_int_equal(t->dims[0], 5);
        for (int i = 0; i < 5; i++)
            assert_true(((float *)t->data)[i] == (float)i);
        omnic__tensor_destroy(t);
    }

    t = NULL;
    EXPECT_ERR(omnic__npy_read(tmp_path("np_be.npy"), &t, &err), err, OMNIC_E_UNSUPPORTED, "'>f4'",
               "np_be.npy");
    EXPECT_ERR(omnic__npy_read(tmp_path("np_fortran.npy"), &t, &err), err, OMNIC_E_UNSUPPORTED, "fortran");
    EXPECT_ERR(omnic__npy_read(tmp_path("np_c8.npy"), &t, &err), err, OMNIC_E_UNSUPPORTED, "'<c8'");
    EXPECT_ERR(omnic__npy_read(tmp_path("np_f64.npy"), &t, &err), err, OMNIC_E_UNSUPPORTED, "'<f8'");
    assert_null(t);
}

/* Builds a .npy image into a new malloc'd buffer of exactly the returned length (so ASan
 * catches reads past it): preamble of `version`, `dict` padded with spaces and '\n' to a
 * multiple of 64, then data_len bytes of 0x11. hlen_override >= 0 replaces the header length. */
static uint8_t *make_npy(int version, const char *dict, size_t data_len, long hlen_override, size_t *len)
{
    size_t pre = version == 1 ? 10 : 12, dl = strlen(dict);
    size_t total_hdr = (pre + dl + 1 + 63) / 64 * 64, hlen = total_hdr - pre;
    *len = total_hdr + data_len;
    uint8_t *b = malloc(*len);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)version;
    b[7] = 0;
    size_t h = hlen_override >= 0 ? (size_t)hlen_override : hlen;
    for (size_t i = 0; i < pre - 8; i++)
        b[8 + i] = (uint8_t)(h >> (8 * i));
    memcpy(b + pre, dict, dl);
    memset(b + pre + dl, ' ', hlen - dl - 1);
    b[total_hdr - 1] = '\n';
    memset(b + total_hdr, 0x11, data_len);
    return b;
}

/* "%zu bytes"-style text of v in one of four rotating static buffers. */
static const char *fmt_zu(const char *fmt, size_t v)
{
    static char buf[4][64];
    static int which;
    which = (which + 1) % 4;
    snprintf(buf[which], sizeof buf[which], fmt, v);
    return buf[which];
}

static omnic_status parse_buf(const uint8_t *b, size_t len, omnic_err *err)
{
    omnic__tensor *t = (omnic__tensor *)0x1;
    omnic_status rc = omnic__npy_parse(b, len, &t, err);
    if (rc == OMNIC_OK)
        omnic__tensor_destroy(t);
    else
        assert_ptr_equal(t, (omnic__tensor *)0x1); /* out unchanged on failure */
    return rc;
}

/* Parses dict (version 1, data_len bytes of data) and returns the status. */
static omnic_status parse_dict(const char *dict, size_t data_len, omnic_err *err)
{
    size_t len;
    uint8_t *b = make_npy(1, dict, data_len, -1, &len);
    omnic_status rc = parse_buf(b, len, err);
    free(b);
    return rc;
}

static void test_npy_malformed(void **state)
{
    (void)state;
    omnic_err err;
    omnic_err_clear(&err);
    const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    EXPECT_OK(parse_dict(good, 24, &err), err);
    EXPECT_OK(parse_dict("{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(2,3)}", 24, &err), err);
    EXPECT_OK(parse_dict("{'shape': (), 'descr': '|b1', 'fortran_order': False}", 1, &err), err);
    EXPECT_OK(parse_dict("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 24, &err), err);

    size_t len;
    uint8_t *b = make_npy(1, good, 24, -1, &len);

    /* bad magic */
    b[3] = 'X';
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_CORRUPT, "magic", fmt_zu("file of %zu bytes", len));
    b[3] = 'M';
    b[0] = 0x92;
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_CORRUPT, "magic");
    b[0] = 0x93;
    /* shorter than a preamble */
    EXPECT_ERR(parse_buf(b, 9, &err), err, OMNIC_E_CORRUPT, "9 bytes");
    EXPECT_ERR(parse_buf(b, 0, &err), err, OMNIC_E_CORRUPT, "0 bytes");
    /* version 9 (and 0) */
    b[6] = 9;
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_UNSUPPORTED, "version 9");
    b[6] = 0;
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_UNSUPPORTED, "version 0");
    b[6] = 1;
    /* header past EOF */
    b[8] = 200;
    b[9] = 0;
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_CORRUPT, "200 bytes", fmt_zu("%zu-byte file", len));
    b[8] = 0xff;
    b[9] = 0xff;
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_CORRUPT, "65535");
    free(b);
    /* data shorter than the shape: 24 needed, 23 present */
    b = make_npy(1, good, 23, -1, &len);
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_CORRUPT, "24", "23");
    free(b);
    b = make_npy(1, good, 0, -1, &len);
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_CORRUPT, "24", "has 0");
    free(b);
    /* version 2: truncated preamble, header over the limit, header past EOF */
    b = make_npy(2, good, 24, -1, &len);
    EXPECT_OK(parse_buf(b, len, &err), err);
    EXPECT_ERR(parse_buf(b, 11, &err), err, OMNIC_E_CORRUPT, "11 bytes");
    free(b);
    b = make_npy(2, good, 24, 70000, &len);
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_TOO_LARGE, "70000", "65536");
    free(b);
    b = make_npy(2, good, 24, 0x7fffffff, &len);
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_TOO_LARGE, "2147483647");
    free(b);
    b = make_npy(3, good, 24, 1000, &len);
    EXPECT_ERR(parse_buf(b, len, &err), err, OMNIC_E_CORRUPT, "1000");
    free(b);

    /* dict contents */
    EXPECT_ERR(parse_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, &err), err,
               OMNIC_E_UNSUPPORTED, "fortran");
    EXPECT_ERR(parse_dict("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, &err), err,
               OMNIC_E_UNSUPPORTED, "'<c8'");
    EXPECT_ERR(parse_dict("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 16, &err), err,
               OMNIC_E_UNSUPPORTED, "'>f4'");
    EXPECT_ERR(parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1), }", 4, &err),
               err, OMNIC_E_UNSUPPORTED, "5");
    EXPECT_ERR(parse_dict("hello", 0, &err), err, OMNIC_E_CORRUPT, "malformed", "byte 10");
    EXPECT_ERR(parse_dict("{'descr': '<f4', 'fortran_order': False}", 0, &err), err, OMNIC_E_CORRUPT);
    EXPECT_ERR(parse_dict("{'fortran_order': False, 'shape': (2,)}", 8, &err), err, OMNIC_E_CORRUPT);
    EXPECT_ERR(parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", 8, &err),
               err, OMNIC_E_CORRUPT);
    EXPECT_ERR(parse_dict("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", 8, &err), err,
               OMNIC_E_CORRUPT);
    EXPECT_ERR(parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", 8, &err), err,
               OMNIC_E_CORRUPT);
    EXPECT_ERR(parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", 24, &err), err,
               OMNIC_E_CORRUPT);
    EXPECT_ERR(parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", 8, &err), err,
               OMNIC_E_CORRUPT);
    EXPECT_ERR(parse_dict("{'descr': '<f4", 0, &err), err, OMNIC_E_CORRUPT);
    EXPECT_ERR(
        parse_dict("{'descr': 'this-descr-is-far-too-long', 'fortran_order': False, 'shape': ()}", 4, &err),
        err, OMNIC_E_CORRUPT);
    EXPECT_ERR(parse_dict("{'descr' '<f4', 'fortran_order': False, 'shape': ()}", 4, &err), err,
               OMNIC_E_CORRUPT);
    EXPECT_ERR(parse_dict("", 0, &err), err, OMNIC_E_CORRUPT);
    /* a dim with more digits than any int64 */
    EXPECT_ERR(
        parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 4, &err),
        err, OMNIC_E_CORRUPT);
    /* dims whose product overflows: E_TOO_LARGE naming them */
    EXPECT_ERR(
        parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000000000, 1000)}", 4, &err),
        err, OMNIC_E_TOO_LARGE, "100000000000000000, 1000");
    /* a product that fits but needs far more data than the file has */
    EXPECT_ERR(parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,)}", 4, &err), err,
               OMNIC_E_CORRUPT, "400000000000", "has 4");

    /* read from a file: the error names the path */
    b = make_npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, -1, &len);
    write_file(tmp_path("c8.npy"), b, len);
    free(b);
    omnic__tensor *t = NULL;
    EXPECT_ERR(omnic__npy_read(tmp_path("c8.npy"), &t, &err), err, OMNIC_E_UNSUPPORTED, "c8.npy: ", "'<c8'");
    write_file(tmp_path("empty.npy"), "", 0);
    EXPECT_ERR(omnic__npy_read(tmp_path("empty.npy"), &t, &err), err, OMNIC_E_CORRUPT, "empty.npy",
               "0 bytes");
    EXPECT_ERR(omnic__npy_read(tmp_dir, &t, &err), err, OMNIC_E_IO, "not a regular file");
    EXPECT_ERR(omnic__npy_read("/dev/null", &t, &err), err, OMNIC_E_IO, "/dev/null");
    assert_null(t);
}

/* Every truncation and many single-byte corruptions of a valid file: a clean status, never a
 * crash or an out-of-bounds read (ASan). */
static void test_npy_mutations(void **state)
{
    (void)state;
    omnic_err err;
    size_t len;
    uint8_t *good = make_npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 24, -1, &len);
    for (size_t cut = 0; cut <= len; cut++) {
        uint8_t *b = malloc(cut ? cut : 1);
        assert_non_null(b);
        memcpy(b, good, cut);
        omnic_status rc = parse_buf(b, cut, &err);
        assert_int_equal(rc == OMNIC_OK, cut == len);
        if (rc != OMNIC_OK) assert_true(rc < 0 && strlen(err.msg) > 0);
        free(b);
    }
    static const uint8_t vals[] = {0,   ' ', '\'', '"', '(', ')',  ',', ':',
                                   '{', '}', '9',  '-', 'T', 0x7f, 0xff};
    uint8_t *b = malloc(len);
    assert_non_null(b);
    int ok = 0;
    for (size_t pos = 0; pos < 128; pos++) {
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(b, good, len);
            b[pos] = vals[v];
            omnic_status rc = parse_buf(b, len, &err);
            if (rc == OMNIC_OK)
                ok++;
            else
                assert_true(strcmp(omnic_status_name(rc), "OMNIC_UNKNOWN") != 0);
        }
    }
    assert_true(ok > 0); /* changing padding spaces keeps it valid */
    free(b);
    free(good);
}

/* Heap budgets count one thread's charges and refuse the one that passes the bound. */
static void test_budget_heap(void **state)
{
    (void)state;
    assert_true(omnic__budget_heap_charge(1u << 30)); /* no scope: no bound */
    omnic__budget_heap_begin(100);
    assert_true(omnic__budget_heap_charge(60));
    assert_true(omnic__budget_heap_charge(40));
    assert_false(omnic__budget_heap_charge(1));
    assert_false(omnic__budget_heap_charge(SIZE_MAX));
    bool over = false;
    assert_int_equal(omnic__budget_heap_end(&over), 100);
    assert_true(over);
    omnic__budget_heap_begin(0); /* 0: counted, unbounded */
    assert_true(omnic__budget_heap_charge(SIZE_MAX / 2));
    assert_int_equal(omnic__budget_heap_end(&over), SIZE_MAX / 2);
    assert_false(over);
    omnic__budget b;
    omnic__budget_server(&b);
    assert_true(b.image_pixels < OMNIC_MAX_IMAGE_PIXELS);
    assert_true(b.template_steps < OMNIC_MAX_TEMPLATE_ITERATIONS);
    assert_true(b.template_work < OMNIC_MAX_TEMPLATE_WORK_BYTES);
    assert_true(b.jpeg_decoder_bytes < OMNIC_MAX_JPEG_DECODER_BYTES);
    omnic_err err;
    assert_int_equal(omnic__budget_time(&b, "x", &err), OMNIC_OK); /* deadline 0: none */
    b.deadline = omnic__now() - 0.001;
    assert_int_equal(omnic__budget_time(&b, "the chat template", &err), OMNIC_E_TIMEOUT);
    assert_non_null(strstr(err.msg, "during the chat template"));
}

typedef struct pool_job {
    omnic__job job;
    atomic_int *started, *ran, *done;
    atomic_bool *gate;
} pool_job;

static void pool_run(omnic__job *j)
{
    pool_job *p = (pool_job *)j;
    atomic_fetch_add(p->started, 1);
    while (!atomic_load(p->gate) && !atomic_load(&j->cancel))
        usleep(1000);
    atomic_fetch_add(p->ran, 1);
}

static void pool_done(omnic__job *j)
{
    pool_job *p = (pool_job *)j;
    atomic_fetch_add(p->done, 1);
    free(p);
}

/* A bounded pool: a full queue is refused at once naming its size; done callbacks run once
 * for every job, run or cancelled while queued. */
static void test_job_pool(void **state)
{
    (void)state;
    omnic__job_pool *p = NULL;
    omnic_err err;
    assert_int_equal(omnic__job_pool_create("test", 1, 2, 3, &p, &err), OMNIC_OK);
    atomic_int started = 0, ran = 0, done = 0;
    atomic_bool gate = false;
    int accepted = 0, refused = 0;
    for (int i = 0; i < 6; i++) {
        pool_job *j = calloc(1, sizeof *j);
        j->started = &started, j->ran = &ran, j->done = &done, j->gate = &gate;
        omnic__job_init(&j->job, pool_run, pool_done);
        if (omnic__job_pool_submit(p, &j->job, &err) == OMNIC_OK) {
            accepted++;
            if (i == 0)
                while (!atomic_load(&started)) /* the first one runs */
                    usleep(1000);
        } else {
            refused++;
            assert_non_null(strstr(err.msg, "the test queue is full (2 jobs waiting)"));
            free(j);
        }
    }
    assert_int_equal(accepted, 3); /* one running, two waiting */
    assert_int_equal(refused, 3);
    omnic__job_pool_cancel(p); /* the two waiting finish unrun; the running one sees cancel */
    omnic__job_pool_destroy(p);
    assert_int_equal(atomic_load(&done), 3);
    assert_int_equal(atomic_load(&ran), 1);
}

int main(void)
{
    // clang-format off
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_table),
        cmocka_unit_test(test_fail_and_prefix),
        cmocka_unit_test(test_size_arith),
        cmocka_unit_test(test_alloc_limits),
        cmocka_unit_test(test_alloc_fault_hook),
        cmocka_unit_test(test_tensor_init),
        cmocka_unit_test(test_tensor_overflow),
        cmocka_unit_test(test_tensor_create),
        cmocka_unit_test(test_dims_str),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_threadpool_jobs),
        cmocka_unit_test(test_split_rows),
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_sha256_boundaries),
        cmocka_unit_test(test_sha256_field),
        cmocka_unit_test(test_npy_round_trip),
        cmocka_unit_test(test_npy_numpy_reads_ours),
        cmocka_unit_test(test_npy_from_numpy),
        cmocka_unit_test(test_npy_malformed),
        cmocka_unit_test(test_npy_mutations),
        cmocka_unit_test(test_budget_heap),
        cmocka_unit_test(test_job_pool),
    };
    // clang-format on
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
