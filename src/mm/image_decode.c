/* Image decode: JPEG (libjpeg-turbo), PNG (libpng), WebP (libwebp) from memory into RGB8, with
 * the header's dimensions checked before any pixel memory exists, then the EXIF orientation
 * applied: Pillow's decoders followed by Hugging Face `load_image` (exif_transpose, convert("RGB")). */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

#include "core/limits.h"
#include "mm/exif.h"
#include "mm/image.h"

/* Progressive JPEG scans accepted; real files have about 10, crafted ones can have thousands,
 * each a full pass over the coefficients (libjpeg-turbo's own fuzzers stop at 500). */
#define JPEG_MAX_SCANS 500

/* ---- image buffer ------------------------------------------------------------------------- */

omnic_status omnic__image_alloc(omnic__image *out, int64_t width, int64_t height, omnic_err *err)
{
    size_t n;
    if (width < 1 || height < 1)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "image size %lldx%lld: both sides must be >= 1",
                          (long long)width, (long long)height);
    if (!omnic_size_mul(&n, (size_t)width, (size_t)height) || !omnic_size_mul(&n, n, 3))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "image size %lldx%lld overflows", (long long)width,
                          (long long)height);
    uint8_t *p = omnic_alloc_array(n, 1);
    if (!p)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a %lldx%lld image (%zu bytes)",
                          (long long)width, (long long)height, n);
    out->width = width;
    out->height = height;
    out->data = p;
    return OMNIC_OK;
}

void omnic__image_deinit(omnic__image *img)
{
    if (!img) return;
    omnic_free(img->data);
    img->data = NULL;
    img->width = img->height = 0;
}

/* ---- sniffing ----------------------------------------------------------------------------- */

omnic__image_format omnic__image_sniff(const uint8_t *b, size_t n)
{
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return OMNIC__IMAGE_JPEG;
    if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8)) return OMNIC__IMAGE_PNG;
    if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4)) return OMNIC__IMAGE_WEBP;
    if (n >= 6 && (!memcmp(b, "GIF87a", 6) || !memcmp(b, "GIF89a", 6))) return OMNIC__IMAGE_GIF;
    if (n >= 2 && b[0] == 'B' && b[1] == 'M') return OMNIC__IMAGE_BMP;
    if (n >= 4 && (!memcmp(b, "II*\0", 4) || !memcmp(b, "MM\0*", 4))) return OMNIC__IMAGE_TIFF;
    if (n >= 4 && !memcmp(b, "\0\0\1\0", 4)) return OMNIC__IMAGE_ICO;
    if (n >= 12 && !memcmp(b + 4, "ftyp", 4)) return OMNIC__IMAGE_HEIF;
    return OMNIC__IMAGE_UNKNOWN;
}

const char *omnic__image_format_name(omnic__image_format f)
{
    switch (f) {
    case OMNIC__IMAGE_JPEG:
        return "JPEG";
    case OMNIC__IMAGE_PNG:
        return "PNG";
    case OMNIC__IMAGE_WEBP:
        return "WebP";
    case OMNIC__IMAGE_GIF:
        return "GIF";
    case OMNIC__IMAGE_BMP:
        return "BMP";
    case OMNIC__IMAGE_TIFF:
        return "TIFF";
    case OMNIC__IMAGE_ICO:
        return "ICO";
    case OMNIC__IMAGE_HEIF:
        return "AVIF/HEIF";
    default:
        return "unknown";
    }
}

const char *omnic__image_format_mime(omnic__image_format f)
{
    switch (f) {
    case OMNIC__IMAGE_JPEG:
        return "image/jpeg";
    case OMNIC__IMAGE_PNG:
        return "image/png";
    case OMNIC__IMAGE_WEBP:
        return "image/webp";
    default:
        return NULL;
    }
}

/* ---- shared pieces ------------------------------------------------------------------------ */

