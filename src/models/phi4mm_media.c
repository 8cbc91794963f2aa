/* Audio input of Phi-4-multimodal (models/phi4mm_audio.h): the family table
 * omnic__media_phi4mm_audio. The processor is Phi4MultimodalFeatureExtractor (preprocessor
 * config keys, mm/fbank.h numerics); a clip's placeholder (audio_config.audio_token_id, the
 * tokenizer's <|endoftext11|>) expands to ceil(frames / 8) rows of the speech projection (the
 * vision-speech one when the prompt also holds an image: the encoder gives both, the second as
 * a side output), text rows are the decoder's own embeddings, positions 1-D, and the prompt
 * runs with the speech adapter (Phi4MM's mode rule). Prompts write clips as <|audio_N|>
 * (Phi4MultimodalProcessor's placeholders); expand_prompt rewrites each to the one logical
 * placeholder. */
#include <math.h>
#include <string.h>

#include "core/limits.h"
#include "io/json.h"
#include "mm/audio.h"
#include "mm/fbank.h"
#include "models/config_keys.h"
#include "models/model.h"
#include "models/phi4mm_audio.h"
#include "models/phi4mm_media.h"
#include "runtime/graph.h"
#include "tokenizer/tokenizer.h"

typedef struct p4a_media {
    omnic__p4a enc;
    omnic__module m; /* audio.encode, planned for OMNIC_MAX_AUDIO_SECONDS at 16 kHz */
    int out_speech, out_vision, out_encoded;
} p4a_media;

static p4a_media *state(const omnic__model *m)
{
    return m->media[OMNIC_MODALITY_AUDIO].ops == &omnic__media_phi4mm_audio
               ? m->media[OMNIC_MODALITY_AUDIO].state
               : NULL;
}

static void p4a_close(omnic__model *m)
{
    p4a_media *a = state(m);
    if (!a) return;
    omnic__module_deinit(&a->m);
    omnic__p4a_deinit(&a->enc);
    omnic_free(a);
    m->media[OMNIC_MODALITY_AUDIO].state = NULL;
}

/* Feature frames of the longest clip: OMNIC_MAX_AUDIO_SECONDS at 16 kHz, 400 / 160 frames. */
static int64_t max_frames(void)
{
    return ((int64_t)(OMNIC_MAX_AUDIO_SECONDS * 16000) - 400) / 160 + 1;
}

static omnic_status p4a_open(omnic__model *m, omnic_err *err)
{
    p4a_media *a = omnic_alloc_array(1, sizeof *a);
    if (!a) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an audio encoder");
    memset(a, 0, sizeof *a);
    m->media[OMNIC_MODALITY_AUDIO].state = a; /* p4a_close frees what follows on failure */
    const json_t *ac = json_object_get(m->ckpt->config, "audio_config");
    if (!json_is_object(ac))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "config.json: phi4_multimodal needs an audio_config object");
    omnic__p4a_config c;
    OMNIC_TRY(omnic__p4a_config_parse(ac, "config.json audio_config", m->dec.cfg.hidden, &c, err));
    int64_t id;
    OMNIC_TRY(omnic__json_get_i64(ac, "audio_token_id", false, 200011, 0, INT32_MAX,
                                  "config.json audio_config", &id, err));
    if (id >= m->dec.cfg.vocab)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "config.json audio_config: audio_token_id %lld is outside the "
                          "vocabulary of %lld",
                          (long long)id, (long long)m->dec.cfg.vocab);
    OMNIC_TRY(omnic__p4a_load(&a->enc, &c, m->ckpt->weights, err));
    const int64_t cap = omnic__p4a_call_rows(&c, max_frames());
    OMNIC_TRY(omnic__module_init(&a->m, "audio.encode", "omnic.audio.encode.phi4mm/1", cap, err));
    OMNIC_TRY(omnic__p4a_build(&a->enc, &a->m, err));
    OMNIC_TRY(omnic__module_finalize(&a->m, m->backend, m->pool, err));
    a->out_speech = omnic__module_find_output(&a->m, "speech");
    a->out_vision = omnic__module_find_output(&a->m, "vision_speech");
    a->out_encoded = omnic__module_find_output(&a->m, "encoded");
    omnic__model_media *md = &m->media[OMNIC_MODALITY_AUDIO];
    md->placeholder_id = (int32_t)id;
    md->n_side = 1; /* the vision-speech rows after the speech rows */
    md->side_out[0] = a->out_vision;
    return OMNIC_OK;
}

