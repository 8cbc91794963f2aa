/* NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order) for stage dumps
 * and oracle comparisons. Dtypes: f32 '<f4', f16 '<f2', i32 '<i4', i64 '<i8',
 * u8 '|u1', bool '|b1'; bf16 is written widened to f32 (numpy has no bf16). */
#ifndef OMNIC_CORE_NPY_H
#define OMNIC_CORE_NPY_H

#include "core/tensor.h"

/* Writes t to path. Borrows t. */
omnic_status omnic__npy_write(const char *path, const omnic__tensor *t, omnic_err *err);
/* Reads path into a new owned tensor. Rejects fortran order, big-endian, unknown
 * descr, headers over OMNIC_MAX_NPY_HEADER, data shorter than the shape says. */
omnic_status omnic__npy_read(const char *path, omnic__tensor **out, omnic_err *err);
/* Same, from memory (for the fuzzer). */
omnic_status omnic__npy_parse(const uint8_t *buf, size_t len, omnic__tensor **out, omnic_err *err);

#endif