/* Pillow's MULDIV255: (a * b + 128) / 255 rounded, by shifts. */
static uint32_t muldiv255(uint32_t a, uint32_t b)
{
    uint32_t t = a * b + 128u;
    return ((t >> 8) + t) >> 8;
}

static omnic_status check_dims(const char *fmt, int64_t w, int64_t h, const omnic__image_limits *lim,
                               omnic_err *err)
{
    int64_t max_pixels = lim && lim->max_pixels > 0 ? lim->max_pixels : OMNIC_MAX_IMAGE_PIXELS;
    int64_t max_side = lim && lim->max_side > 0 ? lim->max_side : OMNIC_MAX_IMAGE_SIDE;
    if (w < 1 || h < 1)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: image size %lldx%lld is empty", fmt, (long long)w,
                          (long long)h);
    if (w > max_side || h > max_side)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "%s: image is %lldx%lld (width x height), over the %lld pixel limit per side", fmt,
                          (long long)w, (long long)h, (long long)max_side);
    int64_t pixels;
    if (__builtin_mul_overflow(w, h, &pixels) || pixels > max_pixels)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "%s: image is %lldx%lld (width x height), over the %lld pixel limit", fmt,
                          (long long)w, (long long)h, (long long)max_pixels);
    return OMNIC_OK;
}

/* ---- JPEG --------------------------------------------------------------------------------- */

typedef struct jpeg_ctx {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr jerr;
    struct jpeg_progress_mgr progress;
    jmp_buf jmp;
    char msg[200]; /* libjpeg's message (JMSG_LENGTH_MAX), or ours */
    bool too_many_scans;
    bool too_large; /* over the decoder's working-memory limit */
    bool created;
    int orientation;  /* EXIF orientation 1..8 of the first APP1 "Exif" segment */
    uint8_t *row;     /* [width * components] one scanline, owned */
    omnic__image img; /* the result, owned until handed out */
} jpeg_ctx;

static void jpeg_error_exit(j_common_ptr cinfo)
{
    jpeg_ctx *c = (jpeg_ctx *)cinfo->client_data;
    if (cinfo->err->msg_code == JERR_NO_BACKING_STORE) { /* over max_memory_to_use */
        c->too_large = true;
        snprintf(c->msg, sizeof c->msg,
                 "decoding needs more than %ld bytes of working memory (a progressive %ux%u image; the "
                 "limit is OMNIC_MAX_JPEG_DECODER_BYTES)",
                 cinfo->mem->max_memory_to_use, ((j_decompress_ptr)cinfo)->image_width,
                 ((j_decompress_ptr)cinfo)->image_height);
    } else {
        (*cinfo->err->format_message)(cinfo, c->msg);
    }
    longjmp(c->jmp, 1);
}

static void jpeg_emit(j_common_ptr cinfo, int level)
{
    /* Warnings (level -1) are data problems libjpeg works around. A file that ends early is one
     * Pillow refuses ("image file is truncated"), so it is an error here too; others are ignored
     * as Pillow ignores them. */
    if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_error_exit(cinfo);
}

static void jpeg_progress(j_common_ptr cinfo)
{
    jpeg_ctx *c = (jpeg_ctx *)cinfo->client_data;
    if (cinfo->is_decompressor && ((j_decompress_ptr)cinfo)->input_scan_number > JPEG_MAX_SCANS) {
        c->too_many_scans = true;
        snprintf(c->msg, sizeof c->msg, "more than %d progressive scans", JPEG_MAX_SCANS);
        longjmp(c->jmp, 1);
    }
}

