/* The Qwen2-VL image processor (also Qwen2.5-VL's, and Qwen3-VL's with patch 16 and mean = std =
 * 0.5): smart_resize to multiples of patch * merge within [min_pixels, max_pixels], bicubic
 * resize, rescale + normalise, a still image repeated to temporal_patch_size frames, and the
 * flattened patch rows in 2x2-merge-block order -> pixel_values f32 [t*h*w, 3*temporal*patch^2]
 * plus image_grid_thw. Semantics of Hugging Face transformers 4.5x (Qwen2VLImageProcessor /
 * Qwen2VLImageProcessorFast, smart_resize of image_processing_qwen2_vl.py); numerics of its
 * torchvision ("fast") path by default, which is what HF runs for these checkpoints
 * (reference/families-qwen-llava.md 2.4, 5.2). */
#ifndef OMNIC_MODELS_QWEN2VL_PROCESSOR_H
#define OMNIC_MODELS_QWEN2VL_PROCESSOR_H

#include "core/tensor.h"
#include "mm/image.h"

typedef struct omnic__qwen2vl_proc_params {
    bool do_resize;
    int64_t min_pixels;          /* size.shortest_edge: smart_resize's lower bound on H * W */
    int64_t max_pixels;          /* size.longest_edge: its upper bound */
    int64_t patch_size;          /* spatial patch side: 14 (Qwen2/2.5-VL), 16 (Qwen3-VL) */
    int64_t temporal_patch_size; /* frames per patch: 2; a still image is repeated */
    int64_t merge_size;          /* spatial merge: 2 (merge^2 patches -> one LM token) */
    omnic__resample resample;    /* 2 bilinear, 3 bicubic (the default) */
    bool do_rescale;
    double rescale_factor; /* 1/255 */
    bool do_normalize;
    double image_mean[3], image_std[3];
    omnic__image_numerics numerics; /* torchvision (HF default for these classes) or PIL */
} omnic__qwen2vl_proc_params;

/* What one image becomes. */
typedef struct omnic__qwen2vl_grid {
    int64_t t, h, w;                       /* image_grid_thw, in patches (t = 1 for an image) */
    int64_t resized_height, resized_width; /* pixels after smart_resize (= h, w * patch_size) */
    int64_t n_patches;                     /* t * h * w: rows of pixel_values */
    int64_t row_len;                       /* 3 * temporal_patch_size * patch_size^2: its columns */
    int64_t n_tokens;                      /* t * h * w / merge^2: <|image_pad|> tokens in the prompt */
} omnic__qwen2vl_grid;

/* Qwen2VLImageProcessor's class defaults: min_pixels 56*56, max_pixels 28*28*1280, patch 14,
 * temporal 2, merge 2, bicubic, rescale 1/255, OpenAI CLIP mean/std, torchvision numerics. */
void omnic__qwen2vl_proc_params_defaults(omnic__qwen2vl_proc_params *p);

/* Checks p: patch_size in [1, OMNIC_MAX_VISION_PATCH], temporal_patch_size in [1,
 * OMNIC_MAX_VISION_TEMPORAL_PATCH], merge_size in [1, OMNIC_MAX_VISION_MERGE], 1 <= min_pixels <=
 * max_pixels <= 2^53, min_pixels <= OMNIC_MAX_IMAGE_PIXELS, known resample / numerics, a valid
 * normalisation (omnic__norm_lut_init). E_INVALID naming the field and the value. */
omnic_status omnic__qwen2vl_proc_params_check(const omnic__qwen2vl_proc_params *p, omnic_err *err);

/* Per-request override of the pixel bounds (the processor call's min_pixels / max_pixels
 * arguments): 0 keeps p's value; a given value must lie in [1, OMNIC_MAX_IMAGE_PIXELS] and the
 * resulting min_pixels <= max_pixels. E_INVALID naming the value and the bound; p untouched on
 * failure. */
omnic_status omnic__qwen2vl_set_pixel_bounds(omnic__qwen2vl_proc_params *p, int64_t min_pixels,
                                             int64_t max_pixels, omnic_err *err);

/* Hugging Face smart_resize (transformers 4.5x), in double arithmetic as Python does it:
 * refuses height or width < factor and max(h, w) / min(h, w) > 200 (E_INVALID naming the size
 * and the ratio); h' = round_half_even(h / factor) * factor, w' likewise; if h'w' > max_pixels:
 * beta = sqrt(h * w / max_pixels), h' = floor(h / beta / factor) * factor (w' likewise); else
 * if h'w' < min_pixels: beta = sqrt(min_pixels / (h * w)), h' = ceil(h * beta / factor) *
 * factor. A side that comes out 0 (4.5x would then fail inside the resize; v5 clamps it to
 * factor) is E_INVALID. height, width in [1, 2^32], factor >= 1, 1 <= min_pixels, max_pixels <=
 * 2^53; E_TOO_LARGE when the result exceeds OMNIC_MAX_IMAGE_SIDE / OMNIC_MAX_IMAGE_PIXELS. */
omnic_status omnic__qwen2vl_smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                         int64_t max_pixels, int64_t *out_height, int64_t *out_width,
                                         omnic_err *err);

/* The grid an in_w x in_h image gets, before any allocation (token counting for admission).
 * Without do_resize the image keeps its size, which must then be a multiple of patch * merge
 * (else E_INVALID: HF's reshape fails). Errors as omnic__qwen2vl_proc_params_check and
 * omnic__qwen2vl_smart_resize. *grid untouched on failure. */
omnic_status omnic__qwen2vl_grid_for_size(const omnic__qwen2vl_proc_params *p, int64_t in_w, int64_t in_h,
                                          omnic__qwen2vl_grid *grid, omnic_err *err);

/* Runs the processor on img (borrows): returns owned *pixel_values, f32 [grid.n_patches,
 * grid.row_len] named "pixel_values" (destroy with omnic__tensor_destroy), and *grid. Row r =
 * ((tt * h/m + by) * w/m + bx) * m^2 + iy * m + ix holds the patch at grid row by * m + iy,
 * column bx * m + ix of frame group tt; column ((c * temporal + f) * patch + dy) * patch + dx
 * holds channel c of frame f at pixel (patch row + dy, patch column + dx); every frame of a
 * still image is the image. Errors as omnic__qwen2vl_grid_for_size, plus E_NOMEM; outputs
 * untouched on failure. */
omnic_status omnic__qwen2vl_preprocess(const omnic__image *img, const omnic__qwen2vl_proc_params *p,
                                       omnic__tensor **pixel_values, omnic__qwen2vl_grid *grid,
                                       omnic_err *err);

#endif
