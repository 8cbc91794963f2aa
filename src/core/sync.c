/* Monotonic timed waits (core/sync.h). */
#include <errno.h>

#include "core/sync.h"

double omnic__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int omnic__cond_init(pthread_cond_t *c)
{
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc) return rc;
    rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (!rc) rc = pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

void omnic__deadline(struct timespec *out, double timeout_s)
{
    clock_gettime(CLOCK_MONOTONIC, out);
    if (!(timeout_s > 0)) timeout_s = 0;
    if (timeout_s > 1e9) timeout_s = 1e9;
    const long long whole = (long long)timeout_s;
    long long ns = (long long)out->tv_nsec + (long long)((timeout_s - (double)whole) * 1e9);
    out->tv_sec += (time_t)(whole + ns / 1000000000LL);
    out->tv_nsec = (long)(ns % 1000000000LL);
}

bool omnic__cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, const struct timespec *deadline)
{
    return pthread_cond_timedwait(c, mu, deadline) != ETIMEDOUT;
}
