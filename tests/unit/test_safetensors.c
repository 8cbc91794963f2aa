/* Unit tests for src/io/safetensors.c: single and sharded checkpoints, every dtype, metadata,
 * lookup order, tensor views, and each class of malformed file (status code + message that
 * names the file, the tensor and the number), plus allocation-failure injection. */

#include "io_testutil.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "io/safetensors.h"

static uint8_t g_buf[1 << 16];

/* Parses header+data from memory. */
static omnic_status parse_mem(const char *header, const void *data, size_t data_len, omnic__safetensors **st,
                              omnic_err *err)
{
    size_t n = tu_st_build(g_buf, sizeof g_buf, header, data, data_len, true);
    omnic_err_clear(err);
    return omnic__st_parse_header(g_buf, n, "mem.safetensors", st, err);
}

static void test_single_file(void **state)
{
    (void)state;
    float w[6] = {1, 2, 3, 4, 5, 6};
    int32_t ids[2] = {7, -8};
    uint8_t data[32];
    memcpy(data, w, 24);
    memcpy(data + 24, ids, 8);
    tu_st_write("model.safetensors",
                "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"hi\"},"
                "\"z.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                "\"a.ids\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[24,32]}}",
                data, sizeof data);
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_OK(omnic__st_open_file(tu_path("model.safetensors"), &st, &err), err);
    assert_int_equal(omnic__st_count(st), 2);
    /* sorted by name */
    assert_string_equal(omnic__st_at(st, 0)->name, "a.ids");
    assert_string_equal(omnic__st_at(st, 1)->name, "z.weight");
    assert_null(omnic__st_at(st, 2));
    const omnic__st_tensor *t = omnic__st_find(st, "z.weight");
    assert_non_null(t);
    assert_int_equal(t->dtype, OMNIC_DTYPE_F32);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->dims[0], 2);
    assert_int_equal(t->dims[1], 3);
    assert_int_equal(t->dims[2], 1);
    assert_int_equal(t->nbytes, 24);
    assert_int_equal(t->shard, 0);
    assert_memory_equal(t->data, w, 24);
    const omnic__st_tensor *a = omnic__st_find(st, "a.ids");
    assert_non_null(a);
    assert_memory_equal(a->data, ids, 8);
    assert_null(omnic__st_find(st, "missing"));
    assert_null(omnic__st_find(st, "a"));
    assert_string_equal(omnic__st_metadata(st, "format"), "pt");
    assert_string_equal(omnic__st_metadata(st, "note"), "hi");
    assert_null(omnic__st_metadata(st, "absent"));
    assert_int_equal(omnic__st_metadata_count(st), 2);
    assert_int_equal(omnic__st_shard_count(st), 1);
    assert_string_equal(omnic__st_shard_path(st, 0), tu_path("model.safetensors"));
    assert_null(omnic__st_shard_path(st, 1));
    assert_true(omnic__st_shard_size(st, 0) > 32);

    omnic__tensor v;
    omnic__st_tensor_view(t, &v);
    assert_int_equal(v.dtype, OMNIC_DTYPE_F32);
    assert_int_equal(v.ndim, 2);
    assert_int_equal(v.dims[0], 2);
    assert_int_equal(v.dims[1], 3);
    assert_int_equal(v.dims[4], 1);
    assert_false(v.owns_data);
    assert_ptr_equal(v.data, t->data);
    assert_string_equal(v.name, "z.weight");
    assert_int_equal(omnic__tensor_bytes(&v), 24);
    omnic__st_close(st);
    omnic__st_close(NULL);

    /* open_dir falls back to model.safetensors */
    TU_OK(omnic__st_open_dir(tu_dir, &st, &err), err);
    assert_int_equal(omnic__st_count(st), 2);
    omnic__st_close(st);
}

