/* The media family interface: model-level dispatch to a family's table (models/media.h). */
#include <string.h>

#include "core/sha256.h"
#include "models/family.h"
#include "models/model.h"

const char *omnic__modality_name(omnic__modality m)
{
    static const char *const n[OMNIC_MODALITY_COUNT] = {"text", "image", "audio"};
    return (unsigned)m < OMNIC_MODALITY_COUNT ? n[m] : "?";
}

void omnic__media_item_deinit(omnic__media_item *it)
{
    if (!it) return;
    omnic__tensor_destroy(it->input);
    *it = (omnic__media_item){0};
}

omnic_status omnic__media_item_copy(omnic__media_item *out, const omnic__media_item *src, omnic_err *err)
{
    *out = *src;
    out->input = NULL;
    if (!src->input) return OMNIC_OK;
    OMNIC_TRY(omnic__tensor_create(&out->input, src->input->dtype, src->input->ndim, src->input->dims, err));
    memcpy(out->input->data, src->input->data, omnic__tensor_bytes(src->input));
    return OMNIC_OK;
}

omnic_status omnic__media_item_part(const omnic__media_item *it, int64_t j, omnic__media_item *out,
                                    omnic_err *err)
{
    *out = (omnic__media_item){0};
    if (j < 0 || j >= omnic__media_item_parts(it))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "media item part %lld of %lld", (long long)j,
                          (long long)omnic__media_item_parts(it));
    if (it->crops <= 0) return omnic__media_item_copy(out, it, err);
    const omnic__tensor *in = it->input;
    if (!in || in->ndim < 2 || in->dims[0] != omnic__media_item_parts(it))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "a media item with %lld crops needs an input of %lld sub-images",
                          (long long)it->crops, (long long)omnic__media_item_parts(it));
    *out = *it;
    out->input = NULL;
    out->crops = 0;
    OMNIC_TRY(omnic__tensor_create(&out->input, in->dtype, in->ndim - 1, in->dims + 1, err));
    const size_t bytes = omnic__tensor_bytes(out->input);
    memcpy(out->input->data, (const char *)in->data + (size_t)j * bytes, bytes);
    snprintf(out->input->name, sizeof out->input->name, "%s", in->name);
    if (it->has_key) omnic__media_item_key(out);
    return OMNIC_OK;
}

void omnic__media_item_key(omnic__media_item *it)
{
    if (!it->input) return;
    omnic__sha256 h;
    omnic__sha256_init(&h);
    omnic__sha256_field(&h, "omnic.media_item/2");
    /* the rows and the resized size too: Phi-4-multimodal's patch mask follows from them, not from
     * the pixels (white padding and a white image edge are the same bytes) */
    int64_t meta[4 + OMNIC_MAX_DIMS + 6] = {it->modality, it->input->dtype, it->input->ndim, it->valid};
    for (int i = 0; i < it->input->ndim && i < OMNIC_MAX_DIMS; i++)
        meta[4 + i] = it->input->dims[i];
    for (int i = 0; i < 3; i++)
        meta[4 + OMNIC_MAX_DIMS + i] = it->grid[i];
    meta[4 + OMNIC_MAX_DIMS + 3] = it->rows;
    meta[4 + OMNIC_MAX_DIMS + 4] = it->out_w;
    meta[4 + OMNIC_MAX_DIMS + 5] = it->out_h;
    omnic__sha256_update(&h, meta, sizeof meta);
    omnic__sha256_update(&h, it->input->data, omnic__tensor_bytes(it->input));
    omnic__sha256_final(&h, it->key);
    it->has_key = true;
}

omnic_status omnic__media_no_kwargs(omnic__modality mod, omnic_err *err)
{
    return OMNIC_FAIL(
        err, OMNIC_E_UNSUPPORTED,
        "min_pixels / max_pixels apply to Qwen2-VL-style image processors only (this %s processor "
        "makes one fixed size)",
        omnic__modality_name(mod));
}

/* m's table for mod, or NULL. */
static const omnic__media_ops *ops_of(const omnic__model *m, omnic__modality mod)
{
    return m && (unsigned)mod < OMNIC_MODALITY_COUNT ? m->media[mod].ops : NULL;
}

static omnic_status not_taken(const omnic__model *m, omnic__modality mod, omnic_err *err)
{
    return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "this model (family %s) does not take %s input",
                      m ? m->family->name : "?", omnic__modality_name(mod));
}

