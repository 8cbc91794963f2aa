/* Stop strings: matches across pushes, held-back prefixes released when they turn out
 * not to be stops, the earliest of several stops wins, limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/limits.h"
#include "engine/stop.h"

/* Streams pieces through a matcher; returns everything emitted (+ flush unless stopped). */
static bool run(const char *const *stops, size_t n, const char *const *pieces, size_t np, char *out)
{
    omnic__stop_matcher m;
    omnic_err err;
    assert_int_equal(omnic__stop_init(&m, stops, n, &err), OMNIC_OK);
    out[0] = '\0';
    bool stopped = false;
    for (size_t i = 0; i < np && !stopped; i++) {
        const char *e;
        size_t el;
        stopped = omnic__stop_push(&m, pieces[i], strlen(pieces[i]), &e, &el, &err);
        strncat(out, e, el);
        /* nothing emitted may contain a stop */
        for (size_t k = 0; k < n; k++) assert_null(strstr(out, stops[k]));
    }
    if (!stopped) {
        const char *e;
        size_t el;
        omnic__stop_flush(&m, &e, &el);
        strncat(out, e, el);
    }
    omnic__stop_deinit(&m);
    return stopped;
}

static void test_stops(void **state)
{
    (void)state;
    char out[256];
    const char *s1[] = {"</end>"};
    const char *p1[] = {"hello <", "/e", "nd> more"};
    assert_true(run(s1, 1, p1, 3, out));
    assert_string_equal(out, "hello ");
    const char *p2[] = {"a <", "/x", "> b"}; /* a held prefix that is not a stop comes back */
    assert_false(run(s1, 1, p2, 3, out));
    assert_string_equal(out, "a </x> b");
    const char *p3[] = {"ends with </en"}; /* flush at the end releases the held tail */
    assert_false(run(s1, 1, p3, 1, out));
    assert_string_equal(out, "ends with </en");
    const char *s2[] = {"World", "lo W"};
    const char *p4[] = {"Hel", "lo World"}; /* earliest match wins */
    assert_true(run(s2, 2, p4, 2, out));
    assert_string_equal(out, "Hel");
    const char *s3[] = {"\xc3\xa9t\xc3\xa9"}; /* "été" */
    const char *p5[] = {"l'\xc3\xa9", "t\xc3\xa9 est"};
    assert_true(run(s3, 1, p5, 2, out));
    assert_string_equal(out, "l'");
    const char *p6[] = {"plain", " text"}; /* no stops: passthrough */
    assert_false(run(NULL, 0, p6, 2, out));
    assert_string_equal(out, "plain text");
}

static void test_limits(void **state)
{
    (void)state;
    omnic__stop_matcher m;
    omnic_err err;
    const char *empty[] = {""};
    assert_int_equal(omnic__stop_init(&m, empty, 1, &err), OMNIC_E_INVALID);
    static char big[OMNIC_MAX_STOP_LEN + 2];
    memset(big, 'x', sizeof big - 1);
    const char *b[] = {big};
    assert_int_equal(omnic__stop_init(&m, b, 1, &err), OMNIC_E_TOO_LARGE);
    assert_non_null(strstr(err.msg, "257 bytes"));
    const char *many[OMNIC_MAX_STOPS + 1];
    for (int i = 0; i <= OMNIC_MAX_STOPS; i++) many[i] = "x";
    assert_int_equal(omnic__stop_init(&m, many, OMNIC_MAX_STOPS + 1, &err), OMNIC_E_TOO_LARGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_stops), cmocka_unit_test(test_limits)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
