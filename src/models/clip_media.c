/* Image input through a CLIP or SigLIP tower + projector (models/clip_media.h): the family
 * table omnic__media_clip_image. */
#include <string.h>

#include "io/json.h"
#include "mm/pan_and_scan.h"
#include "models/clip_media.h"
#include "models/image_processor_config.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

static omnic__clip_media *state(const omnic__model *m)
{
    return m->media[OMNIC_MODALITY_IMAGE].ops == &omnic__media_clip_image
               ? m->media[OMNIC_MODALITY_IMAGE].state
               : NULL;
}

const omnic__clip_media *omnic__clip_media_of(const omnic__model *m)
{
    return m ? state(m) : NULL;
}

static void clip_close(omnic__model *m)
{
    omnic__clip_media *c = state(m);
    if (!c) return;
    omnic__module_deinit(&c->encode);
    omnic__vision_tower_deinit(&c->tower);
    omnic_free(c);
    m->media[OMNIC_MODALITY_IMAGE].state = NULL;
}

/* The tower, its vision.encode module (one image per call) and the image facts. */
static omnic_status clip_open(omnic__model *m, omnic_err *err)
{
    omnic__vision_config vc;
    if (!m->family->parse_vision)
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "family %s has no vision config parser", m->family->name);
    OMNIC_TRY(m->family->parse_vision(m->ckpt->config, "config.json", &m->dec.cfg, &vc, err));
    omnic__clip_media *c = omnic_alloc_array(1, sizeof *c);
    if (!c) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a vision tower");
    omnic_status s = omnic__vision_tower_load(&c->tower, &vc, m->ckpt->weights, err);
    if (s != OMNIC_OK) {
        omnic_free(c);
        return s;
    }
    m->media[OMNIC_MODALITY_IMAGE].state = c; /* clip_close frees what follows on failure */
    OMNIC_TRY(omnic__module_init(&c->encode, "vision.encode", "omnic.vision.encode/1", 1, err));
    OMNIC_TRY(omnic__vision_tower_build(&c->tower, &c->encode, err));
    OMNIC_TRY(omnic__module_finalize(&c->encode, m->backend, m->pool, err));
    OMNIC_TRY(omnic__module_constrain(&c->encode, "pixel_values", 0, true, err));
    c->features = omnic__module_find_output(&c->encode, "vision_features");
    c->projected = omnic__module_find_output(&c->encode, "projected");
    c->image_tokens = vc.n_out;
    c->image_size = vc.image_size;
    m->media[OMNIC_MODALITY_IMAGE].placeholder_id = vc.image_token_id;
    m->media[OMNIC_MODALITY_IMAGE].span_rows = vc.bidirectional ? vc.n_out : 0;
    return OMNIC_OK;
}

static bool clip_ready(const omnic__model *m)
{
    const omnic__clip_media *c = state(m);
    return c && c->encode.finalized && c->projected >= 0;
}

/* ---- processor: CLIPImageProcessor / SiglipImageProcessor ------------------------------------ */

typedef struct clip_proc {
    omnic__image_proc_params params;
    int64_t size; /* pixel_values height = width: the tower's (0: any, a processor without a model) */
    bool gemma3;  /* Gemma3ImageProcessor: pan-and-scan may be switched on */
    bool pas_on;  /* do_pan_and_scan */
    omnic__pan_and_scan pas;
} clip_proc;

/* Bounds of the pan-and-scan settings (a config or request asking for more is refused). */
#define PAS_MAX_CROPS 16

static omnic_status pas_check(const omnic__pan_and_scan *p, const char *what, omnic_err *err)
{
    if (p->min_crop < 1 || p->min_crop > OMNIC_MAX_IMAGE_SIDE)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: pan_and_scan_min_crop_size %lld is outside [1, %d]",
                          what, (long long)p->min_crop, OMNIC_MAX_IMAGE_SIDE);
    if (p->max_crops < 1 || p->max_crops > PAS_MAX_CROPS)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: pan_and_scan_max_num_crops %lld is outside [1, %d]",
                          what, (long long)p->max_crops, PAS_MAX_CROPS);
    if (!(p->min_ratio >= 1.0 && p->min_ratio <= 1e6))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: pan_and_scan_min_ratio_to_activate %g is outside [1, 1e6]", what,
                          p->min_ratio);
    return OMNIC_OK;
}