omnic_status omnic__media_proc_init(omnic__media_proc *p, const omnic__model *m, omnic__modality mod,
                                    int64_t user_max_pixels, omnic_err *err)
{
    *p = (omnic__media_proc){0};
    const omnic__media_ops *o = ops_of(m, mod);
    if (!o || !o->ready(m) || !m->ckpt->preprocessor_config) return not_taken(m, mod, err);
    if (user_max_pixels < 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "max image pixels %lld must be >= 0",
                          (long long)user_max_pixels);
    void *params;
    OMNIC_TRY(
        o->proc_parse(m->ckpt->preprocessor_config, "preprocessor_config.json", NULL, NULL, &params, err));
    omnic_status s = o->proc_fit(m, params, user_max_pixels, err);
    if (s != OMNIC_OK) {
        o->proc_free(params);
        return s;
    }
    *p = (omnic__media_proc){
        .ops = o, .params = params, .user_max_pixels = user_max_pixels, .has_ident = true};
    omnic__sha256 h;
    omnic__sha256_init(&h);
    omnic__sha256_field(&h, "omnic.media_proc/1");
    omnic__sha256_field(&h, m->identity);
    int64_t meta[2] = {mod, user_max_pixels};
    omnic__sha256_update(&h, meta, sizeof meta);
    omnic__sha256_final(&h, p->ident);
    return OMNIC_OK;
}

/* Every processor table, the most specific first (the last claims any config of its modality). */
static const omnic__media_ops *const processors[] = {&omnic__media_phi4mm_image, &omnic__media_qwen2vl_image,
                                                     &omnic__media_clip_image};

omnic_status omnic__media_proc_from_config(omnic__media_proc *p, const json_t *pc, const char *what,
                                           omnic__modality mod, const char *variant,
                                           const omnic__media_kwargs *kw, omnic_err *err)
{
    *p = (omnic__media_proc){0};
    if (variant && strcmp(variant, "pil") && strcmp(variant, "torchvision"))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "processor variant must be pil or torchvision, got '%s'",
                          variant);
    for (size_t i = 0; i < sizeof processors / sizeof processors[0]; i++) {
        const omnic__media_ops *o = processors[i];
        if (o->modality != mod || !o->proc_claims(pc)) continue;
        OMNIC_TRY(o->proc_parse(pc, what, variant, kw, &p->params, err));
        p->ops = o;
        return OMNIC_OK;
    }
    return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: no %s processor reads this config", what,
                      omnic__modality_name(mod));
}

omnic_status omnic__media_proc_with(omnic__media_proc *out, const omnic__media_proc *src,
                                    const omnic__media_kwargs *kw, omnic_err *err)
{
    *out = (omnic__media_proc){0};
    const bool any = omnic__media_kwargs_any(kw);
    if (any && !src->ops->proc_kwargs)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "this model's %s processor takes no mm_processor_kwargs",
                          omnic__modality_name(src->ops->modality));
    void *params;
    OMNIC_TRY(src->ops->proc_clone(src->params, &params, err));
    if (any) {
        omnic_status s = src->ops->proc_kwargs(params, kw, err);
        if (s != OMNIC_OK) {
            src->ops->proc_free(params);
            return s;
        }
    }
    *out = (omnic__media_proc){.ops = src->ops,
                               .params = params,
                               .user_max_pixels = src->user_max_pixels,
                               .has_ident = src->has_ident};
    if (src->has_ident) { /* the kwargs change the items */
        omnic__sha256 h;
        omnic__sha256_init(&h);
        omnic__sha256_update(&h, src->ident, sizeof src->ident);
        double k[6] = {kw ? (double)kw->min_pixels : 0,    kw ? (double)kw->max_pixels : 0,
                       kw ? (double)kw->pan_and_scan : 0,  kw ? (double)kw->pas_min_crop : 0,
                       kw ? (double)kw->pas_max_crops : 0, kw ? kw->pas_min_ratio : 0};
        omnic__sha256_update(&h, k, sizeof k);
        omnic__sha256_final(&h, out->ident);
    }
    return OMNIC_OK;
}

void omnic__media_proc_deinit(omnic__media_proc *p)
{
    if (!p || !p->ops) return;
    p->ops->proc_free(p->params);
    *p = (omnic__media_proc){0};
}

int64_t omnic__media_proc_max_pixels(const omnic__media_proc *p, bool own)
{
    return p && p->ops ? p->ops->proc_max_pixels(p->params, own) : 0;
}

omnic_status omnic__media_preprocess(const omnic__media_proc *p, const omnic__decoded_media *in,
                                     omnic__media_item *out, omnic_err *err)
{
    *out = (omnic__media_item){0};
    if (!p || !p->ops) return OMNIC_FAIL(err, OMNIC_E_INVALID, "no media processor");
    omnic_status s = p->ops->preprocess(p->params, in, out, err);
    if (s != OMNIC_OK) omnic__media_item_deinit(out);
    return s;
}

omnic_status omnic__media_item_rows(const omnic__model *m, const omnic__media_item *it, int64_t *rows,
                                    omnic_err *err)
{
    const omnic__media_ops *o = ops_of(m, it->modality);
    if (!o || !o->ready(m)) return not_taken(m, it->modality, err);
    return o->item_rows(m, it, rows, err);
}

