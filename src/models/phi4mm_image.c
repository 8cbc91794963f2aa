/* Image input of Phi-4-multimodal (models/phi4mm_vision.h): the family table
 * omnic__media_phi4mm_image. The processor is Phi4MultimodalImageProcessorFast (transformers
 * 4.57 image_processing_phi4_multimodal_fast.py): the dynamic HD crop grid (at most dynamic_hd
 * crops of S x S; over it, the closest aspect ratio among i x j <= dynamic_hd), torchvision's
 * antialiased bilinear uint8 resize into the grid, white padding right / bottom, rescale +
 * normalise (fused, torchvision numerics), the global crop as ATen's bicubic of the normalised HD
 * image (no antialias), tiles row-major. An item is pixel_values f32 [1 + tiles, 3, S, S] with
 * grid (1, tile rows, tile columns) and the resized size in out_w / out_h (the padding, hence
 * the patch mask, follows from them). Its placeholder (vision_config.image_token_id, the
 * tokenizer's <|endoftext10|>) expands to 273 + uh (uw + 1) rows (uh, uw: the valid rows and
 * columns of the 2x-subsampled mask; 448x448 -> 545, 640x480 -> 1065); prompts write images as
 * <|image_N|>. Prompts with an image run with the vision adapter; their clips take the
 * vision-speech projection (models/phi4mm_media.h: one merge for both modalities). */
#include <math.h>
#include <string.h>

#include "io/json.h"
#include "models/image_processor_config.h"
#include "models/model.h"
#include "models/phi4mm_media.h"
#include "models/phi4mm_vision.h"

/* Crops per image at most (a config asking for more is refused). */
#define P4V_MAX_HD 64

typedef struct p4v_media {
    omnic__p4v enc;
    omnic__module m; /* vision.encode, planned for 1 + max_hd crops */
    int64_t max_hd;
    int out_features, out_projected, out_separators;
} p4v_media;

static p4v_media *state(const omnic__model *m)
{
    return m->media[OMNIC_MODALITY_IMAGE].ops == &omnic__media_phi4mm_image
               ? m->media[OMNIC_MODALITY_IMAGE].state
               : NULL;
}

static void p4v_close(omnic__model *m)
{
    p4v_media *v = state(m);
    if (!v) return;
    omnic__module_deinit(&v->m);
    omnic__p4v_deinit(&v->enc);
    omnic_free(v);
    m->media[OMNIC_MODALITY_IMAGE].state = NULL;
}

static omnic_status p4v_open(omnic__model *m, omnic_err *err)
{
    p4v_media *v = omnic_alloc_array(1, sizeof *v);
    if (!v) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a vision encoder");
    memset(v, 0, sizeof *v);
    m->media[OMNIC_MODALITY_IMAGE].state = v; /* p4v_close frees what follows on failure */
    const json_t *vc = json_object_get(m->ckpt->config, "vision_config");
    if (!json_is_object(vc))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "config.json: phi4_multimodal needs a vision_config object");
    omnic__p4v_config c;
    OMNIC_TRY(omnic__p4v_config_parse(vc, "config.json vision_config", m->dec.cfg.hidden, &c, err));
    if (c.image_token_id >= m->dec.cfg.vocab)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "config.json vision_config: image_token_id %d is outside the vocabulary of %lld",
                          c.image_token_id, (long long)m->dec.cfg.vocab);
    v->max_hd = 36; /* the processor's dynamic_hd bounds the crops a call may hold */
    if (m->ckpt->preprocessor_config)
        OMNIC_TRY(omnic__json_get_i64(m->ckpt->preprocessor_config, "dynamic_hd", false, 36, 1, P4V_MAX_HD,
                                      "preprocessor_config.json", &v->max_hd, err));
    OMNIC_TRY(omnic__p4v_load(&v->enc, &c, m->ckpt->weights, err));
    const int64_t cap = (1 + v->max_hd) * c.grid * c.grid;
    OMNIC_TRY(omnic__module_init(&v->m, "vision.encode", "omnic.vision.encode.phi4mm/1", cap, err));
    OMNIC_TRY(omnic__p4v_build(&v->enc, &v->m, err));
    OMNIC_TRY(omnic__module_finalize(&v->m, m->backend, m->pool, err));
    OMNIC_TRY(omnic__module_constrain(&v->m, "patches", 0, true, err));
    OMNIC_TRY(omnic__module_constrain(&v->m, "pos_ids", c.grid * c.grid, false, err));
    static const char *const idx[] = {"qpos", "kv_begin", "raster", "pool"};
    for (int k = 0; k < 4; k++)
        OMNIC_TRY(omnic__module_constrain(&v->m, idx[k], cap, false, err));
    v->out_features = omnic__module_find_output(&v->m, "vision_features");
    v->out_projected = omnic__module_find_output(&v->m, "projected");
    v->out_separators = omnic__module_find_output(&v->m, "separators");
    m->media[OMNIC_MODALITY_IMAGE].placeholder_id = c.image_token_id;
    return OMNIC_OK;
}

