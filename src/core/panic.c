/* The one place (besides cli/main.c) allowed to abort: broken internal invariants. */
#include <stdio.h>
#include <stdlib.h>

#include "core/panic.h"

_Noreturn void omnic__panic(const char *file, int line, const char *what)
{
    fprintf(stderr, "omnic: internal invariant failed at %s:%d: %s\n", file, line, what);
    fflush(stderr);
    abort();
}
