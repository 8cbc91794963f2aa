/* Model loading: checkpoint -> family -> decoder -> planned modules -> identity. */
#include <stdio.h>
#include <string.h>

#include "core/threadpool.h"
#include "io/json.h"
#include "models/lora.h"
#include "models/model.h"
#include "models/quantize.h"
#include "runtime/bundle.h"

static omnic_status compute_identity(omnic__model *m, omnic_err *err)
{
    const omnic__safetensors *st = m->ckpt->weights;
    size_t n = omnic__st_count(st);
    omnic__weight_desc *w = omnic_alloc_array(n ? n : 1, sizeof *w);
    char *arch = json_dumps(m->ckpt->config, JSON_SORT_KEYS | JSON_COMPACT);
    omnic_status s = OMNIC_OK;
    if (!w || !arch) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory hashing the bundle identity");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const omnic__st_tensor *t = omnic__st_at(st, i);
        w[i] = (omnic__weight_desc){t->name, t->dtype, t->ndim, t->dims,
                                    omnic__text_decoder_transform(&m->dec, t->name)};
    }
    char modules[512];
    snprintf(modules, sizeof modules, "%s:%s;%s:%s;invariant_prefill=%d", m->prefill.name,
             m->prefill.contract, m->decode.name, m->decode.contract, m->prefill_inv.finalized);
    size_t used = strlen(modules);
    snprintf(modules + used, sizeof modules - used, ";%s:%s%s", m->embed_prefill.name,
             m->embed_prefill.contract, m->embed_decode.finalized ? ";embeddings_decode" : "");
    used = strlen(modules);
    if (m->dec.cfg.n_deepstack > 0) /* the embeddings prefill's side input schema */
        snprintf(modules + used, sizeof modules - used, ";side=deepstack[n,%lld*%lld]",
                 (long long)m->dec.cfg.n_deepstack, (long long)m->dec.cfg.hidden);
    char buckets[64] = "";
    for (int k = 0; k < OMNIC_MODALITY_COUNT; k++)
        if (m->media[k].ops && m->media[k].state)
            m->media[k].ops->identity(m, modules, sizeof modules, buckets, sizeof buckets);
    char adapters[256] = ""; /* name:r:alpha per adapter, the stacks' rank and dtype, mode -> adapter */
    const omnic__lora *lo = m->dec.lora;
    for (int a = 0; lo && a < lo->n; a++) {
        size_t u = strlen(adapters);
        snprintf(adapters + u, sizeof adapters - u, "%s%s:r%lld:a%g", a ? ";" : "", lo->names[a],
                 (long long)lo->ranks[a], lo->alphas[a]);
    }
    if (lo) {
        size_t u = strlen(adapters);
        snprintf(adapters + u, sizeof adapters - u, ";stack=r%lld,%s;modes=%d,%d,%d", (long long)lo->rank,
                 omnic_dtype_name(lo->layers[0].a_qkv->dtype), m->adapter_of[0], m->adapter_of[1],
                 m->adapter_of[2]);
    }
    static const char *const mask_names[] = {"causal", "causal+bias", "bias", "causal+spans"};
    omnic__bundle_desc d = {
        .arch_config = arch,
        .weights = w,
        .n_weights = n,
        .compute_dtypes = m->dec.n_qweights ? "act=f32;acc=f32;matmul_act=q8_32" : "act=f32;acc=f32",
        .capacity = m->capacity,
        .position_mode = m->dec.cfg.mrope ? "mrope" : "1d",
        .mask_mode = mask_names[m->embed_mask],
        .encoder_buckets = buckets,
        .kv_layout = "pool[slots*cap,n_kv,head_dim]",
        .kv_dtype = m->kv_dtype,
        .modules = modules,
        .adapters = adapters,
    };
    omnic__bundle_identity(&d, m->identity);
out:
    omnic_free(w);
    free(arch); /* jansson's allocator */
    return s;
}