static bool p4v_ready(const omnic__model *m)
{
    const p4v_media *v = state(m);
    return v && v->m.finalized;
}

/* Image prompts run with the vision LoRA adapter (never without it). */
static const char *p4v_unserved(const omnic__model *m)
{
    return m->adapter_of[OMNIC_ADAPTER_VISION] >= 0 ? NULL
                                                    : "Phi-4-multimodal runs image prompts with its vision "
                                                      "LoRA adapter, and the checkpoint has no "
                                                      "vision-lora/ folder";
}

/* ---- processor: Phi4MultimodalImageProcessorFast ---------------------------------------------- */

typedef struct p4v_proc {
    int64_t size;  /* S: crop side (size.height == size.width) */
    int64_t patch; /* patch_size: the mask's unit */
    int64_t hd;    /* dynamic_hd: crops at most (lowered by a user pixel limit) */
    int64_t hd_own;
    omnic__norm_lut lut;
} p4v_proc;

/* (auto_map: the original layout's remote-code classes, read by HF's as its conversion does) */
const char *const omnic__phi4mm_image_keys[] = {"auto_map",
                                                "image_processor_type",
                                                "size",
                                                "patch_size",
                                                "dynamic_hd",
                                                "image_mean",
                                                "image_std",
                                                "do_resize",
                                                "do_rescale",
                                                "rescale_factor",
                                                "do_normalize",
                                                "do_convert_rgb",
                                                "resample",
                                                "processor_class",
                                                "_processor_class",
                                                "crop_size",
                                                "data_format",
                                                "default_to_square",
                                                "device",
                                                "disable_grouping",
                                                "do_center_crop",
                                                "do_pad",
                                                "input_data_format",
                                                "pad_size",
                                                "return_tensors",
                                                NULL};

static bool p4v_proc_claims(const json_t *pc)
{
    const json_t *t = json_object_get(pc, "image_processor_type");
    return json_is_string(t) && (!strcmp(json_string_value(t), "Phi4MultimodalImageProcessorFast") ||
                                 !strcmp(json_string_value(t), "Phi4MultimodalImageProcessor") ||
                                 !strcmp(json_string_value(t), "Phi4MMImageProcessor")); /* original layout */
}

static void p4v_proc_free(void *params)
{
    omnic_free(params);
}

