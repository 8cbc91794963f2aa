/* Image input through the Qwen2-VL / Qwen2.5-VL towers (models/qwen2vl_media.h): the family
 * table omnic__media_qwen2vl_image. */
#include <string.h>

#include "core/limits.h"
#include "io/json.h"
#include "models/model.h"
#include "models/qwen2vl_media.h"
#include "models/qwen2vl_processor.h"
#include "models/qwen2vl_processor_config.h"

static omnic__qwen2vl_media *state(const omnic__model *m)
{
    return m->media[OMNIC_MODALITY_IMAGE].ops == &omnic__media_qwen2vl_image
               ? m->media[OMNIC_MODALITY_IMAGE].state
               : NULL;
}

const omnic__qwen2vl_media *omnic__qwen2vl_media_of(const omnic__model *m)
{
    return m ? state(m) : NULL;
}

static void qwen_close(omnic__model *m)
{
    omnic__qwen2vl_media *q = state(m);
    if (!q) return;
    omnic__qvit_encoder_deinit(&q->enc);
    omnic__qvit_destroy(q->qvit);
    omnic_free(q);
    m->media[OMNIC_MODALITY_IMAGE].state = NULL;
}

/* The tower and its encoder, planned for the largest image the checkpoint's processor makes
 * (max_pixels / patch^2 patches), at most OMNIC_MAX_QWEN_IMAGE_PATCHES. */
static omnic_status qwen_open(omnic__model *m, omnic_err *err)
{
    omnic__qwen2vl_media *q = omnic_alloc_array(1, sizeof *q);
    if (!q) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a vision tower");
    m->media[OMNIC_MODALITY_IMAGE].state = q; /* qwen_close frees what follows on failure */
    OMNIC_TRY(omnic__qvit_create(m->ckpt->config, m->ckpt->weights, m->dec.cfg.hidden, &q->qvit, err));
    const omnic__qvit_config *c = &q->qvit->cfg;
    int64_t cap = OMNIC_MAX_QWEN_IMAGE_PATCHES;
    const json_t *pc = m->ckpt->preprocessor_config;
    const json_t *mp = pc ? json_object_get(pc, "max_pixels") : NULL;
    if (json_is_integer(mp) && json_integer_value(mp) > 0 &&
        json_integer_value(mp) / (c->patch * c->patch) < cap)
        cap = json_integer_value(mp) / (c->patch * c->patch);
    if (cap < c->unit) cap = c->unit;
    OMNIC_TRY(omnic__qvit_encoder_init(&q->enc, q->qvit, cap, m->backend, m->pool, err));
    q->spec = (omnic__mrope_spec){.image_token_id = c->image_token_id,
                                  .vision_start_token_id = c->vision_start_id,
                                  .video_token_id = -1,
                                  .spatial_merge_size = c->merge};
    const json_t *vt = json_object_get(m->ckpt->config, "video_token_id");
    if (json_is_integer(vt)) q->spec.video_token_id = (int32_t)json_integer_value(vt);
    if (c->image_token_id < 0 || c->image_token_id >= m->dec.cfg.vocab || c->vision_start_id < 0 ||
        c->vision_start_id >= m->dec.cfg.vocab)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "config.json: image_token_id %d / vision_start_token_id %d must be in the vocabulary of %lld",
            c->image_token_id, c->vision_start_id, (long long)m->dec.cfg.vocab);
    m->media[OMNIC_MODALITY_IMAGE].placeholder_id = c->image_token_id;
    /* Qwen3-VL: the DeepStack features follow each image's rows (the merge takes them) */
    m->media[OMNIC_MODALITY_IMAGE].n_side = (int)c->n_deepstack;
    for (int64_t k = 0; k < c->n_deepstack; k++)
        m->media[OMNIC_MODALITY_IMAGE].side_out[k] = q->enc.out_deepstack[k];
    if (c->n_deepstack != m->dec.cfg.n_deepstack)
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL,
                          "the tower has %lld DeepStack mergers, the text model takes %lld",
                          (long long)c->n_deepstack, (long long)m->dec.cfg.n_deepstack);
    return OMNIC_OK;
}

