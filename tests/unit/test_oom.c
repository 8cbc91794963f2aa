/* Fault injection (STYLE.md rule 17): every scenario runs with the allocator failing after
 * N = 0, 1, 2, ... successful allocations until it succeeds with no injected failure. Each
 * failing run must return a clean error (OMNIC_E_NOMEM, with err filled in and the out
 * parameter untouched) and release everything: heap (LeakSanitizer, checked after each
 * scenario in the sanitize build), file descriptors, and mappings of the checkpoint files. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/arena.h"
#include "core/budget.h"
#include "core/npy.h"
#include "core/tensor.h"
#include "core/threadpool.h"
#include "engine/chat.h"
#include "engine/engine.h"
#include "engine/media.h"
#include "engine/sampling.h"
#include "io/checkpoint.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "models/media.h"
#include "models/model.h"
#include "server/openai.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* Upper bound on N: a scenario that still fails after this many allocations fails the test. */
#define MAX_N 5000

static char tmp_dir[64];
static char tiny_dir[128];
static char llava_dir[128];
static char png_path[128];
static char shard_path[512];
static char npy_path[128];

/* ---- fixture ---------------------------------------------------------------------------- */

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
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/omnic_oom_test_XXXXXX");
    if (!mkdtemp(tmp_dir)) return -1;
    snprintf(tiny_dir, sizeof tiny_dir, "%s/tiny", tmp_dir);
    snprintf(npy_path, sizeof npy_path, "%s/small.npy", tmp_dir);
    snprintf(llava_dir, sizeof llava_dir, "%s/llava", tmp_dir);
    snprintf(png_path, sizeof png_path, "%s/a.png", tmp_dir);
    char cmd[1024];
    snprintf(
        cmd, sizeof cmd,
        "/usr/bin/python3 tools/mktiny.py --family llava --vision clip --text llama --out %s >/dev/null && "
        "/usr/bin/python3 -c \"import numpy as np; from PIL import Image; "
        "Image.fromarray((np.arange(40*30*3) %% 251).astype(np.uint8).reshape(30, 40, 3)).save('%s')\"",
        llava_dir, png_path);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_oom: %s failed\n", cmd);
        return -1;
    }
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 tools/mktiny.py --family qwen2 --out %s --shards 2 >/dev/null", tiny_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_oom: %s failed (needs /usr/bin/python3 with numpy, cwd = repo root)\n", cmd);
        return -1;
    }
    {
        /* the first shard, whatever mktiny names it */
        DIR *d = opendir(tiny_dir);
        if (!d) return -1;
        for (struct dirent *de; (de = readdir(d)) != NULL;) {
            size_t n = strlen(de->d_name);
            if (n > 12 && !strcmp(de->d_name + n - 12, ".safetensors") && strstr(de->d_name, "00001")) {
                snprintf(shard_path, sizeof shard_path, "%s/%s", tiny_dir, de->d_name);
            }
        }
        closedir(d);
        if (!shard_path[0]) return -1;
    }
    /* a small .npy file */
    omnic_err err;
    omnic__tensor *t = NULL;
    int64_t dims[2] = {3, 5};
    if (omnic__tensor_create(&t, OMNIC_DTYPE_F32, 2, dims, &err) != OMNIC_OK) return -1;
    for (int i = 0; i < 15; i++)
        ((float *)t->data)[i] = (float)i;
    omnic_status s = omnic__npy_write(npy_path, t, &err);
    omnic__tensor_destroy(t);
    return s == OMNIC_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    omnic__alloc_fail_after(-1);
    return nftw(tmp_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Open file descriptors of this process. */
static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (de->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the one opendir holds */
}

/* Mappings of files under tmp_dir. */
static int count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, tmp_dir)) n++;
    fclose(f);
    return n;
}

/* ---- the loop ----------------------------------------------------------------------------- */

/* One run of a scenario: acquire, use, release. Returns the status of the acquiring call; on
 * failure it must have left its out parameter untouched (the scenario asserts that). */
typedef omnic_status (*scenario_fn)(omnic_err *err);

