/* M-RoPE prefill positions (HF Qwen2VLModel.get_rope_index, images only), the processor's
 * <|image_pad|> expansion and the decode rule. */
#include <stdint.h>

#include "core/limits.h"
#include "models/mrope.h"
#include "omnic/omnic.h"

/* Largest grid side accepted (patches); with t, h, w below it N never overflows int64. */
#define GRID_MAX ((int64_t)1 << 20)

omnic_status omnic__mrope_positions(const int32_t *ids, int64_t n_ids, const int64_t *grid_thw,
                                    int64_t n_images, const omnic__mrope_spec *spec, int32_t *positions,
                                    int64_t *rope_delta, omnic_err *err)
{
    if (n_ids < 1 || n_ids > INT32_MAX)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "M-RoPE positions: %lld tokens is outside [1, %d]",
                          (long long)n_ids, INT32_MAX);
    if (n_images < 0 || (n_images > 0 && !grid_thw))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "M-RoPE positions: %lld image grids given",
                          (long long)n_images);
    const int64_t m = spec->spatial_merge_size;
    if (m < 1 || m > OMNIC_MAX_VISION_MERGE)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "M-RoPE positions: spatial_merge_size %lld is outside [1, %d]", (long long)m,
                          OMNIC_MAX_VISION_MERGE);
    for (int64_t k = 0; k < n_images; k++) {
        const int64_t *g = grid_thw + 3 * k;
        if (g[0] < 1 || g[1] < 1 || g[2] < 1 || g[0] > GRID_MAX || g[1] > GRID_MAX || g[2] > GRID_MAX ||
            g[1] % m != 0 || g[2] % m != 0)
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "M-RoPE positions: image %lld has grid (t, h, w) = (%lld, %lld, %lld); each must be in "
                "[1, %lld] and h, w multiples of the merge size %lld",
                (long long)k, (long long)g[0], (long long)g[1], (long long)g[2], (long long)GRID_MAX,
                (long long)m);
    }
    int32_t *pt = positions, *ph = positions + n_ids, *pw = positions + 2 * n_ids;
    int64_t cur = 0, k = 0, i = 0;
    while (i < n_ids) {
        const int32_t id = ids[i];
        if (spec->video_token_id >= 0 && id == spec->video_token_id)
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "M-RoPE positions: token %lld is a video placeholder (id %d); videos are not supported",
                (long long)i, (int)id);
        if (id != spec->image_token_id) { /* text: one position on all three axes */
            pt[i] = ph[i] = pw[i] = (int32_t)cur;
            cur++;
            i++;
            continue;
        }
        int64_t run = 1;
        while (i + run < n_ids && ids[i + run] == spec->image_token_id)
            run++;
        if (i == 0 || ids[i - 1] != spec->vision_start_token_id)
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "M-RoPE positions: the image placeholder run at token %lld (%lld tokens) does not follow "
                "<|vision_start|> (id %d)",
                (long long)i, (long long)run, (int)spec->vision_start_token_id);
        if (k >= n_images)
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "M-RoPE positions: image placeholder run %lld at token %lld, but only %lld image grids "
                "were given",
                (long long)(k + 1), (long long)i, (long long)n_images);
        const int64_t gt = grid_thw[3 * k], gh = grid_thw[3 * k + 1] / m, gw = grid_thw[3 * k + 2] / m;
        const int64_t n = gt * gh * gw;
        if (run != n)
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "M-RoPE positions: image %lld at token %lld has %lld placeholder tokens, but its grid "
                "(%lld, %lld, %lld) with merge size %lld needs %lld",
                (long long)k, (long long)i, (long long)run, (long long)grid_thw[3 * k],
                (long long)grid_thw[3 * k + 1], (long long)grid_thw[3 * k + 2], (long long)m, (long long)n);
        /* n tokens from index i: every coordinate is < cur + n <= i + n <= n_ids, so int32 holds it. */
        int64_t j = i;
        for (int64_t tt = 0; tt < gt; tt++)
            for (int64_t r = 0; r < gh; r++)
                for (int64_t c = 0; c < gw; c++, j++) {
                    pt[j] = (int32_t)(cur + tt);
                    ph[j] = (int32_t)(cur + r);
                    pw[j] = (int32_t)(cur + c);
                }
        int64_t span = gt > gh ? gt : gh;
        span = span > gw ? span : gw;
        cur += span;
        i += n;
        k++;
    }
    if (k != n_images)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "M-RoPE positions: %lld image grids given, but the tokens hold %lld image placeholder runs",
            (long long)n_images, (long long)k);
    *rope_delta = cur - n_ids;
    return OMNIC_OK;
}

omnic_status omnic__mrope_expand_image_pads(const int32_t *logical, int64_t n_logical,
                                            const int64_t *n_tokens, int64_t n_images, int32_t image_token_id,
                                            int32_t **expanded, int64_t *n_expanded, omnic_err *err)
{
    if (n_logical < 0 || n_logical > INT32_MAX || n_images < 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "image pad expansion: %lld tokens, %lld images",
                          (long long)n_logical, (long long)n_images);
    int64_t pads = 0, total = n_logical;
    for (int64_t i = 0; i < n_logical; i++)
        pads += logical[i] == image_token_id;
    if (pads != n_images)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "image pad expansion: the prompt has %lld image placeholders (id %d) but %lld images were "
            "given",
            (long long)pads, (int)image_token_id, (long long)n_images);
    for (int64_t k = 0; k < n_images; k++) {
        if (n_tokens[k] < 1 || n_tokens[k] > INT32_MAX)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "image pad expansion: image %lld has %lld tokens",
                              (long long)k, (long long)n_tokens[k]);
        total += n_tokens[k] - 1;
        if (total > INT32_MAX)
            return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                              "image pad expansion: the expanded prompt would pass %d tokens at image %lld",
                              INT32_MAX, (long long)k);
    }
    int32_t *out = omnic_alloc_array(total > 0 ? (size_t)total : 1, sizeof *out);
    if (!out)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "image pad expansion: no memory for %lld tokens",
                          (long long)total);
    int64_t j = 0, k = 0;
    for (int64_t i = 0; i < n_logical; i++) {
        if (logical[i] != image_token_id) {
            out[j++] = logical[i];
            continue;
        }
        for (int64_t r = 0; r < n_tokens[k]; r++)
            out[j++] = image_token_id;
        k++;
    }
    *expanded = out;
    *n_expanded = total;
    return OMNIC_OK;
}

omnic_status omnic__mrope_decode_position(int64_t cache_len, int64_t rope_delta, int32_t out[3],
                                          omnic_err *err)
{
    if (cache_len < 0 || cache_len > INT32_MAX || rope_delta < -(int64_t)INT32_MAX ||
        rope_delta > INT32_MAX || cache_len + rope_delta < 0 || cache_len + rope_delta > INT32_MAX)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "M-RoPE decode position: cache length %lld + rope_delta %lld is outside [0, %d]",
                          (long long)cache_len, (long long)rope_delta, INT32_MAX);
    out[0] = out[1] = out[2] = (int32_t)(cache_len + rope_delta);
    return OMNIC_OK;
}