static bool p4a_ready(const omnic__model *m)
{
    const p4a_media *a = state(m);
    return a && a->m.finalized;
}

/* Served only with the speech LoRA adapter audio-only prompts run with (never without it: the
 * text would be fluent but not the model's). */
static const char *p4a_unserved(const omnic__model *m)
{
    return m->adapter_of[OMNIC_ADAPTER_SPEECH] >= 0 ? NULL
                                                    : "Phi-4-multimodal runs audio prompts with its speech "
                                                      "LoRA adapter, and the checkpoint has no "
                                                      "speech-lora/ folder";
}

/* ---- processor: Phi4MultimodalFeatureExtractor ------------------------------------------------ */

typedef struct p4a_proc {
    omnic__fbank_params fp;
    int64_t compression; /* audio_compression_rate (8) */
    omnic__fbank *fb;    /* owned */
} p4a_proc;

const char *const omnic__phi4mm_audio_keys[] = {"feature_extractor_type",
                                                "feature_size",
                                                "sampling_rate",
                                                "padding_value",
                                                "return_attention_mask",
                                                "hop_length",
                                                "n_fft",
                                                "win_length",
                                                "preemphasis",
                                                "audio_compression_rate",
                                                "audio_downsample_rate",
                                                "audio_feat_stride",
                                                "mel_min_frequency",
                                                "mel_max_frequency",
                                                "processor_class",
                                                "padding_side",
                                                NULL};

static bool p4a_proc_claims(const json_t *pc)
{
    const json_t *t = json_object_get(pc, "feature_extractor_type");
    /* Phi4MMAudioFeatureExtractor: the original layout's, read as HF's extractor (as the conversion does) */
    return json_is_string(t) && (!strcmp(json_string_value(t), "Phi4MultimodalFeatureExtractor") ||
                                 !strcmp(json_string_value(t), "Phi4MMAudioFeatureExtractor"));
}

static void p4a_proc_free(void *params)
{
    p4a_proc *p = params;
    if (!p) return;
    omnic__fbank_free(p->fb);
    omnic_free(p);
}

static omnic_status p4a_proc_parse(const json_t *pc, const char *what, const char *variant,
                                   const omnic__media_kwargs *kw, void **out, omnic_err *err)
{

    const char *const *const lists[] = {omnic__phi4mm_audio_keys, omnic__phi4mm_image_keys, NULL};
    if (variant)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: the feature extractor has one numerics path (not %s)", what, variant);
    if (omnic__media_kwargs_any(kw)) return omnic__media_no_kwargs(OMNIC_MODALITY_AUDIO, err);
    OMNIC_TRY(omnic__json_check_keys(pc, what, lists, err));
    int64_t size, rate, hop, nfft, win, comp;
    double pre, lo, hi;
    OMNIC_TRY(omnic__json_get_i64(pc, "feature_size", false, 80, 1, 4096, what, &size, err));
    OMNIC_TRY(omnic__json_get_i64(pc, "sampling_rate", false, 16000, OMNIC_MIN_AUDIO_RATE,
                                  OMNIC_MAX_AUDIO_RATE, what, &rate, err));
    OMNIC_TRY(omnic__json_get_i64(pc, "hop_length", false, 160, 1, 1 << 16, what, &hop, err));
    OMNIC_TRY(omnic__json_get_i64(pc, "n_fft", false, 512, 2, 1 << 16, what, &nfft, err));
    OMNIC_TRY(omnic__json_get_i64(pc, "win_length", false, 400, 1, 1 << 16, what, &win, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "preemphasis", false, 0.97, 0, 1, what, &pre, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "mel_min_frequency", false, 0, 0, 1e6, what, &lo, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "mel_max_frequency", false, 7690, 0, 1e6, what, &hi, err));
    OMNIC_TRY(omnic__json_get_i64(pc, "audio_compression_rate", false, 8, 1, 64, what, &comp, err));
    OMNIC_TRY(omnic__json_expect(pc, "audio_downsample_rate", "1", what, err));
    OMNIC_TRY(omnic__json_expect(pc, "audio_feat_stride", "1", what, err));
    OMNIC_TRY(omnic__json_expect(pc, "padding_value", "0", what, err));
    p4a_proc *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a feature extractor");
    memset(p, 0, sizeof *p);
    p->fp = (omnic__fbank_params){.sample_rate = (int)rate,
                                  .win_length = (int)win,
                                  .hop_length = (int)hop,
                                  .n_fft = (int)nfft,
                                  .n_mels = (int)size,
                                  .preemphasis = pre,
                                  .scale = 32768.0,
                                  .mel_min_hz = lo,
                                  .mel_max_hz = hi,
                                  .log_floor = 1.0};
    p->compression = comp;
    omnic_status s = omnic__fbank_init(&p->fb, &p->fp, err);
    if (s != OMNIC_OK) {
        omnic__err_prefix(err, "%s", what);
        p4a_proc_free(p);
        return s;
    }
    *out = p;
    return OMNIC_OK;
}