static omnic_status p4v_proc_parse(const json_t *pc, const char *what, const char *variant,
                                   const omnic__media_kwargs *kw, void **out, omnic_err *err)
{
    const char *const *const lists[] = {omnic__phi4mm_image_keys, omnic__phi4mm_audio_keys, NULL};
    if (variant && strcmp(variant, "torchvision"))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: Phi4MultimodalImageProcessorFast has the torchvision numerics only (not %s)",
                          what, variant);
    if (omnic__media_kwargs_any(kw)) return omnic__media_no_kwargs(OMNIC_MODALITY_IMAGE, err);
    OMNIC_TRY(omnic__json_check_keys(pc, what, lists, err));
    /* size {"height": S, "width": S} (square only, as the processor requires) */
    int64_t S = 448;
    const json_t *size = json_object_get(pc, "size");
    if (size && !json_is_null(size)) {
        int64_t w;
        if (!json_is_object(size))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: size must be {\"height\", \"width\"}", what);
        OMNIC_TRY(omnic__json_get_i64(size, "height", true, 0, 14, 4096, what, &S, err));
        OMNIC_TRY(omnic__json_get_i64(size, "width", true, 0, 14, 4096, what, &w, err));
        if (w != S)
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                              "%s: size %lldx%lld is not square (the processor's rule)", what, (long long)w,
                              (long long)S);
    }
    int64_t patch, hd, resample;
    OMNIC_TRY(omnic__json_get_i64(pc, "patch_size", false, 14, 1, 256, what, &patch, err));
    OMNIC_TRY(omnic__json_get_i64(pc, "dynamic_hd", false, 36, 1, P4V_MAX_HD, what, &hd, err));
    OMNIC_TRY(omnic__json_get_i64(pc, "resample", false, 3, 0, 5, what, &resample, err));
    if (resample != 3)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: resample %lld is not supported (3, bicubic: the global crop's resize)", what,
                          (long long)resample);
    if (S % patch || (S / patch) % 2)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: size %lld over patch_size %lld is not an even grid",
                          what, (long long)S, (long long)patch);
    /* do_resize is not read by the processor (it always resizes); the keys below must be no-ops */
    OMNIC_TRY(omnic__json_expect(pc, "do_center_crop", "false", what, err));
    OMNIC_TRY(omnic__json_expect(pc, "do_pad", "false", what, err));
    OMNIC_TRY(omnic__json_expect(pc, "crop_size", "null", what, err));
    OMNIC_TRY(omnic__json_expect(pc, "pad_size", "null", what, err));
    OMNIC_TRY(omnic__json_expect(pc, "default_to_square", "true", what, err));
    const char *df;
    OMNIC_TRY(omnic__json_get_str(pc, "data_format", false, "channels_first", what, &df, err));
    if (strcmp(df, "channels_first"))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: data_format '%s' (only channels_first)", what, df);
    bool do_rescale = true, do_normalize = true;
    double factor = 1.0 / 255, mean[3] = {0.5, 0.5, 0.5}, std[3] = {0.5, 0.5, 0.5};
    OMNIC_TRY(omnic__processor_config_pixels(pc, what, &do_rescale, &factor, &do_normalize, mean, std, err));
    p4v_proc *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an image processor");
    *p = (p4v_proc){.size = S, .patch = patch, .hd = hd, .hd_own = hd};
    omnic_status s = omnic__norm_lut_init(&p->lut, OMNIC__NUMERICS_TORCHVISION, do_rescale, factor,
                                          do_normalize, mean, std, err);
    if (s != OMNIC_OK) {
        omnic_free(p);
        return omnic__err_prefix(err, "%s", what), s;
    }
    *out = p;
    return OMNIC_OK;
}

static omnic_status p4v_proc_fit(const omnic__model *m, void *params, int64_t user_max_pixels, omnic_err *err)
{
    const p4v_media *v = state(m);
    p4v_proc *p = params;
    const omnic__p4v_config *c = &v->enc.cfg;
    if (p->size != c->image_size || p->patch != c->patch)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "preprocessor_config.json: crops of %lld px in patches of %lld, the vision tower takes "
            "%lld in patches of %lld",
            (long long)p->size, (long long)p->patch, (long long)c->image_size, (long long)c->patch);
    if (p->hd > v->max_hd) p->hd = v->max_hd;
    if (user_max_pixels > 0) { /* a user pixel limit lowers the HD canvas: whole crops of S x S */
        int64_t k = user_max_pixels / (p->size * p->size);
        if (k < p->hd) p->hd = k < 1 ? 1 : k;
    }
    return OMNIC_OK;
}

