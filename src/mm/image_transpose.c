/* EXIF orientation applied to pixels: Pillow's Image.transpose with the method
 * ImageOps.exif_transpose picks for each orientation value. */
#include <string.h>

#include "mm/image.h"

omnic_status omnic__image_transpose(const omnic__image *src, int orientation, omnic__image *out,
                                    omnic_err *err)
{
    if (orientation < 1 || orientation > 8)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "image: EXIF orientation %d is not 1..8", orientation);
    const size_t w = (size_t)src->width, h = (size_t)src->height;
    const bool swap = orientation >= 5; /* TRANSPOSE, ROTATE_270, TRANSVERSE, ROTATE_90 */
    omnic__image img = {0};
    OMNIC_TRY(
        omnic__image_alloc(&img, swap ? src->height : src->width, swap ? src->width : src->height, err));
    const size_t ow = (size_t)img.width, oh = (size_t)img.height;
    for (size_t yo = 0; yo < oh; yo++) {
        uint8_t *o = img.data + yo * ow * 3;
        for (size_t xo = 0; xo < ow; xo++) {
            size_t x, y; /* the source pixel of output (xo, yo) */
            switch (orientation) {
            case 2:
                x = w - 1 - xo, y = yo;
                break; /* FLIP_LEFT_RIGHT */
            case 3:
                x = w - 1 - xo, y = h - 1 - yo;
                break; /* ROTATE_180 */
            case 4:
                x = xo, y = h - 1 - yo;
                break; /* FLIP_TOP_BOTTOM */
            case 5:
                x = yo, y = xo;
                break; /* TRANSPOSE */
            case 6:
                x = yo, y = h - 1 - xo;
                break; /* ROTATE_270: 90 degrees clockwise */
            case 7:
                x = w - 1 - yo, y = h - 1 - xo;
                break; /* TRANSVERSE */
            case 8:
                x = w - 1 - yo, y = xo;
                break; /* ROTATE_90: 90 degrees anticlockwise */
            default:
                x = xo, y = yo;
                break;
            }
            memcpy(o + xo * 3, src->data + (y * w + x) * 3, 3);
        }
    }
    *out = img;
    return OMNIC_OK;
}