static void test_all_dtypes(void **state)
{
    (void)state;
    static const struct {
        const char *st;
        omnic_dtype dt;
        size_t size;
    } cases[] = {
        {"F32", OMNIC_DTYPE_F32, 4},   {"F16", OMNIC_DTYPE_F16, 2}, {"BF16", OMNIC_DTYPE_BF16, 2},
        {"I32", OMNIC_DTYPE_I32, 4},   {"I64", OMNIC_DTYPE_I64, 8}, {"U8", OMNIC_DTYPE_U8, 1},
        {"BOOL", OMNIC_DTYPE_BOOL, 1},
    };
    char header[2048];
    size_t off = 0, n = 0;
    n += (size_t)snprintf(header + n, sizeof header - n, "{");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t bytes = 3 * cases[i].size;
        n += (size_t)snprintf(header + n, sizeof header - n,
                              "%s\"t_%s\":{\"dtype\":\"%s\",\"shape\":[3],\"data_offsets\":[%zu,%zu]}",
                              i ? "," : "", cases[i].st, cases[i].st, off, off + bytes);
        off += bytes;
    }
    snprintf(header + n, sizeof header - n, "}");
    uint8_t data[256];
    for (size_t i = 0; i < off; i++)
        data[i] = (uint8_t)i;
    omnic__safetensors *st = NULL;
    omnic_err err;
    TU_OK(parse_mem(header, data, off, &st, &err), err);
    assert_int_equal(omnic__st_count(st), 7);
    off = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "t_%s", cases[i].st);
        const omnic__st_tensor *t = omnic__st_find(st, name);
        assert_non_null(t);
        assert_int_equal(t->dtype, cases[i].dt);
        assert_int_equal(t->nbytes, 3 * cases[i].size);
        assert_int_equal(((const uint8_t *)t->data)[0], (uint8_t)off);
        off += 3 * cases[i].size;
    }
    /* at() is in strcmp order */
    for (size_t i = 1; i < omnic__st_count(st); i++)
        assert_true(strcmp(omnic__st_at(st, i - 1)->name, omnic__st_at(st, i)->name) < 0);
    omnic__st_close(st);
}

static void test_zero_size_and_scalar(void **state)
{
    (void)state;
    float s = 2.5f;
    omnic__safetensors *st = NULL;
    omnic_err err;
    /* empty tensors share an offset with a non-empty one: not an overlap */
    TU_OK(parse_mem("{\"empty\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[0,0]},"
                    "\"empty2\":{\"dtype\":\"BF16\",\"shape\":[3,0],\"data_offsets\":[4,4]},"
                    "\"scalar\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
                    &s, 4, &st, &err),
          err);
    const omnic__st_tensor *e = omnic__st_find(st, "empty");
    assert_non_null(e);
    assert_int_equal(e->nbytes, 0);
    assert_int_equal(e->ndim, 2);
    assert_int_equal(e->dims[0], 0);
    const omnic__st_tensor *sc = omnic__st_find(st, "scalar");
    assert_int_equal(sc->ndim, 0);
    assert_int_equal(sc->nbytes, 4);
    assert_memory_equal(sc->data, &s, 4);
    omnic__st_close(st);

    /* an empty header object and no data */
    TU_OK(parse_mem("{}", NULL, 0, &st, &err), err);
    assert_int_equal(omnic__st_count(st), 0);
    assert_null(omnic__st_at(st, 0));
    assert_null(omnic__st_find(st, "x"));
    omnic__st_close(st);

    /* a file with only the header: a zero-size tensor at offset 0 */
    TU_OK(parse_mem("{\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", NULL, 0, &st, &err),
          err);
    assert_int_equal(omnic__st_count(st), 1);
    omnic__st_close(st);
}

/* ---- malformed files ---- */

static void test_truncated_header_length(void **state)
{
    (void)state;
    tu_write("short.safetensors", "\x05\x00\x00\x00\x00", 5);
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    omnic_status rc = omnic__st_open_file(tu_path("short.safetensors"), &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, tu_path("short.safetensors"), "5 bytes", "8-byte");
    assert_null(st);

    tu_write("empty.safetensors", "", 0);
    rc = omnic__st_open_file(tu_path("empty.safetensors"), &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "empty.safetensors", "0 bytes");

    rc = omnic__st_parse_header((const uint8_t *)"abc", 3, "mem3", &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "mem3", "3 bytes");
    rc = omnic__st_parse_header(NULL, 0, "nullbuf", &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "nullbuf", "0 bytes");

    rc = omnic__st_open_file(tu_path("nope.safetensors"), &st, &err);
    TU_ERR(rc, err, OMNIC_E_NOT_FOUND, "nope.safetensors");
}

static void test_truncated_data(void **state)
{
    (void)state;
    float w[4] = {1, 2, 3, 4};
    size_t n =
        tu_st_build(g_buf, sizeof g_buf,
                    "{\"layer.w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", w, 16, true);
    tu_write("trunc.safetensors", g_buf, n - 8); /* 8 data bytes remain of 16 */
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = omnic__st_open_file(tu_path("trunc.safetensors"), &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, tu_path("trunc.safetensors"), "'layer.w'", "[0, 16]", "8 bytes");
    assert_null(st);
}

