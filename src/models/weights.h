/* Binding checkpoint tensors to a model's weight headers: the shape and dtype checks every
 * family needs, the aligned copy of a tensor the file left misaligned, and the f32 copies
 * the matmul contract wants for biases. */
#ifndef OMNIC_MODELS_WEIGHTS_H
#define OMNIC_MODELS_WEIGHTS_H

#include "io/safetensors.h"

/* Tensors a model owns beside its mapped weights (aligned copies). */
typedef struct omnic__weight_copies {
    omnic__tensor **items; /* owned [n] */
    size_t n;
} omnic__weight_copies;

/* Frees the copies; the struct is zeroed. */
void omnic__weight_copies_free(omnic__weight_copies *c);

/* Binds tensor `name` of st (a float dtype, exactly dims) into *out: a view of the mapped
 * data, or of an aligned copy kept in copies when the file left it misaligned (kernels read
 * elements through typed pointers). E_NOT_FOUND / E_INVALID naming the tensor, its dtype and
 * both shapes; E_NOMEM. */
omnic_status omnic__weight_bind(const omnic__safetensors *st, const char *name, int ndim, const int64_t *dims,
                                omnic__tensor *out, omnic__weight_copies *copies, omnic_err *err);

/* omnic__weight_bind, then an owned f32 copy of the whole tensor into *out (biases, small tables). */
omnic_status omnic__weight_bind_f32(const omnic__safetensors *st, const char *name, int ndim,
                                    const int64_t *dims, omnic__tensor **out, omnic__weight_copies *copies,
                                    omnic_err *err);

/* An owned f32 tensor of dims (named name) holding elements [first, first + prod(dims)) of the
 * bound float tensor w (f32 / f16 / bf16), converted exactly. */
omnic_status omnic__weight_f32(const omnic__tensor *w, int64_t first, int ndim, const int64_t *dims,
                               const char *name, omnic__tensor **out, omnic_err *err);

/* An owned copy of the 2-D float tensor w [R, C] as [C, R] in w's dtype (bit-exact): a
 * weight stored (in, out) for x . W becomes the (out, in) layout of the matmul contract. */
omnic_status omnic__weight_transpose(const omnic__tensor *w, const char *name, omnic__tensor **out,
                                     omnic_err *err);

#endif
