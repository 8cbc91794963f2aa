/* preprocessor_config.json -> Qwen2-VL image processor parameters (models/qwen2vl_processor.h) for
 * Qwen2VLImageProcessor and Qwen2VLImageProcessorFast (Qwen2-VL, Qwen2.5-VL, Qwen3-VL), with
 * Hugging Face's class defaults for absent fields. */
#ifndef OMNIC_MODELS_QWEN2VL_PROCESSOR_CONFIG_H
#define OMNIC_MODELS_QWEN2VL_PROCESSOR_CONFIG_H

#include <jansson.h>

#include "models/qwen2vl_processor.h"

/* True when cfg (borrowed JSON object) names a Qwen2-VL image processor in image_processor_type
 * (else feature_extractor_type, "XFeatureExtractor" read as "XImageProcessor"). */
bool omnic__qwen2vl_processor_config_matches(const json_t *cfg);

/* Parses cfg (borrowed; `what` names it in messages) into *out. Both class names give
 * torchvision numerics: HF 4.5x forces the fast processor for Qwen2VLImageProcessor
 * (FORCE_FAST_IMAGE_PROCESSOR) and v5 defaults to the torchvision backend. Fields: size
 * ({"shortest_edge": min_pixels, "longest_edge": max_pixels}, both required when present),
 * min_pixels and max_pixels (each overrides its size entry, as HF does for backward
 * compatibility; the v5 reading: 4.5x's __init__ dropped a config `size` in favour of the class
 * default, which no released Qwen2/2.5-VL config depends on since they set min/max_pixels),
 * patch_size, temporal_patch_size, merge_size, resample (2 or 3), do_resize, do_rescale,
 * rescale_factor, do_normalize, image_mean, image_std (3 numbers or one for all channels);
 * do_convert_rgb is only type-checked. Errors: E_UNSUPPORTED (not a Qwen2-VL processor type:
 * names it), E_INVALID (a field of the wrong type or out of range: names the field and value).
 * *out untouched on failure. */
omnic_status omnic__qwen2vl_processor_config_parse(const json_t *cfg, const char *what,
                                                   omnic__qwen2vl_proc_params *out, omnic_err *err);

#endif
