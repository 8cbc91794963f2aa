/* Load-time quantization of a text decoder's linear weights (see models/quantize.h): each
 * weight is converted row by row (ggml's reference rounding, core/quant.h) into owned memory,
 * rows split over the model's thread pool, and the converted source pages are dropped from
 * RSS chunk by chunk, so peak memory stays near the quantized size plus one chunk per thread. */
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/quant.h"
#include "io/safetensors.h"
#include "models/altup_decoder.h"
#include "models/lora.h"
#include "models/quantize.h"

/* Rows converted per step of a thread; the step's source pages are released after it. */
#define QUANT_ROWS 64

omnic_status omnic__quant_parse(const char *name, omnic_dtype *out, omnic_err *err)
{
    if (!name || !name[0] || !strcmp(name, "none"))
        *out = OMNIC_DTYPE_COUNT;
    else if (!strcmp(name, "q8_0"))
        *out = OMNIC_DTYPE_Q8_0;
    else if (!strcmp(name, "q4_0"))
        *out = OMNIC_DTYPE_Q4_0;
    else
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "unknown weight quantization '%s' (use q8_0, q4_0 or none)",
                          name);
    return OMNIC_OK;
}

typedef struct quant_job {
    const omnic__tensor *src; /* [N, K] f32 / f16 / bf16 (mapped or owned) */
    omnic__tensor *dst;       /* [N, K] q8_0 / q4_0 / q4_0x16 / q8_0x16, owned */
    const omnic__safetensors *st;
    float *buf;   /* [nth][K] f32 rows */
    uint8_t *grp; /* x16 layouts: [nth][16 plain rows], packed into dst once complete */
} quant_job;

static void quant_task(void *ctx, int ith, int nth)
{
    const quant_job *j = ctx;
    const int64_t N = j->src->dims[0], K = j->src->dims[1];
    const bool x16 = omnic__x16_plain(j->dst->dtype) != OMNIC_DTYPE_COUNT;
    const omnic_dtype qt = x16 ? omnic__x16_plain(j->dst->dtype) : j->dst->dtype;
    const int64_t unit = x16 ? OMNIC_X16_ROWS : 1; /* threads take whole groups */
    const size_t sb = omnic__dtype_row_bytes(j->src->dtype, K), db = omnic__dtype_row_bytes(qt, K);
    const uint8_t *src = j->src->data;
    uint8_t *dst = j->dst->data;
    uint8_t *grp = x16 ? j->grp + (size_t)ith * OMNIC_X16_ROWS * db : NULL;
    float *row = j->buf + (size_t)ith * (size_t)K;
    int64_t lo, hi;
    omnic__split_rows(N / unit, ith, nth, &lo, &hi);
    lo *= unit;
    hi *= unit;
    for (int64_t r0 = lo; r0 < hi; r0 += QUANT_ROWS) {
        const int64_t r1 = hi - r0 < QUANT_ROWS ? hi : r0 + QUANT_ROWS;
        for (int64_t r = r0; r < r1; r++) {
            const void *s = src + (size_t)r * sb;
            if (j->src->dtype == OMNIC_DTYPE_F16)
                omnic__f16_to_f32_row(s, row, (size_t)K);
            else if (j->src->dtype == OMNIC_DTYPE_BF16)
                omnic__bf16_to_f32_row(s, row, (size_t)K);
            else
                memcpy(row, s, (size_t)K * sizeof(float));
            if (!x16) {
                omnic__quantize_row(qt, row, dst + (size_t)r * db, K);
                continue;
            }
            omnic__quantize_row(qt, row, grp + (size_t)(r % OMNIC_X16_ROWS) * db, K);
            if (r % OMNIC_X16_ROWS == OMNIC_X16_ROWS - 1)
                omnic__x16_pack(j->dst->dtype, grp, dst + (size_t)(r + 1 - OMNIC_X16_ROWS) * db, K);
        }
        omnic__st_release(j->st, src + (size_t)r0 * sb, (size_t)(r1 - r0) * sb);
    }
}

/* The 2-D weights a text decoder multiplies by, listed by linear_weights into an array of
 * linear_weights_cap: the embedding, lm_head unless tied, each layer's q/k/v/o and MLP; Gemma 3n
 * adds its per-layer table and projections, AltUp's stream projections, and per layer Laurel's
 * two and the input gate / projection. Room for three stacked expert tensors a layer is kept
 * (quantize appends them); linear_weights does not list experts. */
