/* Media input of Gemma 3n (Gemma3nForConditionalGeneration): the audio table
 * omnic__media_gemma3n_audio, the image table omnic__media_gemma3n_image and the family's merge
 * (both tables: a prompt mixes images and clips). The processor is Gemma3nAudioFeatureExtractor
 * (preprocessor config keys, mm/usm_mel.h numerics); a clip's placeholder (audio_token_id,
 * <audio_soft_token>) stands for audio_soft_tokens_per_image rows (188): the encoder's rows of
 * valid frames through the audio embedder's soft path (models/gemma3n_audio.h), then the hard
 * embedding of the last audio id (vocab_size - 1) up to 188, as Gemma3nModel pads them. Text
 * rows are the decoder's own embeddings (ids >= the multimodal offset: their hard embeddings),
 * positions 1-D, and every row carries its id for the per-layer embeddings (media rows 0, as
 * HF clamps ids past vocab_size_per_layer_input). Prompts write a clip as <audio_soft_token>
 * (the chat template's audio part); expand_prompt writes each as Gemma3nProcessor does,
 * "\n\n<start_of_audio><audio_soft_token><end_of_audio>\n\n", the soft token being the one
 * logical placeholder. Images: SiglipImageProcessorFast (768 x 768, rescale, no normalisation),
 * MobileNetV5 and the vision embedder's soft path (models/gemma3n_vision.h), 256 rows each, written
 * in prompts as <image_soft_token> and expanded as "\n\n<start_of_image><image_soft_token>
 * <end_of_image>\n\n". */
#include <math.h>
#include <string.h>

#include "core/limits.h"
#include "io/json.h"
#include "mm/audio.h"
#include "mm/image_processor.h"
#include "mm/usm_mel.h"
#include "models/config_keys.h"
#include "models/family.h"
#include "models/gemma3n_audio.h"
#include "models/gemma3n_vision.h"
#include "models/image_processor_config.h"
#include "models/model.h"
#include "runtime/graph.h"
#include "tokenizer/tokenizer.h"

extern const omnic__media_ops omnic__media_gemma3n_image;

typedef struct g3a_media {
    omnic__usm enc;
    omnic__module m; /* audio.encode, planned for 30 s at 16 kHz */
    int out_projected, out_encoded;
    int64_t soft_rows;      /* audio_soft_tokens_per_image (188) */
    int32_t boa_id, eoa_id; /* <start_of_audio>, <end_of_audio> */
    int32_t pad_id;         /* the padding rows' id: vocab_size - 1 */
} g3a_media;

static g3a_media *state(const omnic__model *m)
{
    return m->media[OMNIC_MODALITY_AUDIO].ops == &omnic__media_gemma3n_audio
               ? m->media[OMNIC_MODALITY_AUDIO].state
               : NULL;
}

static void g3a_close(omnic__model *m)
{
    g3a_media *a = state(m);
    if (!a) return;
    omnic__module_deinit(&a->m);
    omnic__usm_deinit(&a->enc);
    omnic_free(a);
    m->media[OMNIC_MODALITY_AUDIO].state = NULL;
}

/* Feature frames of the longest clip the extractor keeps: 480000 samples. */
#define G3A_MAX_SAMPLES 480000
static int64_t max_frames(void)
{
    return (G3A_MAX_SAMPLES - 513) / 160 + 1;
}

static omnic_status token_id(const json_t *cfg, const char *key, int64_t dflt, int64_t vocab, int32_t *out,
                             omnic_err *err)
{
    int64_t v;
    OMNIC_TRY(omnic__json_get_i64(cfg, key, false, dflt, 0, INT32_MAX, "config.json", &v, err));
    if (v >= vocab)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "config.json: %s %lld is outside the vocabulary of %lld", key,
                          (long long)v, (long long)vocab);
    *out = (int32_t)v;
    return OMNIC_OK;
}

static omnic_status g3a_open(omnic__model *m, omnic_err *err)
{
    const json_t *cfg = m->ckpt->config;
    /* a checkpoint without the audio tower takes text only (the capability report says so) */
    if (!omnic__st_find(m->ckpt->weights, "model.audio_tower.subsample_conv_projection.conv_0.conv.weight"))
        return OMNIC_OK;
    g3a_media *a = omnic_alloc_array(1, sizeof *a);
    if (!a) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an audio encoder");
    memset(a, 0, sizeof *a);
    m->media[OMNIC_MODALITY_AUDIO].state = a; /* g3a_close frees what follows on failure */
    const json_t *ac = json_object_get(cfg, "audio_config");
    json_t *empty = NULL;
    if (!ac && !(ac = empty = json_object())) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory");
    omnic__usm_config c;
    omnic_status s = omnic__usm_config_parse(ac, "config.json audio_config", m->dec.cfg.hidden, &c, err);
    json_decref(empty);
    OMNIC_TRY(s);
    const int64_t V = m->dec.cfg.vocab;
    int32_t id;
    OMNIC_TRY(token_id(cfg, "audio_token_id", 262273, V, &id, err));
    OMNIC_TRY(token_id(cfg, "boa_token_id", 256000, V, &a->boa_id, err));
    OMNIC_TRY(token_id(cfg, "eoa_token_id", 262272, V, &a->eoa_id, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "audio_soft_tokens_per_image", false, 188, 1, 1 << 16, "config.json",
                                  &a->soft_rows, err));
    a->pad_id = (int32_t)(V - 1);
    if (id < m->dec.cfg.mm_vocab_offset || a->eoa_id < m->dec.cfg.mm_vocab_offset)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "config.json: audio_token_id %d and eoa_token_id %d must be multimodal ids (>= %lld)", id,
            a->eoa_id, (long long)m->dec.cfg.mm_vocab_offset);
    if (omnic__usm_rows(&c, max_frames()) > a->soft_rows)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "config.json: a 30 s clip gives %lld audio rows, more than audio_soft_tokens_per_image "
            "%lld",
            (long long)omnic__usm_rows(&c, max_frames()), (long long)a->soft_rows);
    OMNIC_TRY(omnic__usm_load(&a->enc, &c, m->ckpt->weights, err));
    const int64_t cap = omnic__usm_call_rows(&c, max_frames());
    OMNIC_TRY(omnic__module_init(&a->m, "audio.encode", "omnic.audio.encode.gemma3n/1", cap, err));
    OMNIC_TRY(omnic__usm_build(&a->enc, &a->m, err));
    OMNIC_TRY(omnic__module_finalize(&a->m, m->backend, m->pool, err));
    a->out_projected = omnic__module_find_output(&a->m, "projected");
    a->out_encoded = omnic__module_find_output(&a->m, "encoded");
    m->media[OMNIC_MODALITY_AUDIO].placeholder_id = id;
    return OMNIC_OK;
}