static omnic_status p4v_proc_clone(const void *params, void **out, omnic_err *err)
{
    p4v_proc *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an image processor");
    *p = *(const p4v_proc *)params;
    *out = p;
    return OMNIC_OK;
}

static int64_t p4v_proc_max_pixels(const void *params, bool own)
{
    const p4v_proc *p = params;
    return (own ? p->hd_own : p->hd) * p->size * p->size;
}

/* The crop grid (i columns, j rows) for a W x H image (dynamic_preprocess). Ratios are tried by
 * area, then by i: Python iterates a set there, which only matters on an exact tie of ratios. */
static void hd_grid(const p4v_proc *p, int64_t W, int64_t H, int64_t *gi, int64_t *gj)
{
    const int64_t S = p->size;
    int64_t wn = (W + S - 1) / S, hn = (H + S - 1) / S;
    if (wn * hn <= p->hd) {
        *gi = wn, *gj = hn;
        return;
    }
    const double aspect = (double)W / (double)H, area = (double)W * (double)H;
    double best = INFINITY;
    int64_t bi = 1, bj = 1;
    for (int64_t n = 1; n <= p->hd; n++)
        for (int64_t i = 1; i <= n; i++) {
            if (n % i) continue;
            const int64_t j = n / i;
            const double diff = fabs(aspect - (double)i / (double)j);
            if (diff < best)
                best = diff, bi = i, bj = j;
            else if (diff == best && area > 0.5 * (double)S * (double)S * (double)i * (double)j)
                bi = i, bj = j;
        }
    *gi = bi, *gj = bj;
}

/* The resized size inside the grid: the side whose ratio is smaller fills the grid. */
static void hd_resized(int64_t W, int64_t H, int64_t TW, int64_t TH, int64_t *nw, int64_t *nh)
{
    const double rw = (double)TW / (double)W, rh = (double)TH / (double)H;
    if (rw < rh)
        *nw = TW, *nh = (int64_t)((double)H * rw);
    else
        *nw = (int64_t)((double)W * rh), *nh = TH;
}

/* Valid patch rows / columns of the HD canvas (the processor's attention_mask). */
static void hd_valid(int64_t S, int64_t patch, int64_t gi, int64_t gj, int64_t nw, int64_t nh, int64_t *vr,
                     int64_t *vc)
{
    const int64_t ms = S / patch, pw = S * gi - nw, ph = S * gj - nh;
    *vc = ms * gi - (pw >= patch ? pw / patch : 0);
    *vr = ms * gj - (ph >= patch ? ph / patch : 0);
    if (*vc < 0) *vc = 0;
    if (*vr < 0) *vr = 0;
}

/* Rows of an image: (ms/2)^2 + ms/2 (the global crop and its separators) + 1 + uh (uw + 1). */
static int64_t hd_rows(int64_t ms, int64_t vr, int64_t vc)
{
    const int64_t g = ms / 2, uh = (vr + 1) / 2, uw = (vc + 1) / 2;
    return g * g + g + 1 + uh * (uw + 1);
}