static omnic_status p4a_proc_fit(const omnic__model *m, void *params, int64_t user_max_pixels, omnic_err *err)
{
    (void)user_max_pixels;
    const p4a_media *a = state(m);
    const p4a_proc *p = params;
    const omnic__p4a_config *c = &a->enc.cfg;
    if (p->fp.n_mels != c->input_size || p->compression != c->time_reduction || p->fp.sample_rate != 16000 ||
        p->fp.win_length != 400 || p->fp.hop_length != 160)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "preprocessor_config.json: %d mel bins, compression %lld, %d Hz with %d / %d frames do "
            "not match the encoder's %lld bins and time reduction %lld at 16000 Hz, 400 / 160",
            p->fp.n_mels, (long long)p->compression, p->fp.sample_rate, p->fp.win_length, p->fp.hop_length,
            (long long)c->input_size, (long long)c->time_reduction);
    return OMNIC_OK;
}

static omnic_status p4a_proc_clone(const void *params, void **out, omnic_err *err)
{
    const p4a_proc *src = params;
    p4a_proc *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a feature extractor");
    *p = *src;
    p->fb = NULL;
    omnic_status s = omnic__fbank_init(&p->fb, &p->fp, err);
    if (s != OMNIC_OK) {
        omnic_free(p);
        return s;
    }
    *out = p;
    return OMNIC_OK;
}

static int64_t p4a_proc_max_pixels(const void *params, bool own)
{
    (void)params, (void)own;
    return 0;
}

/* A decoded clip (any rate: resampled to the extractor's as librosa would) -> input features
 * f32 [frames, mels], valid = frames, rows = ceil(frames / compression). */
static omnic_status p4a_preprocess(const void *params, const omnic__decoded_media *in, omnic__media_item *out,
                                   omnic_err *err)
{
    const p4a_proc *p = params;
    const omnic__audio *a = in->audio;
    const float *x;
    int64_t n;
    float *rs;
    OMNIC_TRY(omnic__audio_at_rate(a, p->fp.sample_rate, &x, &n, &rs, err));
    const int64_t frames = omnic__fbank_frames(p->fb, n);
    omnic_status s = OMNIC_OK;
    if (frames > max_frames())
        s = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                       "audio of %lld feature frames: the encoder takes up to %lld (%g s)", (long long)frames,
                       (long long)max_frames(), OMNIC_MAX_AUDIO_SECONDS);
    const int64_t d[2] = {frames > 0 ? frames : 1, p->fp.n_mels};
    if (s == OMNIC_OK && frames > 0) s = omnic__tensor_create(&out->input, OMNIC_DTYPE_F32, 2, d, err);
    if (s == OMNIC_OK) s = omnic__fbank_compute(p->fb, x, n, frames > 0 ? out->input->data : NULL, err);
    omnic_free(rs);
    if (s != OMNIC_OK) {
        omnic__tensor_destroy(out->input);
        out->input = NULL;
        return s;
    }
    out->modality = OMNIC_MODALITY_AUDIO;
    out->valid = frames;
    out->rows = (frames + p->compression - 1) / p->compression;
    /* the clip as decoded and as featurized: rate (Hz) in *_w, samples in *_h */
    out->in_w = a->source_rate, out->out_w = p->fp.sample_rate;
    out->in_h = a->n, out->out_h = n;
    return OMNIC_OK;
}

/* ---- encoder and merge ------------------------------------------------------------------------ */

