/* Special-purpose addresses (the IANA IPv4 and IPv6 Special-Purpose Address Registries, plus
 * multicast and the translation / tunnelling prefixes that embed another address): the
 * addresses a server-side fetch must not reach unless an operator listed them. */
#ifndef OMNIC_SERVER_NETADDR_H
#define OMNIC_SERVER_NETADDR_H

#include <stdbool.h>
#include <sys/socket.h>

/* NULL when sa (borrowed) is an ordinary global unicast address; else the name of the
 * special-purpose range it falls in ("loopback", "private-use", "6to4", "NAT64 translation",
 * ...; a static string). IPv4-mapped IPv6 addresses are judged by the IPv4 address they hold;
 * every other translation or tunnelling prefix (NAT64 64:ff9b::/96 and 64:ff9b:1::/48,
 * IPv4-compatible ::/96, SIIT ::ffff:0:0:0/96, 6to4 2002::/16, Teredo 2001::/32) is refused as
 * a whole, since the address it leads to is not the one connected to. Families other than
 * AF_INET / AF_INET6 are "not IP". */
const char *omnic__addr_special(const struct sockaddr *sa);

#endif
