/* The public model and request API (include/omnic/omnic.h) over the engine: a model is an
 * engine (scheduler, slots, tokenizer), its chat template and its image processor; a request
 * becomes the logical prompt ids (chat template or given ids), the preprocessed media items
 * and the sampling parameters of omnic__engine_submit, and its events reach the caller's
 * callback through a small per-request context freed after the DONE event. */
#include <string.h>

#include "core/limits.h"
#include "engine/chat.h"
#include "engine/engine.h"
#include "engine/media.h"
#include "engine/media_memo.h"
#include "engine/modality.h"
#include "io/json.h"

struct omnic_model {
    omnic__engine *engine;
    omnic__chat *chat;     /* NULL: the checkpoint has no chat template */
    omnic__media_proc img; /* image processor (img.ops NULL: no image input) */
    bool images;
};

typedef struct request_ctx {
    omnic_event_fn fn;
    void *user;
} request_ctx;

int omnic_api_version(void)
{
    return OMNIC_API_VERSION;
}

omnic_model_params omnic_model_params_default(void)
{
    return (omnic_model_params){.api_version = OMNIC_API_VERSION};
}

static omnic_status check_version(int v, const char *what, omnic_err *err)
{
    if (v < 1 || v > OMNIC_API_VERSION)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s.api_version %d: this library takes 1..%d", what, v,
                          OMNIC_API_VERSION);
    return OMNIC_OK;
}

omnic_status omnic_model_load(const char *dir, const omnic_model_params *p, omnic_model **out, omnic_err *err)
{
    if (!dir || !out) return OMNIC_FAIL(err, OMNIC_E_INVALID, "omnic_model_load: dir and out are required");
    omnic_model_params dflt = omnic_model_params_default();
    if (!p) p = &dflt;
    OMNIC_TRY(check_version(p->api_version, "omnic_model_params", err));
    omnic__engine_opts eo = {.model = {.backend = p->backend,
                                       .threads = p->threads,
                                       .ctx = p->ctx,
                                       .slots = p->parallel,
                                       .kv_dtype = p->kv_f32 ? OMNIC_DTYPE_F32 : OMNIC_DTYPE_F16,
                                       .quant = p->quant,
                                       /* mixed steps bound the streams' latency when several decode */
                                       .step_tokens = p->parallel > 1 ? OMNIC_STEP_TOKENS : 0},
                             .generation_config = p->ignore_generation_config ? OMNIC_GEN_CONFIG_IGNORE
                                                                              : OMNIC_GEN_CONFIG_AUTO};
    omnic_model *m = omnic_alloc_array(1, sizeof *m);
    if (!m) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a model");
    omnic_status s = omnic__engine_create(dir, &eo, &m->engine, err);
    const omnic__model *md = s == OMNIC_OK ? omnic__engine_model(m->engine) : NULL;
    if (s == OMNIC_OK && md->ckpt->chat_template) {
        m->images = omnic__model_accepts(md, OMNIC_MODALITY_IMAGE);
        s = omnic__chat_create(md->ckpt, md, m->images, &m->chat, err);
    } else if (s == OMNIC_OK) {
        m->images = omnic__model_accepts(md, OMNIC_MODALITY_IMAGE);
    }
    if (s == OMNIC_OK && m->images) s = omnic__media_proc_init(&m->img, md, OMNIC_MODALITY_IMAGE, 0, err);
    if (s != OMNIC_OK) {
        omnic_model_free(m);
        return s;
    }
    *out = m;
    return OMNIC_OK;
}

void omnic_model_free(omnic_model *m)
{
    if (!m) return;
    omnic__engine_destroy(m->engine);
    omnic__chat_destroy(m->chat);
    omnic__media_proc_deinit(&m->img);
    omnic_free(m);
}

omnic_model_info omnic_model_get_info(const omnic_model *m)
{
    const omnic__model *md = omnic__engine_model(m->engine);
    return (omnic_model_info){.family = md->family->name,
                              .identity = md->identity,
                              .vocab = md->dec.cfg.vocab,
                              .hidden = md->dec.cfg.hidden,
                              .layers = md->dec.cfg.n_layers,
                              .ctx = md->capacity,
                              .parallel = md->n_slots,
                              .image_input = m->images,
                              .audio_input = omnic__model_accepts(md, OMNIC_MODALITY_AUDIO),
                              .chat_template = m->chat != NULL};
}

