/* Images: an owned RGB8 buffer, decoding JPEG / PNG / WebP from memory into it (EXIF orientation
 * and colour conversion exactly as Hugging Face `load_image`: Pillow's exif_transpose, then
 * convert("RGB")), and the uint8 -> uint8 /
 * uint8 -> f32 operations of image processors: separable resampling (Pillow-exact and the
 * ATen/torchvision uint8 variant), centre crop, and rescale + normalise through per-channel
 * lookup tables. See docs: reference/families-qwen-llava.md section 2. */
#ifndef OMNIC_MM_IMAGE_H
#define OMNIC_MM_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* A decoded image. Caller-allocated; data is owned (omnic__image_deinit frees it). */
typedef struct omnic__image {
    int64_t width;  /* pixels, >= 1 */
    int64_t height; /* pixels, >= 1 */
    uint8_t *data;  /* [height, width, 3] RGB8, row-major (HWC), owned */
} omnic__image;

/* Allocates a zeroed width x height image into *out (no overflow: both >= 1, the product of
 * width * height * 3 is checked). E_INVALID for sizes < 1, E_NOMEM. *out untouched on failure. */
omnic_status omnic__image_alloc(omnic__image *out, int64_t width, int64_t height, omnic_err *err);
/* Frees img->data and zeroes *img; accepts NULL and an already deinitialised image. */
void omnic__image_deinit(omnic__image *img);

/* ---- decode ------------------------------------------------------------------------------ */

/* Container formats recognised from their magic bytes. Only JPEG, PNG and WebP decode. */
typedef enum omnic__image_format {
    OMNIC__IMAGE_UNKNOWN = 0,
    OMNIC__IMAGE_JPEG,
    OMNIC__IMAGE_PNG,
    OMNIC__IMAGE_WEBP,
    OMNIC__IMAGE_GIF,
    OMNIC__IMAGE_BMP,
    OMNIC__IMAGE_TIFF,
    OMNIC__IMAGE_ICO,
    OMNIC__IMAGE_HEIF, /* ISO-BMFF "ftyp" images: AVIF, HEIC */
    OMNIC__IMAGE_FORMAT_COUNT
} omnic__image_format;

/* Format of buf[0..len) by its magic bytes (borrows buf); OMNIC__IMAGE_UNKNOWN when none matches. */
omnic__image_format omnic__image_sniff(const uint8_t *buf, size_t len);
/* "JPEG", "PNG", "WebP", "GIF", "BMP", "TIFF", "ICO", "AVIF/HEIF", "unknown". */
const char *omnic__image_format_name(omnic__image_format f);
/* MIME type of a decodable format ("image/jpeg", "image/png", "image/webp"), else NULL. */
const char *omnic__image_format_mime(omnic__image_format f);

/* Bounds a decode checks against the file's header before any pixel memory is allocated. */
typedef struct omnic__image_limits {
    int64_t max_pixels;        /* width * height; <= 0 means OMNIC_MAX_IMAGE_PIXELS */
    int64_t max_side;          /* width and height each; <= 0 means OMNIC_MAX_IMAGE_SIDE */
    int64_t max_decoder_bytes; /* the JPEG decoder's working memory (a progressive file's coefficient
                                * buffers); <= 0 means OMNIC_MAX_JPEG_DECODER_BYTES */
} omnic__image_limits;

/* Decodes len bytes of buf (borrows) into *out (RGB8, returns owned data) as Hugging Face's
 * load_image opens a file, data: URL or fetched URL: limits may be NULL (the defaults of
 * core/limits.h), checked against the header's size and again on the oriented size.
 * Orientation: the EXIF orientation (JPEG APP1 "Exif", PNG eXIf / text profiles / XMP, WebP EXIF
 * chunk; mm/exif.h) is applied as Pillow's ImageOps.exif_transpose does.
 * Colour: Pillow's convert("RGB"): alpha is dropped, not composited (RGBA keeps its stored RGB,
 * grey+alpha its grey, a palette image with tRNS its palette colours, a tRNS colour key is
 * ignored); grey is replicated; palette is expanded; 16-bit PNG channels keep their high byte,
 * except 16-bit grey, which Pillow opens as mode "I" and clips to 0..255; CMYK/YCCK JPEG goes
 * through Pillow's inverted-CMYK -> RGB conversion. An animated WebP is E_UNSUPPORTED.
 * Errors: E_UNSUPPORTED (GIF, BMP, ... or unknown bytes: names the detected format; unsupported
 * JPEG colour spaces), E_TOO_LARGE (width, height and the exceeded limit named; nothing
 * allocated for pixels), E_CORRUPT (truncated or malformed data: names the format and the
 * decoder's message), E_NOMEM. *out untouched on failure. */
omnic_status omnic__image_decode(const uint8_t *buf, size_t len, const omnic__image_limits *limits,
                                 omnic__image *out, omnic_err *err);

/* src (borrows) transposed as Pillow's Image.transpose with the method ImageOps.exif_transpose
 * picks for EXIF orientation 1..8: 1 a copy, 2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM,
 * 5 TRANSPOSE, 6 ROTATE_270 (90 degrees clockwise), 7 TRANSVERSE, 8 ROTATE_90; 5..8 swap width
 * and height. Into *out (returns owned). E_INVALID (other values), E_NOMEM. *out untouched on
 * failure. */