static void test_header_length_past_eof(void **state)
{
    (void)state;
    uint8_t b[50] = {0};
    b[0] = 0xe8; /* 1000 */
    b[1] = 0x03;
    memcpy(b + 8, "{}", 2);
    tu_write("hlen.safetensors", b, sizeof b);
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = omnic__st_open_file(tu_path("hlen.safetensors"), &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, tu_path("hlen.safetensors"), "1000", "50 bytes");

    /* a length past the 100 MB cap is E_TOO_LARGE */
    memset(b, 0, 8);
    b[5] = 1; /* 2^40 */
    rc = omnic__st_parse_header(b, sizeof b, "huge.safetensors", &st, &err);
    TU_ERR(rc, err, OMNIC_E_TOO_LARGE, "huge.safetensors", "1099511627776", "104857600");
    /* all-ones length (u64 max) must not wrap */
    memset(b, 0xff, 8);
    rc = omnic__st_parse_header(b, sizeof b, "max.safetensors", &st, &err);
    TU_ERR(rc, err, OMNIC_E_TOO_LARGE, "max.safetensors", "18446744073709551615");
}

static void test_overlap(void **state)
{
    (void)state;
    uint8_t data[24] = {0};
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = parse_mem("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                                "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
                                data, sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "mem.safetensors", "'a' [0, 16)", "'b' [8, 24)", "overlap");
    assert_null(st);
    /* same span twice */
    rc = parse_mem("{\"x\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},"
                   "\"y\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}",
                   data, sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "[4, 8)", "overlap");
    /* a small span nested in a big one that is not the latest-starting */
    rc = parse_mem("{\"big\":{\"dtype\":\"U8\",\"shape\":[20],\"data_offsets\":[0,20]},"
                   "\"mid\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
                   "\"late\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[10,12]}}",
                   data, sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'big' [0, 20)", "'mid' [2, 4)");
    /* adjacent spans are fine */
    TU_OK(parse_mem("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
                    data, sizeof data, &st, &err),
          err);
    omnic__st_close(st);
}

static void test_nbytes_mismatch(void **state)
{
    (void)state;
    uint8_t data[24] = {0};
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc =
        parse_mem("{\"proj.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", data,
                  sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "mem.safetensors", "'proj.weight'", "[2, 3]", "24 bytes", "20 bytes");
    rc = parse_mem("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,4]}}", data, sizeof data, &st,
                   &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'t'", "[8, 4]");
}

static void test_dtypes_rejected(void **state)
{
    (void)state;
    uint8_t data[16] = {0};
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = parse_mem("{\"w\":{\"dtype\":\"Q9\",\"shape\":[2],\"data_offsets\":[0,2]}}", data,
                                sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "mem.safetensors", "'w'", "Q9");
    rc = parse_mem("{\"w64\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", data, sizeof data,
                   &st, &err);
    TU_ERR(rc, err, OMNIC_E_UNSUPPORTED, "mem.safetensors", "'w64'", "F64");
    rc = parse_mem("{\"w8\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", data, sizeof data,
                   &st, &err);
    TU_ERR(rc, err, OMNIC_E_UNSUPPORTED, "'w8'", "F8_E4M3");
    rc =
        parse_mem("{\"w\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,2]}}", data, sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'w'", "dtype is an integer");
}

static void test_shape_overflow(void **state)
{
    (void)state;
    uint8_t data[16] = {0};
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = parse_mem("{\"huge\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
                                "\"data_offsets\":[0,16]}}",
                                data, sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_TOO_LARGE, "mem.safetensors", "'huge'", "[4294967296, 4294967296, 16]");
    /* overflow only through the dtype size */
    rc = parse_mem("{\"h2\":{\"dtype\":\"I64\",\"shape\":[2305843009213693952],\"data_offsets\":[0,16]}}",
                   data, sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_TOO_LARGE, "'h2'", "2305843009213693952");
    /* a zero dim after huge ones still overflows on the way: reported, never wraps */
    rc = parse_mem("{\"neg\":{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,16]}}", data,
                   sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'neg'", "-3");
    rc = parse_mem("{\"r6\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1],\"data_offsets\":[0,4]}}", data,
                   sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_TOO_LARGE, "'r6'", "rank 6");
    rc = parse_mem("{\"fl\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", data, sizeof data,
                   &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'fl'", "shape[0]");
    rc = parse_mem("{\"big\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,99999999999999999999]}}",
                   data, sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "mem.safetensors:1:");
}

/* 100,000 __metadata__ entries (the header of a hostile file): every one found, in key order,
 * with lookups and the duplicate check by bisection (a linear scan per entry took 28 s at
 * 80,000). */
static void test_many_metadata(void **state)
{
    (void)state;
    enum { N = 100000 };
    size_t cap = (size_t)N * 24 + 256, n = 0;
    char *h = malloc(cap);
    assert_non_null(h);
    n += (size_t)snprintf(h + n, cap - n, "{\"__metadata__\":{");
    for (int i = N - 1; i >= 0; i--)
        n += (size_t)snprintf(h + n, cap - n, "%s\"k%06d\":\"v%d\"", i < N - 1 ? "," : "", i, i);
    n +=
        (size_t)snprintf(h + n, cap - n, "},\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}");
    uint8_t len[8];
    for (int b = 0; b < 8; b++)
        len[b] = (uint8_t)((uint64_t)n >> (8 * b));
    FILE *f = fopen(tu_path("meta.safetensors"), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(len, 1, 8, f), 8);
    assert_int_equal(fwrite(h, 1, n, f), n);
    assert_int_equal(fwrite("\0\0\0\0", 1, 4, f), 4);
    assert_int_equal(fclose(f), 0);
    free(h);
    omnic__safetensors *st = NULL;
    omnic_err err;
    TU_OK(omnic__st_open_file(tu_path("meta.safetensors"), &st, &err), err);
    assert_int_equal(omnic__st_metadata_count(st), N);
    assert_string_equal(omnic__st_metadata(st, "k000000"), "v0");
    assert_string_equal(omnic__st_metadata(st, "k054321"), "v54321");
    assert_null(omnic__st_metadata(st, "k100000"));
    const char *k, *v, *prev = "";
    for (size_t i = 0; i < N; i += 997) {
        assert_true(omnic__st_metadata_at(st, i, &k, &v));
        assert_true(strcmp(prev, k) < 0);
        prev = k;
    }
    omnic__st_close(st);
}

static void test_not_json(void **state)
{
    (void)state;
    omnic__safetensors *st = NULL;
    omnic_err err;
    size_t n = tu_st_build(g_buf, sizeof g_buf, "this is not json", NULL, 0, true);
    tu_write("garbage.safetensors", g_buf, n);
    omnic_status rc = omnic__st_open_file(tu_path("garbage.safetensors"), &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, tu_path("garbage.safetensors"), ":1:4:", "malformed JSON");
    rc = parse_mem("[1, 2]", NULL, 0, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "mem.safetensors", "an array", "expected an object");
    rc = parse_mem("{\"t\": 5}", NULL, 0, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'t'", "entry is an integer");
    rc = parse_mem("{\"t\": {\"dtype\":\"F32\",\"shape\":[1]}}", NULL, 0, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'t'", "data_offsets");
    rc = parse_mem("{\"t\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", NULL, 0, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'t'", "has 1 items");
    rc = parse_mem("{\"__metadata__\": {\"k\": 3}}", NULL, 0, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "__metadata__", "'k'", "integer");
    rc = parse_mem("{\"__metadata__\": [1]}", NULL, 0, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "__metadata__", "array");
    /* a header with a NUL in a string */
    rc = parse_mem("{\"a\\u0000b\": {}}", NULL, 0, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "mem.safetensors:1:");
}

static void test_duplicate_names(void **state)
{
    (void)state;
    uint8_t data[8] = {0};
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = parse_mem("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                                "\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}",
                                data, sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "mem.safetensors", "duplicate key 'w'");
    /* a long name (jansson itself names only short keys) with an escaped quote */
    rc = parse_mem("{\"model.layers.17.self_attn.q\\\"proj.weight\":{\"dtype\":\"U8\",\"shape\":[4],\"data_"
                   "offsets\":[0,4]},"
                   "\"model.layers.17.self_attn.q\\\"proj.weight\" "
                   ":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}",
                   data, sizeof data, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "duplicate key 'model.layers.17.self_attn.q\"proj.weight'");
}

static void test_name_limit(void **state)
{
    (void)state;
    static char header[4096];
    char name[OMNIC_MAX_TENSOR_NAME + 2];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0'; /* 1025 bytes */
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", name);
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = parse_mem(header, NULL, 0, &st, &err);
    TU_ERR(rc, err, OMNIC_E_TOO_LARGE, "mem.safetensors", "1025 bytes", "1024");
    name[sizeof name - 2] = '\0'; /* exactly 1024 is fine */
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", name);
    TU_OK(parse_mem(header, NULL, 0, &st, &err), err);
    omnic__st_close(st);
}

/* ---- sharded ---- */

static void write_two_shards(void)
{
    float a[2] = {1, 2}, b[3] = {3, 4, 5};
    tu_st_write("model-00001-of-00002.safetensors",
                "{\"__metadata__\":{\"format\":\"pt\"},"
                "\"embed.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                a, sizeof a);
    tu_st_write("model-00002-of-00002.safetensors",
                "{\"__metadata__\":{\"format\":\"other\",\"extra\":\"x\"},"
                "\"lm_head.weight\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
                "\"norm.weight\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[12,12]}}",
                b, sizeof b);
}

static void test_sharded(void **state)
{
    (void)state;
    write_two_shards();
    tu_write_str("model.safetensors.index.json", "{\"metadata\":{\"total_size\":20},\"weight_map\":{"
                                                 "\"lm_head.weight\":\"model-00002-of-00002.safetensors\","
                                                 "\"embed.weight\":\"model-00001-of-00002.safetensors\","
                                                 "\"norm.weight\":\"model-00002-of-00002.safetensors\"}}");
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    TU_OK(omnic__st_open_dir(tu_dir, &st, &err), err);
    assert_int_equal(omnic__st_count(st), 3);
    assert_int_equal(omnic__st_shard_count(st), 2);
    assert_string_equal(omnic__st_shard_path(st, 0), tu_path("model-00001-of-00002.safetensors"));
    assert_string_equal(omnic__st_shard_path(st, 1), tu_path("model-00002-of-00002.safetensors"));
    assert_string_equal(omnic__st_at(st, 0)->name, "embed.weight");
    assert_string_equal(omnic__st_at(st, 1)->name, "lm_head.weight");
    assert_string_equal(omnic__st_at(st, 2)->name, "norm.weight");
    const omnic__st_tensor *e = omnic__st_find(st, "embed.weight");
    assert_int_equal(e->shard, 0);
    assert_true(((const float *)e->data)[1] == 2.0f);
    const omnic__st_tensor *h = omnic__st_find(st, "lm_head.weight");
    assert_int_equal(h->shard, 1);
    float hv[3];
    memcpy(hv, h->data, sizeof hv);
    assert_true(hv[2] == 5.0f);
    /* metadata merged; the first shard wins */
    assert_string_equal(omnic__st_metadata(st, "format"), "pt");
    assert_string_equal(omnic__st_metadata(st, "extra"), "x");
    omnic__st_close(st);

    /* a trailing slash on the directory gives the same paths */
    char dir_slash[128];
    snprintf(dir_slash, sizeof dir_slash, "%s/", tu_dir);
    TU_OK(omnic__st_open_dir(dir_slash, &st, &err), err);
    assert_string_equal(omnic__st_shard_path(st, 0), tu_path("model-00001-of-00002.safetensors"));
    omnic__st_close(st);
}

static void test_sharded_missing_shard(void **state)
{
    (void)state;
    write_two_shards();
    tu_write_str("model.safetensors.index.json",
                 "{\"weight_map\":{\"embed.weight\":\"model-00001-of-00002.safetensors\","
                 "\"lm_head.weight\":\"model-00003-of-00003.safetensors\"}}");
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_NOT_FOUND, "model.safetensors.index.json", "'model-00003-of-00003.safetensors'");
    assert_null(st);
}

static void test_sharded_tensor_missing(void **state)
{
    (void)state;
    write_two_shards();
    tu_write_str("model.safetensors.index.json",
                 "{\"weight_map\":{\"embed.weight\":\"model-00001-of-00002.safetensors\","
                 "\"ghost.weight\":\"model-00002-of-00002.safetensors\"}}");
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, tu_path("model.safetensors.index.json"), "'ghost.weight'",
           "'model-00002-of-00002.safetensors'");

    /* listed in one shard, present in the other */
    tu_write_str("model.safetensors.index.json",
                 "{\"weight_map\":{\"embed.weight\":\"model-00002-of-00002.safetensors\","
                 "\"lm_head.weight\":\"model-00001-of-00002.safetensors\"}}");
    rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'embed.weight'", "listed in shard 'model-00002-of-00002.safetensors'",
           "found in shard 'model-00001-of-00002.safetensors'");
}

static void test_sharded_bad_index(void **state)
{
    (void)state;
    write_two_shards();
    omnic__safetensors *st = NULL;
    omnic_err err;
    tu_write_str("model.safetensors.index.json",
                 "{\"weight_map\":{\"embed.weight\":\"../model.safetensors\"}}");
    omnic_status rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "model.safetensors.index.json", "'embed.weight'",
           "'../model.safetensors'", "plain file name");
    tu_write_str("model.safetensors.index.json", "{\"weight_map\":{\"embed.weight\":\"..\"}}");
    rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'..'");
    tu_write_str("model.safetensors.index.json", "{\"weight_map\":{\"embed.weight\":3}}");
    rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'embed.weight'", "integer");
    tu_write_str("model.safetensors.index.json", "{\"metadata\":{}}");
    rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "model.safetensors.index.json", "'weight_map' is missing");
    tu_write_str("model.safetensors.index.json", "{\"weight_map\":{\"a\":\"x\",\"a\":\"y\"}}");
    rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "model.safetensors.index.json:1:", "duplicate key 'a'");
    tu_write_str("model.safetensors.index.json", "{\"weight_map\":");
    rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "model.safetensors.index.json:1:");

    /* the same tensor in two shards */
    float a[2] = {1, 2};
    tu_st_write("dup.safetensors",
                "{\"embed.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", a, sizeof a);
    tu_write_str(
        "model.safetensors.index.json",
        "{\"weight_map\":{\"embed.weight\":\"model-00001-of-00002.safetensors\",\"x\":\"dup.safetensors\"}}");
    rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, "'embed.weight'", "dup.safetensors", "model-00001-of-00002.safetensors");
    /* a bad shard reports the shard's own path */
    tu_write("model-00002-of-00002.safetensors", "\x01\x02", 2);
    tu_write_str("model.safetensors.index.json",
                 "{\"weight_map\":{\"lm_head.weight\":\"model-00002-of-00002.safetensors\"}}");
    rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_CORRUPT, tu_path("model-00002-of-00002.safetensors"), "2 bytes");
}