/* The encoders of every modality the family takes (models/media.h). */
static omnic_status open_media(omnic__model *m, omnic_err *err)
{
    for (int k = 0; k < OMNIC_MODALITY_COUNT; k++) {
        m->media[k].placeholder_id = -1;
        const omnic__media_ops *o = m->family->media[k];
        if (!o) continue;
        m->media[k].ops = o;
        OMNIC_TRY(o->open(m, err));
    }
    return OMNIC_OK;
}

omnic_status omnic__model_open(const char *dir, const omnic__model_opts *opts, omnic__model **out,
                               omnic_err *err)
{
    omnic__model *m = omnic_alloc_array(1, sizeof *m);
    if (!m) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a model");
    omnic_status s;
    omnic__text_config cfg;
    const char *bname = opts && opts->backend ? opts->backend : "cpu";
    m->backend = omnic__backend_by_name(bname);
    if (!m->backend) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "unknown backend '%s' (use cpu or ref)", bname);
        goto fail;
    }
    m->kv_dtype = opts && opts->kv_dtype == OMNIC_DTYPE_F32 ? OMNIC_DTYPE_F32 : OMNIC_DTYPE_F16;
    omnic_dtype quant;
    if ((s = omnic__quant_parse(opts ? opts->quant : NULL, &quant, err)) != OMNIC_OK) goto fail;
    if ((s = omnic__checkpoint_open(dir, &m->ckpt, err)) != OMNIC_OK) goto fail;
    if ((s = omnic__family_find(m->ckpt->config, &m->family, err)) != OMNIC_OK) goto fail;
    if (m->family->convert && (s = m->family->convert(m->ckpt, err)) != OMNIC_OK) goto fail;
    if ((s = m->family->parse_config(m->ckpt->config, "config.json", &cfg, err)) != OMNIC_OK) goto fail;
    if ((s = omnic__text_decoder_load(&m->dec, &cfg, m->ckpt->weights, err)) != OMNIC_OK) goto fail;
    for (int i = 0; i < 3; i++)
        m->adapter_of[i] = -1;
    if (m->family->load_adapters && (s = m->family->load_adapters(m, err)) != OMNIC_OK) goto fail;
    m->capacity = opts && opts->ctx > 0 ? opts->ctx : (cfg.max_pos < 4096 ? cfg.max_pos : 4096);
    /* LongRoPE: rows switch to the long factors past original_max_position_embeddings */
    m->dec.rope_switch = cfg.rope_type == OMNIC_ROPE_LONGROPE && m->capacity > cfg.rope_original_max_pos;
    m->n_slots = opts && opts->slots > 0 ? opts->slots : 1;
    m->chunk = opts && opts->chunk > 0 ? opts->chunk : 512;
    if (m->chunk > m->capacity) m->chunk = m->capacity;
    m->step_tokens = opts && opts->step_tokens > 0 ? opts->step_tokens : 0;
    if (m->step_tokens > m->capacity) m->step_tokens = m->capacity;
    int threads = opts && opts->threads > 0 ? opts->threads : omnic__cpu_count();
    if ((s = omnic__threadpool_create(&m->pool, threads, err)) != OMNIC_OK) goto fail;
    if (quant != OMNIC_DTYPE_COUNT &&
        ((s = omnic__text_decoder_quantize(&m->dec, quant, m->backend, m->ckpt->weights, m->pool, err)) !=
             OMNIC_OK ||
         (s = omnic__lora_quantize(m->dec.lora, quant, m->backend, m->pool, err)) != OMNIC_OK))
        goto fail;
    if (quant == OMNIC_DTYPE_COUNT && !(opts && opts->mmap_weights) &&
        (s = omnic__text_decoder_resident(&m->dec, m->ckpt->weights, m->pool, err)) != OMNIC_OK)
        goto fail;
    /* experts the quantization did not stack (none, or rows of partial blocks): copies as stored */
    if ((s = omnic__text_decoder_stack_experts(&m->dec, m->ckpt->weights, err)) != OMNIC_OK) goto fail;
    if ((s = omnic__kv_pool_init(&m->kv, (int)cfg.n_kv_layers, m->n_slots, m->capacity, cfg.n_kv_heads,
                                 cfg.head_dim, m->kv_dtype, err)) != OMNIC_OK)
        goto fail;
    const int64_t kv_rows = (int64_t)m->n_slots * m->capacity;
    struct {
        omnic__module *mod;
        const char *name, *contract;
        int64_t rows;
        omnic__text_head head;
        bool invariant;
    } mods[4] = {
        {&m->prefill, "text.token_prefill", "omnic.text.token_prefill/1", m->chunk, OMNIC_HEAD_LAST, false},
        {&m->decode, "text.decode", "omnic.text.decode/1", m->n_slots, OMNIC_HEAD_ALL, true},
        /* mixed steps */
        {&m->prefill_inv, "text.token_prefill", "omnic.text.token_prefill/1", m->chunk, OMNIC_HEAD_LAST,
         true},
        {&m->decode_body, "text.decode_body", "omnic.text.decode_body/1", m->n_slots + m->step_tokens,
         OMNIC_HEAD_NONE, true}};
    for (int i = 0; i < (m->step_tokens > 0 ? 4 : 2); i++) {
        omnic__module *mod = mods[i].mod;
        if ((s = omnic__module_init(mod, mods[i].name, mods[i].contract, mods[i].rows, err)) != OMNIC_OK)
            goto fail;
        mod->graph.batch_invariant = mods[i].invariant;
        if ((s = omnic__text_decoder_build(&m->dec, mod, m->kv_dtype, kv_rows, mods[i].head,
                                           mods[i].head == OMNIC_HEAD_LAST && opts && opts->taps, err)) !=
                OMNIC_OK ||
            (s = omnic__module_finalize(mod, m->backend, m->pool, err)) != OMNIC_OK ||
            (s = omnic__module_constrain(mod, "tokens", cfg.vocab, false, err)) != OMNIC_OK ||
            (s = omnic__module_constrain(mod, "positions", INT32_MAX, false, err)) != OMNIC_OK ||
            (m->dec.rope_switch &&
             (s = omnic__module_constrain(mod, "rope_long", 2, false, err)) != OMNIC_OK))
            goto fail;
    }
    m->prefill_logits = omnic__module_find_output(&m->prefill, "logits");
    m->prefill_inv_logits = omnic__module_find_output(&m->prefill_inv, "logits");
    /* text.head: the logits of the rows of a mixed step that sample (its decode rows and a
     * prompt's last row) */
    if (m->step_tokens > 0 && ((s = omnic__module_init(&m->head, "text.head", "omnic.text.head/1",
                                                       m->n_slots + 1, err)) != OMNIC_OK ||
                               (s = omnic__text_decoder_build_head(&m->dec, &m->head, err)) != OMNIC_OK ||
                               (s = omnic__module_finalize(&m->head, m->backend, m->pool, err)) != OMNIC_OK))
        goto fail;
    if ((s = open_media(m, err)) != OMNIC_OK) goto fail;
    /* text.embeddings_prefill: the token prefill's graph from the first layer on, fed rows;
     * media whose rows attend both ways (spans) add the attn_span input and may need larger calls */
    m->embed_mask = OMNIC_MASK_CAUSAL;
    m->embed_rows = m->chunk;
    for (int k = 0; k < OMNIC_MODALITY_COUNT; k++) {
        int64_t sr = m->media[k].span_rows;
        if (sr > 0) m->embed_mask = OMNIC_MASK_SPANS;
        if (sr > m->capacity) {
            s = OMNIC_FAIL(err, OMNIC_E_INVALID,
                           "one %s makes a %lld-row attention span; the context is %lld rows",
                           omnic__modality_name((omnic__modality)k), (long long)sr, (long long)m->capacity);
            goto fail;
        }
        if (sr > m->embed_rows) m->embed_rows = sr;
    }
    if ((s = omnic__module_init(&m->embed_prefill, "text.embeddings_prefill",
                                "omnic.text.embeddings_prefill/1", m->embed_rows, err)) != OMNIC_OK)
        goto fail;
    /* as the token prompts: batch-invariant with mixed steps, so a media prompt's rows are the
     * same alone (this module) and beside decode rows (embed_decode) */
    m->embed_prefill.graph.batch_invariant = m->step_tokens > 0;
    if ((s = omnic__text_decoder_build_embeddings(&m->dec, &m->embed_prefill, m->kv_dtype, kv_rows,
                                                  m->embed_mask, OMNIC_HEAD_LAST, opts && opts->taps, err)) !=
            OMNIC_OK ||
        (s = omnic__module_finalize(&m->embed_prefill, m->backend, m->pool, err)) != OMNIC_OK ||
        (s = omnic__module_constrain(&m->embed_prefill, "inputs_embeds", 0, true, err)) != OMNIC_OK ||
        (s = omnic__module_constrain(&m->embed_prefill, "positions", INT32_MAX, false, err)) != OMNIC_OK ||
        (m->dec.altup &&
         (s = omnic__module_constrain(&m->embed_prefill, "ple_ids", cfg.vocab, false, err)) != OMNIC_OK) ||
        (cfg.n_deepstack > 0 &&
         (s = omnic__module_constrain(&m->embed_prefill, "deepstack", 0, true, err)) != OMNIC_OK) ||
        (m->dec.rope_switch &&
         (s = omnic__module_constrain(&m->embed_prefill, "rope_long", 2, false, err)) != OMNIC_OK))
        goto fail;
    if ((m->embed_mask == OMNIC_MASK_CAUSAL_BIAS || m->embed_mask == OMNIC_MASK_BIAS) &&
        (s = omnic__module_constrain(&m->embed_prefill, "attn_bias", 0, true, err)) != OMNIC_OK)
        goto fail;
    if (m->embed_mask == OMNIC_MASK_SPANS &&
        (s = omnic__module_constrain(&m->embed_prefill, "attn_span", m->capacity + 1, false, err)) !=
            OMNIC_OK)
        goto fail;
    m->embed_prefill_logits = omnic__module_find_output(&m->embed_prefill, "logits");
    bool media = false;
    for (int k = 0; k < OMNIC_MODALITY_COUNT; k++)
        media |= m->media[k].ops != NULL;
    /* (DeepStack prompts keep calls of their own, as span masks do, and Gemma 3n's per-layer
     * embeddings, which the embeddings decode does not take) */
    if (m->step_tokens > 0 && media && m->embed_mask == OMNIC_MASK_CAUSAL && cfg.n_deepstack == 0 &&
        cfg.altup == 0) {
        omnic__module *ed = &m->embed_decode;
        if ((s = omnic__module_init(ed, "text.embeddings_decode", "omnic.text.embeddings_decode/1",
                                    m->n_slots + m->step_tokens, err)) != OMNIC_OK)
            goto fail;
        ed->graph.batch_invariant = true; /* as text.decode_body */
        if ((s = omnic__text_decoder_build_embeddings(&m->dec, ed, m->kv_dtype, kv_rows, OMNIC_MASK_CAUSAL,
                                                      OMNIC_HEAD_NONE, false, err)) != OMNIC_OK ||
            (s = omnic__module_finalize(ed, m->backend, m->pool, err)) != OMNIC_OK ||
            (s = omnic__module_constrain(ed, "inputs_embeds", 0, true, err)) != OMNIC_OK ||
            (s = omnic__module_constrain(ed, "positions", INT32_MAX, false, err)) != OMNIC_OK ||
            (m->dec.rope_switch && (s = omnic__module_constrain(ed, "rope_long", 2, false, err)) != OMNIC_OK))
            goto fail;
    }
    if ((s = compute_identity(m, err)) != OMNIC_OK) goto fail;
    *out = m;
    return OMNIC_OK;
