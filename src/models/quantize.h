/* Load-time quantization of a text decoder's linear weights (--quant q8_0 | q4_0): every 2-D
 * matmul weight (q/k/v/o, gate/up/down, fused projections, lm_head) and the token embedding
 * table, as llama.cpp's --pure does; norm weights and biases stay as they are. */
#ifndef OMNIC_MODELS_QUANTIZE_H
#define OMNIC_MODELS_QUANTIZE_H

#include "backend/backend.h"
#include "core/threadpool.h"
#include "models/text_decoder.h"

/* "q8_0" / "q4_0" -> *out; "none" or "" -> OMNIC_DTYPE_COUNT (no quantization).
 * E_INVALID naming the value otherwise. */
omnic_status omnic__quant_parse(const char *name, omnic_dtype *out, omnic_err *err);

/* Converts d's linear weights to qt (OMNIC_DTYPE_Q8_0 or OMNIC_DTYPE_Q4_0) into owned memory
 * (d->qweights), stored in the layout backend's weight_dtype asks for (cpu with AVX-512 VNNI:
 * q4_0x16 / q8_0x16, same values), rows split over pool's threads, and releases the converted
 * source pages of st from RSS as it goes (omnic__st_release). A weight whose rows are not whole 32-element
 * blocks stays as stored (a warning names it). Sets d->stored_bytes first. On failure d
 * keeps pointing at valid weights (the ones not converted yet are as stored). */
omnic_status omnic__text_decoder_quantize(omnic__text_decoder *d, omnic_dtype qt,
                                          const omnic__backend_ops *backend, const omnic__safetensors *st,
                                          omnic__threadpool *pool, omnic_err *err);

/* d's linear weights (the ones quantize would convert) that st maps, copied as they are onto
 * huge pages (omnic__weights_resident, models/weights.h); the copies join d->copies. On
 * failure d keeps pointing at valid weights. */
omnic_status omnic__text_decoder_resident(omnic__text_decoder *d, const omnic__safetensors *st,
                                          omnic__threadpool *pool, omnic_err *err);

struct omnic__lora;
/* The adapters' stacks (models/lora.h) to qt the same way (a stack whose rows are not whole
 * blocks, a rank under 32, stays as loaded); the stacks are replaced by owned quantized ones. */
omnic_status omnic__lora_quantize(struct omnic__lora *l, omnic_dtype qt, const omnic__backend_ops *backend,
                                  omnic__threadpool *pool, omnic_err *err);

/* Transform of a stored tensor for the bundle identity: the dtype name ("q8_0", "q4_0x16", ...)
 * when d quantized (a view of) the tensor named name, else "as-stored". */
const char *omnic__text_decoder_transform(const omnic__text_decoder *d, const char *name);

#endif