static void test_open_dir_empty(void **state)
{
    (void)state;
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_status rc = omnic__st_open_dir(tu_dir, &st, &err);
    TU_ERR(rc, err, OMNIC_E_NOT_FOUND, tu_dir, "model.safetensors");
    assert_null(st);
}

/* Every allocation failure gives E_NOMEM and leaks nothing (ASan checks the leaks). */
static void test_alloc_failures(void **state)
{
    (void)state;
    write_two_shards();
    tu_write_str("model.safetensors.index.json",
                 "{\"weight_map\":{\"lm_head.weight\":\"model-00002-of-00002.safetensors\","
                 "\"embed.weight\":\"model-00001-of-00002.safetensors\","
                 "\"norm.weight\":\"model-00002-of-00002.safetensors\"}}");
    int failures = 0;
    for (long n = 0; n < 1000; n++) {
        omnic__safetensors *st = NULL;
        omnic_err err;
        omnic_err_clear(&err);
        omnic__alloc_fail_after(n);
        omnic_status rc = omnic__st_open_dir(tu_dir, &st, &err);
        long injected = omnic__alloc_injected_failures();
        omnic__alloc_fail_after(-1);
        if (injected == 0) {
            TU_OK(rc, err);
            assert_int_equal(omnic__st_count(st), 3);
            omnic__st_close(st);
            break;
        }
        TU_ERR(rc, err, OMNIC_E_NOMEM, "");
        assert_null(st);
        failures++;
    }
    assert_true(failures > 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_single_file, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_all_dtypes, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_zero_size_and_scalar, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_truncated_header_length, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_truncated_data, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_header_length_past_eof, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_overlap, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_nbytes_mismatch, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_dtypes_rejected, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_shape_overflow, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_not_json, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_many_metadata, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_names, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_name_limit, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_sharded, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_sharded_missing_shard, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_sharded_tensor_missing, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_sharded_bad_index, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_open_dir_empty, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