static bool qwen_ready(const omnic__model *m)
{
    const omnic__qwen2vl_media *q = state(m);
    return q && q->enc.m.finalized;
}

/* ---- processor: Qwen2VLImageProcessor ---------------------------------------------------------- */

typedef struct qwen_proc {
    omnic__qwen2vl_proc_params params; /* what runs: max_pixels within the encoder and the user limit */
    int64_t own_max_pixels;            /* the checkpoint's max_pixels (HF's default) */
} qwen_proc;

static bool qwen_proc_claims(const json_t *pc)
{
    return omnic__qwen2vl_processor_config_matches(pc);
}

static omnic_status qwen_proc_parse(const json_t *pc, const char *what, const char *variant,
                                    const omnic__media_kwargs *kw, void **out, omnic_err *err)
{
    qwen_proc *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an image processor");
    omnic_status s = omnic__qwen2vl_processor_config_parse(pc, what, &p->params, err);
    if (s != OMNIC_OK) {
        omnic_free(p);
        return s;
    }
    if (variant)
        p->params.numerics = !strcmp(variant, "pil") ? OMNIC__NUMERICS_PIL : OMNIC__NUMERICS_TORCHVISION;
    if (kw &&
        (s = omnic__qwen2vl_set_pixel_bounds(&p->params, kw->min_pixels, kw->max_pixels, err)) != OMNIC_OK) {
        omnic_free(p);
        return s;
    }
    p->own_max_pixels = p->params.max_pixels;
    *out = p;
    return OMNIC_OK;
}

/* The checkpoint's bounds within the encoder's capacity and the user limit. */
static omnic_status qwen_proc_fit(const omnic__model *m, void *params, int64_t user_max_pixels,
                                  omnic_err *err)
{
    const omnic__qwen2vl_media *q = state(m);
    const omnic__qvit_config *c = &q->qvit->cfg;
    qwen_proc *p = params;
    if (p->params.patch_size != c->patch || p->params.temporal_patch_size != c->temporal ||
        p->params.merge_size != c->merge)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "preprocessor_config.json patch %lld / temporal %lld / merge %lld do not match the vision "
            "tower's %lld / %lld / %lld",
            (long long)p->params.patch_size, (long long)p->params.temporal_patch_size,
            (long long)p->params.merge_size, (long long)c->patch, (long long)c->temporal,
            (long long)c->merge);
    const int64_t cap_pixels = q->enc.capacity * c->patch * c->patch; /* the encoder's largest image */
    if (p->params.max_pixels > cap_pixels) p->params.max_pixels = cap_pixels;
    if (user_max_pixels > 0 && p->params.max_pixels > user_max_pixels) p->params.max_pixels = user_max_pixels;
    if (p->params.min_pixels > p->params.max_pixels) p->params.min_pixels = p->params.max_pixels;
    return OMNIC_OK;
}

static omnic_status qwen_proc_clone(const void *params, void **out, omnic_err *err)
{
    qwen_proc *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an image processor");
    *p = *(const qwen_proc *)params;
    *out = p;
    return OMNIC_OK;
}

static void qwen_proc_free(void *params)
{
    omnic_free(params);
}

/* A request's min_pixels / max_pixels, within the bound this processor was made with. */
static omnic_status qwen_proc_kwargs(void *params, const omnic__media_kwargs *kw, omnic_err *err)
{
    qwen_proc *p = params;
    if (kw->pan_and_scan || kw->pas_min_crop || kw->pas_max_crops || kw->pas_min_ratio != 0)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "Invalid 'mm_processor_kwargs': pan-and-scan is Gemma 3's (this processor takes "
                          "min_pixels and max_pixels)");
    const int64_t hi = p->params.max_pixels;
    if (kw->max_pixels > hi || kw->min_pixels > hi)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "Invalid 'mm_processor_kwargs': %lld pixels is over this server's limit of %lld",
                          (long long)(kw->max_pixels > hi ? kw->max_pixels : kw->min_pixels), (long long)hi);
    return omnic__qwen2vl_set_pixel_bounds(&p->params, kw->min_pixels, kw->max_pixels, err);
}