/* Runs with c owned by the caller, so nothing it changes lives in this frame across longjmp. */
static omnic_status jpeg_run(jpeg_ctx *c, const uint8_t *buf, size_t len, const omnic__image_limits *lim,
                             omnic_err *err)
{
    c->cinfo.err = jpeg_std_error(&c->jerr);
    c->jerr.error_exit = jpeg_error_exit;
    c->jerr.emit_message = jpeg_emit;
    c->cinfo.client_data = c;
    if (setjmp(c->jmp))
        return OMNIC_FAIL(err, c->too_large ? OMNIC_E_TOO_LARGE : OMNIC_E_CORRUPT, "JPEG: %s", c->msg);
    jpeg_create_decompress(&c->cinfo);
    c->created = true;
    /* libjpeg-turbo (no backing store) refuses a file whose buffers would pass this, at
     * jpeg_start_decompress, before decoding anything */
    c->cinfo.mem->max_memory_to_use =
        (long)(lim && lim->max_decoder_bytes > 0 ? lim->max_decoder_bytes : OMNIC_MAX_JPEG_DECODER_BYTES);
    c->progress.progress_monitor = jpeg_progress;
    c->cinfo.progress = &c->progress;
    jpeg_mem_src(&c->cinfo, buf, (unsigned long)len);
    /* APP1 segments are kept (each at most 64 KiB, all within the file) for the EXIF orientation:
     * Pillow reads the first APP1 whose payload starts "Exif\0". */
    jpeg_save_markers(&c->cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&c->cinfo, TRUE);
    c->orientation = 1;
    for (jpeg_saved_marker_ptr m = c->cinfo.marker_list; m; m = m->next) {
        if (m->marker != JPEG_APP0 + 1 || m->data_length < 5 || memcmp(m->data, "Exif\0", 5) != 0) continue;
        c->orientation = omnic__exif_orientation(m->data, m->data_length, NULL);
        break;
    }
    OMNIC_TRY(check_dims("JPEG", (int64_t)c->cinfo.image_width, (int64_t)c->cinfo.image_height, lim, err));

    /* Pillow: L for greyscale, RGB for YCbCr/RGB, CMYK (read as Adobe-inverted) for CMYK/YCCK. */
    int ncomp;
    switch (c->cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
        c->cinfo.out_color_space = JCS_GRAYSCALE;
        ncomp = 1;
        break;
    case JCS_YCbCr:
    case JCS_RGB:
        c->cinfo.out_color_space = JCS_RGB;
        ncomp = 3;
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        c->cinfo.out_color_space = JCS_CMYK;
        ncomp = 4;
        break;
    default:
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "JPEG: colour space %d with %d components is not supported",
                          (int)c->cinfo.jpeg_color_space, c->cinfo.num_components);
    }
    jpeg_start_decompress(&c->cinfo);
    if (c->cinfo.output_components != ncomp)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "JPEG: decoder gave %d components, expected %d",
                          c->cinfo.output_components, ncomp);
    size_t w = c->cinfo.output_width;
    OMNIC_TRY(omnic__image_alloc(&c->img, (int64_t)w, (int64_t)c->cinfo.output_height, err));
    c->row = omnic_alloc_array(w, (size_t)ncomp);
    if (!c->row) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "JPEG: out of memory for a %zu pixel row", w);
    while (c->cinfo.output_scanline < c->cinfo.output_height) {
        size_t y = c->cinfo.output_scanline;
        JSAMPROW rows[1] = {c->row};
        if (jpeg_read_scanlines(&c->cinfo, rows, 1) != 1)
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "JPEG: no data for row %zu", y);
        uint8_t *o = c->img.data + y * w * 3;
        const uint8_t *r = c->row;
        if (ncomp == 3) {
            memcpy(o, r, w * 3);
        } else if (ncomp == 1) {
            for (size_t x = 0; x < w; x++)
                o[3 * x] = o[3 * x + 1] = o[3 * x + 2] = r[x];
        } else {
            /* Pillow unpacks "CMYK;I" (inverted), then cmyk2rgb. */
            for (size_t x = 0; x < w; x++) {
                uint32_t nk = r[4 * x + 3]; /* 255 - (255 - raw k) */
                for (int ch = 0; ch < 3; ch++) {
                    uint32_t cv = 255u - r[4 * x + (size_t)ch];
                    uint32_t v = nk - muldiv255(cv, nk); /* cv <= 255: muldiv255 <= nk */
                    o[3 * x + (size_t)ch] = (uint8_t)v;
                }
            }
        }
    }
    jpeg_finish_decompress(&c->cinfo);
    return OMNIC_OK;
}