/* Gemma3ImageProcessor's pan-and-scan keys (null: Gemma3Processor's defaults 256, 4, 1.2). */
static omnic_status pas_parse(const json_t *pc, const char *what, clip_proc *p, omnic_err *err)
{
    p->pas = (omnic__pan_and_scan){.min_crop = 256, .max_crops = 4, .min_ratio = 1.2};
    const json_t *v = json_object_get(pc, "do_pan_and_scan");
    p->pas_on = json_is_true(v);
    if (v && !json_is_null(v) && !json_is_boolean(v))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: do_pan_and_scan must be a boolean or null", what);
    const int64_t big = (int64_t)1 << 31;
    if ((v = json_object_get(pc, "pan_and_scan_min_crop_size")) && !json_is_null(v))
        OMNIC_TRY(omnic__json_get_i64(pc, "pan_and_scan_min_crop_size", true, 0, -big, big, what,
                                      &p->pas.min_crop, err));
    if ((v = json_object_get(pc, "pan_and_scan_max_num_crops")) && !json_is_null(v))
        OMNIC_TRY(omnic__json_get_i64(pc, "pan_and_scan_max_num_crops", true, 0, -big, big, what,
                                      &p->pas.max_crops, err));
    if ((v = json_object_get(pc, "pan_and_scan_min_ratio_to_activate")) && !json_is_null(v))
        OMNIC_TRY(omnic__json_get_f64(pc, "pan_and_scan_min_ratio_to_activate", true, 0, -1e30, 1e30, what,
                                      &p->pas.min_ratio, err));
    return pas_check(&p->pas, what, err);
}

static bool clip_proc_claims(const json_t *pc)
{
    (void)pc; /* CLIPImageProcessor, SiglipImageProcessor and their fast variants: the fallback */
    return true;
}

/* A request's pan-and-scan switch and settings (Gemma 3 only; the output size stays fixed). */
static omnic_status clip_proc_kwargs(void *params, const omnic__media_kwargs *kw, omnic_err *err)
{
    clip_proc *p = params;
    if (kw->min_pixels || kw->max_pixels)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "Invalid 'mm_processor_kwargs': min_pixels / max_pixels apply to Qwen2-VL-style "
                          "processors only (this model's image processor makes one fixed size)");
    if (!p->gemma3)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "Invalid 'mm_processor_kwargs': pan-and-scan is Gemma 3's (this model's image "
                          "processor takes no kwargs)");
    if (kw->pan_and_scan) p->pas_on = kw->pan_and_scan == 2;
    if (kw->pas_min_crop) p->pas.min_crop = kw->pas_min_crop;
    if (kw->pas_max_crops) p->pas.max_crops = kw->pas_max_crops;
    if (kw->pas_min_ratio != 0) p->pas.min_ratio = kw->pas_min_ratio;
    return pas_check(&p->pas, "Invalid 'mm_processor_kwargs'", err);
}

static omnic_status clip_proc_parse(const json_t *pc, const char *what, const char *variant,
                                    const omnic__media_kwargs *kw, void **out, omnic_err *err)
{
    if (kw && (kw->min_pixels || kw->max_pixels)) return omnic__media_no_kwargs(OMNIC_MODALITY_IMAGE, err);
    clip_proc *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an image processor");
    omnic_status s = omnic__image_processor_config_parse(pc, what, &p->params, err);
    char buf[128];
    const char *type = omnic__processor_config_type(pc, buf, sizeof buf);
    p->gemma3 = type && !strncmp(type, "Gemma3ImageProcessor", 20);
    if (s == OMNIC_OK && p->gemma3) s = pas_parse(pc, what, p, err);
    if (s == OMNIC_OK && kw && omnic__media_kwargs_any(kw)) s = clip_proc_kwargs(p, kw, err);
    if (s != OMNIC_OK) {
        omnic_free(p);
        return s;
    }
    if (variant && !strcmp(variant, "pil")) {
        p->params.numerics = OMNIC__NUMERICS_PIL;
        p->params.crop_rounding = OMNIC__CROP_FLOOR;
    } else if (variant) {
        p->params.numerics = OMNIC__NUMERICS_TORCHVISION;
        p->params.crop_rounding = OMNIC__CROP_ROUND_HALF_EVEN;
    }
    *out = p;
    return OMNIC_OK;
}