static size_t linear_weights_cap(const omnic__text_decoder *d)
{
    const size_t L = (size_t)d->cfg.n_layers;
    return 2 + 7 * L + (d->altup ? 2 + 6 + 4 * L : 0) + 3 * L;
}

static size_t linear_weights(omnic__text_decoder *d, omnic__tensor **ws)
{
    const int64_t L = d->cfg.n_layers;
    size_t n = 0;
    ws[n++] = &d->embed;
    if (!d->cfg.tie_embeddings) ws[n++] = &d->lm_head;
    for (int64_t l = 0; l < L; l++) {
        omnic__text_decoder_layer *y = &d->layers[l];
        omnic__tensor *lw[7] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->w_gate, &y->w_up, &y->w_down};
        for (int i = 0; i < 7; i++)
            ws[n++] = lw[i];
    }
    omnic__altup *a = d->altup;
    if (a) { /* the small AltUp router and coefficient matrices stay as stored */
        ws[n++] = &a->ple_embed;
        ws[n++] = &a->ple_model_proj;
        for (int64_t i = 0; i + 1 < d->cfg.altup; i++)
            ws[n++] = &a->proj[i], ws[n++] = &a->unembed[i];
        for (int64_t l = 0; l < L; l++) {
            omnic__altup_layer *y = &a->layers[l];
            omnic__tensor *lw[4] = {&y->laurel_left, &y->laurel_right, &y->ple_gate, &y->ple_proj};
            for (int i = 0; i < 4; i++)
                ws[n++] = lw[i];
        }
    }
    return n;
}