static bool g3a_ready(const omnic__model *m)
{
    const g3a_media *a = state(m);
    return a && a->m.finalized;
}

/* ---- processor: Gemma3nAudioFeatureExtractor ------------------------------------------------ */

typedef struct g3a_proc {
    omnic__usm_mel_params p;
    omnic__usm_mel *mel; /* owned */
} g3a_proc;

/* The extractor's keys and the image processor's (one preprocessor_config.json holds both). */
static const char *const proc_keys[] = {
    "feature_extractor_type", "feature_size", "sampling_rate", "padding_value", "return_attention_mask",
    "frame_length_ms", "hop_length_ms", "min_frequency", "max_frequency", "preemphasis",
    "preemphasis_htk_flavor", "fft_overdrive", "dither", "input_scale_factor", "mel_floor", "per_bin_mean",
    "per_bin_stddev", "padding_side", "processor_class",
    /* attributes the extractor saves and recomputes from the *_ms keys when it loads */
    "frame_length", "hop_length", "fft_length",
    /* SiglipImageProcessorFast */
    "image_processor_type", "do_resize", "size", "resample", "do_rescale", "rescale_factor", "do_normalize",
    "image_mean", "image_std", "do_convert_rgb", "data_format", "default_to_square", "input_data_format",
    "image_seq_length", "crop_size", "do_center_crop", "do_pad", "device", "disable_grouping",
    "return_tensors", NULL};

static bool g3a_proc_claims(const json_t *pc)
{
    const json_t *t = json_object_get(pc, "feature_extractor_type");
    return json_is_string(t) && !strcmp(json_string_value(t), "Gemma3nAudioFeatureExtractor");
}

static void g3a_proc_free(void *params)
{
    g3a_proc *p = params;
    if (!p) return;
    omnic__usm_mel_free(p->mel);
    omnic_free(p);
}

/* per_bin_mean / per_bin_stddev: null, or n numbers -> owned *out (NULL for null). */
static omnic_status per_bin(const json_t *pc, const char *key, int64_t n, const char *what, double **out,
                            omnic_err *err)
{
    *out = NULL;
    const json_t *v = json_object_get(pc, key);
    if (!v || json_is_null(v)) return OMNIC_OK;
    if (!json_is_array(v) || (int64_t)json_array_size(v) != n)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %s must be null or a list of %lld numbers", what, key,
                          (long long)n);
    double *d = omnic_alloc_array((size_t)n, sizeof(double));
    if (!d) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(v, (size_t)i);
        if (!json_is_number(x)) {
            omnic_free(d);
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %s[%lld] is not a number", what, key, (long long)i);
        }
        d[i] = json_number_value(x);
    }
    *out = d;
    return OMNIC_OK;
}