static omnic_status clip_proc_fit(const omnic__model *m, void *params, int64_t user_max_pixels,
                                  omnic_err *err)
{
    (void)user_max_pixels; /* the output size is the tower's: a user pixel limit does not apply */
    clip_proc *p = params;
    p->size = state(m)->image_size;
    int64_t w = 0, h = 0; /* any input size: the processor must end at the encoder's square */
    OMNIC_TRY(omnic__image_proc_output_size(&p->params, 640, 480, &w, &h, err));
    if (w != p->size || h != p->size)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "preprocessor_config.json makes %lldx%lld pixel_values, the vision tower takes %lldx%lld",
            (long long)w, (long long)h, (long long)p->size, (long long)p->size);
    return OMNIC_OK;
}

static omnic_status clip_proc_clone(const void *params, void **out, omnic_err *err)
{
    clip_proc *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an image processor");
    *p = *(const clip_proc *)params;
    *out = p;
    return OMNIC_OK;
}

static void clip_proc_free(void *params)
{
    omnic_free(params);
}

static int64_t clip_proc_max_pixels(const void *params, bool own)
{
    (void)params, (void)own;
    return 0; /* fixed output size */
}

static omnic_status clip_preprocess(const void *params, const omnic__decoded_media *in,
                                    omnic__media_item *out, omnic_err *err)
{
    const clip_proc *p = params;
    const omnic__image *img = in->image;
    int64_t w, h;
    OMNIC_TRY(omnic__image_proc_output_size(&p->params, img->width, img->height, &w, &h, err));
    if (p->size && (w != p->size || h != p->size))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "a %lldx%lld image gives %lldx%lld pixel_values, the model takes %lldx%lld",
                          (long long)img->width, (long long)img->height, (long long)w, (long long)h,
                          (long long)p->size, (long long)p->size);
    *out = (omnic__media_item){.modality = OMNIC_MODALITY_IMAGE,
                               .grid = {1, 1, 1},
                               .in_w = img->width,
                               .in_h = img->height,
                               .out_w = w,
                               .out_h = h};
    int64_t n_w, n_h, cw, ch;
    const int64_t crops =
        p->pas_on ? omnic__pan_and_scan_grid(&p->pas, img->width, img->height, &n_w, &n_h, &cw, &ch) : 0;
    if (!crops) return omnic__image_preprocess(img, &p->params, &out->input, err);
    /* pan-and-scan: the image, then each crop (row-major), processed alike: [1 + crops, 3, h, w] */
    int64_t dims[4] = {1 + crops, 3, h, w};
    omnic__tensor *all;
    OMNIC_TRY(omnic__tensor_create(&all, OMNIC_DTYPE_F32, 4, dims, err));
    snprintf(all->name, sizeof all->name, "pixel_values");
    const size_t one = (size_t)(3 * h * w) * sizeof(float);
    omnic_status s = OMNIC_OK;
    for (int64_t k = 0; k <= crops && s == OMNIC_OK; k++) {
        omnic__image crop = {0};
        omnic__tensor *pv = NULL;
        if (k > 0) s = omnic__pan_and_scan_crop(img, n_w, n_h, cw, ch, k - 1, &crop, err);
        if (s == OMNIC_OK) s = omnic__image_preprocess(k ? &crop : img, &p->params, &pv, err);
        if (s == OMNIC_OK && omnic__tensor_bytes(pv) != one)
            s = OMNIC_FAIL(err, OMNIC_E_INTERNAL, "pan-and-scan crop %lld gave another pixel_values size",
                           (long long)k);
        if (s == OMNIC_OK) memcpy((char *)all->data + (size_t)k * one, pv->data, one);
        omnic__tensor_destroy(pv);
        omnic__image_deinit(&crop);
    }
    if (s != OMNIC_OK) {
        omnic__tensor_destroy(all);
        return s;
    }
    out->input = all;
    out->crops = crops;
    return OMNIC_OK;
}

/* ---- encoder and merge ----------------------------------------------------------------------- */

static omnic_status clip_item_rows(const omnic__model *m, const omnic__media_item *it, int64_t *rows,
                                   omnic_err *err)
{
    const omnic__clip_media *c = state(m);
    const omnic__tensor *t = it->input;
    const int sub = it->crops > 0; /* pan-and-scan: [1 + crops, 3, S, S], rows per sub-image */
    if (!t || !t->data || t->dtype != OMNIC_DTYPE_F32 || t->ndim != 3 + sub ||
        (sub && t->dims[0] != omnic__media_item_parts(it)) || t->dims[sub] != 3 ||
        t->dims[sub + 1] != c->image_size || t->dims[sub + 2] != c->image_size)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "pixel_values must be f32 [%s3, %lld, %lld]",
                          sub ? "1 + crops, " : "", (long long)c->image_size, (long long)c->image_size);
    *rows = c->image_tokens;
    return OMNIC_OK;
}