static void on_engine_event(void *ctx, const omnic__gen_event *ev)
{
    request_ctx *c = ctx;
    omnic_event e = {.kind = ev->kind == OMNIC_EV_DONE ? OMNIC_EVENT_DONE : OMNIC_EVENT_TEXT,
                     .request = ev->id,
                     .token = ev->token,
                     .text = ev->text,
                     .len = ev->len};
    if (ev->kind == OMNIC_EV_DONE) {
        e.finish = omnic__finish_name(ev->finish);
        e.error = ev->error;
        e.prompt_tokens = ev->prompt_tokens;
        e.completion_tokens = ev->completion_tokens;
    }
    c->fn(c->user, &e);
    if (ev->kind == OMNIC_EV_DONE) omnic_free(c); /* the last event of the request */
}

/* messages_json -> logical ids through the chat template; counts its image parts. */
static omnic_status chat_ids(const omnic_model *m, const char *text, const int64_t *crops,
                             size_t *n_image_parts, int32_t **ids, size_t *n, omnic_err *err)
{
    if (!m->chat)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "messages_json: the checkpoint has no chat template (pass token ids)");
    const size_t len = strlen(text);
    if (len > OMNIC_MAX_CONFIG_BYTES)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "messages_json is %zu bytes, over %zu", len,
                          (size_t)OMNIC_MAX_CONFIG_BYTES);
    json_error_t je;
    json_t *msgs = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!msgs)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "messages_json: line %d, column %d: %s", je.line, je.column,
                          je.text);
    omnic_status s = OMNIC_OK;
    *n_image_parts = 0;
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "messages_json must be a non-empty array of messages");
    for (size_t i = 0; s == OMNIC_OK && i < json_array_size(msgs); i++) {
        json_t *msg = json_array_get(msgs, i);
        const json_t *c = json_object_get(msg, "content");
        size_t images = 0;
        for (size_t k = 0; json_is_array(c) && k < json_array_size(c); k++) {
            const char *type = json_string_value(json_object_get(json_array_get(c, k), "type"));
            images += type && !strcmp(type, "image");
        }
        *n_image_parts += images;
        if (!json_is_array(c) || images) continue;
        /* text parts only: one string, joined by newlines (as the server does; text-only
         * templates read strings, and omnic__chat_content_parts makes parts again for processors) */
        size_t total = 0;
        for (size_t k = 0; k < json_array_size(c); k++)
            total += json_string_length(json_object_get(json_array_get(c, k), "text")) + 1;
        char *joined = omnic_alloc_array(total + 1, 1), *w = joined;
        for (size_t k = 0; joined && k < json_array_size(c); k++) {
            const json_t *t = json_object_get(json_array_get(c, k), "text");
            if (k) *w++ = '\n';
            memcpy(w, json_string_value(t) ? json_string_value(t) : "", json_string_length(t));
            w += json_string_length(t);
        }
        if (!joined || json_object_set_new(msg, "content", json_stringn(joined, (size_t)(w - joined))) != 0)
            s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for messages");
        omnic_free(joined);
    }
    if (s == OMNIC_OK && m->images && omnic__chat_content_parts(msgs) != OMNIC_OK)
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for messages");
    char *rendered = NULL;
    if (s == OMNIC_OK)
        s = omnic__chat_apply(m->chat, omnic__engine_tokenizer(m->engine), msgs, true, NULL, NULL, crops,
                              crops ? *n_image_parts : 0, &rendered, ids, n, err);
    omnic_free(rendered);
    json_decref(msgs);
    return s;
}

