/* Header trust checks (server/trust.h). */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "server/trust.h"

bool omnic__authority_host(const char *a, size_t len, char *out, size_t cap)
{
    size_t b = 0, e;
    if (!a || !len || !cap) return false;
    if (a[0] == '[') { /* [v6]:port */
        const char *rb = memchr(a, ']', len);
        if (!rb) return false;
        b = 1, e = (size_t)(rb - a);
        size_t rest = e + 1;
        if (rest < len && a[rest] != ':') return false;
    } else {
        const char *colon = memchr(a, ':', len);
        e = colon ? (size_t)(colon - a) : len;
        if (colon && memchr(colon + 1, ':', len - e - 1))
            return false; /* a bare v6 literal is no authority */
    }
    if (e <= b || e - b >= cap) return false;
    for (size_t i = b; i < e; i++) {
        unsigned char c = (unsigned char)a[i];
        if (c <= ' ' || c >= 0x7f || c == '/' || c == '@' || c == '?' || c == '#') return false;
        out[i - b] = (char)tolower(c);
    }
    out[e - b] = '\0';
    return true;
}

bool omnic__host_allowed(const char *host_header, const char *const *hosts, size_t n)
{
    char h[256];
    if (!host_header || !omnic__authority_host(host_header, strlen(host_header), h, sizeof h)) return false;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(hosts[i], "*")) return true;
        char w[256];
        const char *x = hosts[i];
        size_t xl = strlen(x);
        if (x[0] == '[' || !memchr(x, ':', xl)) { /* a name, v4 literal or [v6] */
            if (!omnic__authority_host(x, xl, w, sizeof w)) continue;
        } else { /* a bare v6 literal */
            if (xl >= sizeof w) continue;
            for (size_t k = 0; k <= xl; k++)
                w[k] = (char)tolower((unsigned char)x[k]);
        }
        if (!strcmp(h, w)) return true;
    }
    return false;
}

bool omnic__origin_is_host(const char *origin, const char *host_header)
{
    if (!origin || !host_header) return false;
    const char *sep = strstr(origin, "://");
    if (!sep) return false;
    const char *auth = sep + 3;
    size_t al = strlen(auth), hl = strlen(host_header);
    if (al != hl || !al) return false;
    return !strncasecmp(auth, host_header, al);
}

bool omnic__content_type_json(const char *ct)
{
    if (!ct) return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, "; \t");
    if (n == 16 && !strncasecmp(ct, "application/json", 16)) return true;
    const char *slash = memchr(ct, '/', n);
    return slash && n >= 5 && !strncasecmp(ct + n - 5, "+json", 5) && !strncasecmp(ct, "application/", 12);
}