static omnic_status p4v_preprocess(const void *params, const omnic__decoded_media *in, omnic__media_item *out,
                                   omnic_err *err)
{
    const p4v_proc *p = params;
    const omnic__image *img = in->image;
    if (!img || !img->data) return OMNIC_FAIL(err, OMNIC_E_INVALID, "no image");
    const int64_t S = p->size, W = img->width, H = img->height;
    int64_t gi, gj, nw, nh;
    hd_grid(p, W, H, &gi, &gj);
    const int64_t TW = S * gi, TH = S * gj;
    hd_resized(W, H, TW, TH, &nw, &nh);
    if (nw < 10 || nh < 10)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "a %lldx%lld image is too extreme an aspect ratio for %lldx%lld crops (resized to "
                          "%lldx%lld; both sides must be >= 10)",
                          (long long)W, (long long)H, (long long)gi, (long long)gj, (long long)nw,
                          (long long)nh);
    omnic__image rs = {0}, hd = {0};
    float *hdf = NULL;
    OMNIC_TRY(
        omnic__image_resize(img, nw, nh, OMNIC__RESAMPLE_BILINEAR, OMNIC__NUMERICS_TORCHVISION, &rs, err));
    omnic_status s = omnic__image_alloc(&hd, TW, TH, err);
    if (s != OMNIC_OK) goto out;
    memset(hd.data, 255, (size_t)(TW * TH * 3)); /* white padding right and bottom */
    for (int64_t y = 0; y < nh; y++)
        memcpy(hd.data + y * TW * 3, rs.data + y * nw * 3, (size_t)(nw * 3));
    const int64_t tiles = gi * gj, d4[4] = {1 + tiles, 3, S, S};
    hdf = omnic_alloc_array((size_t)(3 * TW * TH), sizeof *hdf);
    if (!hdf) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a %lldx%lld image", (long long)TW,
                       (long long)TH);
        goto out;
    }
    omnic__image_to_chw(&hd, &p->lut, hdf);
    if ((s = omnic__tensor_create(&out->input, OMNIC_DTYPE_F32, 4, d4, err)) != OMNIC_OK) goto out;
    float *px = out->input->data;
    if ((s = omnic__image_bicubic_f32(hdf, 3, TH, TW, S, S, px, err)) != OMNIC_OK) goto out;
    for (int64_t t = 0; t < tiles; t++) { /* tile (t / gi, t % gi) */
        const int64_t y0 = (t / gi) * S, x0 = (t % gi) * S;
        float *dst = px + (1 + t) * 3 * S * S;
        for (int64_t ch = 0; ch < 3; ch++)
            for (int64_t y = 0; y < S; y++)
                memcpy(dst + (ch * S + y) * S, hdf + (ch * TH + y0 + y) * TW + x0, (size_t)S * sizeof(float));
    }
    int64_t vr, vc;
    hd_valid(S, p->patch, gi, gj, nw, nh, &vr, &vc);
    out->modality = OMNIC_MODALITY_IMAGE;
    out->grid[0] = 1, out->grid[1] = gj, out->grid[2] = gi;
    out->rows = hd_rows(S / p->patch, vr, vc);
    out->in_w = W, out->in_h = H, out->out_w = nw, out->out_h = nh;
    out->limited = p->hd < p->hd_own && (W + S - 1) / S * ((H + S - 1) / S) > p->hd;
out:
    omnic_free(hdf);
    omnic__image_deinit(&rs);
    omnic__image_deinit(&hd);
    return s;
}

/* ---- encoder ---------------------------------------------------------------------------------- */

/* Checks it against the encoder; its tile grid and valid patch rows / columns. */
static omnic_status check_item(const omnic__model *m, const omnic__media_item *it, int64_t *gi, int64_t *vr,
                               int64_t *vc, omnic_err *err)
{
    const p4v_media *v = state(m);
    const omnic__p4v_config *c = &v->enc.cfg;
    const omnic__tensor *t = it->input;
    const int64_t S = c->image_size, gj = it->grid[1];
    *gi = it->grid[2];
    if (it->modality != OMNIC_MODALITY_IMAGE || !t || !t->data || t->dtype != OMNIC_DTYPE_F32 ||
        t->ndim != 4 || t->dims[1] != 3 || t->dims[2] != S || t->dims[3] != S || gj < 1 || *gi < 1 ||
        gj * *gi > v->max_hd || t->dims[0] != 1 + gj * *gi || it->out_w < 1 || it->out_w > S * *gi ||
        it->out_h < 1 || it->out_h > S * gj || (it->out_w != S * *gi && it->out_h != S * gj))
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "image pixel_values must be f32 [1 + tiles, 3, %lld, %lld] of a tile grid of at most %lld "
            "with its resized size",
            (long long)S, (long long)S, (long long)v->max_hd);
    hd_valid(S, c->patch, *gi, gj, it->out_w, it->out_h, vr, vc);
    return OMNIC_OK;
}

