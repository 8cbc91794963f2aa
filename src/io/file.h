/* Whole-file reads with a size cap, and path joining, for the io layer's small files
 * (configs, index files, chat templates). Large files (weights) are mapped, not read. */
#ifndef OMNIC_IO_FILE_H
#define OMNIC_IO_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Reads the regular file at path (borrows) into an owned buffer (omnic_free) of *len bytes
 * plus a terminating NUL. On failure *out and *len are unchanged.
 * Errors: E_NOT_FOUND (no such file), E_IO (cannot open/read, not a regular file),
 * E_TOO_LARGE (over max_bytes: names both sizes), E_NOMEM. */
omnic_status omnic__read_file(const char *path, size_t max_bytes, char **out, size_t *len, omnic_err *err);
/* The same; untrusted (a path a request named): refuse (E_IO) when the last component of path
 * is a symbolic link, and never wait on a FIFO or device: it is opened non-blocking and refused
 * as not a regular file. */
omnic_status omnic__read_file_ex(const char *path, size_t max_bytes, bool untrusted, char **out, size_t *len,
                                 omnic_err *err);

/* Returns owned "dir/name" (one '/' between them), or NULL when out of memory. */
char *omnic__path_join(const char *dir, const char *name);

/* Stats path: *exists is false on ENOENT/ENOTDIR; *size is the byte size, *is_reg and *is_dir
 * tell the kind (each out-param may be NULL). Other stat failures are E_IO naming the path. */
omnic_status omnic__path_stat(const char *path, bool *exists, bool *is_reg, bool *is_dir, uint64_t *size,
                              omnic_err *err);

#endif