omnic_status omnic_submit(omnic_model *m, const omnic_request *r, uint64_t *id, omnic_err *err)
{
    if (!m || !r || !id)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "omnic_submit: model, request and id are required");
    OMNIC_TRY(check_version(r->api_version, "omnic_request", err));
    if (!r->on_event) return OMNIC_FAIL(err, OMNIC_E_INVALID, "omnic_request.on_event is required");
    if (!r->messages_json == !r->n_tokens)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "omnic_request: give one of messages_json and tokens");
    if (r->n_images > OMNIC_MAX_REQUEST_IMAGES)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "omnic_request: %zu images, more than %d", r->n_images,
                          OMNIC_MAX_REQUEST_IMAGES);
    if (r->n_images && !m->images)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "omnic_request: this model does not take image input");
    int32_t *ids = NULL;
    size_t n = 0, parts = 0;
    if (r->messages_json) {
        OMNIC_TRY(chat_ids(m, r->messages_json, NULL, &parts, &ids, &n, err));
        if (parts != r->n_images) {
            omnic_free(ids);
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "omnic_request: %zu image parts in messages_json, %zu images", parts,
                              r->n_images);
        }
    }
    omnic__media_item items[OMNIC_MAX_REQUEST_IMAGES] = {0};
    const omnic__media_item *ptrs[OMNIC_MAX_REQUEST_IMAGES];
    omnic_status s = OMNIC_OK;
    size_t done = 0;
    for (; s == OMNIC_OK && done < r->n_images; done++) {
        ptrs[done] = &items[done];
        const omnic_media *im = &r->images[done];
        s = im->data && im->len
                ? omnic__media_prepare_memo(omnic__engine_media_memo(m->engine), &m->img, im->data, im->len,
                                            NULL, NULL, &items[done], NULL, NULL, err)
                : OMNIC_FAIL(err, OMNIC_E_INVALID, "omnic_request.images[%zu] is empty", done);
        if (s != OMNIC_OK) omnic__err_prefix(err, "images[%zu]", done);
    }
    /* panned-and-scanned images (Gemma 3): the prompt is rendered again with their crops */
    int64_t crops[OMNIC_MAX_REQUEST_IMAGES];
    bool any_crops = false;
    for (size_t k = 0; s == OMNIC_OK && k < r->n_images; k++)
        any_crops |= (crops[k] = items[k].crops) > 0;
    if (s == OMNIC_OK && any_crops && r->messages_json) {
        omnic_free(ids), ids = NULL;
        s = chat_ids(m, r->messages_json, crops, &parts, &ids, &n, err);
    }
    omnic__sampling_params sp = omnic__sampling_defaults();
    unsigned given = 0;
    int64_t max_tokens = r->max_tokens > 0 ? r->max_tokens : 256;
    if (r->max_tokens > 0) given |= OMNIC_GEN_MAX_TOKENS;
    if (r->temperature != 0)
        sp.temperature = r->temperature < 0 ? 0 : r->temperature, given |= OMNIC_GEN_TEMPERATURE;
    if (r->top_k) sp.top_k = r->top_k, given |= OMNIC_GEN_TOP_K;
    if (r->top_p) sp.top_p = r->top_p, given |= OMNIC_GEN_TOP_P;
    if (r->min_p) sp.min_p = r->min_p, given |= OMNIC_GEN_MIN_P;
    sp.seed = r->seed;
    omnic__gen_defaults_apply(omnic__engine_gen_defaults(m->engine), given, &sp, &max_tokens);
    request_ctx *c = s == OMNIC_OK ? omnic_alloc_array(1, sizeof *c) : NULL;
    if (s == OMNIC_OK && !c) s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a request");
    if (s == OMNIC_OK) {
        *c = (request_ctx){.fn = r->on_event, .user = r->user};
        omnic__gen_request g = {.prompt = ids ? ids : r->tokens,
                                .n_prompt = ids ? n : r->n_tokens,
                                .sampling = sp,
                                .max_tokens = max_tokens,
                                .stops = r->stop,
                                .n_stops = r->n_stop,
                                .skip_special = true,
                                .ignore_eos = r->ignore_eos,
                                .cb = on_engine_event,
                                .cb_ctx = c,
                                .media = ptrs,
                                .n_media = r->n_images};
        if ((s = omnic__engine_submit(m->engine, &g, id, err)) != OMNIC_OK) omnic_free(c);
    }
    for (size_t k = 0; k < done; k++)
        omnic__media_item_deinit(&items[k]);
    omnic_free(ids);
    return s;
}

void omnic_cancel(omnic_model *m, uint64_t id)
{
    if (m) omnic__engine_cancel(m->engine, id);
}
