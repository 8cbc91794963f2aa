/* Shared helpers for the unit tests: a scratch directory per test, file writers,
 * a safetensors byte builder, and an error check that prints the message on failure. */
#ifndef OMNIC_TESTS_IO_TESTUTIL_H
#define OMNIC_TESTS_IO_TESTUTIL_H

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* cmocka.h needs stdarg, stddef and setjmp first. */
#include <cmocka.h>

#include <jansson.h>

#include "core/err.h"

/* text parsed as JSON (the test fails when it is not). Owned: json_decref. */
static inline json_t *tu_json(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    assert_non_null(j);
    return j;
}

/* Scratch directory of the running test (mkdtemp), removed by tu_teardown. */
static char tu_dir[64];

static inline int tu_setup(void **state)
{
    (void)state;
    snprintf(tu_dir, sizeof tu_dir, "/tmp/omnic_io_test_XXXXXX");
    return mkdtemp(tu_dir) ? 0 : -1;
}

static inline int tu_rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline int tu_teardown(void **state)
{
    (void)state;
    return nftw(tu_dir, tu_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* tu_dir + "/" + name into a static buffer (one at a time). */
static inline const char *tu_path(const char *name)
{
    static char buf[2][512];
    static int which;
    which ^= 1;
    snprintf(buf[which], sizeof buf[which], "%s/%s", tu_dir, name);
    return buf[which];
}

static inline void tu_write(const char *name, const void *bytes, size_t len)
{
    FILE *f = fopen(tu_path(name), "wb");
    assert_non_null(f);
    if (len) assert_int_equal(fwrite(bytes, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static inline void tu_write_str(const char *name, const char *s)
{
    tu_write(name, s, strlen(s));
}

/* Builds a safetensors file into buf (cap bytes): u64 LE header length, header (padded with
 * spaces to a multiple of 8 when pad), then data_len bytes of data. Returns the total length. */
static inline size_t tu_st_build(uint8_t *buf, size_t cap, const char *header, const void *data,
                                 size_t data_len, bool pad)
{
    size_t hl = strlen(header), padded = pad ? (hl + 7) / 8 * 8 : hl;
    size_t total = 8 + padded + data_len;
    assert_true(total <= cap);
    uint64_t n = padded;
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(n >> (8 * i));
    memcpy(buf + 8, header, hl);
    memset(buf + 8 + hl, ' ', padded - hl);
    if (data_len) memcpy(buf + 8 + padded, data, data_len);
    return total;
}

/* Writes a safetensors file named `name` in tu_dir. */
static inline void tu_st_write(const char *name, const char *header, const void *data, size_t data_len)
{
    static uint8_t buf[1 << 16];
    size_t n = tu_st_build(buf, sizeof buf, header, data, data_len, true);
    tu_write(name, buf, n);
}

/* Fails the test unless rc == code == err->code and err->msg contains every string of the
 * NULL-terminated list. Prints the message either way on failure. */
static inline void tu_check_err(omnic_status rc, const omnic_err *err, omnic_status code, const char *file,
                                int line, const char *const *subs)
{
    if (rc != code || err->code != code) {
        print_error("%s:%d: status %s (err.code %s), expected %s; msg: %s\n", file, line,
                    omnic_status_name(rc), omnic_status_name(err->code), omnic_status_name(code), err->msg);
        _fail(file, line);
    }
    for (size_t i = 0; subs[i]; i++) {
        if (!strstr(err->msg, subs[i])) {
            print_error("%s:%d: message lacks \"%s\": %s\n", file, line, subs[i], err->msg);
            _fail(file, line);
        }
    }
}

#define TU_ERR(rc, err, code, ...)                                                                           \
    tu_check_err((rc), &(err), (code), __FILE__, __LINE__, (const char *const[]){__VA_ARGS__, NULL})

/* Asserts OMNIC_OK, printing the message otherwise. */
#define TU_OK(rc, err)                                                                                       \
    do {                                                                                                     \
        omnic_status tu_rc_ = (rc);                                                                          \
        if (tu_rc_ != OMNIC_OK) {                                                                            \
            print_error("%s:%d: %s: %s\n", __FILE__, __LINE__, omnic_status_name(tu_rc_), (err).msg);        \
            _fail(__FILE__, __LINE__);                                                                       \
        }                                                                                                    \
    } while (0)

#endif
