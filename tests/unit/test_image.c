/* mm image stage: decode (format sniffing, unsupported formats, size limits checked before any
 * pixel allocation, truncated and corrupt JPEG/PNG/WebP, 1x1 images, alpha dropped as load_image does),
 * data: URLs (strict base64, MIME allowlist, MIME vs magic bytes, byte limit), crop and
 * normalisation tables, the processor's sizes, preprocessor_config.json parsing, and
 * allocation-failure sweeps over decode, data URLs and the processor. Bit-exactness against
 * Pillow / torchvision is tests/e2e/test_image_preprocess.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io_testutil.h"
#include <jpeglib.h>
#include <png.h>
#include <webp/encode.h>

#include "core/alloc.h"
#include "core/limits.h"
#include "io/json.h"
#include "mm/image.h"
#include "mm/image_processor.h"
#include "mm/media_url.h"
#include "mm/pan_and_scan.h"
#include "models/image_processor_config.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* CHECK_ERR(rc, &err, code, substrings...): io_testutil.h's check, with err as a pointer. */
#define CHECK_ERR(rc, errp, code, ...)                                                                       \
    tu_check_err((rc), (errp), (code), __FILE__, __LINE__, (const char *const[]){__VA_ARGS__, NULL})

typedef struct bytes {
    uint8_t *p;
    size_t n;
} bytes;

/* A deterministic RGB(A) test pattern. */
static uint8_t *pattern(int w, int h, int channels)
{
    uint8_t *p = malloc((size_t)(w * h * channels));
    assert_non_null(p);
    for (int i = 0; i < w * h * channels; i++) p[i] = (uint8_t)((i * 37 + (i / channels) * 11) ^ (i >> 5));
    return p;
}

static bytes encode_png(const uint8_t *px, int w, int h, uint32_t format)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    im.width = (png_uint_32)w;
    im.height = (png_uint_32)h;
    im.format = format;
    png_alloc_size_t size = 0;
    assert_true(png_image_write_to_memory(&im, NULL, &size, 0, px, 0, NULL));
    bytes b = {malloc(size), size};
    assert_non_null(b.p);
    assert_true(png_image_write_to_memory(&im, b.p, &size, 0, px, 0, NULL));
    b.n = size;
    return b;
}

static bytes encode_jpeg(const uint8_t *px, int w, int h, int channels)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    unsigned char *out = NULL;
    unsigned long size = 0;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &out, &size);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = channels;
    c.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    jpeg_start_compress(&c, TRUE);
    uint8_t *tmp = malloc((size_t)(w * channels));
    while (c.next_scanline < c.image_height) {
        memcpy(tmp, px + (size_t)c.next_scanline * (size_t)(w * channels), (size_t)(w * channels));
        JSAMPROW row = tmp;
        jpeg_write_scanlines(&c, &row, 1);
    }
    free(tmp);
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    bytes b = {malloc(size), size};
    memcpy(b.p, out, size);
    free(out);
    return b;
}

static bytes encode_webp(const uint8_t *px, int w, int h, bool alpha)
{
    uint8_t *out = NULL;
    size_t n = alpha ? WebPEncodeLosslessRGBA(px, w, h, w * 4, &out) : WebPEncodeLosslessRGB(px, w, h, w * 3, &out);
    assert_true(n > 0);
    bytes b = {malloc(n), n};
    memcpy(b.p, out, n);
    WebPFree(out);
    return b;
}