fail:
    omnic__model_close(m);
    return s;
}

void omnic__model_close(omnic__model *m)
{
    if (!m) return;
    omnic__module_deinit(&m->prefill);
    omnic__module_deinit(&m->prefill_inv);
    omnic__module_deinit(&m->embed_prefill);
    omnic__module_deinit(&m->embed_decode);
    omnic__module_deinit(&m->decode_body);
    omnic__module_deinit(&m->head);
    for (int k = 0; k < OMNIC_MODALITY_COUNT; k++)
        if (m->media[k].ops) m->media[k].ops->close(m);
    omnic__module_deinit(&m->decode);
    omnic__kv_pool_deinit(&m->kv);
    omnic__threadpool_destroy(m->pool);
    omnic__text_decoder_deinit(&m->dec);
    omnic__checkpoint_close(m->ckpt);
    omnic_free(m);
}

size_t omnic__model_planned_bytes(const omnic__model *m)
{
    size_t n = m->prefill.plan.total_bytes + m->prefill_inv.plan.total_bytes + m->decode.plan.total_bytes +
               m->embed_prefill.plan.total_bytes + m->embed_decode.plan.total_bytes +
               m->decode_body.plan.total_bytes + m->head.plan.total_bytes;
    for (int k = 0; k < OMNIC_MODALITY_COUNT; k++)
        if (m->media[k].ops) n += m->media[k].ops->planned_bytes(m);
    return n;
}