static omnic_status p4v_item_rows(const omnic__model *m, const omnic__media_item *it, int64_t *rows,
                                  omnic_err *err)
{
    int64_t gi, vr, vc;
    OMNIC_TRY(check_item(m, it, &gi, &vr, &vc, err));
    *rows = omnic__p4v_rows(&state(m)->enc.cfg, vr, vc);
    return OMNIC_OK;
}

static omnic_status p4v_encode_start(omnic__model *m, const omnic__media_item *it, omnic__module **mod,
                                     int *projected, int *features, omnic_err *err)
{
    p4v_media *v = state(m);
    const omnic__p4v_config *c = &v->enc.cfg;
    int64_t gi, vr, vc;
    OMNIC_TRY(check_item(m, it, &gi, &vr, &vc, err));
    const int64_t crops = it->input->dims[0], G = c->grid;
    int64_t valid[2 * (1 + P4V_MAX_HD)];
    valid[0] = valid[1] = G; /* the global crop */
    for (int64_t t = 0; t + 1 < crops; t++) {
        const int64_t r = vr - G * (t / gi), q = vc - G * (t % gi);
        valid[2 + 2 * t] = r < 0 ? 0 : r > G ? G : r;
        valid[3 + 2 * t] = q < 0 ? 0 : q > G ? G : q;
    }
    omnic__p4v_inputs in;
    OMNIC_TRY(omnic__p4v_inputs_make(&v->enc, it->input->data, crops, valid, &in, err));
    omnic__tensor t[6];
    omnic__p4v_inputs_bind(&v->enc, &in, t);
    const omnic__tensor *ins[6] = {&t[0], &t[1], &t[2], &t[3], &t[4], &t[5]};
    omnic__call call = {.n = in.n, .inputs = ins, .n_inputs = 6};
    omnic_status s = omnic__module_start(&v->m, &call, err); /* start copies the inputs */
    omnic__p4v_inputs_free(&in);
    if (s != OMNIC_OK) return s;
    *mod = &v->m;
    *projected = v->out_projected;
    *features = v->out_features;
    return OMNIC_OK;
}

static omnic_status p4v_encode_rows(const omnic__model *m, const omnic__media_item *it,
                                    const omnic__module *mod, int projected, float *dst, omnic_err *err)
{
    const p4v_media *v = state(m);
    int64_t gi, vr, vc;
    OMNIC_TRY(check_item(m, it, &gi, &vr, &vc, err));
    const omnic__tensor *p = omnic__module_output(mod, projected),
                        *sep = omnic__module_output(mod, v->out_separators);
    const int64_t g = v->enc.cfg.grid / 2;
    if (p->dims[0] != it->input->dims[0] * g * g || p->dims[1] != m->dec.cfg.hidden)
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "the vision encoder gave [%lld, %lld] rows",
                          (long long)p->dims[0], (long long)p->dims[1]);
    omnic__p4v_assemble(&v->enc.cfg, gi, vr, vc, p->data, sep->data, dst);
    return OMNIC_OK;
}

/* Patch matmul, per layer q/k/v/o, attention over the crop, the MLP, then the projection. */
static void p4v_encode_cost(const omnic__model *m, const omnic__media_item *it, omnic__encode_cost *out)
{
    const omnic__p4v_config *c = &state(m)->enc.cfg;
    const double crops = it->input ? (double)it->input->dims[0] : 1, GG = (double)(c->grid * c->grid);
    const double n = crops * GG, C = (double)c->hidden, I = (double)c->intermediate,
                 D = (double)c->text_hidden;
    const double layer = 4 * n * C * C + 2 * n * C * I + 2 * n * GG * C;
    out->macs =
        n * 3 * (double)(c->patch * c->patch) * C + (double)c->layers_run * layer + n / 4 * (C * D + D * D);
    out->rows = (int64_t)n, out->width = c->hidden, out->inter = c->intermediate;
}