static uint32_t crc32_png(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Signature + a valid IHDR (8-bit RGB) of w x h: all the decoder needs to learn the size. */
static size_t png_header(uint8_t *buf, uint32_t w, uint32_t h)
{
    memcpy(buf, "\x89PNG\r\n\x1a\n", 8);
    put_be32(buf + 8, 13);
    memcpy(buf + 12, "IHDR", 4);
    put_be32(buf + 16, w);
    put_be32(buf + 20, h);
    buf[24] = 8;
    buf[25] = 2;
    buf[26] = buf[27] = buf[28] = 0;
    put_be32(buf + 29, crc32_png(buf + 12, 17));
    return 33;
}

/* Patches the first SOF marker's height and width. */
static void jpeg_patch_size(bytes *b, uint16_t w, uint16_t h)
{
    for (size_t i = 2; i + 9 < b->n; i++) {
        if (b->p[i] == 0xFF && (b->p[i + 1] == 0xC0 || b->p[i + 1] == 0xC2)) {
            b->p[i + 5] = (uint8_t)(h >> 8);
            b->p[i + 6] = (uint8_t)h;
            b->p[i + 7] = (uint8_t)(w >> 8);
            b->p[i + 8] = (uint8_t)w;
            return;
        }
    }
    fail_msg("no SOF marker");
}

/* ---- decode: formats ---------------------------------------------------------------------- */

static void test_unsupported_formats(void **state)
{
    (void)state;
    omnic_err err;
    omnic__image img = {0};
    static const uint8_t gif[] = "GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00"
                                 "\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
    static const uint8_t bmp[] = "BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00\x01\x00\x00\x00"
                                 "\x01\x00\x00\x00\x01\x00\x18\x00";
    static const uint8_t tiff[] = "II*\x00\x08\x00\x00\x00";
    static const uint8_t avif[] = "\x00\x00\x00\x1c" "ftypavif\x00\x00\x00\x00";
    CHECK_ERR(omnic__image_decode(gif, sizeof gif - 1, NULL, &img, &err), &err, OMNIC_E_UNSUPPORTED, "GIF");
    CHECK_ERR(omnic__image_decode(bmp, sizeof bmp - 1, NULL, &img, &err), &err, OMNIC_E_UNSUPPORTED, "BMP");
    CHECK_ERR(omnic__image_decode(tiff, sizeof tiff - 1, NULL, &img, &err), &err, OMNIC_E_UNSUPPORTED, "TIFF");
    CHECK_ERR(omnic__image_decode(avif, sizeof avif - 1, NULL, &img, &err), &err, OMNIC_E_UNSUPPORTED, "AVIF");
    CHECK_ERR(omnic__image_decode((const uint8_t *)"hello world", 11, NULL, &img, &err), &err, OMNIC_E_UNSUPPORTED,
              "unrecognised");
    CHECK_ERR(omnic__image_decode((const uint8_t *)"", 0, NULL, &img, &err), &err, OMNIC_E_UNSUPPORTED,
              "unrecognised");
    assert_null(img.data);
    assert_int_equal(omnic__image_sniff((const uint8_t *)"\xff\xd8\xff", 3), OMNIC__IMAGE_JPEG);
    assert_int_equal(omnic__image_sniff((const uint8_t *)"RIFF\0\0\0\0WEBP", 12), OMNIC__IMAGE_WEBP);
    assert_int_equal(omnic__image_sniff((const uint8_t *)"RIFF\0\0\0\0WAVE", 12), OMNIC__IMAGE_UNKNOWN);
    assert_string_equal(omnic__image_format_mime(OMNIC__IMAGE_PNG), "image/png");
    assert_null(omnic__image_format_mime(OMNIC__IMAGE_GIF));
}

static void test_one_pixel(void **state)
{
    (void)state;
    omnic_err err;
    omnic__image img = {0};
    const uint8_t px[4] = {12, 200, 77, 255};
    bytes b = encode_png(px, 1, 1, PNG_FORMAT_RGB);
    assert_int_equal(omnic__image_decode(b.p, b.n, NULL, &img, &err), OMNIC_OK);
    assert_int_equal(img.width, 1);
    assert_int_equal(img.height, 1);
    assert_memory_equal(img.data, px, 3);
    omnic__image_deinit(&img);
    free(b.p);

    b = encode_webp(px, 1, 1, false);
    assert_int_equal(omnic__image_decode(b.p, b.n, NULL, &img, &err), OMNIC_OK);
    assert_memory_equal(img.data, px, 3);
    omnic__image_deinit(&img);
    free(b.p);

    b = encode_jpeg(px, 1, 1, 3);
    assert_int_equal(omnic__image_decode(b.p, b.n, NULL, &img, &err), OMNIC_OK);
    assert_int_equal(img.width * img.height, 1);
    for (int c = 0; c < 3; c++) assert_true(abs((int)img.data[c] - (int)px[c]) <= 8);
    omnic__image_deinit(&img);
    free(b.p);

    /* Grey JPEG and grey PNG are replicated to three equal channels. */
    const uint8_t grey = 93;
    b = encode_png(&grey, 1, 1, PNG_FORMAT_GRAY);
    assert_int_equal(omnic__image_decode(b.p, b.n, NULL, &img, &err), OMNIC_OK);
    assert_true(img.data[0] == 93 && img.data[1] == 93 && img.data[2] == 93);
    omnic__image_deinit(&img);
    free(b.p);
    b = encode_jpeg(&grey, 1, 1, 1);
    assert_int_equal(omnic__image_decode(b.p, b.n, NULL, &img, &err), OMNIC_OK);
    assert_true(img.data[0] == img.data[1] && img.data[1] == img.data[2]);
    omnic__image_deinit(&img);
    free(b.p);
    omnic__image_deinit(&img); /* twice is fine */
    omnic__image_deinit(NULL);
}

static void test_alpha_dropped(void **state)
{
    (void)state;
    /* Hugging Face load_image's convert("RGB"): the stored colour stays, even under alpha 0. */
    omnic_err err;
    omnic__image img = {0};
    const uint8_t px[8] = {90, 80, 70, 0, 10, 20, 30, 128};
    bytes b = encode_png(px, 2, 1, PNG_FORMAT_RGBA);
    assert_int_equal(omnic__image_decode(b.p, b.n, NULL, &img, &err), OMNIC_OK);
    const uint8_t want[6] = {90, 80, 70, 10, 20, 30};
    assert_memory_equal(img.data, want, 6);
    omnic__image_deinit(&img);
    free(b.p);
    /* libwebp's lossless encoder may rewrite the colour of fully transparent pixels: not here. */
    const uint8_t wpx[8] = {90, 80, 70, 1, 10, 20, 30, 128};
    b = encode_webp(wpx, 2, 1, true);
    assert_int_equal(omnic__image_decode(b.p, b.n, NULL, &img, &err), OMNIC_OK);
    assert_memory_equal(img.data, want, 6);
    omnic__image_deinit(&img);
    free(b.p);
    const uint8_t la[4] = {77, 0, 200, 9};
    b = encode_png(la, 2, 1, PNG_FORMAT_GA);
    assert_int_equal(omnic__image_decode(b.p, b.n, NULL, &img, &err), OMNIC_OK);
    const uint8_t want_la[6] = {77, 77, 77, 200, 200, 200};
    assert_memory_equal(img.data, want_la, 6);
    omnic__image_deinit(&img);
    free(b.p);
}

/* ---- decode: limits before allocation ------------------------------------------------------ */

static void test_huge_headers_rejected_before_allocation(void **state)
{
    (void)state;
    omnic_err err;
    omnic__image img = {0};
    uint8_t hdr[64];
    size_t n = png_header(hdr, 30000, 30000);
    /* The decoder context is the one allocation allowed; a pixel buffer would be a second and
     * fail with E_NOMEM, so E_TOO_LARGE with no injected failure proves none was attempted. */
    omnic__alloc_fail_after(1);
    CHECK_ERR(omnic__image_decode(hdr, n, NULL, &img, &err), &err, OMNIC_E_TOO_LARGE, "PNG", "30000x30000",
              "89478485");
    assert_int_equal(omnic__alloc_injected_failures(), 0);
    omnic__alloc_fail_after(-1);
    assert_null(img.data);

    /* Per-side limit (and an explicit lower pixel limit). */
    n = png_header(hdr, 40000, 2);
    CHECK_ERR(omnic__image_decode(hdr, n, NULL, &img, &err), &err, OMNIC_E_TOO_LARGE, "40000x2", "per side");
    n = png_header(hdr, 200, 50);
    omnic__image_limits lim = {.max_pixels = 5000, .max_side = 0};
    CHECK_ERR(omnic__image_decode(hdr, n, &lim, &img, &err), &err, OMNIC_E_TOO_LARGE, "200x50", "5000");
    lim = (omnic__image_limits){.max_pixels = 0, .max_side = 100};
    CHECK_ERR(omnic__image_decode(hdr, n, &lim, &img, &err), &err, OMNIC_E_TOO_LARGE, "200x50", "100");
    /* 0 x N is corrupt, not huge; uint32 sizes past INT32 are too large, not overflowed. */
    n = png_header(hdr, 0, 10);
    CHECK_ERR(omnic__image_decode(hdr, n, NULL, &img, &err), &err, OMNIC_E_CORRUPT, "0x10");
    n = png_header(hdr, 0xFFFFFFFFu, 0xFFFFFFFFu);
    CHECK_ERR(omnic__image_decode(hdr, n, NULL, &img, &err), &err, OMNIC_E_TOO_LARGE, "4294967295");

    /* JPEG: a real file whose SOF says 30000x30000. */
    uint8_t *px = pattern(16, 16, 3);
    bytes b = encode_jpeg(px, 16, 16, 3);
    jpeg_patch_size(&b, 30000, 30000);
    omnic__alloc_fail_after(1);
    CHECK_ERR(omnic__image_decode(b.p, b.n, NULL, &img, &err), &err, OMNIC_E_TOO_LARGE, "JPEG", "30000x30000",
              "89478485");
    assert_int_equal(omnic__alloc_injected_failures(), 0);
    omnic__alloc_fail_after(-1);
    free(b.p);

    /* WebP: sizes top out at 16383, so use a lowered limit; no allocation at all before the check. */
    bytes w = encode_webp(px, 16, 16, false);
    lim = (omnic__image_limits){.max_pixels = 100, .max_side = 0};
    omnic__alloc_fail_after(0);
    CHECK_ERR(omnic__image_decode(w.p, w.n, &lim, &img, &err), &err, OMNIC_E_TOO_LARGE, "WebP", "16x16", "100");
    assert_int_equal(omnic__alloc_injected_failures(), 0);
    omnic__alloc_fail_after(-1);
    free(w.p);
    free(px);
    assert_null(img.data);
}

/* ---- decode: truncated and corrupt ---------------------------------------------------------- */

/* Every prefix of b shorter than b->n - slack must fail with a message (never crash or leak);
 * then flipped bytes anywhere must give OK or an error with a message. */
static void truncate_and_corrupt(const bytes *b, size_t slack, const char *fmt)
{
    omnic_err err;
    omnic__image img = {0};
    for (size_t n = 0; n + slack < b->n; n += (n < 64 ? 1 : 7)) {
        omnic_status rc = omnic__image_decode(b->p, n, NULL, &img, &err);
        if (rc == OMNIC_OK) fail_msg("%s truncated to %zu of %zu bytes decoded", fmt, n, b->n);
        assert_true(err.msg[0] != 0);
        assert_null(img.data);
        if (n >= 16 && rc != OMNIC_E_CORRUPT && rc != OMNIC_E_UNSUPPORTED)
            fail_msg("%s truncated to %zu: %s (%s)", fmt, n, omnic_status_name(rc), err.msg);
    }
    uint8_t *copy = malloc(b->n);
    for (size_t i = 8; i < b->n; i += 3) {
        memcpy(copy, b->p, b->n);
        copy[i] ^= (uint8_t)(0x5A + i);
        omnic_status rc = omnic__image_decode(copy, b->n, NULL, &img, &err);
        if (rc == OMNIC_OK) omnic__image_deinit(&img);
        else assert_true(err.msg[0] != 0);
    }
    free(copy);
}

static void test_truncated_and_corrupt(void **state)
{
    (void)state;
    uint8_t *px = pattern(48, 40, 4);
    bytes png = encode_png(px, 48, 40, PNG_FORMAT_RGBA);
    truncate_and_corrupt(&png, 0, "PNG");
    bytes jpg = encode_jpeg(px, 48, 40, 3);
    truncate_and_corrupt(&jpg, 2, "JPEG");
    bytes wp = encode_webp(px, 48, 40, true);
    truncate_and_corrupt(&wp, 0, "WebP");

    omnic_err err;
    omnic__image img = {0};
    CHECK_ERR(omnic__image_decode(png.p, png.n / 2, NULL, &img, &err), &err, OMNIC_E_CORRUPT, "PNG");
    CHECK_ERR(omnic__image_decode(jpg.p, jpg.n / 2, NULL, &img, &err), &err, OMNIC_E_CORRUPT, "JPEG");
    CHECK_ERR(omnic__image_decode(wp.p, wp.n / 2, NULL, &img, &err), &err, OMNIC_E_CORRUPT, "WebP");
    free(px);
    free(png.p);
    free(jpg.p);
    free(wp.p);
}

/* ---- data URLs ---------------------------------------------------------------------------- */

static char *b64_encode(const uint8_t *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc((n + 2) / 3 * 4 + 1), *q = o;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *q++ = tab[v >> 18];
        *q++ = tab[(v >> 12) & 63];
        *q++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *q++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *q = 0;
    return o;
}

static omnic_status durl(const char *url, size_t max, uint8_t **out, size_t *n, omnic_err *err)
{
    return omnic__data_url_decode(url, strlen(url), max, out, n, NULL, err);
}

static void test_data_urls(void **state)
{
    (void)state;
    omnic_err err;
    uint8_t *px = pattern(5, 4, 3);
    bytes png = encode_png(px, 5, 4, PNG_FORMAT_RGB);
    char *b64 = b64_encode(png.p, png.n);
    char url[4096];
    uint8_t *out = NULL;
    size_t n = 0;
    omnic__image_format f = OMNIC__IMAGE_UNKNOWN;

    snprintf(url, sizeof url, "data:image/png;base64,%s", b64);
    assert_int_equal(omnic__data_url_decode(url, strlen(url), 0, &out, &n, &f, &err), OMNIC_OK);
    assert_int_equal(n, png.n);
    assert_memory_equal(out, png.p, n);
    assert_int_equal(f, OMNIC__IMAGE_PNG);
    omnic_free(out);
    out = NULL;
    /* MIME is case-insensitive; parameters before ;base64 are allowed. */
    snprintf(url, sizeof url, "DATA:Image/PNG;name=x.png;base64,%s", b64);
    assert_int_equal(durl(url, 0, &out, &n, &err), OMNIC_OK);
    omnic_free(out);
    out = NULL;

    /* Bad base64: a character outside the alphabet, whitespace, bad padding, bad length. */
    snprintf(url, sizeof url, "data:image/png;base64,iVBO*w0KGgo=");
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "'*'", "offset 4");
    snprintf(url, sizeof url, "data:image/png;base64,iVBORw0K Ggo=");
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "' '", "offset 8");
    snprintf(url, sizeof url, "data:image/png;base64,iV=ORw0K");
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "offset 2");
    snprintf(url, sizeof url, "data:image/png;base64,iVBORw0KGgo");
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "multiple of 4");
    snprintf(url, sizeof url, "data:image/png;base64,iVBORw0KGgp=");
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "unused bits");
    snprintf(url, sizeof url, "data:image/png;base64,");
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "empty");

    /* MIME allowlist and header form. */
    snprintf(url, sizeof url, "data:image/gif;base64,%s", b64);
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "image/gif", "not accepted");
    snprintf(url, sizeof url, "data:text/plain;base64,%s", b64);
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "text/plain");
    snprintf(url, sizeof url, "data:image/png,%s", b64);
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "base64");
    snprintf(url, sizeof url, "data:;base64,%s", b64);
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "missing");
    snprintf(url, sizeof url, "https://example.com/x.png");
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "not a data: URL");

    /* Declared type vs magic bytes. */
    snprintf(url, sizeof url, "data:image/jpeg;base64,%s", b64);
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_INVALID, "image/jpeg", "image/png");
    char *gif = b64_encode((const uint8_t *)"GIF89a\x01\x00\x01\x00", 10);
    snprintf(url, sizeof url, "data:image/png;base64,%s", gif);
    CHECK_ERR(durl(url, 0, &out, &n, &err), &err, OMNIC_E_UNSUPPORTED, "image/png", "GIF");
    free(gif);

    /* Byte limit, checked before anything is allocated. */
    snprintf(url, sizeof url, "data:image/png;base64,%s", b64);
    omnic__alloc_fail_after(0);
    CHECK_ERR(durl(url, 10, &out, &n, &err), &err, OMNIC_E_TOO_LARGE, "10 byte limit");
    assert_int_equal(omnic__alloc_injected_failures(), 0);
    omnic__alloc_fail_after(-1);
    assert_int_equal(durl(url, png.n, &out, &n, &err), OMNIC_OK); /* exactly at the limit */
    omnic_free(out);
    out = NULL;
    CHECK_ERR(durl(url, png.n - 1, &out, &n, &err), &err, OMNIC_E_TOO_LARGE, "byte limit");
    assert_null(out);
    free(b64);
    free(png.p);
    free(px);
}