static omnic_status clip_encode_start(omnic__model *m, const omnic__media_item *it, omnic__module **mod,
                                      int *projected, int *features, omnic_err *err)
{
    omnic__clip_media *c = state(m);
    if (it->crops > 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "a panned-and-scanned image encodes part by part (omnic__media_item_part)");
    const omnic__tensor *in[1] = {it->input};
    omnic__call call = {.n = 1, .inputs = in, .n_inputs = 1};
    OMNIC_TRY(omnic__module_start(&c->encode, &call, err));
    *mod = &c->encode;
    *projected = c->projected;
    *features = c->features;
    return OMNIC_OK;
}

/* Patch embedding, the layers run (q/k/v/o, attention scores and values, MLP), the projector. */
static void clip_encode_cost(const omnic__model *m, const omnic__media_item *it, omnic__encode_cost *out)
{
    (void)it;
    const omnic__vision_config *c = &state(m)->tower.cfg;
    double N = (double)c->n_seq, C = (double)c->hidden, I = (double)c->intermediate,
           L = (double)c->feature_index;
    double P = (double)(c->channels * c->patch * c->patch), D = (double)c->text_hidden, R = (double)c->n_out;
    out->macs = N * P * C + L * (4 * N * C * C + 2 * N * N * C + 2 * N * C * I) + R * C * D + R * D * D;
    out->rows = c->n_seq, out->width = c->hidden, out->inter = c->intermediate;
}

/* LLaVA's and Gemma 3's merge (HF masked_scatter): each placeholder id becomes its image's
 * rows, text rows are m's own embedding rows (bit-identical to text.token_prefill's lookup and
 * scale), positions 0..n_rows-1; causal, except that with a bidirectional tower each run of
 * image rows is one span (HF Gemma3: token_type_ids 1, grouped by contiguous run). */
static omnic_status clip_merge(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                               const omnic__media_item *const *items, int64_t n_images,
                               const float *projected, omnic__prepared_prefill *out, omnic_err *err)
{
    (void)items;
    const int64_t H = m->dec.cfg.hidden, R = state(m)->image_tokens;
    const int32_t pad = m->media[OMNIC_MODALITY_IMAGE].placeholder_id;
    int64_t found = 0;
    for (int64_t i = 0; i < n_logical; i++)
        found += logical[i] == pad;
    if (found != n_images)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "the prompt has %lld image placeholders but %lld images were given",
                          (long long)found, (long long)n_images);
    omnic__prepared_prefill p = {.n_logical = n_logical,
                                 .hidden = H,
                                 .pos_mode = OMNIC_POS_1D,
                                 .n_images = n_images,
                                 .image_rows = n_images * R};
    p.n_rows = n_logical - n_images + n_images * R;
    p.logical = omnic_alloc_array((size_t)n_logical, sizeof *p.logical);
    p.embeds = omnic_alloc_array((size_t)p.n_rows * (size_t)H, sizeof *p.embeds);
    p.positions = omnic_alloc_array((size_t)p.n_rows, sizeof *p.positions);
    const bool spans = state(m)->tower.cfg.bidirectional && n_images > 0;
    if (spans) p.spans = omnic_alloc_array((size_t)n_images, sizeof *p.spans);
    omnic_status s = OMNIC_OK;
    if (!p.logical || !p.embeds || !p.positions || (spans && !p.spans)) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %lld rows x %lld",
                       (long long)p.n_rows, (long long)H);
        goto out;
    }
    memcpy(p.logical, logical, (size_t)n_logical * sizeof *logical);
    int64_t row = 0, image = 0;
    for (int64_t i = 0; i < n_logical;) {
        if (logical[i] == pad) {
            memcpy(p.embeds + row * H, projected + image * R * H, (size_t)(R * H) * sizeof(float));
            if (spans && p.n_spans && p.spans[p.n_spans - 1].end == row)
                p.spans[p.n_spans - 1].end = row + R; /* adjacent images: one run, one group */
            else if (spans)
                p.spans[p.n_spans++] = (omnic__row_span){row, row + R};
            row += R, image++, i++;
            continue;
        }
        int64_t j = i; /* a run of text ids: one lookup */
        while (j < n_logical && logical[j] != pad)
            j++;
        if ((s = omnic__model_embed_tokens(m, logical + i, j - i, p.embeds + row * H, err)) != OMNIC_OK)
            goto out;
        row += j - i, i = j;
    }
    for (int64_t r = 0; r < p.n_rows; r++)
        p.positions[r] = (int32_t)r;
    s = omnic__prepared_prefill_init(out, &p, err);