omnic_status omnic__text_decoder_quantize(omnic__text_decoder *d, omnic_dtype qt,
                                          const omnic__backend_ops *backend, const omnic__safetensors *st,
                                          omnic__threadpool *pool, omnic_err *err)
{
    int64_t params;
    omnic__text_decoder_param_stats(d, &params, &d->stored_bytes);
    const int64_t L = d->cfg.n_layers;
    const size_t cap = linear_weights_cap(d);
    const int nth = omnic__threadpool_size(pool);
    omnic__tensor **ws = omnic_alloc_array(cap, sizeof *ws), **outs = omnic_alloc_array(cap, sizeof *outs);
    omnic__tensor *shapes = omnic_alloc_array(cap, sizeof *shapes);
    omnic__tensor **grown = omnic_realloc(d->qweights, (d->n_qweights + cap) * sizeof *grown);
    float *buf = NULL;
    uint8_t *grp = NULL;
    omnic_status s = OMNIC_OK;
    if (grown) d->qweights = grown;
    if (!ws || !outs || !shapes || !grown) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory listing weights to quantize");
        goto out;
    }
    const size_t n = linear_weights(d, ws);
    int64_t kmax = 0;
    for (size_t i = 0; i < n; i++)
        kmax = ws[i]->dims[1] > kmax ? ws[i]->dims[1] : kmax;
    if (d->cfg.n_experts > 0) /* experts: K is H (gate, up) or the expert width (down) */
        kmax = d->cfg.hidden > kmax ? d->cfg.hidden : kmax,
        kmax = d->cfg.moe_intermediate > kmax ? d->cfg.moe_intermediate : kmax;
    buf = omnic_alloc_array((size_t)nth * (size_t)kmax, sizeof *buf);
    grp = omnic_alloc_array((size_t)nth * OMNIC_X16_ROWS, omnic__dtype_row_bytes(OMNIC_DTYPE_Q8_0, kmax));
    if (!buf || !grp) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %d quantization rows of %lld", nth,
                       (long long)kmax);
        goto out;
    }
    /* the weights whose rows are whole blocks, in the layout the backend wants, in one block */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        omnic__tensor *w = ws[i];
        if (w->dims[1] % OMNIC_QK != 0) {
            OMNIC_LOG_W(
                "weights: %s [%lld, %lld] stays %s: rows of %lld elements are not whole %d-element blocks",
                w->name, (long long)w->dims[0], (long long)w->dims[1], omnic_dtype_name(w->dtype),
                (long long)w->dims[1], OMNIC_QK);
            continue;
        }
        /* the backend may want another layout of the same values (cpu: q4_0x16, q8_0x16) */
        const omnic_dtype wt = backend->weight_dtype ? backend->weight_dtype(qt, w->dims[0], w->dims[1]) : qt;
        if ((s = omnic__tensor_init(&shapes[m], wt, 2, w->dims, err)) != OMNIC_OK) goto out;
        ws[m++] = w;
    }
    if ((s = omnic__weight_block(&d->copies, shapes, m, outs, err)) != OMNIC_OK) goto out;
    for (size_t i = 0; i < m; i++) {
        omnic__tensor *w = ws[i], *q = outs[i];
        memcpy(q->name, w->name, sizeof q->name);
        quant_job j = {.src = w, .dst = q, .st = st, .buf = buf, .grp = grp};
        omnic__threadpool_run(pool, quant_task, &j);
        omnic__st_release(st, w->data, omnic__tensor_bytes(w)); /* pages across step boundaries */
        d->qweights[d->n_qweights++] = q;
        w->dtype = q->dtype;
        w->data = q->data;
    }
    /* experts: each layer's per-expert tensors quantized straight into one stacked tensor (no
     * 16-bit stacked copy in between); the layout keeps every expert's rows whole */
    for (int64_t l = 0; s == OMNIC_OK && l < L; l++) {
        omnic__text_decoder_layer *y = &d->layers[l];
        if (!y->expert_views) continue;
        omnic__tensor **out[3] = {&y->experts_gate, &y->experts_up, &y->experts_down};
        if ((s = omnic__text_decoder_experts_open(d, st, l, err)) != OMNIC_OK) break;
        for (int p = 0; p < 3 && s == OMNIC_OK; p++) {
            const omnic__tensor *v0 = &y->expert_views[p];
            const int64_t N = v0->dims[0], K = v0->dims[1], E = d->cfg.n_experts;
            if (K % OMNIC_QK != 0) {
                OMNIC_LOG_W(
                    "weights: layer %lld experts %s [%lld, %lld] stay %s: rows of %lld elements are not "
                    "whole %d-element blocks",
                    (long long)l,
                    p == 0   ? "gate"
                    : p == 1 ? "up"
                             : "down",
                    (long long)N, (long long)K, omnic_dtype_name(v0->dtype), (long long)K, OMNIC_QK);
                continue;
            }
            const omnic_dtype wt = backend->weight_dtype ? backend->weight_dtype(qt, N, K) : qt;
            omnic__tensor *q;
            int64_t all[2] = {E * N, K};
            if ((s = omnic__tensor_create(&q, wt, 2, all, err)) != OMNIC_OK) break;
            snprintf(q->name, sizeof q->name, "%slayers.%lld.mlp.experts.%s", d->cfg.prefix, (long long)l,
                     p == 0   ? "gate_proj"
                     : p == 1 ? "up_proj"
                              : "down_proj");
            (void)omnic__mem_advise_huge(q->data, omnic__tensor_bytes(q));
            const size_t slice =
                (size_t)N * omnic__dtype_row_bytes(wt == OMNIC_DTYPE_Q4_0X16   ? OMNIC_DTYPE_Q4_0
                                                   : wt == OMNIC_DTYPE_Q8_0X16 ? OMNIC_DTYPE_Q8_0
                                                                               : wt,
                                                   K);
            for (int64_t e = 0; e < E; e++) {
                omnic__tensor part = *q; /* expert e's rows of the stacked tensor */
                part.dims[0] = N;
                part.owns_data = false;
                part.data = (char *)q->data + (size_t)e * slice;
                const omnic__tensor *src = &y->expert_views[3 * e + p];
                quant_job j = {.src = src, .dst = &part, .st = st, .buf = buf, .grp = grp};
                omnic__threadpool_run(pool, quant_task, &j);
                omnic__st_release(st, src->data, omnic__tensor_bytes(src));
            }
            d->qweights[d->n_qweights++] = q;
            omnic__tensor *h = omnic_alloc_array(1, sizeof *h); /* a header over q's data */
            if (!h) {
                s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a tensor header");
                break;
            }
            *h = *q;
            h->owns_data = false;
            *out[p] = h;
        }
        if (y->experts_gate && y->experts_up && y->experts_down) /* else stack_experts copies the rest */
            omnic__text_decoder_experts_close(d, l);
    }
out:
    if (d->cfg.tie_embeddings) d->lm_head = d->embed;
    omnic_free(ws);
    omnic_free(outs);
    omnic_free(shapes);
    omnic_free(buf);
    omnic_free(grp);
    return s;
}