/* ---- crop, normalise, resize --------------------------------------------------------------- */

static void test_crop_and_resize(void **state)
{
    (void)state;
    omnic_err err;
    omnic__image src = {0}, out = {0};
    assert_int_equal(omnic__image_alloc(&src, 4, 5, &err), OMNIC_OK);
    for (int i = 0; i < 60; i++) src.data[i] = (uint8_t)(i + 1);
    /* 5 rows -> 2: floor(3/2) = 1; round_half_even(1.5) = 2. */
    assert_int_equal(omnic__image_center_crop(&src, 4, 2, OMNIC__CROP_FLOOR, &out, &err), OMNIC_OK);
    assert_int_equal(out.data[0], src.data[1 * 12]);
    omnic__image_deinit(&out);
    assert_int_equal(omnic__image_center_crop(&src, 4, 2, OMNIC__CROP_ROUND_HALF_EVEN, &out, &err), OMNIC_OK);
    assert_int_equal(out.data[0], src.data[2 * 12]);
    omnic__image_deinit(&out);
    /* Larger crop pads with zeros: width 4 -> 7: HF puts the image at ceil(3/2) = 2, torchvision at 1. */
    assert_int_equal(omnic__image_center_crop(&src, 7, 5, OMNIC__CROP_FLOOR, &out, &err), OMNIC_OK);
    assert_int_equal(out.data[0], 0);
    assert_int_equal(out.data[3], 0);
    assert_int_equal(out.data[6], src.data[0]);
    assert_int_equal(out.data[3 * 6], 0);
    omnic__image_deinit(&out);
    assert_int_equal(omnic__image_center_crop(&src, 7, 5, OMNIC__CROP_ROUND_HALF_EVEN, &out, &err), OMNIC_OK);
    assert_int_equal(out.data[3], src.data[0]);
    omnic__image_deinit(&out);
    CHECK_ERR(omnic__image_center_crop(&src, 0, 5, OMNIC__CROP_FLOOR, &out, &err), &err, OMNIC_E_INVALID, "0x5");

    /* Resize: same size copies; a flat image stays flat for both variants and filters. */
    memset(src.data, 77, 60);
    for (int v = 0; v < 2; v++) {
        for (int f = 2; f <= 3; f++) {
            assert_int_equal(omnic__image_resize(&src, 9, 2, (omnic__resample)f, (omnic__image_numerics)v, &out, &err),
                             OMNIC_OK);
            assert_int_equal(out.width, 9);
            assert_int_equal(out.height, 2);
            for (int i = 0; i < 54; i++) assert_int_equal(out.data[i], 77);
            omnic__image_deinit(&out);
        }
    }
    assert_int_equal(omnic__image_resize(&src, 4, 5, OMNIC__RESAMPLE_BICUBIC, OMNIC__NUMERICS_PIL, &out, &err),
                     OMNIC_OK);
    assert_memory_equal(out.data, src.data, 60);
    omnic__image_deinit(&out);
    CHECK_ERR(omnic__image_resize(&src, 4, 5, (omnic__resample)1, OMNIC__NUMERICS_PIL, &out, &err), &err,
              OMNIC_E_INVALID, "resample filter 1");
    CHECK_ERR(omnic__image_resize(&src, 40000, 5, OMNIC__RESAMPLE_BICUBIC, OMNIC__NUMERICS_PIL, &out, &err), &err,
              OMNIC_E_TOO_LARGE, "40000x5");
    omnic__image_deinit(&src);
}

