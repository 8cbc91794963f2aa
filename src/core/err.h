/* Raising errors: OMNIC_FAIL records code, message, file and line into an omnic_err
 * and goes through one non-inlined function (omnic__error_raised) as a breakpoint spot. */
#ifndef OMNIC_CORE_ERR_H
#define OMNIC_CORE_ERR_H

#include "omnic/omnic.h"

/* Fills *err (may be NULL) and returns code. fmt names the problem and the numbers. */
omnic_status omnic__fail(omnic_err *err, omnic_status code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Prefixes err->msg with "prefix: " (used to add a file or tensor name on the way up). */
void omnic__err_prefix(omnic_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Called once per raised error; never inlined, so `break omnic__error_raised` works. */
void omnic__error_raised(omnic_status code);

#define OMNIC_FAIL(err, code, ...) omnic__fail((err), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Evaluate a status expression; return it from the enclosing function on failure. */
#define OMNIC_TRY(expr)                                                                                      \
    do {                                                                                                     \
        omnic_status omnic_try_s_ = (expr);                                                                  \
        if (omnic_try_s_ != OMNIC_OK) return omnic_try_s_;                                                   \
    } while (0)

#endif