omnic_status omnic__image_transpose(const omnic__image *src, int orientation, omnic__image *out,
                                    omnic_err *err);

/* ---- resample ---------------------------------------------------------------------------- */

/* Filters, numbered as Pillow's Image.Resampling (and Hugging Face's `resample` field). */
typedef enum omnic__resample {
    OMNIC__RESAMPLE_BILINEAR = 2,
    OMNIC__RESAMPLE_BICUBIC = 3,
} omnic__resample;

/* Whose uint8 numerics to reproduce. */
typedef enum omnic__image_numerics {
    /* Pillow Image.resize (int32 weights, precision 22) and Hugging Face's PIL / "slow" path. */
    OMNIC__NUMERICS_PIL = 0,
    /* torchvision resize(antialias=True) on a CPU uint8 tensor (ATen's int16 weights with a
     * per-axis precision) and Hugging Face's "fast" path (fused rescale + normalise). */
    OMNIC__NUMERICS_TORCHVISION = 1,
} omnic__image_numerics;

/* Resizes src (borrows) to out_width x out_height into *out (returns owned): separable,
 * horizontal pass first, an axis whose size does not change is skipped, the intermediate is
 * uint8; antialiased (support scaled by max(in/out, 1)) as both Pillow and ATen do. Same size:
 * a copy. E_INVALID (size < 1, unknown filter or numerics), E_TOO_LARGE (output over
 * OMNIC_MAX_IMAGE_SIDE or OMNIC_MAX_IMAGE_PIXELS), E_NOMEM. *out untouched on failure. */
omnic_status omnic__image_resize(const omnic__image *src, int64_t out_width, int64_t out_height,
                                 omnic__resample filter, omnic__image_numerics numerics, omnic__image *out,
                                 omnic_err *err);

/* f32 planes (borrowed src [C, H, W], caller-sized dst [C, out_h, out_w]) resized as ATen's
 * upsample_bicubic2d with align_corners=False and no antialias (torch interpolate(mode="bicubic"),
 * torchvision resize(antialias=False) of a float tensor): scale = f32(in / out), source =
 * scale * (d + 0.5) - 0.5, index floor(source) clamped to <= in - 1, weight t clamped to [0, 1],
 * the cubic convolution with A = -0.75, taps clamped to the border; per output value the row
 * taps' sums of the column taps, in f32, in ATen's order. No clamping of the result. E_NOMEM. */
omnic_status omnic__image_bicubic_f32(const float *src, int64_t channels, int64_t height, int64_t width,
                                      int64_t out_h, int64_t out_w, float *dst, omnic_err *err);

/* ---- crop -------------------------------------------------------------------------------- */

typedef enum omnic__crop_rounding {
    /* top = floor((H - crop_h) / 2), left likewise (Hugging Face image_transforms.center_crop,
     * also the v5 torchvision backend); a crop larger than the image pads with zeros, the image
     * placed at ceil((crop - size) / 2). */
    OMNIC__CROP_FLOOR = 0,
    /* torchvision center_crop (Hugging Face v4.5x fast CLIP path): top = round_half_even((H -
     * crop_h) / 2); a larger crop pads with zeros, the image placed at floor((crop - size) / 2). */
    OMNIC__CROP_ROUND_HALF_EVEN = 1,
} omnic__crop_rounding;

/* Centre-crops src (borrows) to crop_width x crop_height into *out (returns owned), padding with
 * zero pixels where the crop is larger than the image. E_INVALID (size < 1), E_TOO_LARGE,
 * E_NOMEM. *out untouched on failure. */
omnic_status omnic__image_center_crop(const omnic__image *src, int64_t crop_width, int64_t crop_height,
                                      omnic__crop_rounding rounding, omnic__image *out, omnic_err *err);

/* ---- rescale + normalise ------------------------------------------------------------------ */

/* uint8 -> f32 per channel, as a table (every output is a function of the byte alone). */
typedef struct omnic__norm_lut {
    float v[3][256];
} omnic__norm_lut;

/* Fills *lut. PIL (numpy) path: x = f32(u8 * rescale_factor) computed in double (or f32(u8)
 * without rescale), y = f32(f32(x - f32(mean)) / f32(std)) with normalisation. torchvision path:
 * with both rescale and normalise, fused: M = f32(f32(mean) * f32(1/rescale_factor)), S likewise,
 * y = f32(f32(u8 - M) / S); rescale only: f32(u8) * f32(rescale_factor); normalise only:
 * (f32(u8) - f32(mean)) / f32(std). mean and std may be NULL when !do_normalize. E_INVALID for a
 * zero or non-finite std, a non-finite mean or rescale factor, or a zero rescale factor. */
omnic_status omnic__norm_lut_init(omnic__norm_lut *lut, omnic__image_numerics numerics, bool do_rescale,
                                  double rescale_factor, bool do_normalize, const double mean[3],
                                  const double std[3], omnic_err *err);

/* Writes img (borrows) through lut as f32 CHW into out[3 * height * width] (borrowed, caller
 * sized: channel c, row y, column x at (c * height + y) * width + x). */
void omnic__image_to_chw(const omnic__image *img, const omnic__norm_lut *lut, float *out);

#endif
