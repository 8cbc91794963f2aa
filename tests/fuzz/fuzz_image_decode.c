/* libFuzzer target for image decode (JPEG, PNG, WebP, format sniffing) and data: URLs. Any
 * input must give OMNIC_OK with a well-formed image or an error with a message, never a crash,
 * a leak or a huge allocation: the pixel limit is lowered so that the fuzzer's memory stays
 * small. A decoded image also runs through a small CLIP-style processor (resize, crop,
 * normalise) in both numerics variants, and through Phi-4-multimodal's HD crop processor with
 * 28-px crops, at most 4 (grid choice, resize, white padding, the f32 bicubic global crop). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "mm/image.h"
#include "mm/image_processor.h"
#include "mm/media_url.h"
#include "models/media.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(omnic_status rc, const omnic_err *err)
{
    if (rc != OMNIC_OK &&
        (err->code != rc || memchr(err->msg, '\0', sizeof err->msg) == NULL || !err->msg[0]))
        __builtin_trap();
}

static void decode_one(const uint8_t *data, size_t size)
{
    omnic_err err;
    omnic_err_clear(&err);
    omnic__image img = {0};
    omnic__image_limits lim = {.max_pixels = 1 << 20, .max_side = 4096};
    omnic_status rc = omnic__image_decode(data, size, &lim, &img, &err);
    check(rc, &err);
    if (rc != OMNIC_OK) {
        if (img.data) __builtin_trap();
        return;
    }
    if (img.width < 1 || img.height < 1 || img.width * img.height > (1 << 20) || !img.data) __builtin_trap();
    /* Touch every byte so ASan sees the buffer is as large as it claims. */
    unsigned sum = 0;
    for (int64_t i = 0; i < img.width * img.height * 3; i++)
        sum += img.data[i];
    (void)sum;
    omnic__image_proc_params p;
    omnic__image_proc_params_clip_defaults(&p);
    p.shortest_edge = 12;
    p.crop_height = 10;
    p.crop_width = 9;
    for (int v = 0; v < 2; v++) {
        p.numerics = (omnic__image_numerics)v;
        p.crop_rounding = (omnic__crop_rounding)v;
        p.resample = v ? OMNIC__RESAMPLE_BILINEAR : OMNIC__RESAMPLE_BICUBIC;
        omnic__tensor *t = NULL;
        rc = omnic__image_preprocess(&img, &p, &t, &err);
        check(rc, &err);
        omnic__tensor_destroy(t);
    }
    static omnic__media_proc hd; /* made once: a processor config alone (no model) */
    static int hd_state;         /* 0 not made, 1 made, -1 failed (a bug: trap) */
    if (!hd_state) {
        json_t *pc = json_loads("{\"image_processor_type\": \"Phi4MultimodalImageProcessorFast\", \"size\": "
                                "{\"height\": 28, \"width\": 28}, \"patch_size\": 14, \"dynamic_hd\": 4}",
                                0, NULL);
        hd_state = pc && omnic__media_proc_from_config(&hd, pc, "fuzz", OMNIC_MODALITY_IMAGE, NULL, NULL,
                                                       &err) == OMNIC_OK
                       ? 1
                       : -1;
        json_decref(pc);
    }
    if (hd_state < 0) __builtin_trap();
    omnic__decoded_media d = {.image = &img};
    omnic__media_item it;
    rc = omnic__media_preprocess(&hd, &d, &it, &err);
    check(rc, &err);
    if (rc == OMNIC_OK && (!it.input || it.input->dims[0] < 2 || it.input->dims[0] > 5 || it.rows < 1))
        __builtin_trap();
    omnic__media_item_deinit(&it);
    omnic__image_deinit(&img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode_one(data, size);
    /* The same bytes as a data: URL header + payload when they look like one. */
    if (omnic__is_data_url((const char *)data, size)) {
        omnic_err err;
        omnic_err_clear(&err);
        uint8_t *out = NULL;
        size_t n = 0;
        omnic__image_format f;
        omnic_status rc = omnic__data_url_decode((const char *)data, size, 1 << 16, &out, &n, &f, &err);
        check(rc, &err);
        if (rc == OMNIC_OK) {
            if (!out || n == 0 || n > (1 << 16) || omnic__image_sniff(out, n) != f) __builtin_trap();
            decode_one(out, n);
        }
        omnic_free(out);
    }
    return 0;
}