/* ---- reports ---------------------------------------------------------------------------------- */

static void p4v_describe(const omnic__model *m, FILE *f)
{
    const p4v_media *v = state(m);
    const omnic__p4v_config *c = &v->enc.cfg;
    fprintf(f,
            "image:      Phi-4-multimodal SigLIP-NaViT, %lld of %lld layers of %lld (%lld heads), %lldx%lld "
            "crops "
            "of %lld-px patches, up to %lld HD crops + the global one, 2x2 average pool, sub/glb separators, "
            "projection to %lld (image token %d)%s%s\n",
            (long long)c->layers_run, (long long)c->n_layers, (long long)c->hidden, (long long)c->n_heads,
            (long long)c->image_size, (long long)c->image_size, (long long)c->patch, (long long)v->max_hd,
            (long long)c->text_hidden, c->image_token_id, p4v_unserved(m) ? "; not served: " : "",
            p4v_unserved(m) ? p4v_unserved(m) : "");
    omnic__module_print(&v->m, f);
}

static void p4v_summary(const omnic__model *m, char *buf, size_t n)
{
    const omnic__p4v_config *c = &state(m)->enc.cfg;
    snprintf(buf, n, "%s SigLIP %lldx%lld HD", m->family->name, (long long)c->layers_run,
             (long long)c->hidden);
}

static size_t p4v_planned_bytes(const omnic__model *m)
{
    const p4v_media *v = state(m);
    return v ? v->m.plan.total_bytes : 0;
}

static void p4v_identity(const omnic__model *m, char *modules, size_t n_modules, char *buckets,
                         size_t n_buckets)
{
    const p4v_media *v = state(m);
    size_t used = strlen(modules);
    snprintf(modules + used, n_modules - used, ";%s:%s", v->m.name, v->m.contract);
    used = strlen(buckets);
    snprintf(buckets + used, n_buckets - used, "%simage_crops:<=%lld", used ? ";" : "",
             (long long)(1 + v->max_hd));
}

static omnic_status p4v_expand_prompt(const omnic__model *m, const struct omnic__tokenizer *tok,
                                      const char *text, size_t len, const int64_t *crops, size_t n_crops,
                                      char **out, size_t *out_len, omnic_err *err)
{
    (void)crops, (void)n_crops;
    return omnic__phi4mm_expand(m, tok, OMNIC_MODALITY_IMAGE, "<|image_", text, len, out, out_len, err);
}

const omnic__media_ops omnic__media_phi4mm_image = {
    .modality = OMNIC_MODALITY_IMAGE,
    .open = p4v_open,
    .close = p4v_close,
    .ready = p4v_ready,
    .unserved = p4v_unserved,
    .proc_claims = p4v_proc_claims,
    .proc_parse = p4v_proc_parse,
    .proc_fit = p4v_proc_fit,
    .proc_clone = p4v_proc_clone,
    .proc_free = p4v_proc_free,
    .proc_kwargs = NULL,
    .proc_max_pixels = p4v_proc_max_pixels,
    .preprocess = p4v_preprocess,
    .item_rows = p4v_item_rows,
    .encode_start = p4v_encode_start,
    .encode_rows = p4v_encode_rows,
    .encode_cost = p4v_encode_cost,
    .merge = omnic__phi4mm_merge,
    .expand_prompt = p4v_expand_prompt,
    .prompt_tag = "<|image_%zu|>",
    .describe = p4v_describe,
    .summary = p4v_summary,
    .planned_bytes = p4v_planned_bytes,
    .identity = p4v_identity,
};