static omnic_status decode_jpeg(const uint8_t *buf, size_t len, const omnic__image_limits *lim,
                                omnic__image *out, int *orientation, omnic_err *err)
{
    jpeg_ctx *c = omnic_alloc_array(1, sizeof *c);
    if (!c) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "JPEG: out of memory for the decoder");
    omnic_status rc = jpeg_run(c, buf, len, lim, err);
    if (c->created) jpeg_destroy_decompress(&c->cinfo);
    omnic_free(c->row);
    if (rc == OMNIC_OK) {
        *out = c->img;
        *orientation = c->orientation;
    } else {
        omnic__image_deinit(&c->img);
    }
    omnic_free(c);
    return rc;
}

/* ---- PNG ---------------------------------------------------------------------------------- */

typedef struct png_ctx {
    png_structp png;
    png_infop info;
    jmp_buf jmp;
    char msg[256];
    const uint8_t *buf;
    size_t len, pos;
    uint8_t *rows;    /* decoded rows before colour conversion, owned */
    omnic__image img; /* the result, owned until handed out */
} png_ctx;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_ctx *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    longjmp(c->jmp, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void png_on_read(png_structp png, png_bytep data, size_t n)
{
    png_ctx *c = png_get_io_ptr(png);
    if (n > c->len - c->pos) png_error(png, "file is truncated");
    memcpy(data, c->buf + c->pos, n);
    c->pos += n;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static omnic_status png_run(png_ctx *c, const omnic__image_limits *lim, omnic_err *err)
{
    /* The size is in IHDR, the first chunk: check it before libpng sees anything (libpng's own
     * limits would reject huge sizes with its own message). */
    if (c->len < 33 || memcmp(c->buf + 12, "IHDR", 4) != 0)
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "PNG: %s",
                          c->len < 33 ? "file is truncated" : "IHDR is not the first chunk");
    OMNIC_TRY(check_dims("PNG", be32(c->buf + 16), be32(c->buf + 20), lim, err));

    c->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, c, png_on_error, png_on_warning);
    if (!c->png) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "PNG: out of memory for the decoder");
    if (setjmp(c->jmp)) return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "PNG: %s", c->msg);
    c->info = png_create_info_struct(c->png);
    if (!c->info) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "PNG: out of memory for the decoder");
    png_set_read_fn(c->png, c, png_on_read);
    /* Ancillary data is not used by the pixels: bound what chunks may expand to and how many are
     * kept, skip unknown chunks, and skip the variable-length ones libpng would otherwise buffer
     * whole (it allocates a text chunk's declared length, up to 2^31, before reading it). EXIF
     * and XMP come from mm/exif.c's own walk over the file. */
    static const png_byte skipped[] = "tEXt\0zTXt\0iTXt\0eXIf\0iCCP\0sPLT\0pCAL\0sCAL";
    png_set_chunk_malloc_max(c->png, (png_alloc_size_t)8 << 20);
    png_set_chunk_cache_max(c->png, 128);
    png_set_keep_unknown_chunks(c->png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
    png_set_keep_unknown_chunks(c->png, PNG_HANDLE_CHUNK_NEVER, skipped, (int)(sizeof skipped / 5));
    png_read_info(c->png, c->info);

    png_uint_32 w32, h32;
    int depth, ctype, interlace;
    png_get_IHDR(c->png, c->info, &w32, &h32, &depth, &ctype, &interlace, NULL, NULL);
    OMNIC_TRY(check_dims("PNG", w32, h32, lim, err));
    size_t w = w32, h = h32;

    /* Alpha is dropped as Pillow's convert("RGB") drops it: a palette's tRNS and a grey or RGB
     * colour key are not expanded (libpng then leaves them out), an alpha channel is read and
     * skipped. */
    if (ctype == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(c->png);
    else if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(c->png); /* v * 255 / (2^depth - 1), as Pillow's unpackers */
    if (depth == 16 && ctype != PNG_COLOR_TYPE_GRAY) png_set_strip_16(c->png); /* high byte ("RGB;16B") */
    if (interlace != PNG_INTERLACE_NONE) png_set_interlace_handling(c->png);
    png_read_update_info(c->png, c->info);

    int channels = png_get_channels(c->png, c->info);
    int out_depth = png_get_bit_depth(c->png, c->info);
    size_t rowbytes = png_get_rowbytes(c->png, c->info);
    size_t bps = out_depth == 16 ? 2 : 1;
    if (channels < 1 || channels > 4 || (out_depth != 8 && out_depth != 16) ||
        rowbytes != w * (size_t)channels * bps || (bps == 2 && channels != 1))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "PNG: unexpected layout after transforms (%d channels, depth %d)", channels,
                          out_depth);

    OMNIC_TRY(omnic__image_alloc(&c->img, (int64_t)w, (int64_t)h, err));
    size_t nrows = interlace != PNG_INTERLACE_NONE ? h : 1, total;
    if (!omnic_size_mul(&total, rowbytes, nrows) || !(c->rows = omnic_alloc_array(total, 1)))
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "PNG: out of memory for %zu rows of %zu bytes", nrows,
                          rowbytes);
    if (interlace != PNG_INTERLACE_NONE) {
        int passes = png_set_interlace_handling(c->png);
        for (int p = 0; p < passes; p++)
            for (size_t y = 0; y < h; y++)
                png_read_row(c->png, c->rows + y * rowbytes, NULL);
    }
    for (size_t y = 0; y < h; y++) {
        const uint8_t *r = c->rows + (interlace != PNG_INTERLACE_NONE ? y * rowbytes : 0);
        if (interlace == PNG_INTERLACE_NONE) png_read_row(c->png, c->rows, NULL);
        uint8_t *o = c->img.data + y * w * 3;
        for (size_t x = 0; x < w; x++) {
            uint8_t v;
            switch (channels) {
            case 1:
                /* 16-bit grey is Pillow mode "I": clipped to 0..255, not scaled. */
                v = bps == 2 ? (r[2 * x] ? 255 : r[2 * x + 1]) : r[x];
                o[3 * x] = o[3 * x + 1] = o[3 * x + 2] = v;
                break;
            case 2: /* LA: the grey, alpha dropped */
                o[3 * x] = o[3 * x + 1] = o[3 * x + 2] = r[2 * x];
                break;
            case 3:
                memcpy(o + 3 * x, r + 3 * x, 3);
                break;
            default: /* RGBA: the stored colour, alpha dropped */
                memcpy(o + 3 * x, r + 4 * x, 3);
                break;
            }
        }
    }
    png_read_end(c->png, NULL);
    return OMNIC_OK;
}

