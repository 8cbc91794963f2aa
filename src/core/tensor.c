/* Tensor descriptors: shape checks, sizes, owned allocation. */
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "core/tensor.h"

void omnic__dims_str(char *buf, size_t n, int ndim, const int64_t *dims)
{
    size_t off = 0;
    if (n == 0) return;
    buf[0] = '\0';
    off += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, i ? ", %lld" : "%lld", (long long)dims[i]);
    if (off < n) snprintf(buf + off, n - off, "]");
}

omnic_status omnic__tensor_init(omnic__tensor *t, omnic_dtype dtype, int ndim, const int64_t *dims,
                                omnic_err *err)
{
    if ((unsigned)dtype >= OMNIC_DTYPE_COUNT)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "tensor dtype %d is not a known dtype", (int)dtype);
    if (ndim < 0 || ndim > OMNIC_MAX_DIMS)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "tensor rank %d outside 0..%d", ndim, OMNIC_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (dims[i] < 0)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "tensor dim %d is negative (%lld)", i,
                              (long long)dims[i]);
    size_t blk = omnic__dtype_table[dtype].block;
    if (blk > 1 && (ndim == 0 || dims[ndim - 1] % (int64_t)blk != 0))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "a %s tensor needs rows of whole %zu-element blocks (last dim %lld)",
                          omnic_dtype_name(dtype), blk, ndim ? (long long)dims[ndim - 1] : 0LL);
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < OMNIC_MAX_DIMS; i++)
        t->dims[i] = i < ndim ? dims[i] : 1;
    return OMNIC_OK;
}

omnic_status omnic__tensor_numel(const omnic__tensor *t, size_t *out, omnic_err *err)
{
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->dims[i] < 0 || !omnic_size_mul(&n, n, (size_t)t->dims[i])) {
            char s[160];
            omnic__dims_str(s, sizeof s, t->ndim, t->dims);
            return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tensor %s: element count of shape %s overflows",
                              t->name[0] ? t->name : "(unnamed)", s);
        }
    }
    *out = n;
    return OMNIC_OK;
}

omnic_status omnic__tensor_nbytes(const omnic__tensor *t, size_t *out, omnic_err *err)
{
    size_t n;
    OMNIC_TRY(omnic__tensor_numel(t, &n, err));
    size_t blk = omnic_dtype_block_size(t->dtype);
    if (blk > 1 && (t->ndim == 0 || t->dims[t->ndim - 1] % (int64_t)blk != 0))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "tensor %s: a %s row must hold whole %zu-element blocks",
                          t->name[0] ? t->name : "(unnamed)", omnic_dtype_name(t->dtype), blk);
    if (blk > 1) n /= blk;
    if (!omnic_size_mul(&n, n, omnic_dtype_size(t->dtype))) {
        char s[160];
        omnic__dims_str(s, sizeof s, t->ndim, t->dims);
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tensor %s: byte size of %s %s overflows",
                          t->name[0] ? t->name : "(unnamed)", omnic_dtype_name(t->dtype), s);
    }
    *out = n;
    return OMNIC_OK;
}

int64_t omnic__tensor_nelem(const omnic__tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->dims[i];
    return n;
}

size_t omnic__tensor_bytes(const omnic__tensor *t)
{
    return omnic__dtype_row_bytes(t->dtype, omnic__tensor_nelem(t));
}

int64_t omnic__tensor_cols(const omnic__tensor *t)
{
    return t->ndim ? t->dims[t->ndim - 1] : 1;
}

int64_t omnic__tensor_rows(const omnic__tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i + 1 < t->ndim; i++)
        n *= t->dims[i];
    return n;
}

omnic_status omnic__tensor_create(omnic__tensor **out, omnic_dtype dtype, int ndim, const int64_t *dims,
                                  omnic_err *err)
{
    omnic__tensor *t = omnic_alloc_array(1, sizeof *t);
    size_t nbytes;
    if (!t) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a tensor descriptor");
    omnic_status s = omnic__tensor_init(t, dtype, ndim, dims, err);
    if (s == OMNIC_OK) s = omnic__tensor_nbytes(t, &nbytes, err);
    if (s != OMNIC_OK) goto fail;
    t->owns_data = true;
    if (nbytes > 0) {
        t->data = omnic_alloc_array(nbytes, 1);
        if (!t->data) {
            s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory allocating a tensor of %zu bytes", nbytes);
            goto fail;
        }
    }
    *out = t;
    return OMNIC_OK;
fail:
    omnic_free(t);
    return s;
}

void omnic__tensor_destroy(omnic__tensor *t)
{
    if (!t) return;
    if (t->owns_data) omnic_free(t->data);
    omnic_free(t);
}

bool omnic__tensor_same_shape(const omnic__tensor *a, const omnic__tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}