static int64_t qwen_proc_max_pixels(const void *params, bool own)
{
    const qwen_proc *p = params;
    return own ? p->own_max_pixels : p->params.max_pixels;
}

static omnic_status qwen_preprocess(const void *params, const omnic__decoded_media *in,
                                    omnic__media_item *out, omnic_err *err)
{
    const qwen_proc *p = params;
    const omnic__image *img = in->image;
    omnic__qwen2vl_grid g;
    OMNIC_TRY(omnic__qwen2vl_preprocess(img, &p->params, &out->input, &g, err));
    out->modality = OMNIC_MODALITY_IMAGE;
    out->has_grid = true;
    out->grid[0] = g.t, out->grid[1] = g.h, out->grid[2] = g.w;
    out->rows = g.n_tokens;
    out->in_w = img->width, out->in_h = img->height;
    out->out_w = g.resized_width, out->out_h = g.resized_height;
    if (p->params.max_pixels < p->own_max_pixels) { /* would the checkpoint's own bound give more? */
        omnic__qwen2vl_proc_params own = p->params;
        omnic__qwen2vl_grid og;
        own.max_pixels = p->own_max_pixels;
        omnic_err ignore;
        if (omnic__qwen2vl_grid_for_size(&own, img->width, img->height, &og, &ignore) == OMNIC_OK)
            out->limited = og.h != g.h || og.w != g.w;
    }
    return OMNIC_OK;
}

/* ---- encoder and merge ----------------------------------------------------------------------- */

static omnic_status qwen_item_rows(const omnic__model *m, const omnic__media_item *it, int64_t *rows,
                                   omnic_err *err)
{
    const omnic__qwen2vl_media *q = state(m);
    const omnic__qvit_config *c = &q->qvit->cfg;
    const omnic__tensor *t = it->input;
    const int64_t *g = it->grid;
    if (!it->has_grid || g[0] < 1 || g[1] < 1 || g[2] < 1 || g[1] % c->merge || g[2] % c->merge || !t ||
        !t->data || t->dtype != OMNIC_DTYPE_F32 || t->ndim != 2 || t->dims[1] != c->patch_dim ||
        t->dims[0] != g[0] * g[1] * g[2] || t->dims[0] > q->enc.capacity)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "pixel_values must be f32 [t*h*w, %lld] with a grid (t, h, w), h and w multiples of %lld, "
            "at most %lld patches",
            (long long)c->patch_dim, (long long)c->merge, (long long)q->enc.capacity);
    *rows = t->dims[0] / c->unit;
    return OMNIC_OK;
}

static omnic_status qwen_encode_start(omnic__model *m, const omnic__media_item *it, omnic__module **mod,
                                      int *projected, int *features, omnic_err *err)
{
    omnic__qvit_encoder *e = &state(m)->enc;
    OMNIC_TRY(omnic__qvit_encode_start(e, it->input, it->grid, 1, err));
    *mod = &e->m;
    *projected = e->out_projected;
    *features = e->out_features;
    return OMNIC_OK;
}

/* Patch embedding, per layer q/k/v/o, attention within the frame (Qwen2.5-VL: windows on most
 * layers, counted as full frames here: an upper bound), the MLP (Qwen2.5-VL: 3 matrices, else
 * 2), the merger and Qwen3-VL's DeepStack mergers (the same shapes). */
static void qwen_encode_cost(const omnic__model *m, const omnic__media_item *it, omnic__encode_cost *out)
{
    const omnic__qvit_config *c = &state(m)->qvit->cfg;
    const int64_t *g = it->grid;
    double N = (double)(g[0] * g[1] * g[2]), F = (double)(g[1] * g[2]), C = (double)c->hidden;
    double I = (double)c->intermediate, U = (double)c->unit, D = (double)c->out_hidden;
    double mlp = c->arch == OMNIC_QVIT_QWEN2_5_VL ? 3 : 2;
    out->macs = N * (double)c->patch_dim * C +
                (double)c->depth * (4 * N * C * C + 2 * N * F * C + mlp * N * C * I) +
                (double)(1 + c->n_deepstack) * ((N / U) * (U * C) * (U * C) + (N / U) * (U * C) * D);
    out->rows = g[0] * g[1] * g[2], out->width = c->hidden, out->inter = c->intermediate;
}

