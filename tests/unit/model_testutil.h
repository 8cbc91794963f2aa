/* Shared helpers for the unit tests that build tiny checkpoints with tools/mktiny.py (run from
 * the source tree): the Python interpreter, shell commands that must succeed, removal of a
 * test's scratch directory, and the logits comparisons (max_rel, argmax) they share. */
#ifndef OMNIC_TESTS_MODEL_TESTUTIL_H
#define OMNIC_TESTS_MODEL_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* cmocka.h needs stdarg, stddef and setjmp first. */
#include <cmocka.h>

#define PY "/usr/bin/python3"

/* Runs the printf-formatted shell command; the test fails unless it exits 0. */
static inline void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_int_equal(system(cmd), 0);
}

/* rm -rf dir: 0, or -1 (a cmocka group teardown's result). */
static inline int mt_rmdir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* max |a - b| / max |b| (1 when b is all zero). */
static inline double max_rel(const float *a, const float *b, int64_t n)
{
    double scale = 0, diff = 0;
    for (int64_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs((double)b[i]));
        diff = fmax(diff, fabs((double)a[i] - b[i]));
    }
    return diff / (scale > 0 ? scale : 1);
}

/* Index of the first largest element of x[n]. */
static inline int argmax(const float *x, int64_t n)
{
    int best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = (int)i;
    return best;
}

#endif