static omnic_status g3a_proc_parse(const json_t *pc, const char *what, const char *variant,
                                   const omnic__media_kwargs *kw, void **out, omnic_err *err)
{
    const char *const *const lists[] = {proc_keys, NULL};
    if (variant)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: the feature extractor has one numerics path (not %s)", what, variant);
    if (omnic__media_kwargs_any(kw)) return omnic__media_no_kwargs(OMNIC_MODALITY_AUDIO, err);
    OMNIC_TRY(omnic__json_check_keys(pc, what, lists, err));
    int64_t size, rate;
    double fl_ms, hop_ms, dither, pad;
    bool overdrive;
    omnic__usm_mel_params p = {.max_samples = G3A_MAX_SAMPLES, .pad_multiple = 128};
    OMNIC_TRY(omnic__json_get_i64(pc, "feature_size", false, 128, 1, 4096, what, &size, err));
    OMNIC_TRY(omnic__json_get_i64(pc, "sampling_rate", false, 16000, OMNIC_MIN_AUDIO_RATE,
                                  OMNIC_MAX_AUDIO_RATE, what, &rate, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "frame_length_ms", false, 32.0, 0.01, 1e4, what, &fl_ms, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "hop_length_ms", false, 10.0, 0.01, 1e4, what, &hop_ms, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "min_frequency", false, 125.0, 0, 1e6, what, &p.mel_min_hz, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "max_frequency", false, 7600.0, 0, 1e6, what, &p.mel_max_hz, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "preemphasis", false, 0.97, 0, 1, what, &p.preemphasis, err));
    OMNIC_TRY(omnic__json_get_bool(pc, "preemphasis_htk_flavor", false, true, what, &p.htk_preemphasis, err));
    OMNIC_TRY(omnic__json_get_bool(pc, "fft_overdrive", false, true, what, &overdrive, err));
    OMNIC_TRY(
        omnic__json_get_f64(pc, "input_scale_factor", false, 1.0, -1e6, 1e6, what, &p.input_scale, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "mel_floor", false, 1e-5, 0, 1e6, what, &p.mel_floor, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "dither", false, 0.0, 0, 1e6, what, &dither, err));
    OMNIC_TRY(omnic__json_get_f64(pc, "padding_value", false, 0.0, -1e30, 1e30, what, &pad, err));
    if (dither != 0)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: dither %g adds random noise to every clip; omnic's features are deterministic "
                          "(dither 0 only)",
                          what, dither);
    if (pad != 0) return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: padding_value %g (0 only)", what, pad);
    p.sample_rate = (int)rate;
    p.n_mels = (int)size;
    p.frame_length = (int)lround((double)rate * fl_ms / 1000.0);
    p.hop_length = (int)lround((double)rate * hop_ms / 1000.0);
    int fft = 1;
    while (fft < p.frame_length && fft < (1 << 16))
        fft *= 2;
    p.fft_length = overdrive ? 2 * fft : fft;
    double *mean = NULL, *sd = NULL;
    OMNIC_TRY(per_bin(pc, "per_bin_mean", size, what, &mean, err));
    omnic_status s = per_bin(pc, "per_bin_stddev", size, what, &sd, err);
    p.per_bin_mean = mean, p.per_bin_stddev = sd;
    g3a_proc *g = NULL;
    if (s == OMNIC_OK && !(g = omnic_alloc_array(1, sizeof *g)))
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a feature extractor");
    if (s == OMNIC_OK) {
        memset(g, 0, sizeof *g);
        if ((s = omnic__usm_mel_init(&g->mel, &p, err)) != OMNIC_OK) omnic__err_prefix(err, "%s", what);
    }
    omnic_free(mean);
    omnic_free(sd);
    if (s != OMNIC_OK) {
        g3a_proc_free(g);
        return s;
    }
    g->p = *omnic__usm_mel_params_of(g->mel);
    *out = g;
    return OMNIC_OK;
}

static omnic_status g3a_proc_fit(const omnic__model *m, void *params, int64_t user_max_pixels, omnic_err *err)
{
    (void)user_max_pixels;
    const g3a_proc *p = params;
    const omnic__usm_config *c = &state(m)->enc.cfg;
    if (p->p.n_mels != c->input_size || p->p.sample_rate != 16000 || p->p.frame_length != 512 ||
        p->p.hop_length != 160)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "preprocessor_config.json: %d mel bins at %d Hz with %d / %d sample frames do not match "
            "the encoder's %lld bins at 16000 Hz, 512 / 160 (the 30 s clip it is planned for)",
            p->p.n_mels, p->p.sample_rate, p->p.frame_length, p->p.hop_length, (long long)c->input_size);
    return OMNIC_OK;
}

static omnic_status g3a_proc_clone(const void *params, void **out, omnic_err *err)
{
    const g3a_proc *src = params;
    g3a_proc *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a feature extractor");
    memset(p, 0, sizeof *p);
    omnic_status s = omnic__usm_mel_init(&p->mel, omnic__usm_mel_params_of(src->mel), err);
    if (s != OMNIC_OK) {
        omnic_free(p);
        return s;
    }
    p->p = *omnic__usm_mel_params_of(p->mel);
    *out = p;
    return OMNIC_OK;
}

static int64_t g3a_proc_max_pixels(const void *params, bool own)
{
    (void)params, (void)own;
    return 0;
}

/* A decoded clip (any rate: resampled to 16 kHz) -> input features f32 [T, mels], valid = the
 * frames whose first sample is the clip's, rows = Gemma3nProcessor's audio_seq_length (188). A clip
 * past 30 s is truncated as the extractor truncates it (limited is set: reported). */
static omnic_status g3a_preprocess(const void *params, const omnic__decoded_media *in, omnic__media_item *out,
                                   omnic_err *err)
{
    const g3a_proc *p = params;
    const omnic__audio *a = in->audio;
    const float *x;
    int64_t n;
    float *rs;
    OMNIC_TRY(omnic__audio_at_rate(a, p->p.sample_rate, &x, &n, &rs, err));
    int64_t valid;
    const int64_t frames = omnic__usm_mel_frames(p->mel, n, &valid), kept = omnic__usm_mel_kept(p->mel, n);
    const int64_t d[2] = {frames > 0 ? frames : 1, p->p.n_mels};
    omnic_status s = OMNIC_OK;
    if (frames > 0) s = omnic__tensor_create(&out->input, OMNIC_DTYPE_F32, 2, d, err);
    if (s == OMNIC_OK) s = omnic__usm_mel_compute(p->mel, x, n, frames > 0 ? out->input->data : NULL, err);
    omnic_free(rs);
    if (s != OMNIC_OK) {
        omnic__tensor_destroy(out->input);
        out->input = NULL;
        return s;
    }
    out->modality = OMNIC_MODALITY_AUDIO;
    out->valid = valid;
    out->rows = 188;
    out->limited = kept < n;
    /* the clip as decoded and as featurized: rate (Hz) in *_w, samples in *_h */
    out->in_w = a->source_rate, out->out_w = p->p.sample_rate;
    out->in_h = a->n, out->out_h = kept;
    return OMNIC_OK;
}

/* ---- encoder, rows and merge ------------------------------------------------------------------ */