static void run_oom(const char *name, scenario_fn fn)
{
    int fds0 = count_fds(), maps0 = count_maps();
    long n, failing_runs = 0, tolerated = 0;
    bool done = false;
    for (n = 0; n < MAX_N && !done; n++) {
        omnic_err err;
        omnic_err_clear(&err);
        omnic__alloc_fail_after(n);
        omnic_status rc = fn(&err);
        long injected = omnic__alloc_injected_failures();
        omnic__alloc_fail_after(-1);
        if (rc == OMNIC_OK) {
            if (injected == 0)
                done = true;
            else
                tolerated++; /* an allocation failed but the scenario got by without it */
            continue;
        }
        failing_runs++;
        if (injected == 0) {
            print_error("%s: N=%ld: %s without an injected failure: %s\n", name, n, omnic_status_name(rc),
                        err.msg);
            fail();
        }
        if (rc != OMNIC_E_NOMEM || err.code != rc || err.msg[0] == '\0' || err.file == NULL) {
            print_error("%s: N=%ld: status %s (err.code %s) from an allocation failure; msg: %s\n", name, n,
                        omnic_status_name(rc), omnic_status_name(err.code), err.msg);
            fail();
        }
        if (count_fds() != fds0 || count_maps() != maps0) {
            print_error("%s: N=%ld: %d fds / %d mappings open after the failure, %d / %d before\n", name, n,
                        count_fds(), count_maps(), fds0, maps0);
            fail();
        }
    }
    if (!done) {
        print_error("%s: still failing after N=%d allocations\n", name, MAX_N);
        fail();
    }
    print_message("%s: succeeds at N=%ld; %ld failing runs, %ld runs that tolerated a failure\n", name, n - 1,
                  failing_runs, tolerated);
    assert_int_equal(count_fds(), fds0);
    assert_int_equal(count_maps(), maps0);
#ifdef HAVE_LSAN
    /* leaks found here are reported again by later checks: the first scenario to fail owns them */
    if (__lsan_do_recoverable_leak_check() != 0) {
        print_error("%s: LeakSanitizer found leaks (see above)\n", name);
        fail();
    }
#endif
}

/* ---- scenarios ---------------------------------------------------------------------------- */

static omnic_status sc_tensor(omnic_err *err)
{
    int64_t dims[3] = {2, 3, 4};
    omnic__tensor *t = (omnic__tensor *)0x1;
    omnic_status rc = omnic__tensor_create(&t, OMNIC_DTYPE_BF16, 3, dims, err);
    if (rc != OMNIC_OK) {
        assert_ptr_equal(t, (omnic__tensor *)0x1);
        return rc;
    }
    ((uint16_t *)t->data)[23] = 1;
    omnic__tensor_destroy(t);
    return rc;
}

static void count_job(void *ctx, int ith, int nth)
{
    (void)nth;
    __atomic_fetch_add((int *)ctx + ith, 1, __ATOMIC_SEQ_CST);
}

static omnic_status sc_threadpool(omnic_err *err)
{
    omnic__threadpool *p = (omnic__threadpool *)0x1;
    omnic_status rc = omnic__threadpool_create(&p, 3, err);
    if (rc != OMNIC_OK) {
        assert_ptr_equal(p, (omnic__threadpool *)0x1);
        return rc;
    }
    int calls[3] = {0};
    omnic__threadpool_run(p, count_job, calls);
    for (int i = 0; i < 3; i++)
        assert_int_equal(calls[i], 1);
    omnic__threadpool_destroy(p);
    return rc;
}

static omnic_status sc_arena(omnic_err *err)
{
    omnic__arena a;
    omnic_status rc = omnic__arena_init(&a, 1000, err);
    if (rc != OMNIC_OK) {
        assert_null(a.base);
        return rc;
    }
    assert_non_null(omnic__arena_alloc(&a, 1000));
    omnic__arena_deinit(&a);
    return rc;
}

static omnic_status sc_npy_read(omnic_err *err)
{
    omnic__tensor *t = (omnic__tensor *)0x1;
    omnic_status rc = omnic__npy_read(npy_path, &t, err);
    if (rc != OMNIC_OK) {
        assert_ptr_equal(t, (omnic__tensor *)0x1);
        return rc;
    }
    assert_int_equal(t->dims[1], 5);
    assert_true(((float *)t->data)[14] == 14.0f);
    omnic__tensor_destroy(t);
    return rc;
}

static omnic_status sc_st_open_file(omnic_err *err)
{
    omnic__safetensors *st = (omnic__safetensors *)0x1;
    omnic_status rc = omnic__st_open_file(shard_path, &st, err);
    if (rc != OMNIC_OK) {
        assert_ptr_equal(st, (omnic__safetensors *)0x1);
        return rc;
    }
    assert_true(omnic__st_count(st) > 0);
    omnic__st_close(st);
    return rc;
}

static omnic_status sc_st_open_dir(omnic_err *err)
{
    omnic__safetensors *st = (omnic__safetensors *)0x1;
    omnic_status rc = omnic__st_open_dir(tiny_dir, &st, err);
    if (rc != OMNIC_OK) {
        assert_ptr_equal(st, (omnic__safetensors *)0x1);
        return rc;
    }
    assert_int_equal(omnic__st_shard_count(st), 2);
    omnic__st_close(st);
    return rc;
}