out:
    omnic__prepared_prefill_deinit(&p);
    return s;
}

/* Gemma3Processor's prompt rewrite: every boi token string becomes "\n\n" boi placeholder eoi
 * "\n\n" (HF writes image_seq_length placeholders; omnic's logical prompt holds one, which the
 * merge expands), so the newlines tokenize with their neighbours as HF's do. */
/* Gemma3Processor's pan-and-scan text: the i-th boi of text with crops[i] > 0 becomes "Here is
 * the original image " boi " and here are some crops to help you see better " and crops[i]
 * boi joined by " ". *out: owned, or NULL when no image has crops. */
static omnic_status pas_prompt(const char *text, size_t len, const char *boi, size_t nb, const int64_t *crops,
                               size_t n_crops, char **out, size_t *out_len, omnic_err *err)
{
    static const char head[] = "Here is the original image ",
                      mid[] = " and here are some crops to help you see better ";
    *out = NULL;
    size_t count = 0, extra = 0;
    for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), boi, nb)); p += nb, count++)
        if (count < n_crops && crops && crops[count] > 0)
            extra += sizeof head - 1 + sizeof mid - 1 + (size_t)crops[count] * (nb + 1);
    if (crops && n_crops > count)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the prompt has %zu images but %zu were panned and scanned",
                          count, n_crops);
    if (!extra) return OMNIC_OK;
    char *o = omnic_alloc_array(len + extra + 1, 1);
    if (!o) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %zu bytes", len + extra);
    char *w = o;
    size_t i = 0;
    for (const char *p = text, *end = text + len; p < end; i++) {
        const char *hit = memmem(p, (size_t)(end - p), boi, nb);
        if (!hit) hit = end;
        memcpy(w, p, (size_t)(hit - p)), w += hit - p;
        if (hit == end) break;
        const int64_t k = i < n_crops ? crops[i] : 0;
        if (k > 0) memcpy(w, head, sizeof head - 1), w += sizeof head - 1;
        memcpy(w, boi, nb), w += nb;
        if (k > 0) memcpy(w, mid, sizeof mid - 1), w += sizeof mid - 1;
        for (int64_t c = 0; c < k; c++) {
            if (c) *w++ = ' ';
            memcpy(w, boi, nb), w += nb;
        }
        p = hit + nb;
    }
    *w = '\0';
    *out = o;
    *out_len = (size_t)(w - o);
    return OMNIC_OK;
}

static omnic_status clip_expand_prompt(const omnic__model *m, const omnic__tokenizer *tok, const char *text,
                                       size_t len, const int64_t *crops, size_t n_crops, char **out,
                                       size_t *out_len, omnic_err *err)
{
    const omnic__vision_config *vc = &state(m)->tower.cfg;
    *out = NULL;
    if (vc->boi_id < 0) return OMNIC_OK;
    size_t nb, ni, ne;
    const char *boi = omnic__tokenizer_id_to_token(tok, vc->boi_id, &nb);
    const char *img = omnic__tokenizer_id_to_token(tok, vc->image_token_id, &ni);
    const char *eoi = omnic__tokenizer_id_to_token(tok, vc->eoi_id, &ne);
    if (!boi || !img || !eoi || !nb)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "the tokenizer has no token for boi_token_index %d, image_token_index %d or "
                          "eoi_token_index %d",
                          vc->boi_id, vc->image_token_id, vc->eoi_id);
    char *pas = NULL; /* panned-and-scanned images first written as Gemma3Processor writes them */
    size_t pas_len = 0;
    OMNIC_TRY(pas_prompt(text, len, boi, nb, crops, n_crops, &pas, &pas_len, err));
    if (pas) text = pas, len = pas_len;
    size_t count = 0;
    for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), boi, nb)); p += nb)
        count++;
    if (!count) {
        omnic_free(pas);
        return OMNIC_OK;
    }
    const size_t grow = 4 + ni + ne; /* "\n\n" boi img eoi "\n\n" replaces boi */
    size_t n = len + count * grow;
    char *o = omnic_alloc_array(n + 1, 1);
    if (!o) {
        omnic_free(pas);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %zu bytes", n);
    }
    char *w = o;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *hit = memmem(p, (size_t)(end - p), boi, nb);
        if (!hit) hit = end;
        memcpy(w, p, (size_t)(hit - p)), w += hit - p;
        if (hit == end) break;
        memcpy(w, "\n\n", 2), w += 2;
        memcpy(w, boi, nb), w += nb;
        memcpy(w, img, ni), w += ni;
        memcpy(w, eoi, ne), w += ne;
        memcpy(w, "\n\n", 2), w += 2;
        p = hit + nb;
    }
    *w = '\0';
    omnic_free(pas);
    *out = o;
    *out_len = n;
    return OMNIC_OK;
}

