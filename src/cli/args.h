/* Small option parsing helpers shared by the subcommands. Each returns 1 when argv[*i]
 * matched (and advances *i past the value), 0 when it did not, -1 after printing an
 * error (missing or out-of-range value). */
#ifndef OMNIC_CLI_ARGS_H
#define OMNIC_CLI_ARGS_H

#include <stdint.h>

int omnic__arg_str(int argc, char **argv, int *i, const char *short_name, const char *long_name,
                   const char **out);
int omnic__arg_i64(int argc, char **argv, int *i, const char *short_name, const char *long_name, int64_t min,
                   int64_t max, int64_t *out);

#endif
