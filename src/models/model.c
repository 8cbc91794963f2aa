/* Model loading: checkpoint -> family -> decoder -> planned modules -> identity. */
#include <stdio.h>
#include <string.h>

#include "core/threadpool.h"
#include "io/json.h"
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
    char modules[256];
    snprintf(modules, sizeof modules, "%s:%s;%s:%s", m->prefill.name, m->prefill.contract, m->decode.name,
             m->decode.contract);
    omnic__bundle_desc d = {
        .arch_config = arch,
        .weights = w,
        .n_weights = n,
        .compute_dtypes = m->dec.n_qweights ? "act=f32;acc=f32;matmul_act=q8_32" : "act=f32;acc=f32",
        .capacity = m->capacity,
        .position_mode = "1d",
        .mask_mode = "causal",
        .kv_layout = "pool[slots*cap,n_kv,head_dim]",
        .kv_dtype = m->kv_dtype,
        .modules = modules,
    };
    omnic__bundle_identity(&d, m->identity);
out:
    omnic_free(w);
    free(arch); /* jansson's allocator */
    return s;
}

omnic_status omnic__model_open(const char *dir, const omnic__model_opts *opts, omnic__model **out, omnic_err *err)
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
    if ((s = m->family->parse_config(m->ckpt->config, "config.json", &cfg, err)) != OMNIC_OK) goto fail;
    if ((s = omnic__text_decoder_load(&m->dec, &cfg, m->ckpt->weights, err)) != OMNIC_OK) goto fail;
    m->capacity = opts && opts->ctx > 0 ? opts->ctx : (cfg.max_pos < 4096 ? cfg.max_pos : 4096);
    if (cfg.rope_type == OMNIC_ROPE_LONGROPE && m->capacity > cfg.rope_original_max_pos) {
        /* Past original_max_position_embeddings HF switches the whole sequence to the long
         * factors and re-prefills it; omnic does not (yet), so it stays in the short range. */
        if (opts && opts->ctx > 0) {
            s = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                           "context %lld is past this LongRoPE model's original_max_position_embeddings %lld "
                           "(longer contexts are not supported yet)",
                           (long long)m->capacity, (long long)cfg.rope_original_max_pos);
            goto fail;
        }
        m->capacity = cfg.rope_original_max_pos;
    }
    m->n_slots = opts && opts->slots > 0 ? opts->slots : 1;
    m->chunk = opts && opts->chunk > 0 ? opts->chunk : 512;
    if (m->chunk > m->capacity) m->chunk = m->capacity;
    int threads = opts && opts->threads > 0 ? opts->threads : omnic__cpu_count();
    if ((s = omnic__threadpool_create(&m->pool, threads, err)) != OMNIC_OK) goto fail;
    if (quant != OMNIC_DTYPE_COUNT &&
        (s = omnic__text_decoder_quantize(&m->dec, quant, m->ckpt->weights, m->pool, err)) != OMNIC_OK)
        goto fail;
    if ((s = omnic__kv_pool_init(&m->kv, (int)cfg.n_layers, m->n_slots, m->capacity, cfg.n_kv_heads, cfg.head_dim,
                                 m->kv_dtype, err)) != OMNIC_OK)
        goto fail;
    const int64_t kv_rows = (int64_t)m->n_slots * m->capacity;
    struct { omnic__module *mod; const char *name, *contract; int64_t rows; bool all; } mods[2] = {
        {&m->prefill, "text.token_prefill", "omnic.text.token_prefill/1", m->chunk, false},
        {&m->decode, "text.decode", "omnic.text.decode/1", m->n_slots, true}};
    for (int i = 0; i < 2; i++) {
        omnic__module *mod = mods[i].mod;
        if ((s = omnic__module_init(mod, mods[i].name, mods[i].contract, mods[i].rows, err)) != OMNIC_OK ||
            (s = omnic__text_decoder_build(&m->dec, mod, m->kv_dtype, kv_rows, mods[i].all,
                                           !mods[i].all && opts && opts->taps, err)) != OMNIC_OK ||
            (s = omnic__module_finalize(mod, m->backend, m->pool, err)) != OMNIC_OK ||
            (s = omnic__module_constrain(mod, "tokens", cfg.vocab, false, err)) != OMNIC_OK ||
            (s = omnic__module_constrain(mod, "positions", INT32_MAX, false, err)) != OMNIC_OK)
            goto fail;
    }
    m->prefill_logits = omnic__module_find_output(&m->prefill, "logits");
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
    omnic__module_deinit(&m->decode);
    omnic__kv_pool_deinit(&m->kv);
    omnic__threadpool_destroy(m->pool);
    omnic__text_decoder_deinit(&m->dec);
    omnic__checkpoint_close(m->ckpt);
    omnic_free(m);
}

size_t omnic__model_planned_bytes(const omnic__model *m)
{
    return m->prefill.plan.total_bytes + m->decode.plan.total_bytes;
}

size_t omnic__model_kv_bytes(const omnic__model *m)
{
    size_t n = 0;
    const omnic__text_config *c = &m->dec.cfg;
    omnic__kv_pool_bytes((int)c->n_layers, m->n_slots, m->capacity, c->n_kv_heads, c->head_dim, m->kv_dtype, &n,
                         NULL);
    return n;
}