/* Each pad expands to its image's t*h*w/merge^2 rows, text rows are m's own embedding rows,
 * positions are HF get_rope_index's [3, T] M-RoPE coordinates with rope_delta. */
static omnic_status qwen_merge(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                               const omnic__media_item *const *items, int64_t n_images,
                               const float *projected, omnic__prepared_prefill *out, omnic_err *err)
{
    const omnic__mrope_spec *spec = &state(m)->spec;
    const int64_t H = m->dec.cfg.hidden, mm = spec->spatial_merge_size * spec->spatial_merge_size;
    const size_t nk = n_images > 0 ? (size_t)n_images : 1;
    int64_t *n_tok = omnic_alloc_array(nk, sizeof *n_tok),
            *grid_thw = omnic_alloc_array(3 * nk, sizeof *grid_thw);
    int32_t *ids = NULL;
    omnic__prepared_prefill p = {
        .n_logical = n_logical, .hidden = H, .pos_mode = OMNIC_POS_MROPE, .n_images = n_images};
    omnic_status s = OMNIC_OK;
    if (!n_tok || !grid_thw) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld image grids", (long long)n_images);
        goto out;
    }
    for (int64_t k = 0; k < n_images; k++) {
        for (int a = 0; a < 3; a++)
            grid_thw[3 * k + a] = items[k]->grid[a];
        n_tok[k] = grid_thw[3 * k] * grid_thw[3 * k + 1] * grid_thw[3 * k + 2] / mm;
        p.image_rows += n_tok[k];
    }
    s = omnic__mrope_expand_image_pads(logical, n_logical, n_tok, n_images, spec->image_token_id, &ids,
                                       &p.n_rows, err);
    if (s != OMNIC_OK) goto out;
    p.logical = omnic_alloc_array((size_t)n_logical, sizeof *p.logical);
    p.embeds = omnic_alloc_array((size_t)p.n_rows * (size_t)H, sizeof *p.embeds);
    p.positions = omnic_alloc_array(3 * (size_t)p.n_rows, sizeof *p.positions);
    if (!p.logical || !p.embeds || !p.positions) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %lld rows x %lld",
                       (long long)p.n_rows, (long long)H);
        goto out;
    }
    memcpy(p.logical, logical, (size_t)n_logical * sizeof *logical);
    if ((s = omnic__mrope_positions(ids, p.n_rows, grid_thw, n_images, spec, p.positions, &p.rope_delta,
                                    err)) != OMNIC_OK)
        goto out;
    const int ns = m->media[OMNIC_MODALITY_IMAGE].n_side; /* DeepStack blocks after each image's rows */
    if (ns > 0) {
        p.n_side = ns;
        p.side = omnic_alloc_array((size_t)p.n_rows * (size_t)(ns * H), sizeof *p.side); /* zero: text rows */
        if (!p.side) {
            s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld rows of DeepStack features",
                           (long long)p.n_rows);
            goto out;
        }
    }
    int64_t img = 0, img_row = 0,
            base = 0; /* image, its row, its first row in projected (HF masked_scatter) */
    for (int64_t i = 0; i < p.n_rows;) {
        if (ids[i] == spec->image_token_id) {
            while (img < n_images && img_row == n_tok[img])
                base += n_tok[img] * (1 + ns), img++, img_row = 0;
            memcpy(p.embeds + i * H, projected + (base + img_row) * H, (size_t)H * sizeof(float));
            for (int j = 0; j < ns; j++)
                memcpy(p.side + (i * ns + j) * H, projected + (base + (1 + j) * n_tok[img] + img_row) * H,
                       (size_t)H * sizeof(float));
            img_row++, i++;
            continue;
        }
        int64_t j = i;
        while (j < p.n_rows && ids[j] != spec->image_token_id)
            j++;
        if ((s = omnic__model_embed_tokens(m, ids + i, j - i, p.embeds + i * H, err)) != OMNIC_OK) goto out;
        i = j;
    }
    s = omnic__prepared_prefill_init(out, &p, err);