static void test_norm_lut(void **state)
{
    (void)state;
    omnic_err err;
    omnic__norm_lut lut;
    const double half[3] = {0.5, 0.5, 0.5};
    assert_int_equal(omnic__norm_lut_init(&lut, OMNIC__NUMERICS_PIL, true, 1.0 / 255, true, half, half, &err),
                     OMNIC_OK);
    assert_true(lut.v[0][0] == -1.0f && lut.v[1][255] == 1.0f);
    assert_int_equal(omnic__norm_lut_init(&lut, OMNIC__NUMERICS_TORCHVISION, true, 1.0 / 255, true, half, half, &err),
                     OMNIC_OK);
    assert_true(lut.v[0][0] == -1.0f && lut.v[2][255] == 1.0f);
    assert_int_equal(omnic__norm_lut_init(&lut, OMNIC__NUMERICS_PIL, false, 0, false, NULL, NULL, &err), OMNIC_OK);
    assert_true(lut.v[0][200] == 200.0f);
    const double zero[3] = {0.5, 0.0, 0.5};
    CHECK_ERR(omnic__norm_lut_init(&lut, OMNIC__NUMERICS_PIL, true, 1.0 / 255, true, half, zero, &err), &err,
              OMNIC_E_INVALID, "channel 1");
    /* The two formulas differ in the last ulp for some inputs (CLIP constants). */
    const double m[3] = {0.48145466, 0.4578275, 0.40821073}, s[3] = {0.26862954, 0.26130258, 0.27577711};
    omnic__norm_lut a, b;
    assert_int_equal(omnic__norm_lut_init(&a, OMNIC__NUMERICS_PIL, true, 1.0 / 255, true, m, s, &err), OMNIC_OK);
    assert_int_equal(omnic__norm_lut_init(&b, OMNIC__NUMERICS_TORCHVISION, true, 1.0 / 255, true, m, s, &err),
                     OMNIC_OK);
    int differ = 0;
    for (int u = 0; u < 256; u++) differ += a.v[0][u] != b.v[0][u];
    assert_true(differ > 100);
}

