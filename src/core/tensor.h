/* Tensors: dtype, up to OMNIC_MAX_DIMS dims, contiguous row-major data.
 * dims[0] is the outermost (slowest) dimension, dims[ndim-1] the innermost:
 * a [T, H] activation has dims {T, H}, element (t, h) at t*H + h. */
#ifndef OMNIC_CORE_TENSOR_H
#define OMNIC_CORE_TENSOR_H

#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "core/limits.h"

typedef struct omnic__tensor {
    omnic_dtype dtype;
    int ndim;                     /* 0..OMNIC_MAX_DIMS; 0 is a scalar */
    int64_t dims[OMNIC_MAX_DIMS]; /* unused trailing entries are 1 */
    void *data;                   /* contiguous; owned only when owns_data */
    bool owns_data;
    char name[64]; /* for signatures, dumps and messages; may be empty */
} omnic__tensor;

/* Sets dtype/ndim/dims (no data). Fails on ndim > OMNIC_MAX_DIMS, a negative dim, or a
 * block-quantized dtype whose last dim is not a whole number of blocks (or ndim 0). */
omnic_status omnic__tensor_init(omnic__tensor *t, omnic_dtype dtype, int ndim, const int64_t *dims,
                                omnic_err *err);

/* Element count and byte size, overflow-checked (E_TOO_LARGE names the dims). Block dtypes:
 * bytes = elements / block size * block bytes (E_INVALID when rows are not whole blocks). */
omnic_status omnic__tensor_numel(const omnic__tensor *t, size_t *out, omnic_err *err);
omnic_status omnic__tensor_nbytes(const omnic__tensor *t, size_t *out, omnic_err *err);

/* Unchecked versions for tensors already validated (planned graph tensors). */
int64_t omnic__tensor_nelem(const omnic__tensor *t);
size_t omnic__tensor_bytes(const omnic__tensor *t);
/* Rows = product of all dims but the last; cols = last dim (1 for a scalar). */
int64_t omnic__tensor_rows(const omnic__tensor *t);
int64_t omnic__tensor_cols(const omnic__tensor *t);

/* Allocates an owned, zeroed tensor; returns owned (destroy with omnic__tensor_destroy). */
omnic_status omnic__tensor_create(omnic__tensor **out, omnic_dtype dtype, int ndim, const int64_t *dims,
                                  omnic_err *err);
/* Frees owned data and the struct; accepts NULL. */
void omnic__tensor_destroy(omnic__tensor *t);

/* "[2, 3, 4]" into buf (always NUL-terminated). */
void omnic__dims_str(char *buf, size_t n, int ndim, const int64_t *dims);

/* True when dtype, ndim and dims are equal. */
bool omnic__tensor_same_shape(const omnic__tensor *a, const omnic__tensor *b);

#endif