/* ---- reports ---------------------------------------------------------------------------------- */

static void clip_describe(const omnic__model *m, FILE *f)
{
    const omnic__clip_media *c = state(m);
    const omnic__vision_config *vc = &c->tower.cfg;
    fprintf(f,
            "vision:     %s tower, %lld px, patch %lld, hidden %lld, %lld of %lld layers run, %lld rows per "
            "image "
            "(image token %d)\n",
            vc->arch == OMNIC_VISION_CLIP ? "CLIP" : "SigLIP", (long long)vc->image_size,
            (long long)vc->patch, (long long)vc->hidden, (long long)vc->feature_index,
            (long long)vc->n_layers, (long long)c->image_tokens,
            m->media[OMNIC_MODALITY_IMAGE].placeholder_id);
    if (vc->projector == OMNIC_PROJ_GEMMA3)
        fprintf(f,
                "projector:  post-LN, %lldx%lld average pool, (1 + w) RMSNorm, x . W -> %lld rows; an "
                "image's rows "
                "attend to each other both ways (prefill); the prompt's token %d becomes \\n\\n + token %d + "
                "image + token %d + \\n\\n\n",
                (long long)vc->pool, (long long)vc->pool, (long long)vc->n_out, vc->boi_id, vc->boi_id,
                vc->eoi_id);
    omnic__module_print(&c->encode, f);
}

static void clip_summary(const omnic__model *m, char *buf, size_t n)
{
    const omnic__vision_config *vc = &state(m)->tower.cfg;
    snprintf(buf, n, "%s %s %lldpx, %lld of %lld layers", m->family->name,
             vc->arch == OMNIC_VISION_CLIP ? "CLIP" : "SigLIP", (long long)vc->image_size,
             (long long)vc->feature_index, (long long)vc->n_layers);
}

static size_t clip_planned_bytes(const omnic__model *m)
{
    const omnic__clip_media *c = state(m);
    return c ? c->encode.plan.total_bytes : 0;
}

static void clip_identity(const omnic__model *m, char *modules, size_t n_modules, char *buckets,
                          size_t n_buckets)
{
    const omnic__clip_media *c = state(m);
    size_t used = strlen(modules);
    snprintf(modules + used, n_modules - used, ";%s:%s", c->encode.name, c->encode.contract);
    snprintf(buckets, n_buckets, "image:%lldx%lld", (long long)c->image_size, (long long)c->image_size);
}

const omnic__media_ops omnic__media_clip_image = {
    .modality = OMNIC_MODALITY_IMAGE,
    .open = clip_open,
    .close = clip_close,
    .ready = clip_ready,
    .proc_claims = clip_proc_claims,
    .proc_parse = clip_proc_parse,
    .proc_fit = clip_proc_fit,
    .proc_clone = clip_proc_clone,
    .proc_free = clip_proc_free,
    .proc_kwargs = clip_proc_kwargs,
    .proc_max_pixels = clip_proc_max_pixels,
    .preprocess = clip_preprocess,
    .item_rows = clip_item_rows,
    .encode_start = clip_encode_start,
    .encode_cost = clip_encode_cost,
    .merge = clip_merge,
    .expand_prompt = clip_expand_prompt,
    .describe = clip_describe,
    .summary = clip_summary,
    .planned_bytes = clip_planned_bytes,
    .identity = clip_identity,
};