static omnic_status p4a_item_rows(const omnic__model *m, const omnic__media_item *it, int64_t *rows,
                                  omnic_err *err)
{
    const p4a_media *a = state(m);
    const omnic__p4a_config *c = &a->enc.cfg;
    const omnic__tensor *t = it->input;
    if (it->modality != OMNIC_MODALITY_AUDIO || !t || !t->data || t->dtype != OMNIC_DTYPE_F32 ||
        t->ndim != 2 || t->dims[1] != c->input_size || it->valid != t->dims[0] ||
        omnic__p4a_call_rows(c, it->valid) > a->m.graph.capacity)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "audio features must be f32 [frames, %lld] with valid = frames, at most %lld frames",
            (long long)c->input_size, (long long)max_frames());
    *rows = omnic__p4a_rows(c, it->valid);
    return OMNIC_OK;
}

static omnic_status p4a_encode_start(omnic__model *m, const omnic__media_item *it, omnic__module **mod,
                                     int *projected, int *features, omnic_err *err)
{
    p4a_media *a = state(m);
    int64_t rows;
    OMNIC_TRY(p4a_item_rows(m, it, &rows, err));
    omnic__p4a_inputs in;
    OMNIC_TRY(omnic__p4a_inputs_make(&a->enc, it->input->data, it->valid, &in, err));
    omnic__tensor t[3];
    omnic_status s = omnic__p4a_inputs_bind(&a->enc, &in, t, err);
    if (s == OMNIC_OK) { /* start copies the inputs */
        const omnic__tensor *ins[3] = {&t[0], &t[1], &t[2]};
        omnic__call c = {.n = in.n, .inputs = ins, .n_inputs = 3};
        s = omnic__module_start(&a->m, &c, err);
    }
    omnic__p4a_inputs_free(&in);
    if (s != OMNIC_OK) return s;
    *mod = &a->m;
    *projected = a->out_speech;
    *features = a->out_encoded;
    return OMNIC_OK;
}

/* Subsampling (the first conv, the depthwise and pointwise stages, the out Linear), per block
 * the macaron FFs, q/k/v/o, attention over the chunk, the conv module, then both projections. */
static void p4a_encode_cost(const omnic__model *m, const omnic__media_item *it, omnic__encode_cost *out)
{
    const omnic__p4a_config *c = &state(m)->enc.cfg;
    const double n = (double)omnic__p4a_call_rows(c, it->valid), R = n / (double)c->time_reduction;
    const double H = (double)c->hidden, I = (double)c->intermediate, C = (double)c->conv_channels,
                 D = (double)c->text_hidden, L = R > OMNIC_P4A_CHUNK ? OMNIC_P4A_CHUNK : R;
    double sub = 0, rows = n, w = (double)c->input_size;
    for (int64_t k = 0; k < c->stages; k++) {
        rows /= 2, w = floor((w - 1) / 2 + 1);
        sub += rows * w * C * 9 + (k > 0 ? rows * w * C * C : 0);
    }
    sub += R * (double)c->final_size * C * H;
    const double block =
        2 * (3 * R * H * I) + 4 * R * H * H + 2 * R * L * H + 4 * R * H * H + R * H * c->kernel_size;
    out->macs = sub + (double)c->n_blocks * block + 2 * (R * H * D + R * D * D);
    out->rows = (int64_t)R, out->width = c->hidden, out->inter = 2 * c->intermediate;
}

