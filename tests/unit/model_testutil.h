/* Shared helpers for the unit tests that build tiny checkpoints with tools/mktiny.py (run from
 * the source tree): the Python interpreter, shell commands that must succeed, and removal of
 * a test's scratch directory. */
#ifndef OMNIC_TESTS_MODEL_TESTUTIL_H
#define OMNIC_TESTS_MODEL_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
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

#endif
