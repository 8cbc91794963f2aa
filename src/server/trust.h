/* Which requests a server trusts by their headers (DNS rebinding, cross-site requests):
 * the Host header against an allow-list, the Origin header against the CORS list or the
 * server's own origin, and JSON bodies only under a JSON content type. Pure functions of the
 * header values (borrowed). */
#ifndef OMNIC_SERVER_TRUST_H
#define OMNIC_SERVER_TRUST_H

#include <stdbool.h>
#include <stddef.h>

/* The host part of a Host header or an origin's authority ("h", "h:port", "[v6]:port"), into
 * out (lower case, brackets and port dropped). False when it does not parse or does not fit. */
bool omnic__authority_host(const char *authority, size_t len, char *out, size_t cap);

/* Whether a Host header value (NULL: absent) names one of hosts[0..n) (exact names or address
 * literals, case-insensitive, any port; an entry "*" allows every host). An absent or malformed
 * header is refused. */
bool omnic__host_allowed(const char *host_header, const char *const *hosts, size_t n);

/* Whether an Origin header ("scheme://host[:port]") is the server's own: its authority equals
 * the Host header's (both present; host case-insensitive, port exact). */
bool omnic__origin_is_host(const char *origin, const char *host_header);

/* Whether a Content-Type value is JSON: application/json or a +json subtype, any parameters,
 * case-insensitive. */
bool omnic__content_type_json(const char *content_type);

#endif