static omnic_status sc_checkpoint(omnic_err *err)
{
    omnic__checkpoint *c = (omnic__checkpoint *)0x1;
    omnic_status rc = omnic__checkpoint_open(tiny_dir, &c, err);
    if (rc != OMNIC_OK) {
        assert_ptr_equal(c, (omnic__checkpoint *)0x1);
        return rc;
    }
    assert_non_null(c->config);
    assert_non_null(c->weights);
    omnic__checkpoint_close(c);
    return rc;
}

static omnic_status sc_model(omnic_err *err)
{
    omnic__model_opts opts = {.backend = "ref", .threads = 1, .ctx = 64};
    omnic__model *m = NULL;
    omnic_status rc = omnic__model_open(tiny_dir, &opts, &m, err);
    if (rc != OMNIC_OK) {
        assert_null(m);
        return rc;
    }
    assert_non_null(m);
    omnic__model_close(m);
    return rc;
}

/* Load-time quantization (q4_0) on the cpu backend: every allocation of the conversion fails cleanly. */
static omnic_status sc_model_quant(omnic_err *err)
{
    omnic__model_opts opts = {.backend = "cpu", .threads = 2, .ctx = 64, .quant = "q4_0"};
    omnic__model *m = NULL;
    omnic_status rc = omnic__model_open(tiny_dir, &opts, &m, err);
    if (rc != OMNIC_OK) {
        assert_null(m);
        return rc;
    }
    assert_non_null(m);
    assert_true(m->dec.n_qweights > 0);
    omnic__model_close(m);
    return rc;
}

/* ---- the server's request paths ------------------------------------------------------------ */

static const char chat_body[] =
    "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hello there\"}]}],"
    "\"max_tokens\":4,\"temperature\":0.5,\"stop\":[\"x\",\"yz\"],\"seed\":3,\"n\":2,"
    "\"stream\":true,\"stream_options\":{\"include_usage\":true}}";

/* A request body as the request workers take it: JSON parse (in a heap budget) + validation. */
static omnic_status sc_request_parse(omnic_err *err)
{
    json_t *j = NULL;
    omnic__budget_heap_begin((size_t)1 << 20);
    omnic_status rc = omnic__json_parse(chat_body, sizeof chat_body - 1, "request body", &j, err);
    omnic__budget_heap_end(NULL);
    if (rc != OMNIC_OK) {
        assert_null(j);
        return rc;
    }
    omnic__api_request rq;
    omnic__api_error e;
    rc = omnic__api_parse(OMNIC_API_CHAT, j, 4, &rq, &e);
    json_decref(j);
    if (rc == OMNIC_OK) {
        omnic__api_request_deinit(&rq);
        return OMNIC_OK;
    }
    /* an allocation failure must read as one (503), never as the client's fault */
    return OMNIC_FAIL(err, e.status == 503 ? OMNIC_E_NOMEM : OMNIC_E_INVALID, "%d: %s", e.status, e.message);
}

static omnic__checkpoint *g_ck;
static omnic__tokenizer *g_tok;

/* The chat template and tokenizer, as a request worker runs them (with the server's budget). */
static omnic_status sc_chat_template(omnic_err *err)
{
    json_error_t je;
    json_t *msgs = json_loads("[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\","
                              "\"content\":\"Hello there\"},{\"role\":\"assistant\",\"content\":\"Hi\"},"
                              "{\"role\":\"user\",\"content\":\"More\"}]",
                              0, &je);
    if (!msgs) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "test setup: messages");
    omnic__budget b;
    omnic__budget_server(&b);
    omnic__chat *c = NULL;
    omnic_status rc = omnic__chat_create(g_ck, NULL, false, &c, err);
    char *text = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    if (rc == OMNIC_OK) rc = omnic__chat_apply(c, g_tok, msgs, true, NULL, &b, NULL, 0, &text, &ids, &n, err);
    if (rc == OMNIC_OK) assert_true(n > 0);
    omnic_free(text);
    omnic_free(ids);
    omnic__chat_destroy(c);
    json_decref(msgs);
    return rc;
}

static omnic__model *g_llava;
static uint8_t *g_png;
static size_t g_png_len;

/* An image through the media stage: decode (PNG) and the LLaVA processor. */
static omnic_status sc_media_prepare(omnic_err *err)
{
    omnic__media_proc proc;
    omnic_status rc = omnic__media_proc_init(&proc, g_llava, OMNIC_MODALITY_IMAGE, 0, err);
    if (rc != OMNIC_OK) return rc;
    omnic__media_item it;
    memset(&it, 0, sizeof it);
    atomic_bool cancel = false;
    omnic__image_limits lim = {0};
    rc = omnic__media_prepare(&proc, g_png, g_png_len, &lim, &cancel, &it, err);
    if (rc == OMNIC_OK) omnic__media_item_deinit(&it);
    omnic__media_proc_deinit(&proc);
    return rc;
}

static omnic__engine *g_engine;
static atomic_int g_done;

