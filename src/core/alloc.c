/* All heap allocation: size caps, overflow checks, and a fault-injection hook for tests. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/limits.h"
#include "omnic/omnic.h"

static _Atomic long fail_after = -1; /* < 0: never fail */
static _Atomic long injected = 0;

void omnic__alloc_fail_after(long n)
{
    atomic_store(&fail_after, n);
    atomic_store(&injected, 0);
}

long omnic__alloc_injected_failures(void)
{
    return atomic_load(&injected);
}

static bool inject_failure(void)
{
    long n = atomic_load(&fail_after);
    while (n >= 0) {
        if (n == 0) {
            atomic_fetch_add(&injected, 1);
            return true;
        }
        if (atomic_compare_exchange_weak(&fail_after, &n, n - 1)) return false;
    }
    return false;
}

void *omnic_malloc(size_t n)
{
    if (n == 0 || n > OMNIC_MAX_ALLOC || inject_failure()) return NULL;
    return malloc(n);
}

void *omnic_alloc_array(size_t n, size_t elem)
{
    size_t bytes;
    if (!omnic_size_mul(&bytes, n, elem) || bytes == 0 || bytes > OMNIC_MAX_ALLOC || inject_failure())
        return NULL;
    return calloc(n, elem);
}

void *omnic_realloc(void *p, size_t n)
{
    if (n == 0 || n > OMNIC_MAX_ALLOC || inject_failure()) return NULL;
    return realloc(p, n);
}

void omnic_free(void *p)
{
    free(p);
}

char *omnic_strdup(const char *s)
{
    size_t len = strlen(s), n;
    if (!omnic_size_add(&n, len, 1)) return NULL;
    char *d = omnic_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
