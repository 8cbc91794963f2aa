/* Gemma 3's pan-and-scan (Gemma3ImageProcessor.pan_and_scan, transformers 4.57.6): an image far
 * from square is also cut into 2..max_crops crops along its long side, each then processed as an
 * image of its own. The decision and the grid use Python's float arithmetic exactly (double). */
#ifndef OMNIC_MM_PAN_AND_SCAN_H
#define OMNIC_MM_PAN_AND_SCAN_H

#include "mm/image.h"

typedef struct omnic__pan_and_scan {
    int64_t min_crop;  /* pan_and_scan_min_crop_size (Gemma3Processor's default 256), >= 1 */
    int64_t max_crops; /* pan_and_scan_max_num_crops (4), >= 2 */
    double min_ratio;  /* pan_and_scan_min_ratio_to_activate (1.2) */
} omnic__pan_and_scan;

/* The crop grid of a w x h image: n_w x n_h crops (one of them 1) of crop_w x crop_h, the
 * last one in each direction clipped at the border. Returns the number of crops; 0 when the
 * image is too square or the crops would be smaller than min_crop (no pan-and-scan). */
int64_t omnic__pan_and_scan_grid(const omnic__pan_and_scan *p, int64_t w, int64_t h, int64_t *n_w,
                                 int64_t *n_h, int64_t *crop_w, int64_t *crop_h);

/* Crop k (row-major over the n_w x n_h grid) of img (borrowed) into *out (owned): pixels
 * [(k / n_w) * crop_h, + crop_h) x [(k % n_w) * crop_w, + crop_w) clipped at the border, as
 * numpy slicing does. E_INVALID for a k outside the grid, E_NOMEM. */
omnic_status omnic__pan_and_scan_crop(const omnic__image *img, int64_t n_w, int64_t n_h, int64_t crop_w,
                                      int64_t crop_h, int64_t k, omnic__image *out, omnic_err *err);

#endif