omnic_status omnic__media_encode(omnic__model *m, const omnic__media_item *it,
                                 const omnic__tensor **projected, const omnic__tensor **features,
                                 omnic_err *err)
{
    omnic__module *mod;
    int pi, fi;
    OMNIC_TRY(omnic__media_encode_start(m, it, &mod, &pi, &fi, err));
    bool done;
    OMNIC_TRY(omnic__module_run(mod, 0, NULL, &done, err));
    *projected = omnic__module_output(mod, pi);
    if (features) *features = fi >= 0 ? omnic__module_output(mod, fi) : NULL;
    return OMNIC_OK;
}

omnic_status omnic__media_encode_rows(const omnic__model *m, const omnic__media_item *it,
                                      const omnic__module *mod, int projected, float *dst, omnic_err *err)
{
    const omnic__media_ops *o = ops_of(m, it->modality);
    if (!o || !o->ready(m)) return not_taken(m, it->modality, err);
    if (o->encode_rows) return o->encode_rows(m, it, mod, projected, dst, err);
    int64_t R;
    OMNIC_TRY(o->item_rows(m, it, &R, err));
    const int64_t H = m->dec.cfg.hidden;
    const omnic__model_media *md = &m->media[it->modality];
    /* an encoder may give rows past the item's (padding of a fixed block): the first R */
    for (int j = -1; j < md->n_side; j++) {
        const omnic__tensor *t = omnic__module_output(mod, j < 0 ? projected : md->side_out[j]);
        if (t->dims[0] < R || omnic__tensor_cols(t) != H)
            return OMNIC_FAIL(
                err, OMNIC_E_INTERNAL, "the encoder's output %s is [%lld, %lld], expected [%lld, %lld]",
                omnic__module_output_name(mod, j < 0 ? projected : md->side_out[j]), (long long)t->dims[0],
                (long long)omnic__tensor_cols(t), (long long)R, (long long)H);
        memcpy(dst + (size_t)((1 + j) * R * H), t->data, (size_t)(R * H) * sizeof(float));
    }
    return OMNIC_OK;
}

omnic_status omnic__media_encode_start(omnic__model *m, const omnic__media_item *it, omnic__module **mod,
                                       int *projected, int *features, omnic_err *err)
{
    const omnic__media_ops *o = ops_of(m, it->modality);
    if (!o || !o->ready(m)) return not_taken(m, it->modality, err);
    return o->encode_start(m, it, mod, projected, features, err);
}

void omnic__media_encode_cost(const omnic__model *m, const omnic__media_item *it, omnic__encode_cost *out)
{
    *out = (omnic__encode_cost){0};
    const omnic__media_ops *o = ops_of(m, it->modality);
    if (o) o->encode_cost(m, it, out);
}

omnic_status omnic__media_merge(const omnic__model *m, const int32_t *logical, int64_t n,
                                const omnic__media_item *const *items, int64_t n_items,
                                const float *projected, omnic__prepared_prefill *out, omnic_err *err)
{
    omnic__modality mod = n_items ? items[0]->modality : OMNIC_MODALITY_IMAGE;
    const omnic__media_ops *o = ops_of(m, mod);
    if (!o || !o->ready(m)) return not_taken(m, mod, err);
    /* a prompt may mix modalities whose tables share one merge (the family merges them together) */
    for (int64_t k = 1; k < n_items; k++)
        if (items[k]->modality != mod &&
            (!ops_of(m, items[k]->modality) || ops_of(m, items[k]->modality)->merge != o->merge))
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                              "a prompt mixing %s and %s input is not supported yet",
                              omnic__modality_name(mod), omnic__modality_name(items[k]->modality));
    return o->merge(m, logical, n, items, n_items, projected, out, err);
}

omnic_status omnic__media_expand_prompt(const omnic__model *m, const struct omnic__tokenizer *tok,
                                        const char *text, size_t len, const int64_t *crops, size_t n_crops,
                                        char **out, size_t *out_len, omnic_err *err)
{
    char *cur = NULL; /* NULL: text as given */
    for (int k = 0; m && k < OMNIC_MODALITY_COUNT; k++) {
        const omnic__media_ops *o = m->media[k].ops;
        if (!o || !o->expand_prompt || !o->ready(m)) continue;
        char *next = NULL;
        size_t n = 0;
        omnic_status s =
            o->expand_prompt(m, tok, cur ? cur : text, len, k == OMNIC_MODALITY_IMAGE ? crops : NULL,
                             k == OMNIC_MODALITY_IMAGE ? n_crops : 0, &next, &n, err);
        if (s != OMNIC_OK) {
            omnic_free(cur);
            return s;
        }
        if (next) omnic_free(cur), cur = next, len = n;
    }
    *out = cur;
    *out_len = len;
    return OMNIC_OK;
}

const char *omnic__media_prompt_tag(const omnic__model *m, omnic__modality mod)
{
    return ops_of(m, mod) ? ops_of(m, mod)->prompt_tag : NULL;
}

int32_t omnic__media_placeholder(const omnic__model *m, omnic__modality mod)
{
    return ops_of(m, mod) ? m->media[mod].placeholder_id : -1;
}