static void test_processor_sizes(void **state)
{
    (void)state;
    omnic_err err;
    omnic__image_proc_params p;
    omnic__image_proc_params_clip_defaults(&p);
    p.shortest_edge = 336;
    p.do_center_crop = false;
    int64_t w, h;
    assert_int_equal(omnic__image_proc_output_size(&p, 640, 480, &w, &h, &err), OMNIC_OK);
    assert_true(w == 448 && h == 336);
    assert_int_equal(omnic__image_proc_output_size(&p, 480, 640, &w, &h, &err), OMNIC_OK);
    assert_true(w == 336 && h == 448);
    assert_int_equal(omnic__image_proc_output_size(&p, 333, 1000, &w, &h, &err), OMNIC_OK);
    assert_true(w == 336 && h == 1009); /* int(336 * 1000 / 333) = int(1009.009) */
    /* An extreme aspect ratio would resize past the side limit: refused before any work. */
    CHECK_ERR(omnic__image_proc_output_size(&p, 1, 30000, &w, &h, &err), &err, OMNIC_E_TOO_LARGE, "1x30000");
    p.do_center_crop = true;
    p.crop_width = p.crop_height = 336;
    assert_int_equal(omnic__image_proc_output_size(&p, 640, 480, &w, &h, &err), OMNIC_OK);
    assert_true(w == 336 && h == 336);
    p.resample = (omnic__resample)0;
    CHECK_ERR(omnic__image_proc_params_check(&p, &err), &err, OMNIC_E_INVALID, "resample 0");

    /* A 1x1 image through CLIP and SigLIP gives constant planes of the right shape. */
    omnic__image one = {0};
    assert_int_equal(omnic__image_alloc(&one, 1, 1, &err), OMNIC_OK);
    one.data[0] = 255;
    omnic__image_proc_params_siglip_defaults(&p);
    omnic__tensor *t = NULL;
    assert_int_equal(omnic__image_preprocess(&one, &p, &t, &err), OMNIC_OK);
    assert_true(t->ndim == 3 && t->dims[0] == 3 && t->dims[1] == 224 && t->dims[2] == 224);
    const float *v = t->data;
    assert_true(v[0] == 1.0f && v[224 * 224] == -1.0f);
    assert_string_equal(t->name, "pixel_values");
    omnic__tensor_destroy(t);
    omnic__image_deinit(&one);
}

