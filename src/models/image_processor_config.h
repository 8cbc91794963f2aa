/* preprocessor_config.json -> image processor parameters (mm/image_processor.h), for
 * CLIPImageProcessor and SiglipImageProcessor (and their Fast twins), with Hugging Face's
 * class defaults for absent fields. */
#ifndef OMNIC_MODELS_IMAGE_PROCESSOR_CONFIG_H
#define OMNIC_MODELS_IMAGE_PROCESSOR_CONFIG_H

#include <jansson.h>

#include "mm/image_processor.h"

/* Parses cfg (borrowed JSON object; `what` names it in messages) into *out. The class comes from
 * image_processor_type (else feature_extractor_type, "XFeatureExtractor" read as
 * "XImageProcessor"): CLIPImageProcessor / SiglipImageProcessor give PIL numerics (the
 * transformers 4.x default for them) with the floor crop; the "...Fast" names give torchvision
 * numerics with torchvision's round-half-even crop. Fields: size ({"shortest_edge"} or
 * {"height", "width"}, or an int: shortest edge for CLIP, square for SigLIP), crop_size (dict or
 * int), resample (2 or 3), do_resize, do_center_crop, do_rescale, rescale_factor, do_normalize,
 * image_mean, image_std (3 numbers, or one number for all channels); do_convert_rgb is only
 * type-checked (decoding always gives RGB). Errors: E_UNSUPPORTED (unknown or missing processor
 * type: names it; shortest_edge for SigLIP; longest_edge), E_INVALID (a field of the wrong type or out of
 * range: names the field). *out untouched on failure. */
/* The processor class cfg (a JSON object) names: image_processor_type, else
 * feature_extractor_type with "FeatureExtractor" read as "ImageProcessor" (written into buf of
 * cap bytes); NULL when neither is a string. Shared by every processor family's parser. */
const char *omnic__processor_config_type(const json_t *cfg, char *buf, size_t cap);

/* The pixel-value keys every processor family shares: do_rescale, rescale_factor, do_normalize,
 * image_mean / image_std (a list of 3 numbers, or one number for every channel), and
 * do_convert_rgb (type-checked only: decoding always gives RGB, which it leaves unchanged).
 * Outputs keep their values for absent or null keys. E_INVALID naming the field. */
omnic_status omnic__processor_config_pixels(const json_t *cfg, const char *what, bool *do_rescale,
                                            double *rescale_factor, bool *do_normalize, double mean[3],
                                            double std[3], omnic_err *err);

omnic_status omnic__image_processor_config_parse(const json_t *cfg, const char *what,
                                                 omnic__image_proc_params *out, omnic_err *err);

#endif
