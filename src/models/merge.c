/* Host merge of encoded images into a prompt (LLaVA style: each image placeholder id is
 * replaced by the image's projected rows, in order; HF masked_scatter), producing the
 * PreparedPrefill the engine seeds a slot from. */
#include <string.h>

#include "models/merge.h"
#include "models/mrope.h"

omnic_status omnic__model_merge_images(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                                       const float *projected, int64_t n_images, omnic__prepared_prefill *out,
                                       omnic_err *err)
{
    const int64_t H = m->dec.cfg.hidden, R = m->image_tokens;
    int64_t found = 0;
    for (int64_t i = 0; i < n_logical; i++) found += logical[i] == m->image_token_id;
    if (found != n_images)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the prompt has %lld image placeholders but %lld images were given",
                          (long long)found, (long long)n_images);
    omnic__prepared_prefill p = {.n_logical = n_logical, .hidden = H, .pos_mode = OMNIC_POS_1D, .n_images = n_images,
                                 .image_rows = n_images * R};
    p.n_rows = n_logical - n_images + n_images * R;
    p.logical = omnic_alloc_array((size_t)n_logical, sizeof *p.logical);
    p.embeds = omnic_alloc_array((size_t)p.n_rows * (size_t)H, sizeof *p.embeds);
    p.positions = omnic_alloc_array((size_t)p.n_rows, sizeof *p.positions);
    omnic_status s = OMNIC_OK;
    if (!p.logical || !p.embeds || !p.positions) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %lld rows x %lld", (long long)p.n_rows,
                       (long long)H);
        goto out;
    }
    memcpy(p.logical, logical, (size_t)n_logical * sizeof *logical);
    int64_t row = 0, image = 0;
    for (int64_t i = 0; i < n_logical;) {
        if (logical[i] == m->image_token_id) {
            memcpy(p.embeds + row * H, projected + image * R * H, (size_t)(R * H) * sizeof(float));
            row += R, image++, i++;
            continue;
        }
        int64_t j = i; /* a run of text ids: one lookup */
        while (j < n_logical && logical[j] != m->image_token_id) j++;
        if ((s = omnic__model_embed_tokens(m, logical + i, j - i, p.embeds + row * H, err)) != OMNIC_OK) goto out;
        row += j - i, i = j;
    }
    for (int64_t r = 0; r < p.n_rows; r++) p.positions[r] = (int32_t)r;
    s = omnic__prepared_prefill_init(out, &p, err);
out:
    omnic__prepared_prefill_deinit(&p);
    return s;
}

omnic_status omnic__model_merge_mrope(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                                      const int64_t *grid_thw, const float *projected, int64_t n_images,
                                      const omnic__mrope_spec *spec, omnic__prepared_prefill *out, omnic_err *err)
{
    const int64_t H = m->dec.cfg.hidden, mm = spec->spatial_merge_size * spec->spatial_merge_size;
    int64_t *n_tok = omnic_alloc_array(n_images > 0 ? (size_t)n_images : 1, sizeof *n_tok);
    if (!n_tok) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld image grids", (long long)n_images);
    int64_t rows = 0;
    for (int64_t k = 0; k < n_images; k++) {
        n_tok[k] = grid_thw[3 * k] * grid_thw[3 * k + 1] * grid_thw[3 * k + 2] / mm;
        rows += n_tok[k];
    }
    omnic__prepared_prefill p = {.n_logical = n_logical, .hidden = H, .pos_mode = OMNIC_POS_MROPE,
                                 .n_images = n_images, .image_rows = rows};
    int32_t *ids = NULL;
    omnic_status s = omnic__mrope_expand_image_pads(logical, n_logical, n_tok, n_images, spec->image_token_id, &ids,
                                                    &p.n_rows, err);
    if (s != OMNIC_OK) goto out;
    p.logical = omnic_alloc_array((size_t)n_logical, sizeof *p.logical);
    p.embeds = omnic_alloc_array((size_t)p.n_rows * (size_t)H, sizeof *p.embeds);
    p.positions = omnic_alloc_array(3 * (size_t)p.n_rows, sizeof *p.positions);
    if (!p.logical || !p.embeds || !p.positions) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %lld rows x %lld", (long long)p.n_rows,
                       (long long)H);
        goto out;
    }
    memcpy(p.logical, logical, (size_t)n_logical * sizeof *logical);
    if ((s = omnic__mrope_positions(ids, p.n_rows, grid_thw, n_images, spec, p.positions, &p.rope_delta, err)) !=
        OMNIC_OK)
        goto out;
    int64_t img_row = 0; /* rows of projected consumed, in order (HF masked_scatter) */
    for (int64_t i = 0; i < p.n_rows;) {
        if (ids[i] == spec->image_token_id) {
            memcpy(p.embeds + i * H, projected + img_row * H, (size_t)H * sizeof(float));
            img_row++, i++;
            continue;
        }
        int64_t j = i;
        while (j < p.n_rows && ids[j] != spec->image_token_id) j++;
        if ((s = omnic__model_embed_tokens(m, ids + i, j - i, p.embeds + i * H, err)) != OMNIC_OK) goto out;
        i = j;
    }
    s = omnic__prepared_prefill_init(out, &p, err);
out:
    omnic_free(ids);
    omnic_free(n_tok);
    omnic__prepared_prefill_deinit(&p);
    return s;
}

omnic_status omnic__model_merge(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                                const int64_t *grid_thw, const float *projected, int64_t n_images,
                                omnic__prepared_prefill *out, omnic_err *err)
{
    if (m->qvit)
        return omnic__model_merge_mrope(m, logical, n_logical, grid_thw, projected, n_images, &m->mrope_spec, out, err);
    return omnic__model_merge_images(m, logical, n_logical, projected, n_images, out, err);
}