/* ---- preprocessor_config.json -------------------------------------------------------------- */

static omnic_status parse_cfg(const char *text, omnic__image_proc_params *p, omnic_err *err)
{
    json_t *j = NULL;
    omnic_status rc = omnic__json_parse(text, strlen(text), "preprocessor_config.json", &j, err);
    if (rc != OMNIC_OK) return rc;
    rc = omnic__image_processor_config_parse(j, "preprocessor_config.json", p, err);
    json_decref(j);
    return rc;
}

/* Gemma 3 pan-and-scan grids against Gemma3ImageProcessor.pan_and_scan (transformers 4.57.6, run
 * on these sizes: crop count and the first two crops' width x height), then crop contents. */
static void test_pan_and_scan(void **state)
{
    (void)state;
    static const struct {
        int64_t w, h, min_crop, max_crops;
        double ratio;
        int64_t n, c[4];
    } cases[] = {
        {640, 480, 256, 4, 1.20, 2, {320, 480, 320, 480}},     {896, 300, 256, 4, 1.20, 3, {299, 300, 299, 300}},
        {1000, 300, 256, 4, 1.20, 3, {334, 300, 334, 300}},    {2000, 300, 256, 4, 1.20, 4, {500, 300, 500, 300}},
        {300, 2000, 256, 4, 1.20, 4, {300, 500, 300, 500}},    {511, 256, 256, 4, 1.20, 2, {256, 256, 255, 256}},
        {512, 256, 256, 4, 1.20, 2, {256, 256, 256, 256}},     {600, 500, 256, 4, 1.20, 2, {300, 500, 300, 500}},
        {40, 30, 16, 4, 1.20, 2, {20, 30, 20, 30}},            {40, 88, 16, 4, 1.20, 2, {40, 44, 40, 44}},
        {5000, 512, 256, 4, 1.20, 4, {1250, 512, 1250, 512}},  {5000, 512, 256, 8, 1.20, 8, {625, 512, 625, 512}},
        {41, 20, 16, 4, 1.20, 2, {21, 20, 20, 20}},            {100, 100, 16, 4, 1.00, 2, {50, 100, 50, 100}},
        {3000, 1000, 256, 1, 1.20, 1, {3000, 1000, 0, 0}},     {257, 100, 50, 3, 2.50, 3, {86, 100, 86, 100}},
        /* no crops: too square, crops under min_crop */
        {500, 450, 256, 4, 1.20, 0, {0}},                      {300, 200, 256, 4, 1.20, 0, {0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        omnic__pan_and_scan p = {cases[i].min_crop, cases[i].max_crops, cases[i].ratio};
        int64_t nw, nh, cw, ch;
        int64_t n = omnic__pan_and_scan_grid(&p, cases[i].w, cases[i].h, &nw, &nh, &cw, &ch);
        if (n != cases[i].n) fprintf(stderr, "case %zu: %lld crops, HF %lld\n", i, (long long)n, (long long)cases[i].n);
        assert_int_equal(n, cases[i].n);
        if (!n) continue;
        assert_int_equal(nw * nh, n);
        omnic__image img = {0};
        omnic_err err;
        assert_int_equal(omnic__image_alloc(&img, cases[i].w, cases[i].h, &err), OMNIC_OK);
        for (int64_t k = 0; k < 2 && k < n; k++) {
            omnic__image c = {0};
            assert_int_equal(omnic__pan_and_scan_crop(&img, nw, nh, cw, ch, k, &c, &err), OMNIC_OK);
            assert_int_equal(c.width, cases[i].c[2 * k]);
            assert_int_equal(c.height, cases[i].c[2 * k + 1]);
            omnic__image_deinit(&c);
        }
        omnic__image_deinit(&img);
    }
    /* contents: a 5x2 image whose pixel (x, y) holds x + 10 y, cut in 2 (3 + 2 wide) */
    omnic__image img = {0};
    omnic_err err;
    assert_int_equal(omnic__image_alloc(&img, 5, 2, &err), OMNIC_OK);
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 5; x++)
            for (int ch = 0; ch < 3; ch++)
                img.data[(y * 5 + x) * 3 + ch] = (uint8_t)(x + 10 * y);
    omnic__image c = {0};
    assert_int_equal(omnic__pan_and_scan_crop(&img, 2, 1, 3, 2, 1, &c, &err), OMNIC_OK);
    assert_int_equal(c.width, 2);
    assert_int_equal(c.data[0], 3);
    assert_int_equal(c.data[(1 * 2 + 1) * 3], 14);
    omnic__image_deinit(&c);
    assert_int_equal(omnic__pan_and_scan_crop(&img, 2, 1, 3, 2, 2, &c, &err), OMNIC_E_INVALID);
    omnic__image_deinit(&img);
}

static void test_config(void **state)
{
    (void)state;
    omnic_err err;
    omnic__image_proc_params p;
    /* llava-hf/llava-1.5-7b-hf */
    assert_int_equal(parse_cfg("{\"crop_size\": {\"height\": 336, \"width\": 336}, \"do_center_crop\": true,"
                               "\"do_convert_rgb\": true, \"do_normalize\": true, \"do_rescale\": true,"
                               "\"do_resize\": true, \"image_mean\": [0.48145466, 0.4578275, 0.40821073],"
                               "\"image_processor_type\": \"CLIPImageProcessor\","
                               "\"image_std\": [0.26862954, 0.26130258, 0.27577711], \"processor_class\": "
                               "\"LlavaProcessor\", \"resample\": 3, \"rescale_factor\": 0.00392156862745098,"
                               "\"size\": {\"shortest_edge\": 336}}",
                               &p, &err),
                     OMNIC_OK);
    assert_int_equal(p.resize_mode, OMNIC__RESIZE_SHORTEST_EDGE);
    assert_int_equal(p.shortest_edge, 336);
    assert_true(p.do_center_crop && p.crop_height == 336 && p.crop_width == 336);
    assert_int_equal(p.numerics, OMNIC__NUMERICS_PIL);
    assert_int_equal(p.crop_rounding, OMNIC__CROP_FLOOR);
    assert_true(p.image_std[2] == 0.27577711);
    /* google/siglip-so400m-patch14-384 */
    assert_int_equal(parse_cfg("{\"do_normalize\": true, \"do_rescale\": true, \"do_resize\": true,"
                               "\"image_mean\": [0.5, 0.5, 0.5], \"image_processor_type\": \"SiglipImageProcessor\","
                               "\"image_std\": [0.5, 0.5, 0.5], \"processor_class\": \"SiglipProcessor\","
                               "\"resample\": 3, \"rescale_factor\": 0.00392156862745098,"
                               "\"size\": {\"height\": 384, \"width\": 384}}",
                               &p, &err),
                     OMNIC_OK);
    assert_true(p.resize_mode == OMNIC__RESIZE_EXACT && p.height == 384 && p.width == 384 && !p.do_center_crop);
    /* Old style: feature_extractor_type, int sizes; Fast -> torchvision numerics and crop. */
    assert_int_equal(parse_cfg("{\"feature_extractor_type\": \"CLIPFeatureExtractor\", \"size\": 224, "
                               "\"crop_size\": 224}",
                               &p, &err),
                     OMNIC_OK);
    assert_true(p.shortest_edge == 224 && p.crop_width == 224 && p.numerics == OMNIC__NUMERICS_PIL);
    assert_int_equal(parse_cfg("{\"image_processor_type\": \"CLIPImageProcessorFast\"}", &p, &err), OMNIC_OK);
    assert_true(p.numerics == OMNIC__NUMERICS_TORCHVISION && p.crop_rounding == OMNIC__CROP_ROUND_HALF_EVEN);
    assert_true(p.shortest_edge == 224 && p.image_mean[0] == 0.48145466);
    /* Errors name the type or the field. */
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"Qwen2VLImageProcessor\"}", &p, &err), &err,
              OMNIC_E_UNSUPPORTED, "Qwen2VLImageProcessor");
    CHECK_ERR(parse_cfg("{}", &p, &err), &err, OMNIC_E_UNSUPPORTED, "image_processor_type");
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"CLIPImageProcessor\", \"resample\": 1}", &p, &err), &err,
              OMNIC_E_INVALID, "resample");
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"CLIPImageProcessor\", \"image_std\": [1, 2]}", &p, &err), &err,
              OMNIC_E_INVALID, "image_std");
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"CLIPImageProcessor\", \"image_std\": [1, 0, 1]}", &p, &err),
              &err, OMNIC_E_INVALID, "std");
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"SiglipImageProcessor\", \"size\": {\"shortest_edge\": 3}}", &p,
                        &err),
              &err, OMNIC_E_UNSUPPORTED, "shortest_edge");
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"CLIPImageProcessor\", \"size\": {\"height\": 0, \"width\": 3}}",
                        &p, &err),
              &err, OMNIC_E_INVALID, "height");
    CHECK_ERR(parse_cfg("{\"image_processor_type\": \"CLIPImageProcessor\", \"size\": \"big\"}", &p, &err), &err,
              OMNIC_E_INVALID, "size");
}