static void on_event(void *ctx, const omnic__gen_event *ev)
{
    (void)ctx;
    if (ev->kind == OMNIC_EV_DONE) atomic_store(&g_done, 1);
}

/* A generation submitted to a running engine (its scheduler may see failures too: the request
 * then finishes with an error, and nothing leaks). */
static omnic_status sc_engine_submit(omnic_err *err)
{
    static const int32_t prompt[] = {1, 2, 3, 4, 5};
    static const char *const stops[] = {"ab", "c"};
    omnic__gen_request r = {.prompt = prompt,
                            .n_prompt = 5,
                            .sampling = omnic__sampling_defaults(),
                            .max_tokens = 3,
                            .stops = stops,
                            .n_stops = 2,
                            .skip_special = true,
                            .cb = on_event};
    atomic_store(&g_done, 0);
    uint64_t id = 0;
    omnic_status rc = omnic__engine_submit(g_engine, &r, &id, err);
    if (rc != OMNIC_OK) return rc;
    for (int ms = 0; !atomic_load(&g_done); ms++) { /* a lost DONE event fails, never hangs */
        if (ms == 30000) {
            print_error("engine submit: no DONE event within 30 s of an accepted request\n");
            fail();
        }
        usleep(1000);
    }
    return OMNIC_OK;
}

static void test_oom_request_parse(void **state)
{
    (void)state;
    run_oom("request body parse + validation", sc_request_parse);
}

static void test_oom_chat_template(void **state)
{
    (void)state;
    omnic_err err;
    assert_int_equal(omnic__checkpoint_open(tiny_dir, &g_ck, &err), OMNIC_OK);
    assert_int_equal(omnic__tokenizer_load(tiny_dir, &g_tok, &err), OMNIC_OK);
    run_oom("chat template + tokenize", sc_chat_template);
    omnic__tokenizer_free(g_tok);
    omnic__checkpoint_close(g_ck);
}

static void test_oom_media_prepare(void **state)
{
    (void)state;
    omnic_err err;
    omnic__model_opts opts = {.backend = "ref", .threads = 1, .ctx = 64};
    assert_int_equal(omnic__model_open(llava_dir, &opts, &g_llava, &err), OMNIC_OK);
    FILE *f = fopen(png_path, "rb");
    assert_non_null(f);
    static uint8_t buf[1 << 16];
    g_png_len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    g_png = buf;
    run_oom("media prepare (PNG, LLaVA processor)", sc_media_prepare);
    omnic__model_close(g_llava);
}

static void test_oom_engine_submit(void **state)
{
    (void)state;
    omnic_err err;
    omnic__engine_opts opts = {.model = {.backend = "ref", .threads = 1, .ctx = 64, .slots = 2}};
    assert_int_equal(omnic__engine_create(tiny_dir, &opts, &g_engine, &err), OMNIC_OK);
    run_oom("engine submit", sc_engine_submit);
    omnic__engine_destroy(g_engine);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_oom_tensor(void **state)
{
    (void)state;
    run_oom("tensor_create", sc_tensor);
}

static void test_oom_threadpool(void **state)
{
    (void)state;
    run_oom("threadpool_create(3)", sc_threadpool);
}

static void test_oom_arena(void **state)
{
    (void)state;
    run_oom("arena_init", sc_arena);
}

static void test_oom_npy_read(void **state)
{
    (void)state;
    run_oom("npy_read", sc_npy_read);
}

static void test_oom_st_open_file(void **state)
{
    (void)state;
    run_oom("st_open_file", sc_st_open_file);
}

static void test_oom_st_open_dir(void **state)
{
    (void)state;
    run_oom("st_open_dir", sc_st_open_dir);
}

static void test_oom_checkpoint(void **state)
{
    (void)state;
    run_oom("checkpoint_open", sc_checkpoint);
}

static void test_oom_model(void **state)
{
    (void)state;
    run_oom("model_open(ref)", sc_model);
}

static void test_oom_model_quant(void **state)
{
    (void)state;
    run_oom("model_open(cpu, q4_0)", sc_model_quant);
}

int main(void)
{
    // clang-format off
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_tensor),
        cmocka_unit_test(test_oom_threadpool),
        cmocka_unit_test(test_oom_arena),
        cmocka_unit_test(test_oom_npy_read),
        cmocka_unit_test(test_oom_st_open_file),
        cmocka_unit_test(test_oom_st_open_dir),
        cmocka_unit_test(test_oom_checkpoint),
        cmocka_unit_test(test_oom_model),
        cmocka_unit_test(test_oom_model_quant),
        cmocka_unit_test(test_oom_request_parse),
        cmocka_unit_test(test_oom_chat_template),
        cmocka_unit_test(test_oom_media_prepare),
        cmocka_unit_test(test_oom_engine_submit),
    };
    // clang-format on
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