static omnic_status decode_png(const uint8_t *buf, size_t len, const omnic__image_limits *lim,
                               omnic__image *out, omnic_err *err)
{
    png_ctx *c = omnic_alloc_array(1, sizeof *c);
    if (!c) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "PNG: out of memory for the decoder");
    c->buf = buf;
    c->len = len;
    omnic_status rc = png_run(c, lim, err);
    if (c->png) png_destroy_read_struct(&c->png, c->info ? &c->info : NULL, NULL);
    omnic_free(c->rows);
    if (rc == OMNIC_OK)
        *out = c->img;
    else
        omnic__image_deinit(&c->img);
    omnic_free(c);
    return rc;
}

/* ---- WebP --------------------------------------------------------------------------------- */

static const char *webp_status_str(VP8StatusCode s)
{
    switch (s) {
    case VP8_STATUS_OUT_OF_MEMORY:
        return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
        return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
        return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
        return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
        return "suspended";
    case VP8_STATUS_USER_ABORT:
        return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA:
        return "file is truncated";
    default:
        return "error";
    }
}

static omnic_status decode_webp(const uint8_t *buf, size_t len, const omnic__image_limits *lim,
                                omnic__image *out, omnic_err *err)
{
    WebPBitstreamFeatures f;
    VP8StatusCode s = WebPGetFeatures(buf, len, &f);
    if (s != VP8_STATUS_OK) return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "WebP: %s", webp_status_str(s));
    OMNIC_TRY(check_dims("WebP", f.width, f.height, lim, err));
    if (f.has_animation)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "WebP: animated images are not supported");

    omnic__image img = {0};
    OMNIC_TRY(omnic__image_alloc(&img, f.width, f.height, err));
    size_t w = (size_t)f.width, h = (size_t)f.height;
    /* Pillow: mode "RGBX" -> "RGB", or "RGBA" whose convert("RGB") drops alpha; libwebp's RGB
     * output is those colour samples (not premultiplied, not blended). */
    if (!WebPDecodeRGBInto(buf, len, img.data, w * h * 3, (int)(w * 3))) {
        omnic__image_deinit(&img);
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT, "WebP: cannot decode the image data");
    }
    *out = img;
    return OMNIC_OK;
}

