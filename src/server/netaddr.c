/* Special-purpose address ranges (server/netaddr.h). Sources: the IANA IPv4 Special-Purpose
 * Address Registry (RFC 6890 and updates), the IANA IPv6 Special-Purpose Address Registry,
 * the IPv4 / IPv6 multicast ranges (RFC 5771, RFC 4291), deprecated site-local (RFC 3879). */
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "server/netaddr.h"

typedef struct range {
    uint8_t prefix[16]; /* network bytes (IPv4: the first 4) */
    int bits;           /* prefix length */
    const char *name;
} range;

static const range v4[] = {
    {{0}, 8, "\"this network\" (0.0.0.0/8)"},
    {{10}, 8, "private-use (10.0.0.0/8)"},
    {{100, 64}, 10, "shared address space (100.64.0.0/10)"},
    {{127}, 8, "loopback (127.0.0.0/8)"},
    {{169, 254}, 16, "link-local (169.254.0.0/16)"},
    {{172, 16}, 12, "private-use (172.16.0.0/12)"},
    {{192, 0, 0}, 24, "IETF protocol assignments (192.0.0.0/24)"},
    {{192, 0, 2}, 24, "documentation (192.0.2.0/24)"},
    {{192, 31, 196}, 24, "AS112-v4 (192.31.196.0/24)"},
    {{192, 52, 193}, 24, "AMT (192.52.193.0/24)"},
    {{192, 88, 99}, 24, "6to4 relay anycast (192.88.99.0/24)"},
    {{192, 168}, 16, "private-use (192.168.0.0/16)"},
    {{192, 175, 48}, 24, "AS112 direct delegation (192.175.48.0/24)"},
    {{198, 18}, 15, "benchmarking (198.18.0.0/15)"},
    {{198, 51, 100}, 24, "documentation (198.51.100.0/24)"},
    {{203, 0, 113}, 24, "documentation (203.0.113.0/24)"},
    {{224}, 4, "multicast (224.0.0.0/4)"},
    {{240}, 4, "reserved (240.0.0.0/4, with the broadcast address)"},
};

static const range v6[] = {
    {{0}, 128, "unspecified (::/128)"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, "loopback (::1/128)"},
    {{0}, 96, "IPv4-compatible (::/96)"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0}, 96, "SIIT translated (::ffff:0:0:0/96)"},
    {{0, 0x64, 0xff, 0x9b}, 96, "NAT64 translation (64:ff9b::/96)"},
    {{0, 0x64, 0xff, 0x9b, 0, 1}, 48, "local-use NAT64 translation (64:ff9b:1::/48)"},
    {{0x01, 0x00}, 64, "discard-only (100::/64)"},
    {{0x01, 0x00, 0, 0, 0, 0, 0, 1}, 64, "dummy prefix (100:0:0:1::/64)"},
    {{0x20, 0x01, 0x00, 0x00}, 32, "Teredo (2001::/32)"},
    {{0x20, 0x01, 0x00, 0x00}, 23, "IETF protocol assignments (2001::/23)"},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation (2001:db8::/32)"},
    {{0x20, 0x02}, 16, "6to4 (2002::/16)"},
    {{0x26, 0x20, 0x00, 0x4f, 0x80, 0x00}, 48, "AS112 direct delegation (2620:4f:8000::/48)"},
    {{0x3f, 0xff, 0x00}, 20, "documentation (3fff::/20)"},
    {{0x5f, 0x00}, 16, "segment routing SIDs (5f00::/16)"},
    {{0xfc}, 7, "unique-local (fc00::/7)"},
    {{0xfe, 0x80}, 10, "link-local (fe80::/10)"},
    {{0xfe, 0xc0}, 10, "site-local (fec0::/10)"},
    {{0xff}, 8, "multicast (ff00::/8)"},
};

static bool in_prefix(const uint8_t *a, const range *r)
{
    int full = r->bits / 8, rest = r->bits % 8;
    if (memcmp(a, r->prefix, (size_t)full)) return false;
    if (!rest) return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[full] & mask) == (r->prefix[full] & mask);
}

static const char *lookup(const uint8_t *a, const range *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (in_prefix(a, &t[i])) return t[i].name;
    return NULL;
}

const char *omnic__addr_special(const struct sockaddr *sa)
{
    if (!sa) return "not IP";
    if (sa->sa_family == AF_INET) {
        const uint8_t *a = (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr;
        return lookup(a, v4, sizeof v4 / sizeof v4[0]);
    }
    if (sa->sa_family == AF_INET6) {
        const uint8_t *a = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (!memcmp(a, mapped, 12)) return lookup(a + 12, v4, sizeof v4 / sizeof v4[0]); /* ::ffff:a.b.c.d */
        return lookup(a, v6, sizeof v6 / sizeof v6[0]);
    }
    return "not IP";
}
