/* PreparedPrefill validation and ownership. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "mm/prepared.h"

omnic_status omnic__prepared_prefill_init(omnic__prepared_prefill *out, omnic__prepared_prefill *src,
                                          omnic_err *err)
{
    const omnic__prepared_prefill *p = src;
    if (p->n_logical < 1 || !p->logical)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "prepared prefill: %lld logical tokens (need >= 1)",
                          (long long)p->n_logical);
    if (p->n_rows < 1 || p->hidden < 1 || !p->embeds || !p->positions)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "prepared prefill: %lld rows of width %lld (need >= 1 each)",
                          (long long)p->n_rows, (long long)p->hidden);
    if (p->n_images < 0 || p->image_rows < 0 || p->n_images > p->n_logical ||
        p->n_rows != p->n_logical - p->n_images + p->image_rows)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "prepared prefill: %lld rows, but %lld logical tokens with %lld media placeholders "
                          "expanding to %lld rows make %lld",
                          (long long)p->n_rows, (long long)p->n_logical, (long long)p->n_images,
                          (long long)p->image_rows, (long long)(p->n_logical - p->n_images + p->image_rows));
    const size_t n_emb = (size_t)p->n_rows * (size_t)p->hidden;
    for (size_t i = 0; i < n_emb; i++)
        if (!isfinite(p->embeds[i]))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "prepared prefill: embedding [%zu, %zu] is not finite",
                              i / (size_t)p->hidden, i % (size_t)p->hidden);
    if (p->pos_mode == OMNIC_POS_1D) {
        if (p->rope_delta != 0)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "prepared prefill: rope_delta %lld with 1-D positions",
                              (long long)p->rope_delta);
        for (int64_t i = 0; i < p->n_rows; i++)
            if (p->positions[i] < 0 || (i > 0 && p->positions[i] <= p->positions[i - 1]))
                return OMNIC_FAIL(
                    err, OMNIC_E_INVALID,
                    "prepared prefill: position [%lld] = %d is not above the previous one or is negative",
                    (long long)i, p->positions[i]);
    } else if (p->pos_mode == OMNIC_POS_MROPE) {
        for (int64_t i = 0; i < 3 * p->n_rows; i++)
            if (p->positions[i] < 0)
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "prepared prefill: M-RoPE position [%lld, %lld] = %d is negative",
                                  (long long)(i / p->n_rows), (long long)(i % p->n_rows), p->positions[i]);
    } else {
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "prepared prefill: unknown position mode %d",
                          (int)p->pos_mode);
    }
    if (p->bias) {
        const size_t n_bias = (size_t)p->n_rows * (size_t)p->n_rows;
        for (size_t i = 0; i < n_bias; i++)
            if (!isfinite(p->bias[i]))
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "prepared prefill: attention bias [%zu, %zu] is not finite",
                                  i / (size_t)p->n_rows, i % (size_t)p->n_rows);
    }
    if (p->n_side < 0 || (p->n_side > 0) != (p->side != NULL))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "prepared prefill: %d side blocks", p->n_side);
    for (size_t i = 0; i < (size_t)p->n_rows * (size_t)p->n_side * (size_t)p->hidden; i++)
        if (!isfinite(p->side[i]))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "prepared prefill: side input value %zu is not finite",
                              i);
    for (int64_t i = 0; p->row_ids && i < p->n_rows; i++)
        if (p->row_ids[i] < 0)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "prepared prefill: row id [%lld] = %d is negative",
                              (long long)i, p->row_ids[i]);
    if (p->n_spans < 0 || (p->n_spans > 0 && !p->spans))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "prepared prefill: %lld spans", (long long)p->n_spans);
    for (int64_t i = 0; i < p->n_spans; i++) {
        const omnic__row_span *s = &p->spans[i];
        if (s->begin < (i ? p->spans[i - 1].end : 0) || s->end <= s->begin || s->end > p->n_rows)
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "prepared prefill: span %lld [%lld, %lld) is empty, overlaps the previous one or "
                "leaves the %lld rows",
                (long long)i, (long long)s->begin, (long long)s->end, (long long)p->n_rows);
    }
    *out = *src;
    memset(src, 0, sizeof *src);
    return OMNIC_OK;
}

void omnic__prepared_prefill_deinit(omnic__prepared_prefill *p)
{
    if (!p) return;
    omnic_free(p->logical);
    omnic_free(p->embeds);
    omnic_free(p->positions);
    omnic_free(p->bias);
    omnic_free(p->spans);
    omnic_free(p->side);
    omnic_free(p->row_ids);
    memset(p, 0, sizeof *p);
}
