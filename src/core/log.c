/* stderr logging with a threshold taken from OMNIC_LOG (error|warn|info|debug). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

static int level = -1; /* -1: read OMNIC_LOG on first use */

void omnic__log_set_level(omnic__log_level lvl)
{
    level = (int)lvl;
}

static int current_level(void)
{
    if (level < 0) {
        const char *e = getenv("OMNIC_LOG");
        level = OMNIC_LOG_WARN;
        if (e && !strcmp(e, "error")) level = OMNIC_LOG_ERROR;
        if (e && !strcmp(e, "info")) level = OMNIC_LOG_INFO;
        if (e && !strcmp(e, "debug")) level = OMNIC_LOG_DEBUG;
    }
    return level;
}

void omnic__log(omnic__log_level lvl, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if ((int)lvl > current_level()) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "omnic %s: ", names[lvl]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