static omnic_status g3a_item_rows(const omnic__model *m, const omnic__media_item *it, int64_t *rows,
                                  omnic_err *err)
{
    const g3a_media *a = state(m);
    const omnic__usm_config *c = &a->enc.cfg;
    const omnic__tensor *t = it->input;
    if (it->modality != OMNIC_MODALITY_AUDIO || !t || !t->data || t->dtype != OMNIC_DTYPE_F32 ||
        t->ndim != 2 || t->dims[1] != c->input_size || t->dims[0] > max_frames() || it->valid < 0 ||
        it->valid > t->dims[0])
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "audio features must be f32 [frames, %lld] with at most %lld frames and valid <= frames",
            (long long)c->input_size, (long long)max_frames());
    *rows = a->soft_rows;
    return OMNIC_OK;
}

static omnic_status g3a_encode_start(omnic__model *m, const omnic__media_item *it, omnic__module **mod,
                                     int *projected, int *features, omnic_err *err)
{
    g3a_media *a = state(m);
    int64_t rows;
    OMNIC_TRY(g3a_item_rows(m, it, &rows, err));
    omnic__usm_inputs in;
    OMNIC_TRY(omnic__usm_inputs_make(&a->enc, it->input->data, it->input->dims[0], it->valid, &in, err));
    omnic__tensor t[3];
    omnic_status s = omnic__usm_inputs_bind(&a->enc, &in, t, err);
    if (s == OMNIC_OK) { /* start copies the inputs */
        const omnic__tensor *ins[3] = {&t[0], &t[1], &t[2]};
        omnic__call c = {.n = in.n, .inputs = ins, .n_inputs = 3};
        s = omnic__module_start(&a->m, &c, err);
    }
    omnic__usm_inputs_free(&in);
    if (s != OMNIC_OK) return s;
    *mod = &a->m;
    *projected = a->out_projected;
    *features = a->out_encoded;
    return OMNIC_OK;
}

/* The item's 188 rows: the embedder's rows of the valid frames, then the padding embedding. */
static omnic_status g3a_encode_rows(const omnic__model *m, const omnic__media_item *it,
                                    const omnic__module *mod, int projected, float *dst, omnic_err *err)
{
    const g3a_media *a = state(m);
    const int64_t H = m->dec.cfg.hidden, T = it->input->dims[0],
                  nv = omnic__usm_valid_rows(&a->enc.cfg, T, it->valid);
    const omnic__tensor *p = omnic__module_output(mod, projected);
    if (!p || p->ndim != 2 || p->dims[1] != H || p->dims[0] < nv || nv > a->soft_rows)
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "audio encoder output %s does not hold %lld rows of %lld",
                          p ? p->name : "(none)", (long long)nv, (long long)H);
    memcpy(dst, p->data, (size_t)(nv * H) * sizeof(float));
    if (nv == a->soft_rows) return OMNIC_OK;
    OMNIC_TRY(omnic__model_embed_tokens(m, &a->pad_id, 1, dst + nv * H, err));
    for (int64_t r = nv + 1; r < a->soft_rows; r++)
        memcpy(dst + r * H, dst + nv * H, (size_t)H * sizeof(float));
    return OMNIC_OK;
}

/* The subsampling convs, per subsampled row the two feed-forwards, q / k / v / post, the local
 * attention, the light conv, then the embedder on the reduced rows. */
static void g3a_encode_cost(const omnic__model *m, const omnic__media_item *it, omnic__encode_cost *out)
{
    const omnic__usm_config *c = &state(m)->enc.cfg;
    const int64_t T = omnic__usm_call_rows(c, it->input ? it->input->dims[0] : max_frames());
    const double T1 = (double)T / (double)c->sh[0], R = T1 / (double)c->sh[1], H = (double)c->hidden,
                 F1 = (double)c->freq[1], F2 = (double)c->freq[2], C0 = (double)c->ch[0],
                 C1 = (double)c->ch[1];
    const double sub = T1 * F1 * C0 * (double)(c->kh[0] * c->kw[0]) +
                       R * F2 * C1 * (double)(c->kh[1] * c->kw[1]) * C0 + R * F2 * C1 * H;
    const double block =
        16 * H * H + 4 * H * H + 3 * (double)c->context * H + 3 * H * H + (double)c->kernel_size * H;
    out->macs = sub + R * (double)c->n_layers * block + R / (double)c->reduction * H * (double)c->text_hidden;
    out->rows = (int64_t)R, out->width = c->hidden, out->inter = 4 * c->hidden;
}

/* Gemma 3n's merge (both tables): the k-th image / audio placeholder -> the k-th image / clip's rows,
 * every other id its own (post-scale, hard-embedded) row; row ids for the per-layer embeddings: the
 * text rows' ids, 0 on media rows. */