/* ---- allocation-failure sweeps ------------------------------------------------------------- */

/* Runs fn with the allocator failing after N = 0, 1, ... successes until it succeeds without an
 * injected failure; each failing run must be E_NOMEM with a message (leaks: LeakSanitizer in the
 * sanitize build). */
static void sweep(omnic_status (*fn)(void *ctx, omnic_err *err), void *ctx, const char *what)
{
    for (long n = 0; n < 1000; n++) {
        omnic_err err;
        omnic_err_clear(&err);
        omnic__alloc_fail_after(n);
        omnic_status rc = fn(ctx, &err);
        long injected = omnic__alloc_injected_failures();
        omnic__alloc_fail_after(-1);
        if (rc == OMNIC_OK && injected == 0) return;
        if (rc != OMNIC_E_NOMEM) fail_msg("%s, fail after %ld: %s (%s)", what, n, omnic_status_name(rc), err.msg);
        assert_true(err.msg[0] != 0);
    }
    fail_msg("%s did not succeed within 1000 allocations", what);
}

static omnic_status run_decode(void *ctx, omnic_err *err)
{
    const bytes *b = ctx;
    omnic__image img = {.width = -7};
    omnic_status rc = omnic__image_decode(b->p, b->n, NULL, &img, err);
    if (rc != OMNIC_OK) {
        if (img.width != -7 || img.data) fail_msg("output touched on failure");
        return rc;
    }
    omnic__image_deinit(&img);
    return rc;
}