const char *omnic__text_decoder_transform(const omnic__text_decoder *d, const char *name)
{
    /* a per-expert tensor (...mlp.experts.{e}.{proj}.weight) went into its layer's stacked one */
    const char *ex = strstr(name, ".mlp.experts.");
    if (ex) {
        const char *num = ex + strlen(".mlp.experts."), *dot = strchr(num, '.');
        const char *w = dot ? strstr(dot + 1, ".weight") : NULL;
        char stacked[sizeof d->qweights[0]->name];
        if (w && snprintf(stacked, sizeof stacked, "%.*s.mlp.experts.%.*s", (int)(ex - name), name,
                          (int)(w - dot - 1), dot + 1) < (int)sizeof stacked)
            for (size_t i = 0; i < d->n_qweights; i++)
                if (!strcmp(d->qweights[i]->name, stacked)) return omnic_dtype_name(d->qweights[i]->dtype);
    }
    for (size_t i = 0; i < d->n_qweights; i++)
        if (!strncmp(d->qweights[i]->name, name, sizeof d->qweights[i]->name - 1)) /* names are cut at 63 */
            return omnic_dtype_name(d->qweights[i]->dtype);
    return "as-stored";
}

omnic_status omnic__lora_quantize(omnic__lora *l, omnic_dtype qt, const omnic__backend_ops *backend,
                                  omnic__threadpool *pool, omnic_err *err)
{
    if (!l) return OMNIC_OK;
    const int nth = omnic__threadpool_size(pool);
    int64_t kmax = 0;
    for (int64_t i = 0; i < l->n_layers; i++) {
        const omnic__lora_layer *L = &l->layers[i];
        const omnic__tensor *t[] = {L->a_qkv, L->a_o, L->a_gu, L->a_down};
        for (size_t k = 0; k < sizeof t / sizeof t[0]; k++)
            kmax = t[k]->dims[1] > kmax ? t[k]->dims[1] : kmax;
    }
    kmax = l->rank > kmax ? l->rank : kmax;
    float *buf = omnic_alloc_array((size_t)nth * (size_t)kmax, sizeof *buf);
    uint8_t *grp =
        omnic_alloc_array((size_t)nth * OMNIC_X16_ROWS, omnic__dtype_row_bytes(OMNIC_DTYPE_Q8_0, kmax));
    omnic_status s = OMNIC_OK;
    if (!buf || !grp) s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory quantizing adapters");
    for (int64_t i = 0; i < l->n_layers && s == OMNIC_OK; i++) {
        omnic__lora_layer *L = &l->layers[i];
        omnic__tensor **t[] = {&L->a_qkv, &L->b_q,    &L->b_k,  &L->b_v,    &L->a_o,   &L->b_o,
                               &L->a_gu,  &L->b_gate, &L->b_up, &L->a_down, &L->b_down};
        for (size_t k = 0; k < sizeof t / sizeof t[0] && s == OMNIC_OK; k++) {
            omnic__tensor *w = *t[k];
            if (w->dims[1] % OMNIC_QK != 0) continue; /* a rank that is not whole blocks stays as loaded */
            /* the layout for one adapter's rows (the grouped matmul's N): x16 only when they are whole groups
             */
            const int64_t N = w->dims[0] / l->n;
            omnic_dtype wt = backend->weight_dtype ? backend->weight_dtype(qt, N, w->dims[1]) : qt;
            if (omnic__x16_plain(wt) != OMNIC_DTYPE_COUNT && N % OMNIC_X16_ROWS) wt = qt;
            omnic__tensor *q;
            if ((s = omnic__tensor_create(&q, wt, 2, w->dims, err)) != OMNIC_OK) break;
            memcpy(q->name, w->name, sizeof q->name);
            quant_job j = {.src = w, .dst = q, .st = NULL, .buf = buf, .grp = grp};
            omnic__threadpool_run(pool, quant_task, &j);
            omnic__tensor_destroy(w);
            *t[k] = q;
        }
    }
    omnic_free(buf);
    omnic_free(grp);
    return s;
}

omnic_status omnic__text_decoder_resident(omnic__text_decoder *d, const omnic__safetensors *st,
                                          omnic__threadpool *pool, omnic_err *err)
{
    omnic__tensor **ws = omnic_alloc_array(linear_weights_cap(d), sizeof *ws);
    if (!ws) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory listing weights to copy");
    const size_t n = linear_weights(d, ws);
    omnic_status s = omnic__weights_resident(ws, n, st, pool, &d->copies, err);
    if (d->cfg.tie_embeddings) d->lm_head = d->embed;
    omnic_free(ws);
    return s;
}
