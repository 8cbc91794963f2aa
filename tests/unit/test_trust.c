/* Header trust checks (server/trust.h): Host allow-lists (names, v4 and v6 literals, ports,
 * malformed values), the server's own origin, JSON content types. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/trust.h"

static void test_authority(void **state)
{
    (void)state;
    char h[64];
    static const char *const ok[][2] = {{"LocalHost:8080", "localhost"},
                                        {"127.0.0.1", "127.0.0.1"},
                                        {"[::1]:80", "::1"},
                                        {"[FE80::1]", "fe80::1"},
                                        {"example.com:", "example.com"}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_true(omnic__authority_host(ok[i][0], strlen(ok[i][0]), h, sizeof h));
        assert_string_equal(h, ok[i][1]);
    }
    static const char *const bad[] = {"", ":80", "[::1", "[::1]x", "::1", "a b", "user@host", "h/x", "\x7f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(omnic__authority_host(bad[i], strlen(bad[i]), h, sizeof h));
    char tiny[4];
    assert_false(omnic__authority_host("abcd", 4, tiny, sizeof tiny)); /* does not fit */
}

static void test_hosts(void **state)
{
    (void)state;
    static const char *const local[] = {"127.0.0.1", "localhost", "127.0.0.1", "::1"};
    assert_true(omnic__host_allowed("127.0.0.1:8080", local, 4));
    assert_true(omnic__host_allowed("LOCALHOST", local, 4));
    assert_true(omnic__host_allowed("[::1]:9", local, 4));
    assert_false(omnic__host_allowed("attacker.example:8080", local, 4)); /* DNS rebinding */
    assert_false(omnic__host_allowed("127.0.0.1.attacker.example", local, 4));
    assert_false(omnic__host_allowed(NULL, local, 4));
    assert_false(omnic__host_allowed("", local, 4));
    assert_false(omnic__host_allowed("local host", local, 4));
    static const char *const any[] = {"*"};
    assert_true(omnic__host_allowed("whatever:1", any, 1));
    assert_false(omnic__host_allowed(NULL, any, 1)); /* HTTP/1.1 requires a Host header */
    static const char *const v6[] = {"[2001:db8::5]", "2001:db8::6"};
    assert_true(omnic__host_allowed("[2001:DB8::5]:8080", v6, 2));
    assert_true(omnic__host_allowed("[2001:db8::6]", v6, 2));
    assert_false(omnic__host_allowed("[2001:db8::7]", v6, 2));
}

static void test_origin_and_type(void **state)
{
    (void)state;
    assert_true(omnic__origin_is_host("http://127.0.0.1:8080", "127.0.0.1:8080"));
    assert_true(omnic__origin_is_host("http://LocalHost:8080", "localhost:8080"));
    assert_false(omnic__origin_is_host("http://127.0.0.1:8081", "127.0.0.1:8080"));
    assert_false(omnic__origin_is_host("https://evil.example", "127.0.0.1:8080"));
    assert_false(omnic__origin_is_host("null", "127.0.0.1:8080"));
    assert_false(omnic__origin_is_host("http://x", NULL));
    assert_true(omnic__content_type_json("application/json"));
    assert_true(omnic__content_type_json("Application/JSON; charset=utf-8"));
    assert_true(omnic__content_type_json("application/vnd.api+json"));
    assert_false(omnic__content_type_json("text/plain"));
    assert_false(omnic__content_type_json("application/x-www-form-urlencoded"));
    assert_false(omnic__content_type_json("multipart/form-data; boundary=x"));
    assert_false(omnic__content_type_json("application/jsonx"));
    assert_false(omnic__content_type_json("text/x+json"));
    assert_false(omnic__content_type_json(""));
    assert_false(omnic__content_type_json(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_authority), cmocka_unit_test(test_hosts),
                                       cmocka_unit_test(test_origin_and_type)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
