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
#include "core/npy.h"
#include "core/tensor.h"
#include "core/threadpool.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "models/model.h"

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
    char cmd[512];
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
    };
    // clang-format on
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
