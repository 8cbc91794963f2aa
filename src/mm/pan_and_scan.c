/* Gemma 3's pan-and-scan crops (mm/pan_and_scan.h). */
#include <math.h>
#include <string.h>

#include "mm/pan_and_scan.h"

int64_t omnic__pan_and_scan_grid(const omnic__pan_and_scan *p, int64_t w, int64_t h, int64_t *n_w,
                                 int64_t *n_h, int64_t *crop_w, int64_t *crop_h)
{
    *n_w = *n_h = 1;
    *crop_w = w, *crop_h = h;
    if (w < 1 || h < 1 || p->min_crop < 1) return 0;
    const bool landscape = w >= h; /* square counts as landscape */
    const int64_t lng = landscape ? w : h, shrt = landscape ? h : w;
    if ((double)lng / (double)shrt < p->min_ratio) return 0; /* not exaggerated enough */
    /* crops close to the aspect ratio (half up), each at least min_crop, 2..max_crops of them */
    int64_t n = (int64_t)floor((double)lng / (double)shrt + 0.5);
    const int64_t by_size = (int64_t)floor((double)lng / (double)p->min_crop);
    if (by_size < n) n = by_size;
    if (n < 2) n = 2;
    if (n > p->max_crops) n = p->max_crops;
    if (landscape)
        *n_w = n;
    else
        *n_h = n;
    *crop_w = (int64_t)ceil((double)w / (double)*n_w);
    *crop_h = (int64_t)ceil((double)h / (double)*n_h);
    if ((*crop_w < *crop_h ? *crop_w : *crop_h) < p->min_crop) { /* too small: none */
        *n_w = *n_h = 1;
        *crop_w = w, *crop_h = h;
        return 0;
    }
    return n;
}

omnic_status omnic__pan_and_scan_crop(const omnic__image *img, int64_t n_w, int64_t n_h, int64_t crop_w,
                                      int64_t crop_h, int64_t k, omnic__image *out, omnic_err *err)
{
    if (n_w < 1 || n_h < 1 || k < 0 || k >= n_w * n_h || crop_w < 1 || crop_h < 1)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "pan-and-scan: crop %lld of a %lldx%lld grid", (long long)k,
                          (long long)n_w, (long long)n_h);
    const int64_t x0 = (k % n_w) * crop_w, y0 = (k / n_w) * crop_h;
    const int64_t x1 = x0 + crop_w < img->width ? x0 + crop_w : img->width,
                  y1 = y0 + crop_h < img->height ? y0 + crop_h : img->height;
    if (x1 <= x0 || y1 <= y0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "pan-and-scan: crop %lld of a %lldx%lld image is empty",
                          (long long)k, (long long)img->width, (long long)img->height);
    omnic__image c = {0};
    OMNIC_TRY(omnic__image_alloc(&c, x1 - x0, y1 - y0, err));
    for (int64_t y = y0; y < y1; y++)
        memcpy(c.data + (size_t)((y - y0) * c.width * 3), img->data + (size_t)((y * img->width + x0) * 3),
               (size_t)(c.width * 3));
    *out = c;
    return OMNIC_OK;
}