/* ---- entry -------------------------------------------------------------------------------- */

/* The format's decoder: pixels as stored, and in *orientation the EXIF orientation (1..8) to apply. */
static omnic_status decode_stored(const uint8_t *buf, size_t len, const omnic__image_limits *limits,
                                  omnic__image *out, int *orientation, omnic_err *err)
{
    omnic__image_format f = omnic__image_sniff(buf, len);
    *orientation = 1;
    switch (f) {
    case OMNIC__IMAGE_JPEG:
        return decode_jpeg(buf, len, limits, out, orientation, err);
    case OMNIC__IMAGE_PNG: {
        OMNIC_TRY(decode_png(buf, len, limits, out, err));
        omnic_status rc = omnic__exif_orientation_png(buf, len, orientation, err);
        if (rc != OMNIC_OK) omnic__image_deinit(out);
        return rc;
    }
    case OMNIC__IMAGE_WEBP:
        OMNIC_TRY(decode_webp(buf, len, limits, out, err));
        *orientation = omnic__exif_orientation_webp(buf, len);
        return OMNIC_OK;
    case OMNIC__IMAGE_UNKNOWN:
        return OMNIC_FAIL(
            err, OMNIC_E_UNSUPPORTED,
            "image: unrecognised format (%zu bytes, not JPEG, PNG or WebP); supported: JPEG, PNG, WebP", len);
    default:
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "image: %s images are not supported; supported: JPEG, PNG, WebP",
                          omnic__image_format_name(f));
    }
}

omnic_status omnic__image_decode(const uint8_t *buf, size_t len, const omnic__image_limits *limits,
                                 omnic__image *out, omnic_err *err)
{
    if (!buf && len) return OMNIC_FAIL(err, OMNIC_E_INVALID, "image: NULL buffer");
    omnic__image img = {0};
    int orientation = 1;
    OMNIC_TRY(decode_stored(buf, len, limits, &img, &orientation, err));
    omnic_status rc = OMNIC_OK;
    if (orientation != 1) {
        /* 5..8 swap the sides: the limits hold for the image the processor sees. */
        const char *fmt = omnic__image_format_name(omnic__image_sniff(buf, len));
        bool swap = orientation >= 5;
        rc = check_dims(fmt, swap ? img.height : img.width, swap ? img.width : img.height, limits, err);
        omnic__image oriented = {0};
        if (rc == OMNIC_OK) rc = omnic__image_transpose(&img, orientation, &oriented, err);
        if (rc == OMNIC_OK) {
            omnic__image_deinit(&img);
            img = oriented;
        }
    }
    if (rc != OMNIC_OK) {
        omnic__image_deinit(&img);
        return rc;
    }
    *out = img;
    return OMNIC_OK;
}