out:
    omnic_free(ids);
    omnic_free(n_tok);
    omnic_free(grid_thw);
    omnic__prepared_prefill_deinit(&p);
    return s;
}

/* ---- reports ---------------------------------------------------------------------------------- */

static const char *arch_name(const omnic__qvit_config *c)
{
    return c->arch == OMNIC_QVIT_QWEN2_VL   ? "Qwen2-VL"
           : c->arch == OMNIC_QVIT_QWEN3_VL ? "Qwen3-VL"
                                            : "Qwen2.5-VL";
}

static void qwen_describe(const omnic__model *m, FILE *f)
{
    const omnic__qwen2vl_media *q = state(m);
    const omnic__qvit_config *qc = &q->qvit->cfg;
    fprintf(
        f,
        "vision:     %s tower, patch %lld, temporal %lld, merge %lld, hidden %lld, %lld layers, up to %lld "
        "patches per image (image pad %d, vision start %d), M-RoPE sections %d/%d/%d%s\n",
        arch_name(qc), (long long)qc->patch, (long long)qc->temporal, (long long)qc->merge,
        (long long)qc->hidden, (long long)qc->depth, (long long)q->enc.capacity, qc->image_token_id,
        qc->vision_start_id, m->dec.cfg.mrope_section[0], m->dec.cfg.mrope_section[1],
        m->dec.cfg.mrope_section[2], m->dec.cfg.mrope_interleaved ? " interleaved" : "");
    if (qc->n_deepstack > 0) {
        fprintf(f, "deepstack:  %lld mergers after vision blocks", (long long)qc->n_deepstack);
        for (int64_t k = 0; k < qc->n_deepstack; k++)
            fprintf(f, "%s%lld", k ? ", " : " ", (long long)qc->deepstack_layer[k]);
        fprintf(f, "; their rows are added to the image rows after text layers 0..%lld (prefill only)\n",
                (long long)qc->n_deepstack - 1);
    }
    omnic__module_print(&q->enc.m, f);
}

static void qwen_summary(const omnic__model *m, char *buf, size_t n)
{
    snprintf(buf, n, "%s %s", m->family->name, arch_name(&state(m)->qvit->cfg));
}

static size_t qwen_planned_bytes(const omnic__model *m)
{
    const omnic__qwen2vl_media *q = state(m);
    return q ? q->enc.m.plan.total_bytes : 0;
}

static void qwen_identity(const omnic__model *m, char *modules, size_t n_modules, char *buckets,
                          size_t n_buckets)
{
    const omnic__qwen2vl_media *q = state(m);
    size_t used = strlen(modules);
    snprintf(modules + used, n_modules - used, ";%s:%s", q->enc.m.name, q->enc.m.contract);
    snprintf(buckets, n_buckets, "image_patches:<=%lld", (long long)q->enc.capacity);
}

const omnic__media_ops omnic__media_qwen2vl_image = {
    .modality = OMNIC_MODALITY_IMAGE,
    .open = qwen_open,
    .close = qwen_close,
    .ready = qwen_ready,
    .proc_claims = qwen_proc_claims,
    .proc_parse = qwen_proc_parse,
    .proc_fit = qwen_proc_fit,
    .proc_clone = qwen_proc_clone,
    .proc_free = qwen_proc_free,
    .proc_kwargs = qwen_proc_kwargs,
    .proc_max_pixels = qwen_proc_max_pixels,
    .preprocess = qwen_preprocess,
    .item_rows = qwen_item_rows,
    .encode_start = qwen_encode_start,
    .encode_cost = qwen_encode_cost,
    .merge = qwen_merge,
    .describe = qwen_describe,
    .summary = qwen_summary,
    .planned_bytes = qwen_planned_bytes,
    .identity = qwen_identity,
};