static omnic_status run_data_url(void *ctx, omnic_err *err)
{
    uint8_t *out = NULL;
    size_t n = 0;
    omnic_status rc = omnic__data_url_decode(ctx, strlen(ctx), 0, &out, &n, NULL, err);
    omnic_free(out);
    return rc;
}

static omnic_status run_preprocess(void *ctx, omnic_err *err)
{
    const omnic__image *img = ctx;
    omnic__image_proc_params p;
    omnic__image_proc_params_clip_defaults(&p);
    p.shortest_edge = 20;
    p.crop_height = p.crop_width = 18;
    omnic__tensor *t = NULL;
    omnic_status rc = omnic__image_preprocess(img, &p, &t, err);
    omnic__tensor_destroy(t);
    return rc;
}

static void test_oom_sweeps(void **state)
{
    (void)state;
    uint8_t *px = pattern(24, 16, 4);
    bytes png = encode_png(px, 24, 16, PNG_FORMAT_RGBA);
    bytes jpg = encode_jpeg(px, 24, 16, 3);
    bytes wp = encode_webp(px, 24, 16, true);
    sweep(run_decode, &png, "PNG decode");
    sweep(run_decode, &jpg, "JPEG decode");
    sweep(run_decode, &wp, "WebP decode");
    char *b64 = b64_encode(png.p, png.n);
    size_t ulen = strlen(b64) + 32;
    char *url = malloc(ulen);
    snprintf(url, ulen, "data:image/png;base64,%s", b64);
    sweep(run_data_url, url, "data URL");
    omnic_err err;
    omnic__image img = {0};
    assert_int_equal(omnic__image_decode(png.p, png.n, NULL, &img, &err), OMNIC_OK);
    sweep(run_preprocess, &img, "preprocess");
    omnic__image_deinit(&img);
    free(url);
    free(b64);
    free(px);
    free(png.p);
    free(jpg.p);
    free(wp.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsupported_formats),
        cmocka_unit_test(test_one_pixel),
        cmocka_unit_test(test_alpha_dropped),
        cmocka_unit_test(test_huge_headers_rejected_before_allocation),
        cmocka_unit_test(test_truncated_and_corrupt),
        cmocka_unit_test(test_data_urls),
        cmocka_unit_test(test_crop_and_resize),
        cmocka_unit_test(test_norm_lut),
        cmocka_unit_test(test_processor_sizes),
        cmocka_unit_test(test_pan_and_scan),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_oom_sweeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
