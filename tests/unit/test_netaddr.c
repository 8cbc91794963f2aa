/* Special-purpose address classification (server/netaddr.h): every range of the IANA
 * registries a fetch must not reach, the translation / tunnelling prefixes, IPv4-mapped forms,
 * and ordinary global addresses that must pass. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/netaddr.h"

/* The range name omnic__addr_special gives for the textual address a (NULL: ordinary). */
static const char *special(const char *a)
{
    struct sockaddr_storage ss = {0};
    if (strchr(a, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, a, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, a, &s4->sin_addr), 1);
    }
    return omnic__addr_special((const struct sockaddr *)&ss);
}

static void expect(const char *addr, const char *part)
{
    const char *name = special(addr);
    if (!part) {
        if (name) fail_msg("%s: expected an ordinary address, got '%s'", addr, name);
        return;
    }
    if (!name || !strstr(name, part))
        fail_msg("%s: expected '%s', got '%s'", addr, part, name ? name : "(ordinary)");
}

static void test_ipv4(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"0.0.0.0", "this network"},
        {"0.1.2.3", "this network"},
        {"10.255.0.1", "private"},
        {"100.64.0.1", "shared"},
        {"100.127.255.255", "shared"},
        {"127.0.0.1", "loopback"},
        {"127.8.9.10", "loopback"},
        {"169.254.169.254", "link-local"},
        {"172.16.0.1", "private"},
        {"172.31.255.255", "private"},
        {"192.0.0.1", "IETF"},
        {"192.0.0.170", "IETF"},
        {"192.0.2.55", "documentation"},
        {"192.31.196.1", "AS112"},
        {"192.52.193.1", "AMT"},
        {"192.88.99.1", "6to4"},
        {"192.168.1.1", "private"},
        {"192.175.48.1", "AS112"},
        {"198.18.0.1", "benchmarking"},
        {"198.19.255.255", "benchmarking"},
        {"198.51.100.1", "documentation"},
        {"203.0.113.9", "documentation"},
        {"224.0.0.1", "multicast"},
        {"239.255.255.255", "multicast"},
        {"240.0.0.1", "reserved"},
        {"255.255.255.255", "reserved"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect(cases[i][0], cases[i][1]);
    static const char *const ordinary[] = {
        "1.1.1.1",   "8.8.8.8",         "100.63.255.255", "100.128.0.0", "172.15.255.255",  "172.32.0.0",
        "192.0.1.1", "192.167.255.255", "198.17.255.255", "198.20.0.0",  "223.255.255.255", "11.0.0.1"};
    for (size_t i = 0; i < sizeof ordinary / sizeof ordinary[0]; i++)
        expect(ordinary[i], NULL);
}

static void test_ipv6(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"::", "unspecified"},
        {"::1", "loopback"},
        {"::7f00:1", "IPv4-compatible"}, /* ::127.0.0.1 */
        {"::8.8.8.8", "IPv4-compatible"},
        {"::ffff:127.0.0.1", "loopback"}, /* mapped: judged as IPv4 */
        {"::ffff:10.1.2.3", "private"},
        {"::ffff:0:7f00:1", "SIIT"}, /* ::ffff:0:127.0.0.1 */
        {"64:ff9b::7f00:1", "NAT64"},
        {"64:ff9b::808:808", "NAT64"}, /* even of a global address: not the one connected to */
        {"64:ff9b:1::1", "local-use NAT64"},
        {"100::1", "discard"},
        {"2001::1", "Teredo"},
        {"2001:2::1", "IETF"},
        {"2001:1ff:ffff::1", "IETF"},
        {"2001:db8::1", "documentation"},
        {"2002:7f00:1::1", "6to4"},
        {"2002:808:808::1", "6to4"},
        {"2620:4f:8000::1", "AS112"},
        {"3fff:fff::1", "documentation"},
        {"5f00::1", "segment routing"},
        {"fc00::1", "unique-local"},
        {"fd12:3456::1", "unique-local"},
        {"fe80::1", "link-local"},
        {"febf::1", "link-local"},
        {"fec0::1", "site-local"},
        {"ff02::1", "multicast"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect(cases[i][0], cases[i][1]);
    static const char *const ordinary[] = {"2001:4860:4860::8888", "2606:4700:4700::1111", "2001:200::1",
                                           "2a00:1450::1",         "3fff:1000::1",         "64:ff9a::1",
                                           "::ffff:8.8.8.8"};
    for (size_t i = 0; i < sizeof ordinary / sizeof ordinary[0]; i++)
        expect(ordinary[i], NULL);
}

static void test_other_families(void **state)
{
    (void)state;
    struct sockaddr sa = {.sa_family = AF_UNIX};
    assert_non_null(omnic__addr_special(&sa));
    assert_non_null(omnic__addr_special(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ipv4), cmocka_unit_test(test_ipv6),
                                       cmocka_unit_test(test_other_families)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
