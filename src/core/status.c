/* The status table's names and messages, and raising errors into omnic_err. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

const char *omnic_status_name(omnic_status s)
{
    switch (s) {
#define OMNIC_XX_(name, value, msg)                                                                          \
    case OMNIC_##name:                                                                                       \
        return "OMNIC_" #name;
        OMNIC_STATUS_MAP(OMNIC_XX_)
#undef OMNIC_XX_
    }
    return "OMNIC_UNKNOWN";
}

const char *omnic_status_str(omnic_status s)
{
    switch (s) {
#define OMNIC_XX_(name, value, msg)                                                                          \
    case OMNIC_##name:                                                                                       \
        return msg;
        OMNIC_STATUS_MAP(OMNIC_XX_)
#undef OMNIC_XX_
    }
    return "unknown status";
}

void omnic_err_clear(omnic_err *err)
{
    if (!err) return;
    err->code = OMNIC_OK;
    err->file = NULL;
    err->line = 0;
    err->msg[0] = '\0';
}

__attribute__((noinline)) void omnic__error_raised(omnic_status code)
{
    /* A breakpoint spot: every raised error passes here. */
    __asm__ volatile("" : : "r"(code) : "memory");
}

omnic_status omnic__fail(omnic_err *err, omnic_status code, const char *file, int line, const char *fmt, ...)
{
    omnic__error_raised(code);
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
        err->file = file;
        err->line = line;
    }
    return code;
}

void omnic__err_prefix(omnic_err *err, const char *fmt, ...)
{
    if (!err) return;
    char prefix[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[OMNIC_ERR_MSG_MAX];
    memcpy(old, err->msg, sizeof old);
    size_t n = strlen(prefix);
    if (n + 2 >= sizeof err->msg) n = sizeof err->msg - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t rest = sizeof err->msg - n - 3, olen = strlen(old);
    if (olen > rest) olen = rest;
    memcpy(err->msg + n + 2, old, olen);
    err->msg[n + 2 + olen] = '\0';
}