static omnic_status g3n_merge(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                              const omnic__media_item *const *items, int64_t n_items, const float *projected,
                              omnic__prepared_prefill *out, omnic_err *err)
{
    const int32_t ph[2] = {omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE),
                           omnic__media_placeholder(m, OMNIC_MODALITY_AUDIO)};
    const int64_t H = m->dec.cfg.hidden;
    int64_t want[2] = {0, 0}, have[2] = {0, 0}, total = 0;
    int64_t *rows = omnic_alloc_array(2 * (size_t)n_items + 1, sizeof *rows),
            *base = rows ? rows + n_items : NULL;
    if (!rows)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory merging %lld media items", (long long)n_items);
    omnic_status s = OMNIC_OK;
    base[0] = 0;
    for (int64_t k = 0; k < n_items && s == OMNIC_OK; k++) {
        const int mk = items[k]->modality == OMNIC_MODALITY_AUDIO;
        if ((items[k]->modality != OMNIC_MODALITY_IMAGE && !mk) || ph[mk] < 0)
            s = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "this Gemma 3n checkpoint takes no %s input",
                           omnic__modality_name(items[k]->modality));
        else if ((s = omnic__media_item_rows(m, items[k], &rows[k], err)) == OMNIC_OK)
            total += rows[k], have[mk]++, base[k + 1] = base[k] + rows[k];
    }
    for (int64_t i = 0; i < n_logical; i++)
        for (int k = 0; k < 2; k++)
            want[k] += ph[k] >= 0 && logical[i] == ph[k];
    for (int k = 0; k < 2 && s == OMNIC_OK; k++)
        if (want[k] != have[k])
            s = OMNIC_FAIL(err, OMNIC_E_INVALID, "the prompt has %lld %s placeholders but %lld %s given",
                           (long long)want[k], k ? "audio" : "image", (long long)have[k],
                           k ? "clips were" : "images were");
    omnic__prepared_prefill p = {.n_logical = n_logical,
                                 .hidden = H,
                                 .pos_mode = OMNIC_POS_1D,
                                 .n_images = n_items,
                                 .image_rows = total};
    p.n_rows = n_logical - n_items + total;
    if (s == OMNIC_OK) {
        p.logical = omnic_alloc_array((size_t)n_logical, sizeof *p.logical);
        p.embeds = omnic_alloc_array((size_t)(p.n_rows * H), sizeof *p.embeds);
        p.positions = omnic_alloc_array((size_t)p.n_rows, sizeof *p.positions);
        p.row_ids = omnic_alloc_array((size_t)p.n_rows, sizeof *p.row_ids);
        if (!p.logical || !p.embeds || !p.positions || !p.row_ids)
            s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %lld rows",
                           (long long)p.n_rows);
    }
    if (s != OMNIC_OK) goto out;
    memcpy(p.logical, logical, (size_t)n_logical * sizeof *logical);
    for (int64_t i = 0; i < p.n_rows; i++)
        p.positions[i] = (int32_t)i;
    int64_t row = 0, next[2] = {0, 0}; /* the next item of each modality */
    for (int64_t i = 0; i < n_logical;) {
        const int mk = logical[i] == ph[0] ? 0 : logical[i] == ph[1] ? 1 : -1;
        if (mk >= 0) {
            const omnic__modality mod = mk ? OMNIC_MODALITY_AUDIO : OMNIC_MODALITY_IMAGE;
            while (items[next[mk]]->modality != mod)
                next[mk]++;
            const int64_t k = next[mk]++;
            memcpy(p.embeds + row * H, projected + base[k] * H, (size_t)(rows[k] * H) * sizeof(float));
            memset(p.row_ids + row, 0, (size_t)rows[k] * sizeof *p.row_ids);
            row += rows[k], i++;
            continue;
        }
        int64_t j = i;
        while (j < n_logical && logical[j] != ph[0] && logical[j] != ph[1])
            j++;
        if ((s = omnic__model_embed_tokens(m, logical + i, j - i, p.embeds + row * H, err)) != OMNIC_OK)
            goto out;
        memcpy(p.row_ids + row, logical + i, (size_t)(j - i) * sizeof *p.row_ids);
        row += j - i, i = j;
    }
    s = omnic__prepared_prefill_init(out, &p, err);
out:
    omnic_free(rows);
    omnic__prepared_prefill_deinit(&p);
    return s;
}

/* Each placeholder of modality mod as Gemma3nProcessor writes it: "\n\n" open placeholder close "\n\n". */
static omnic_status g3n_expand(const omnic__model *m, const omnic__tokenizer *tok, omnic__modality mod,
                               int32_t open_id, int32_t close_id, const char *text, size_t len, char **out,
                               size_t *out_len, omnic_err *err)
{
    *out = NULL;
    size_t nb, na, ne;
    const int32_t id = m->media[mod].placeholder_id;
    const char *boa = omnic__tokenizer_id_to_token(tok, open_id, &nb);
    const char *ph = omnic__tokenizer_id_to_token(tok, id, &na);
    const char *eoa = omnic__tokenizer_id_to_token(tok, close_id, &ne);
    if (!boa || !ph || !eoa || !na)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the tokenizer has no token for the %s ids %d, %d or %d",
                          omnic__modality_name(mod), open_id, id, close_id);
    size_t count = 0;
    for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), ph, na)); p += na)
        count++;
    if (!count) return OMNIC_OK;
    const size_t n = len + count * (4 + nb + ne);
    char *o = omnic_alloc_array(n + 1, 1);
    if (!o) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a prompt of %zu bytes", n);
    char *w = o;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *hit = memmem(p, (size_t)(end - p), ph, na);
        if (!hit) hit = end;
        memcpy(w, p, (size_t)(hit - p)), w += hit - p;
        if (hit == end) break;
        memcpy(w, "\n\n", 2), w += 2;
        memcpy(w, boa, nb), w += nb;
        memcpy(w, ph, na), w += na;
        memcpy(w, eoa, ne), w += ne;
        memcpy(w, "\n\n", 2), w += 2;
        p = hit + na;
    }
    *w = '\0';
    *out = o;
    *out_len = (size_t)(w - o);
    return OMNIC_OK;
}

static omnic_status g3a_expand_prompt(const omnic__model *m, const omnic__tokenizer *tok, const char *text,
                                      size_t len, const int64_t *crops, size_t n_crops, char **out,
                                      size_t *out_len, omnic_err *err)
{
    (void)crops, (void)n_crops;
    const g3a_media *a = state(m);
    return g3n_expand(m, tok, OMNIC_MODALITY_AUDIO, a->boa_id, a->eoa_id, text, len, out, out_len, err);
}

