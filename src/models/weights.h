/* Binding checkpoint tensors to a model's weight headers: the shape and dtype checks every
 * family needs, the aligned copy of a tensor the file left misaligned, and the f32 copies
 * the matmul contract wants for biases. */
#ifndef OMNIC_MODELS_WEIGHTS_H
#define OMNIC_MODELS_WEIGHTS_H

#include "core/threadpool.h"
#include "io/safetensors.h"

/* Tensors a model owns beside its mapped weights (aligned copies, resident copies), and the
 * huge-page blocks that hold the data of some of them (and of quantized weights). */
typedef struct omnic__weight_copies {
    omnic__tensor **items; /* owned [n] */
    size_t n;
    void **blocks; /* owned [n_blocks] (omnic__mem_huge_alloc) */
    size_t n_blocks;
} omnic__weight_copies;

/* Frees the copies and the blocks; the struct is zeroed. */
void omnic__weight_copies_free(omnic__weight_copies *c);

/* One huge-page block (core/mem.h) for n tensors made at load: outs[i] becomes an owned header
 * with shapes[i]'s dtype and dims (and no name) whose data lies in the block, 64-byte aligned, not
 * zeroed, owns_data false; the block joins c and lives until c is freed. One block instead of a
 * heap allocation each keeps every 2 MiB of the weights on a huge page (a heap tensor's unaligned
 * head and tail are not). When every tensor is empty there is no block and the data is NULL.
 * E_NOMEM; on failure no header is left. */
omnic_status omnic__weight_block(omnic__weight_copies *c, const omnic__tensor *shapes, size_t n,
                                 omnic__tensor **outs, omnic_err *err);

/* Binds tensor `name` of st (a float dtype, exactly dims) into *out: a view of the mapped
 * data, or of an aligned copy kept in copies when the file left it misaligned (kernels read
 * elements through typed pointers). E_NOT_FOUND / E_INVALID naming the tensor, its dtype and
 * both shapes; E_NOMEM. */
omnic_status omnic__weight_bind(const omnic__safetensors *st, const char *name, int ndim, const int64_t *dims,
                                omnic__tensor *out, omnic__weight_copies *copies, omnic_err *err);

/* Copies each of the n weights ws that st maps (others are left alone) into an owned tensor of
 * the same dtype and dims, the same bits, advised onto transparent huge pages, and points the
 * weight at it; the copies join copies. The source pages are released from RSS as they are
 * copied (omnic__st_release), rows split over pool's threads. Why: a matmul streams a weight,
 * and a file mapping's 4 KiB pages (the page cache has no huge pages) cost a page walk every
 * 4 KiB: a bf16 decode step reads 1.4x faster from the copies (bench/peer.md section 9). On
 * failure every weight still points at valid data (mapped or copied). E_NOMEM. */
omnic_status omnic__weights_resident(omnic__tensor *const *ws, size_t n, const omnic__safetensors *st,
                                     omnic__threadpool *pool, omnic__weight_copies *copies, omnic_err *err);

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
