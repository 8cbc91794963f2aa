/* Option parsing helpers. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"

static bool matches(const char *a, const char *s, const char *l)
{
    return (s && !strcmp(a, s)) || (l && !strcmp(a, l));
}

int omnic__arg_str(int argc, char **argv, int *i, const char *short_name, const char *long_name,
                   const char **out)
{
    if (!matches(argv[*i], short_name, long_name)) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "omnic: option %s needs a value\n", argv[*i]);
        return -1;
    }
    *out = argv[++*i];
    return 1;
}

int omnic__arg_i64(int argc, char **argv, int *i, const char *short_name, const char *long_name, int64_t min,
                   int64_t max, int64_t *out)
{
    const char *v;
    int r = omnic__arg_str(argc, argv, i, short_name, long_name, &v);
    if (r <= 0) return r;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max) {
        fprintf(stderr, "omnic: option %s needs an integer in %lld..%lld, got '%s'\n", argv[*i - 1],
                (long long)min, (long long)max, v);
        return -1;
    }
    *out = x;
    return 1;
}