/* ---- reports ---------------------------------------------------------------------------------- */

static void g3a_describe(const omnic__model *m, FILE *f)
{
    const g3a_media *a = state(m);
    const omnic__usm_config *c = &a->enc.cfg;
    fprintf(
        f,
        "audio:      Gemma 3n USM conformer, %lld blocks of %lld (%lld heads, %lld keys back, softcap %g), "
        "subsampling x%lld (%lld, %lld channels), reduction %lld; clips up to 30 s as %lld rows (audio "
        "token %d) through the embedder to %lld\n",
        (long long)c->n_layers, (long long)c->hidden, (long long)c->n_heads, (long long)c->context - 1,
        c->logit_cap, (long long)(c->sh[0] * c->sh[1]), (long long)c->ch[0], (long long)c->ch[1],
        (long long)c->reduction, (long long)a->soft_rows, m->media[OMNIC_MODALITY_AUDIO].placeholder_id,
        (long long)c->text_hidden);
    omnic__module_print(&a->m, f);
}

static void g3a_summary(const omnic__model *m, char *buf, size_t n)
{
    const omnic__usm_config *c = &state(m)->enc.cfg;
    snprintf(buf, n, "%s conformer %lldx%lld", m->family->name, (long long)c->n_layers, (long long)c->hidden);
}

static size_t g3a_planned_bytes(const omnic__model *m)
{
    const g3a_media *a = state(m);
    return a ? a->m.plan.total_bytes : 0;
}

static void g3a_identity(const omnic__model *m, char *modules, size_t n_modules, char *buckets,
                         size_t n_buckets)
{
    const g3a_media *a = state(m);
    size_t used = strlen(modules);
    snprintf(modules + used, n_modules - used, ";%s:%s", a->m.name, a->m.contract);
    used = strlen(buckets);
    snprintf(buckets + used, n_buckets - used, "%saudio_frames:<=%lld", used ? ";" : "",
             (long long)max_frames());
}

static const char *g3a_unserved(const omnic__model *m)
{
    return state(m) ? NULL : "the checkpoint has no audio tower (model.audio_tower.*)";
}

const omnic__media_ops omnic__media_gemma3n_audio = {
    .modality = OMNIC_MODALITY_AUDIO,
    .open = g3a_open,
    .close = g3a_close,
    .ready = g3a_ready,
    .unserved = g3a_unserved,
    .proc_claims = g3a_proc_claims,
    .proc_parse = g3a_proc_parse,
    .proc_fit = g3a_proc_fit,
    .proc_clone = g3a_proc_clone,
    .proc_free = g3a_proc_free,
    .proc_kwargs = NULL,
    .proc_max_pixels = g3a_proc_max_pixels,
    .preprocess = g3a_preprocess,
    .item_rows = g3a_item_rows,
    .encode_start = g3a_encode_start,
    .encode_rows = g3a_encode_rows,
    .encode_cost = g3a_encode_cost,
    .merge = g3n_merge,
    .expand_prompt = g3a_expand_prompt,
    .prompt_tag = NULL,
    .describe = g3a_describe,
    .summary = g3a_summary,
    .planned_bytes = g3a_planned_bytes,
    .identity = g3a_identity,
};

/* ---- images: SiglipImageProcessorFast, MobileNetV5, the vision embedder ------------------------- */

typedef struct g3i_media {
    omnic__mnv5 enc;
    omnic__module m; /* vision.encode: one S x S image */
    int out_projected, out_features;
    int64_t soft_rows;      /* vision_soft_tokens_per_image (256) */
    int32_t boi_id, eoi_id; /* <start_of_image>, <end_of_image> */
} g3i_media;

static g3i_media *istate(const omnic__model *m)
{
    return m->media[OMNIC_MODALITY_IMAGE].ops == &omnic__media_gemma3n_image
               ? m->media[OMNIC_MODALITY_IMAGE].state
               : NULL;
}

static void g3i_close(omnic__model *m)
{
    g3i_media *v = istate(m);
    if (!v) return;
    omnic__module_deinit(&v->m);
    omnic__mnv5_deinit(&v->enc);
    omnic_free(v);
    m->media[OMNIC_MODALITY_IMAGE].state = NULL;
}

