/* The CLIP / SigLIP style image processor: resize (shortest edge or exact size), optional centre
 * crop, rescale + normalise -> pixel_values f32 [3, H, W]. Parameters are a plain struct (filled
 * from preprocessor_config.json by models/image_processor_config.c); numerics follow either
 * Hugging Face's PIL ("slow") path or its torchvision ("fast") path bit for bit. */
#ifndef OMNIC_MM_IMAGE_PROCESSOR_H
#define OMNIC_MM_IMAGE_PROCESSOR_H

#include "core/tensor.h"
#include "mm/image.h"

typedef enum omnic__resize_mode {
    OMNIC__RESIZE_SHORTEST_EDGE = 0, /* short side -> shortest_edge, long side int(n * long / short) */
    OMNIC__RESIZE_EXACT = 1,         /* to height x width, aspect ratio ignored */
} omnic__resize_mode;

typedef struct omnic__image_proc_params {
    bool do_resize;
    omnic__resize_mode resize_mode;
    int64_t shortest_edge;    /* OMNIC__RESIZE_SHORTEST_EDGE */
    int64_t height, width;    /* OMNIC__RESIZE_EXACT */
    omnic__resample resample; /* 2 bilinear, 3 bicubic */
    bool do_center_crop;
    int64_t crop_height, crop_width;
    omnic__crop_rounding crop_rounding;
    bool do_rescale;
    double rescale_factor; /* usually 1/255 */
    bool do_normalize;
    double image_mean[3], image_std[3];
    omnic__image_numerics numerics; /* PIL (Hugging Face transformers 4.x default) or torchvision */
} omnic__image_proc_params;

/* CLIPImageProcessor's defaults (shortest_edge 224, crop 224x224, bicubic, 1/255, OpenAI CLIP
 * mean/std), PIL numerics with the floor crop. */
void omnic__image_proc_params_clip_defaults(omnic__image_proc_params *p);
/* SiglipImageProcessor's defaults (224x224 exact, bicubic, no crop, 1/255, mean = std = 0.5). */
void omnic__image_proc_params_siglip_defaults(omnic__image_proc_params *p);

/* Checks p (sizes >= 1 and within OMNIC_MAX_IMAGE_SIDE, known resample/numerics/rounding, finite
 * rescale factor, finite means, non-zero finite stds). E_INVALID naming the field. */
omnic_status omnic__image_proc_params_check(const omnic__image_proc_params *p, omnic_err *err);

/* Output size (width, height) the processor gives an in_w x in_h image, before any
 * allocation. Same errors as omnic__image_proc_params_check, plus E_TOO_LARGE when the resized
 * image would exceed OMNIC_MAX_IMAGE_SIDE / OMNIC_MAX_IMAGE_PIXELS (an extreme aspect ratio). */
omnic_status omnic__image_proc_output_size(const omnic__image_proc_params *p, int64_t in_w, int64_t in_h,
                                           int64_t *out_w, int64_t *out_h, omnic_err *err);

/* Runs the processor on img (borrows) and returns owned *pixel_values: f32 [3, H, W] named
 * "pixel_values" (destroy with omnic__tensor_destroy). Errors as above and E_NOMEM; *pixel_values
 * untouched on failure. */
omnic_status omnic__image_preprocess(const omnic__image *img, const omnic__image_proc_params *p,
                                     omnic__tensor **pixel_values, omnic_err *err);

#endif