omnic_status omnic__phi4mm_merge(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                                 const omnic__media_item *const *items, int64_t n_items,
                                 const float *projected, omnic__prepared_prefill *out, omnic_err *err)
{
    const int32_t ids[2] = {omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE),
                            omnic__media_placeholder(m, OMNIC_MODALITY_AUDIO)};
    const int64_t H = m->dec.cfg.hidden;
    int64_t want[2] = {0, 0}, have[2] = {0, 0}, total = 0;
    /* rows[k]: item k's rows; base[k]: where they start in projected (every item's rows in item order,
     * a clip's vision-speech rows after its speech rows) */
    int64_t *rows = omnic_alloc_array(2 * (size_t)n_items + 1, sizeof *rows), *base = rows + n_items;
    if (!rows)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory merging %lld media items", (long long)n_items);
    base[0] = 0;
    omnic_status s = OMNIC_OK;
    for (int64_t k = 0; k < n_items && s == OMNIC_OK; k++) {
        const int mk = items[k]->modality == OMNIC_MODALITY_AUDIO;
        if (items[k]->modality != OMNIC_MODALITY_IMAGE && !mk)
            s = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "Phi-4-multimodal takes no %s input",
                           omnic__modality_name(items[k]->modality));
        else if ((s = omnic__media_item_rows(m, items[k], &rows[k], err)) == OMNIC_OK) {
            base[k + 1] = base[k] + rows[k] * (1 + m->media[items[k]->modality].n_side);
            have[mk]++, total += rows[k];
        }
    }
    if (s != OMNIC_OK) {
        omnic_free(rows);
        return s;
    }
    for (int64_t i = 0; i < n_logical; i++)
        for (int k = 0; k < 2; k++)
            want[k] += ids[k] >= 0 && logical[i] == ids[k];
    for (int k = 0; k < 2; k++)
        if (want[k] != have[k]) {
            omnic_free(rows);
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "the prompt has %lld %s placeholders but %lld %s given",
                              (long long)want[k], k ? "audio" : "image", (long long)have[k],
                              k ? "clips were" : "images were");
        }
    omnic__prepared_prefill p = {.n_logical = n_logical,
                                 .hidden = H,
                                 .pos_mode = OMNIC_POS_1D,
                                 .n_images = n_items,
                                 .image_rows = total,
                                 .adapter = have[0]   ? OMNIC_ADAPTER_VISION
                                            : have[1] ? OMNIC_ADAPTER_SPEECH
                                                      : OMNIC_ADAPTER_NONE};
    p.n_rows = n_logical - n_items + total;
    p.logical = omnic_alloc_array((size_t)n_logical, sizeof *p.logical);
    p.embeds = omnic_alloc_array((size_t)(p.n_rows * H), sizeof *p.embeds);
    p.positions = omnic_alloc_array((size_t)p.n_rows, sizeof *p.positions);
    if (!p.logical || !p.embeds || !p.positions) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %lld rows", (long long)p.n_rows);
        goto out;
    }
    memcpy(p.logical, logical, (size_t)n_logical * sizeof *logical);
    for (int64_t i = 0; i < p.n_rows; i++)
        p.positions[i] = (int32_t)i;
    int64_t row = 0, next[2] = {0, 0}; /* the next item of each modality */
    for (int64_t i = 0; i < n_logical;) {
        const int mk = logical[i] == ids[0] ? 0 : logical[i] == ids[1] ? 1 : -1;
        if (mk >= 0) {
            const omnic__modality want_mod = mk ? OMNIC_MODALITY_AUDIO : OMNIC_MODALITY_IMAGE;
            while (items[next[mk]]->modality != want_mod)
                next[mk]++;
            const int64_t k = next[mk]++;
            const int64_t r = rows[k],
                          from = base[k] + (mk && have[0] ? r : 0); /* vision-speech rows with an image */
            memcpy(p.embeds + row * H, projected + from * H, (size_t)(r * H) * sizeof(float));
            row += r, i++;
            continue;
        }
        int64_t j = i;
        while (j < n_logical && logical[j] != ids[0] && logical[j] != ids[1])
            j++;
        if ((s = omnic__model_embed_tokens(m, logical + i, j - i, p.embeds + row * H, err)) != OMNIC_OK)
            goto out;
        row += j - i, i = j;
    }
    s = omnic__prepared_prefill_init(out, &p, err);
out:
    omnic_free(rows);
    omnic__prepared_prefill_deinit(&p);
    return s;
}