static omnic_status g3i_open(omnic__model *m, omnic_err *err)
{
    const json_t *cfg = m->ckpt->config;
    if (!omnic__st_find(m->ckpt->weights, "model.vision_tower.timm_model.conv_stem.conv.weight"))
        return OMNIC_OK; /* no vision tower: text (and audio) only, as the capability report says */
    g3i_media *v = omnic_alloc_array(1, sizeof *v);
    if (!v) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a vision tower");
    memset(v, 0, sizeof *v);
    m->media[OMNIC_MODALITY_IMAGE].state = v;
    /* the tower is planned for the processor's square (768 published) */
    int64_t S = 768;
    if (m->ckpt->preprocessor_config) {
        omnic__image_proc_params pp;
        if (omnic__image_processor_config_parse(m->ckpt->preprocessor_config, "preprocessor_config.json", &pp,
                                                err) == OMNIC_OK &&
            pp.resize_mode == OMNIC__RESIZE_EXACT && pp.height == pp.width)
            S = pp.height;
    }
    if (S < 32 || S > 2048 || S % 32)
        return OMNIC_FAIL(
            err, OMNIC_E_UNSUPPORTED,
            "preprocessor_config.json: images of %lldx%lld; the vision tower takes squares of a "
            "multiple of 32 from 32 to 2048",
            (long long)S, (long long)S);
    const json_t *vc = json_object_get(cfg, "vision_config");
    json_t *empty = NULL;
    if (!vc && !(vc = empty = json_object())) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory");
    omnic__mnv5_config c;
    omnic_status s = omnic__mnv5_config_parse(vc, "config.json vision_config", m->dec.cfg.hidden, S, &c, err);
    json_decref(empty);
    OMNIC_TRY(s);
    const int64_t V = m->dec.cfg.vocab;
    int32_t id;
    OMNIC_TRY(token_id(cfg, "image_token_id", 262145, V, &id, err));
    OMNIC_TRY(token_id(cfg, "boi_token_id", 255999, V, &v->boi_id, err));
    OMNIC_TRY(token_id(cfg, "eoi_token_id", 262144, V, &v->eoi_id, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "vision_soft_tokens_per_image", false, 256, 1, 1 << 16, "config.json",
                                  &v->soft_rows, err));
    if (v->soft_rows != c.out_res * c.out_res)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "config.json: vision_soft_tokens_per_image %lld, but the tower gives %lldx%lld rows",
            (long long)v->soft_rows, (long long)c.out_res, (long long)c.out_res);
    if (id < m->dec.cfg.mm_vocab_offset)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "config.json: image_token_id %d must be a multimodal id (>= %lld)", id,
                          (long long)m->dec.cfg.mm_vocab_offset);
    OMNIC_TRY(omnic__mnv5_load(&v->enc, &c, m->ckpt->weights, err));
    OMNIC_TRY(omnic__module_init(&v->m, "vision.encode", "omnic.vision.encode.gemma3n/1", 1, err));
    OMNIC_TRY(omnic__mnv5_build(&v->enc, &v->m, err));
    OMNIC_TRY(omnic__module_finalize(&v->m, m->backend, m->pool, err));
    v->out_projected = omnic__module_find_output(&v->m, "projected");
    v->out_features = omnic__module_find_output(&v->m, "features");
    m->media[OMNIC_MODALITY_IMAGE].placeholder_id = id;
    return OMNIC_OK;
}

static bool g3i_ready(const omnic__model *m)
{
    const g3i_media *v = istate(m);
    return v && v->m.finalized;
}

static const char *g3i_unserved(const omnic__model *m)
{
    return istate(m) ? NULL : "the checkpoint has no vision tower (model.vision_tower.*)";
}

static bool g3i_proc_claims(const json_t *pc)
{
    char buf[128];
    const char *t = omnic__processor_config_type(pc, buf, sizeof buf);
    return t && (!strcmp(t, "SiglipImageProcessorFast") || !strcmp(t, "SiglipImageProcessor"));
}

static omnic_status g3i_proc_parse(const json_t *pc, const char *what, const char *variant,
                                   const omnic__media_kwargs *kw, void **out, omnic_err *err)
{
    const char *const *const lists[] = {proc_keys, NULL};
    if (omnic__media_kwargs_any(kw)) return omnic__media_no_kwargs(OMNIC_MODALITY_IMAGE, err);
    OMNIC_TRY(omnic__json_check_keys(pc, what, lists, err));
    omnic__image_proc_params *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an image processor");
    omnic_status s = omnic__image_processor_config_parse(pc, what, p, err);
    if (s != OMNIC_OK) {
        omnic_free(p);
        return s;
    }
    if (variant && !strcmp(variant, "pil"))
        p->numerics = OMNIC__NUMERICS_PIL;
    else if (variant)
        p->numerics = OMNIC__NUMERICS_TORCHVISION;
    *out = p;
    return OMNIC_OK;
}

static omnic_status g3i_proc_fit(const omnic__model *m, void *params, int64_t user_max_pixels, omnic_err *err)
{
    (void)user_max_pixels; /* the tower's fixed square: a user pixel limit does not apply */
    const int64_t S = istate(m)->enc.cfg.image;
    int64_t w = 0, h = 0;
    OMNIC_TRY(omnic__image_proc_output_size(params, 640, 480, &w, &h, err));
    if (w != S || h != S)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "preprocessor_config.json makes %lldx%lld pixel_values, the vision tower takes %lldx%lld",
            (long long)w, (long long)h, (long long)S, (long long)S);
    return OMNIC_OK;
}

static omnic_status g3i_proc_clone(const void *params, void **out, omnic_err *err)
{
    omnic__image_proc_params *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an image processor");
    *p = *(const omnic__image_proc_params *)params;
    *out = p;
    return OMNIC_OK;
}

static void g3i_proc_free(void *params)
{
    omnic_free(params);
}

static omnic_status g3i_preprocess(const void *params, const omnic__decoded_media *in, omnic__media_item *out,
                                   omnic_err *err)
{
    const omnic__image *img = in->image;
    if (!img) return OMNIC_FAIL(err, OMNIC_E_INVALID, "no image");
    OMNIC_TRY(omnic__image_preprocess(img, params, &out->input, err));
    out->modality = OMNIC_MODALITY_IMAGE;
    out->rows = 256;
    out->in_w = img->width, out->in_h = img->height;
    out->out_w = out->input->dims[2], out->out_h = out->input->dims[1];
    return OMNIC_OK;
}

