/* Condition variables whose timed waits run on CLOCK_MONOTONIC, so a wall-clock step (NTP,
 * settimeofday) can neither stretch nor cut short a deadline. Every timed wait in omnic uses
 * these. */
#ifndef OMNIC_CORE_SYNC_H
#define OMNIC_CORE_SYNC_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in seconds: the clock of every deadline. */
double omnic__now(void);

/* pthread_cond_init with a CLOCK_MONOTONIC clock attribute; 0 or an errno value. */
int omnic__cond_init(pthread_cond_t *c);

/* *out = CLOCK_MONOTONIC now + timeout_s seconds (clamped to [0, 1e9]). */
void omnic__deadline(struct timespec *out, double timeout_s);

/* Waits on c (made by omnic__cond_init; mu held) until signalled or *deadline (from
 * omnic__deadline) passes: false when it timed out. Spurious wakeups return true. */
bool omnic__cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, const struct timespec *deadline);

#endif