size_t omnic__model_kv_bytes(const omnic__model *m)
{
    size_t n = 0;
    const omnic__text_config *c = &m->dec.cfg;
    omnic__kv_pool_bytes((int)c->n_kv_layers, m->n_slots, m->capacity, c->n_kv_heads, c->head_dim,
                         m->kv_dtype, &n, NULL);
    return n;
}

bool omnic__model_supports_image(const omnic__model *m)
{
    if (!m || !m->ckpt->preprocessor_config) return false;
    const omnic__model_media *md = &m->media[OMNIC_MODALITY_IMAGE];
    return md->ops && md->placeholder_id >= 0 && md->ops->ready(m);
}

omnic_status omnic__model_embed_tokens(const omnic__model *m, const int32_t *ids, int64_t n, float *out,
                                       omnic_err *err)
{
    return omnic__text_decoder_embed_rows(&m->dec, m->backend, ids, n, out, err);
}

omnic_status omnic__model_merge_embeds(const omnic__model *m, const int32_t *ids, int64_t n,
                                       const omnic__tensor *const *items, int n_items, float *out,
                                       omnic_err *err)
{
    const int64_t H = m->dec.cfg.hidden;
    const int32_t pad = omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE);
    int64_t total = 0, placeholders = 0;
    for (int k = 0; k < n_items; k++) {
        const omnic__tensor *t = items[k];
        if (!t || t->dtype != OMNIC_DTYPE_F32 || t->ndim != 2 || t->dims[1] != H || (t->dims[0] && !t->data))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "merge: media item %d must be f32 [rows, %lld]", k,
                              (long long)H);
        total += t->dims[0];
    }
    for (int64_t i = 0; i < n; i++)
        placeholders += pad >= 0 && ids[i] == pad;
    if (placeholders != total)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "merge: image features and image tokens do not match: %lld image tokens, %lld feature rows "
            "in %d item%s",
            (long long)placeholders, (long long)total, n_items, n_items == 1 ? "" : "s");
    int k = 0;
    int64_t row = 0;
    for (int64_t i = 0; i < n;) {
        if (pad >= 0 && ids[i] == pad) {
            while (row == items[k]->dims[0])
                k++, row = 0; /* skips empty items too */
            memcpy(out + i * H, (const float *)items[k]->data + row * H, (size_t)H * sizeof(float));
            row++, i++;
            continue;
        }
        int64_t j = i; /* a run of text ids: one lookup */
        while (j < n && !(pad >= 0 && ids[j] == pad))
            j++;
        OMNIC_TRY(omnic__model_embed_tokens(m, ids + i, j - i, out + i * H, err));
        i = j;
    }
    return OMNIC_OK;
}