static omnic_status g3i_item_rows(const omnic__model *m, const omnic__media_item *it, int64_t *rows,
                                  omnic_err *err)
{
    const g3i_media *v = istate(m);
    const int64_t S = v->enc.cfg.image;
    const omnic__tensor *t = it->input;
    if (it->modality != OMNIC_MODALITY_IMAGE || !t || !t->data || t->dtype != OMNIC_DTYPE_F32 ||
        t->ndim != 3 || t->dims[0] != 3 || t->dims[1] != S || t->dims[2] != S || it->crops)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "pixel_values must be f32 [3, %lld, %lld]", (long long)S,
                          (long long)S);
    *rows = v->soft_rows;
    return OMNIC_OK;
}

static omnic_status g3i_encode_start(omnic__model *m, const omnic__media_item *it, omnic__module **mod,
                                     int *projected, int *features, omnic_err *err)
{
    g3i_media *v = istate(m);
    int64_t rows;
    OMNIC_TRY(g3i_item_rows(m, it, &rows, err));
    const int64_t S = v->enc.cfg.image, n = S * S, d[2] = {n, 3};
    float *px = omnic_alloc_array((size_t)(n * 3), sizeof(float));
    if (!px)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a %lldx%lld image", (long long)S,
                          (long long)S);
    const float *chw = it->input->data; /* [3, S, S] -> pixel rows [S * S, 3] */
    for (int64_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            px[i * 3 + c] = chw[c * n + i];
    omnic__tensor t;
    omnic_status s = omnic__tensor_init(&t, OMNIC_DTYPE_F32, 2, d, err);
    if (s == OMNIC_OK) { /* start copies the inputs */
        t.data = px;
        const omnic__tensor *ins[1] = {&t};
        omnic__call c = {.n = 1, .inputs = ins, .n_inputs = 1};
        s = omnic__module_start(&v->m, &c, err);
    }
    omnic_free(px);
    if (s != OMNIC_OK) return s;
    *mod = &v->m;
    *projected = v->out_projected;
    *features = v->out_features;
    return OMNIC_OK;
}

static void g3i_encode_cost(const omnic__model *m, const omnic__media_item *it, omnic__encode_cost *out)
{
    (void)it;
    omnic__mnv5_cost(&istate(m)->enc, &out->macs, &out->rows, &out->width, &out->inter);
}

static omnic_status g3i_expand_prompt(const omnic__model *m, const omnic__tokenizer *tok, const char *text,
                                      size_t len, const int64_t *crops, size_t n_crops, char **out,
                                      size_t *out_len, omnic_err *err)
{
    (void)crops, (void)n_crops;
    const g3i_media *v = istate(m);
    return g3n_expand(m, tok, OMNIC_MODALITY_IMAGE, v->boi_id, v->eoi_id, text, len, out, out_len, err);
}

static void g3i_describe(const omnic__model *m, FILE *f)
{
    const g3i_media *v = istate(m);
    const omnic__mnv5 *e = &v->enc;
    fprintf(f,
            "vision:     Gemma 3n MobileNetV5 (mobilenetv5_300m_enc), %d stages of %d / %d / %d / %d blocks, "
            "%lldx%lld "
            "images -> %lldx%lld x %lld fused, %lld rows per image (image token %d) through the embedder to "
            "%lld\n",
            e->n_stages, e->stage_len[0], e->n_stages > 1 ? e->stage_len[1] : 0,
            e->n_stages > 2 ? e->stage_len[2] : 0, e->n_stages > 3 ? e->stage_len[3] : 0,
            (long long)e->cfg.image, (long long)e->cfg.image, (long long)e->cfg.out_res,
            (long long)e->cfg.out_res, (long long)e->cfg.hidden, (long long)v->soft_rows,
            m->media[OMNIC_MODALITY_IMAGE].placeholder_id, (long long)e->cfg.text_hidden);
    omnic__module_print(&v->m, f);
}

static void g3i_summary(const omnic__model *m, char *buf, size_t n)
{
    const omnic__mnv5 *e = &istate(m)->enc;
    snprintf(buf, n, "%s MobileNetV5 %d blocks @%lld", m->family->name, e->n_blocks, (long long)e->cfg.image);
}

static size_t g3i_planned_bytes(const omnic__model *m)
{
    const g3i_media *v = istate(m);
    return v ? v->m.plan.total_bytes : 0;
}

static void g3i_identity(const omnic__model *m, char *modules, size_t n_modules, char *buckets,
                         size_t n_buckets)
{
    const g3i_media *v = istate(m);
    size_t used = strlen(modules);
    snprintf(modules + used, n_modules - used, ";%s:%s", v->m.name, v->m.contract);
    used = strlen(buckets);
    snprintf(buckets + used, n_buckets - used, "%simage:%lldx%lld", used ? ";" : "",
             (long long)v->enc.cfg.image, (long long)v->enc.cfg.image);
}

const omnic__media_ops omnic__media_gemma3n_image = {
    .modality = OMNIC_MODALITY_IMAGE,
    .open = g3i_open,
    .close = g3i_close,
    .ready = g3i_ready,
    .unserved = g3i_unserved,
    .proc_claims = g3i_proc_claims,
    .proc_parse = g3i_proc_parse,
    .proc_fit = g3i_proc_fit,
    .proc_clone = g3i_proc_clone,
    .proc_free = g3i_proc_free,
    .proc_kwargs = NULL,
    .proc_max_pixels = g3a_proc_max_pixels,
    .preprocess = g3i_preprocess,
    .item_rows = g3i_item_rows,
    .encode_start = g3i_encode_start,
    .encode_cost = g3i_encode_cost,
    .merge = g3n_merge,
    .expand_prompt = g3i_expand_prompt,
    .prompt_tag = NULL,
    .describe = g3i_describe,
    .summary = g3i_summary,
    .planned_bytes = g3i_planned_bytes,
    .identity = g3i_identity,
};
