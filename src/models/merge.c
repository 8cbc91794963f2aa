/* Host merge of encoded images into a prompt (LLaVA style: each image placeholder id is
 * replaced by the image's projected rows, in order; HF masked_scatter), producing the
 * PreparedPrefill the engine seeds a slot from. */
#include <string.h>

#include "models/merge.h"

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