omnic_status omnic__phi4mm_expand(const omnic__model *m, const omnic__tokenizer *tok, omnic__modality mod,
                                  const char *open, const char *text, size_t len, char **out, size_t *out_len,
                                  omnic_err *err)
{
    *out = NULL;
    size_t np;
    const int32_t id = m->media[mod].placeholder_id;
    const char *ph = omnic__tokenizer_id_to_token(tok, id, &np);
    if (!ph || !np)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the tokenizer has no token for the %s placeholder id %d",
                          omnic__modality_name(mod), id);
    const size_t no = strlen(open);
    if (!memmem(text, len, open, no)) return OMNIC_OK;
    char *o =
        omnic_alloc_array(len + 1 + (len / (no + 3) + 1) * np, 1); /* each open N|> is >= no + 3 bytes */
    if (!o) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %zu bytes", len);
    char *w = o;
    for (size_t i = 0; i < len;) {
        size_t j = i + no, k = j;
        if (i + no <= len && !memcmp(text + i, open, no)) {
            while (k < len && text[k] >= '0' && text[k] <= '9')
                k++;
            if (k > j && k + 1 < len && text[k] == '|' && text[k + 1] == '>') { /* open \d+ |> */
                memcpy(w, ph, np), w += np;
                i = k + 2;
                continue;
            }
        }
        *w++ = text[i++];
    }
    *w = '\0';
    *out = o;
    *out_len = (size_t)(w - o);
    return OMNIC_OK;
}

static omnic_status p4a_expand_prompt(const omnic__model *m, const omnic__tokenizer *tok, const char *text,
                                      size_t len, const int64_t *crops, size_t n_crops, char **out,
                                      size_t *out_len, omnic_err *err)
{
    (void)crops, (void)n_crops;
    return omnic__phi4mm_expand(m, tok, OMNIC_MODALITY_AUDIO, "<|audio_", text, len, out, out_len, err);
}

/* ---- reports ---------------------------------------------------------------------------------- */

static void p4a_describe(const omnic__model *m, FILE *f)
{
    const p4a_media *a = state(m);
    const omnic__p4a_config *c = &a->enc.cfg;
    fprintf(
        f,
        "audio:      Phi-4-multimodal conformer, %lld blocks of %lld (%lld heads), NeMo subsampling x%lld "
        "(%lld channels), T5 bias distance %lld, up to %g s per clip (audio token %d); speech and "
        "vision-speech projections to %lld%s%s\n",
        (long long)c->n_blocks, (long long)c->hidden, (long long)c->n_heads, (long long)c->time_reduction,
        (long long)c->conv_channels, (long long)c->max_distance, OMNIC_MAX_AUDIO_SECONDS,
        m->media[OMNIC_MODALITY_AUDIO].placeholder_id, (long long)c->text_hidden,
        p4a_unserved(m) ? "; not served: " : "", p4a_unserved(m) ? p4a_unserved(m) : "");
    omnic__module_print(&a->m, f);
}

static void p4a_summary(const omnic__model *m, char *buf, size_t n)
{
    const omnic__p4a_config *c = &state(m)->enc.cfg;
    snprintf(buf, n, "%s conformer %lldx%lld", m->family->name, (long long)c->n_blocks, (long long)c->hidden);
}

static size_t p4a_planned_bytes(const omnic__model *m)
{
    const p4a_media *a = state(m);
    return a ? a->m.plan.total_bytes : 0;
}

static void p4a_identity(const omnic__model *m, char *modules, size_t n_modules, char *buckets,
                         size_t n_buckets)
{
    const p4a_media *a = state(m);
    size_t used = strlen(modules);
    snprintf(modules + used, n_modules - used, ";%s:%s", a->m.name, a->m.contract);
    used = strlen(buckets);
    snprintf(buckets + used, n_buckets - used, "%saudio_frames:<=%lld", used ? ";" : "",
             (long long)max_frames());
}

const omnic__media_ops omnic__media_phi4mm_audio = {
    .modality = OMNIC_MODALITY_AUDIO,
    .open = p4a_open,
    .close = p4a_close,
    .ready = p4a_ready,
    .unserved = p4a_unserved,
    .proc_claims = p4a_proc_claims,
    .proc_parse = p4a_proc_parse,
    .proc_fit = p4a_proc_fit,
    .proc_clone = p4a_proc_clone,
    .proc_free = p4a_proc_free,
    .proc_kwargs = NULL,
    .proc_max_pixels = p4a_proc_max_pixels,
    .preprocess = p4a_preprocess,
    .item_rows = p4a_item_rows,
    .encode_start = p4a_encode_start,
    .encode_cost = p4a_encode_cost,
    .merge = omnic__phi4mm_merge,
    .expand_prompt = p4a_expand_prompt,
    .prompt_tag = "<|audio_%zu|>",
    .describe = p4a_describe,
    .summary = p4a_summary,
    .planned_bytes = p4a_planned_bytes,
    .identity = p4a_identity,
};
