/* `omnic run`: one prompt through the engine, text streamed to stdout, timings to stderr,
 * optionally every stage of the prefill written as .npy (--dump, DESIGN.md 5). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/npy.h"
#include "core/sync.h"
#include "engine/chat.h"
#include "engine/engine.h"
#include "engine/gen_config.h"
#include "engine/media.h"
#include "io/file.h"

typedef struct run_state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    omnic__finish finish;
    int64_t prompt_tokens, completion_tokens;
    char error[OMNIC_ERR_MSG_MAX];
    double t_submit, t_first, t_end;
    int32_t *generated; /* [cap] */
    int64_t n_generated, cap;
    const char *dump; /* directory or NULL */
    const int32_t *prompt;
    size_t n_prompt;
    int64_t n_parts;     /* encoder inputs: the images and their pan-and-scan crops, then the clips */
    int64_t image_parts; /* of which the images' (a clip's features dump as audio_features) */
    size_t n_images;
    int dump_errors;
} run_state;

static void on_event(void *ctx, const omnic__gen_event *ev)
{
    run_state *st = ctx;
    if (ev->kind == OMNIC_EV_TEXT) {
        if (ev->token >= 0) {
            if (st->n_generated == 0) st->t_first = omnic__now();
            if (st->n_generated < st->cap) st->generated[st->n_generated] = ev->token;
            st->n_generated++;
        }
        if (ev->len) {
            fwrite(ev->text, 1, ev->len, stdout);
            fflush(stdout);
        }
        return;
    }
    pthread_mutex_lock(&st->mu);
    st->done = true;
    st->finish = ev->finish;
    st->prompt_tokens = ev->prompt_tokens;
    st->completion_tokens = ev->completion_tokens;
    st->t_end = omnic__now();
    if (ev->error) snprintf(st->error, sizeof st->error, "%s", ev->error);
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

static void dump_tensor(run_state *st, const char *name, const omnic__tensor *t)
{
    char path[4096];
    omnic_err err;
    snprintf(path, sizeof path, "%s/%s.npy", st->dump, name);
    if (omnic__npy_write(path, t, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic run: --dump: %s\n", err.msg);
        st->dump_errors++;
    }
}

static void dump_i32(run_state *st, const char *name, const int32_t *v, int64_t n)
{
    omnic__tensor t;
    omnic_err err;
    omnic__tensor_init(&t, OMNIC_DTYPE_I32, 1, &n, &err);
    t.data = (void *)(uintptr_t)v;
    dump_tensor(st, name, &t);
}

/* name, or name_i when there are several (images, or encoder inputs). */
static void image_name(int64_t count, const char *base, int64_t i, char *out, size_t cap)
{
    if (count > 1)
        snprintf(out, cap, "%s_%lld", base, (long long)i);
    else
        snprintf(out, cap, "%s", base);
}

/* After image i is encoded (scheduler thread): the selected features and projected rows. */
static void on_encode(void *ctx, int64_t i, const omnic__tensor *features, const omnic__tensor *projected,
                      int n_side, const omnic__tensor *const *side, const char *const *names)
{
    run_state *st = ctx;
    char name[96];
    if (features) {
        image_name(st->n_parts, i < st->image_parts ? "vision_features" : "audio_features", i, name,
                   sizeof name); /* one per encoder input */
        dump_tensor(st, name, features);
    }
    image_name(st->n_parts, "projected", i, name, sizeof name);
    dump_tensor(st, name, projected);
    for (int j = 0; j < n_side; j++) { /* e.g. deepstack_k */
        image_name(st->n_parts, names[j], i, name, sizeof name);
        dump_tensor(st, name, side[j]);
    }
}

/* After prefill (scheduler thread): module taps, last-row logits and the slot's KV rows;
 * for image prompts also the merged rows and the effective additive attention bias. */
static void on_prefill(void *ctx, const omnic__prefill_info *info)
{
    run_state *st = ctx;
    const omnic__model *m = info->model;
    const omnic__module *p = info->module;
    const omnic__prepared_prefill *pp = info->prepared;
    int64_t T = pp ? pp->n_rows : (int64_t)st->n_prompt;
    dump_i32(st, "tokens", st->prompt, (int64_t)st->n_prompt);
    if (pp && pp->pos_mode == OMNIC_POS_MROPE) { /* [3, T]: temporal, height, width */
        omnic__tensor t;
        omnic_err err;
        int64_t d[2] = {3, T};
        omnic__tensor_init(&t, OMNIC_DTYPE_I32, 2, d, &err);
        t.data = pp->positions;
        dump_tensor(st, "positions", &t);
    } else {
        int32_t *pos = malloc((size_t)T * sizeof *pos);
        if (pos) {
            for (int64_t i = 0; i < T; i++)
                pos[i] = pp ? pp->positions[i] : (int32_t)i;
            dump_i32(st, "positions", pos, T);
            free(pos);
        }
    }
    if (pp) {
        omnic__tensor t;
        omnic_err err;
        int64_t d[2] = {T, pp->hidden};
        omnic__tensor_init(&t, OMNIC_DTYPE_F32, 2, d, &err);
        t.data = pp->embeds;
        dump_tensor(st, "inputs_embeds", &t);
        float *bias = malloc((size_t)(T * T) * sizeof *bias); /* causal: 0 on and below the diagonal */
        if (bias) {
            for (int64_t i = 0; i < T; i++)
                for (int64_t j = 0; j < T; j++)
                    bias[i * T + j] = pp->bias ? pp->bias[i * T + j] : j <= i ? 0.0f : OMNIC_MASK_NEG;
            d[1] = T;
            omnic__tensor_init(&t, OMNIC_DTYPE_F32, 2, d, &err);
            t.data = bias;
            dump_tensor(st, "attn_bias", &t);
            free(bias);
        }
        if (pp->n_spans) { /* the masks the attention applies, full and sliding layers */
            int32_t *vis = malloc((size_t)(T * T) * sizeof *vis);
            for (int sliding = 0; vis && sliding < 2; sliding++) {
                omnic__text_mask_visible(&m->dec.cfg, sliding, pp->spans, pp->n_spans, T, vis);
                d[0] = d[1] = T;
                omnic__tensor_init(&t, OMNIC_DTYPE_I32, 2, d, &err);
                t.data = vis;
                dump_tensor(st, sliding ? "attn_mask_sliding" : "attn_mask_full", &t);
            }
            free(vis);
        }
    }
    for (int i = 0; i < p->n_out; i++) {
        const omnic__tensor *t = omnic__module_output(p, i);
        dump_tensor(st, strcmp(p->out[i].name, "logits") ? p->out[i].name : "prefill_logits", t);
    }
    for (int l = 0; l < m->kv.n_layers; l++) {
        for (int kv = 0; kv < 2; kv++) {
            omnic__tensor rows = kv ? m->kv.v[l] : m->kv.k[l];
            rows.owns_data = false;
            rows.dims[0] = T;
            size_t row = (size_t)(rows.dims[1] * rows.dims[2]) * omnic_dtype_size(rows.dtype);
            rows.data = (uint8_t *)rows.data + (size_t)info->slot * (size_t)m->kv.capacity * row;
            char name[32];
            snprintf(name, sizeof name, "kv_l%d_%c", l, kv ? 'v' : 'k');
            dump_tensor(st, name, &rows);
        }
    }
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: omnic run -m DIR -p PROMPT [--system S] [--raw] [-n N] [--temp T] [--top-k K] [--top-p P]\n"
        "                 [--min-p M] [--repeat-penalty R] [--presence-penalty P] [--frequency-penalty F]\n"
        "                 [--seed S] [--stop STR]... [--ctx N] [--threads N] [--backend cpu|ref] [--kv "
        "f16|f32]\n"
        "                 [--quant q8_0|q4_0] [--mmap] [--chunk N] [--ignore-eos] [--image FILE]...\n"
        "                 [--audio FILE]... [--max-image-pixels N]\n"
        "                 [--dump DIR] [--generation-config auto|ignore]\n"
        "       omnic run -m DIR --tokens ID,ID,... [options]\n"
        "  Text goes to stdout, timings to stderr. Sampling starts from generation_config.json's\n"
        "  do_sample, temperature, top_k, top_p, min_p, repetition_penalty and max_new_tokens (-n)\n"
        "  where the options do not set them (auto, the default; ignore: greedy, -n 256). The chat\n"
        "  template's prompt gets the special tokens Hugging Face gives it (a processor's BOS for\n"
        "  image models). --raw skips the chat template (the prompt is tokenized as is, with the\n"
        "  tokenizer's special tokens; put the model's image placeholder in it once per --image).\n"
        "  --image (JPEG, PNG, WebP; repeatable) goes before the text of the user message.\n"
        "  --audio (WAV, FLAC, MP3, Ogg; repeatable) likewise, as <|audio_N|> placeholders.\n"
        "  --max-image-pixels N resizes images to at most N pixels where the processor takes a\n"
        "  pixel bound (below the checkpoint's own max_pixels; a warning says when it did).\n"
        "  --tokens feeds the prompt as token ids, used as given (no template, no BOS; with\n"
        "  --image, the model's image placeholder id once per image, as the logical prompt has it).\n"
        "  --dump writes every prefill stage as .npy (tokens, positions, inputs_embeds,\n"
        "  hidden_l*, kv_l*_k/v, prefill_logits, generated; with images also pixel_values,\n"
        "  vision_features, projected, the encoder's side outputs (deepstack_k), attn_bias; _i suffixes\n"
        "  for several images).\n"
        "  --mmap reads unquantized text weights in place from the file mapping (quicker to load);\n"
        "  by default they are copied onto huge pages at load, which decodes faster.\n");
}

/* --tokens "1,2,3" -> owned *out (omnic_free) of *n ids, used as given (no template, no BOS).
 * Each id a decimal integer in [0, INT32_MAX]; the engine checks them against the vocabulary. */
static int parse_tokens(const char *v, int32_t **out, size_t *n)
{
    size_t cap = 1;
    for (const char *c = v; *c; c++)
        cap += *c == ',';
    int32_t *ids = omnic_alloc_array(cap, sizeof *ids);
    if (!ids) {
        fprintf(stderr, "omnic run: --tokens: out of memory for %zu ids\n", cap);
        return -1;
    }
    size_t k = 0;
    for (const char *c = v;; c++) {
        char *end;
        errno = 0;
        long long x = *c >= '0' && *c <= '9' ? strtoll(c, &end, 10) : -1;
        if (x < 0 || errno || x > INT32_MAX || (*end && *end != ',')) {
            fprintf(stderr, "omnic run: --tokens: id %zu is not an integer in [0, %d] (in '%s')\n", k,
                    INT32_MAX, v);
            omnic_free(ids);
            return -1;
        }
        ids[k++] = (int32_t)x;
        c = end;
        if (!*c) break;
    }
    *out = ids;
    *n = k;
    return 0;
}

static int parse_float(const char *opt, const char *v, double lo, double hi, float *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "omnic run: %s needs a number in [%g, %g], got '%s'\n", opt, lo, hi, v);
        return -1;
    }
    *out = (float)x;
    return 0;
}

int omnic__cli_run(int argc, char **argv)
{
    omnic__engine_opts eo = {.model = {.kv_dtype = OMNIC_DTYPE_F16, .slots = 1}, .prefix_cache_bytes = -1};
    omnic__sampling_params sp = omnic__sampling_defaults();
    const char *dir = NULL, *prompt = NULL, *system = NULL, *dump = NULL, *token_list = NULL;
    const char *stops[OMNIC_MAX_STOPS], *images[OMNIC_MAX_REQUEST_IMAGES];
    size_t n_stops = 0, n_images = 0, n_audio = 0;
    const char *audios[OMNIC_MAX_REQUEST_IMAGES];
    int64_t n_predict = 256, max_image_pixels = 0;
    bool raw = false, ignore_eos = false;
    unsigned given = 0; /* OMNIC_GEN_* values the options set (generation_config.json fills the rest) */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int64_t x;
        int r;
        struct {
            const char *name;
            float *dst;
            double lo, hi;
            unsigned bit;
        } fopts[] = {{"--temp", &sp.temperature, 0, 100, OMNIC_GEN_TEMPERATURE},
                     {"--top-p", &sp.top_p, 1e-9, 1, OMNIC_GEN_TOP_P},
                     {"--min-p", &sp.min_p, 0, 1, OMNIC_GEN_MIN_P},
                     {"--repeat-penalty", &sp.repetition_penalty, 1e-6, 100, OMNIC_GEN_REPETITION_PENALTY},
                     {"--presence-penalty", &sp.presence_penalty, -2, 2, 0},
                     {"--frequency-penalty", &sp.frequency_penalty, -2, 2, 0}};
        bool matched = false;
        for (size_t k = 0; k < sizeof fopts / sizeof fopts[0] && !matched; k++) {
            if ((r = omnic__arg_str(argc, argv, &i, NULL, fopts[k].name, &v)) == 0) continue;
            if (r < 0 || parse_float(fopts[k].name, v, fopts[k].lo, fopts[k].hi, fopts[k].dst) < 0) return 2;
            given |= fopts[k].bit;
            matched = true;
        }
        if (matched) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--raw")) {
            raw = true;
            continue;
        }
        if (!strcmp(a, "--ignore-eos")) {
            ignore_eos = true;
            continue;
        }
        if (!strcmp(a, "--mmap")) {
            eo.model.mmap_weights = true;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, "-m", "--model", &dir)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, "-p", "--prompt", &prompt)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--tokens", &token_list)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--system", &system)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--dump", &dump)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--backend", &eo.model.backend)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--quant", &eo.model.quant)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--audio", &v)) != 0) {
            if (r < 0) return 2;
            if (n_audio == OMNIC_MAX_REQUEST_IMAGES) {
                fprintf(stderr, "omnic run: at most %d --audio files\n", OMNIC_MAX_REQUEST_IMAGES);
                return 2;
            }
            audios[n_audio++] = v;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--image", &v)) != 0) {
            if (r < 0) return 2;
            if (n_images == OMNIC_MAX_REQUEST_IMAGES) {
                fprintf(stderr, "omnic run: at most %d --image files\n", OMNIC_MAX_REQUEST_IMAGES);
                return 2;
            }
            images[n_images++] = v;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--stop", &v)) != 0) {
            if (r < 0) return 2;
            if (n_stops == OMNIC_MAX_STOPS) {
                fprintf(stderr, "omnic run: at most %d --stop strings\n", OMNIC_MAX_STOPS);
                return 2;
            }
            stops[n_stops++] = v;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--generation-config", &v)) != 0) {
            if (r < 0 || !omnic__gen_config_mode_parse(v, &eo.generation_config)) {
                fprintf(stderr, "omnic run: --generation-config must be auto or ignore\n");
                return 2;
            }
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--kv", &v)) != 0) {
            if (r < 0 || (strcmp(v, "f16") && strcmp(v, "f32"))) {
                fprintf(stderr, "omnic run: --kv must be f16 or f32\n");
                return 2;
            }
            eo.model.kv_dtype = strcmp(v, "f32") ? OMNIC_DTYPE_F16 : OMNIC_DTYPE_F32;
            continue;
        }
        struct {
            const char *s, *l;
            int64_t lo, hi;
            int64_t *dst;
        } iopts[] = {{"-n", "--n-predict", 1, INT32_MAX, &n_predict},
                     {"-c", "--ctx", 1, INT32_MAX, &eo.model.ctx},
                     {NULL, "--chunk", 1, INT32_MAX, &eo.model.chunk},
                     {NULL, "--max-image-pixels", 1, OMNIC_MAX_IMAGE_PIXELS, &max_image_pixels}};
        for (size_t k = 0; k < sizeof iopts / sizeof iopts[0] && !matched; k++) {
            if ((r = omnic__arg_i64(argc, argv, &i, iopts[k].s, iopts[k].l, iopts[k].lo, iopts[k].hi,
                                    iopts[k].dst)) == 0)
                continue;
            if (r < 0) return 2;
            if (iopts[k].dst == &n_predict) given |= OMNIC_GEN_MAX_TOKENS;
            matched = true;
        }
        if (matched) continue;
        if ((r = omnic__arg_i64(argc, argv, &i, "-t", "--threads", 1, 256, &x)) != 0) {
            if (r < 0) return 2;
            eo.model.threads = (int)x;
            continue;
        }
        if ((r = omnic__arg_i64(argc, argv, &i, NULL, "--top-k", 0, INT32_MAX, &x)) != 0) {
            if (r < 0) return 2;
            sp.top_k = (int32_t)x;
            given |= OMNIC_GEN_TOP_K;
            continue;
        }
        if ((r = omnic__arg_i64(argc, argv, &i, "-s", "--seed", 0, INT64_MAX, &x)) != 0) {
            if (r < 0) return 2;
            sp.seed = (uint64_t)x;
            continue;
        }
        fprintf(stderr, "omnic run: unknown option '%s'\n", a);
        usage(stderr);
        return 2;
    }
    if (!dir || !prompt == !token_list) {
        fprintf(stderr, "omnic run: -m DIR and one of -p PROMPT or --tokens IDS are required\n");
        usage(stderr);
        return 2;
    }
    if (token_list && (raw || system)) {
        fprintf(stderr, "omnic run: --tokens takes the ids as given: drop %s\n", raw ? "--raw" : "--system");
        return 2;
    }
    if (dump) {
        if (mkdir(dump, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "omnic run: --dump %s: %s\n", dump, strerror(errno));
            return 1;
        }
        eo.model.taps = true;
    }
    omnic_err err;
    omnic_err_clear(&err);
    omnic__engine *e = NULL;
    double t_load = omnic__now();
    if (omnic__engine_create(dir, &eo, &e, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic run: %s: %s\n", dir, err.msg);
        return 1;
    }
    t_load = omnic__now() - t_load;
    omnic__gen_defaults_apply(omnic__engine_gen_defaults(e), given, &sp, &n_predict);
    const omnic__model *m = omnic__engine_model(e);
    int rc = 1;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    char *text = NULL;
    char *audio_prompt = NULL; /* the message with its media placeholders before its text */
    omnic__media_item items[OMNIC_MAX_REQUEST_IMAGES] = {0};
    const omnic__media_item *item_ptrs[OMNIC_MAX_REQUEST_IMAGES];
    if (n_images) { /* decode + the checkpoint's processor */
        omnic__media_proc prep;
        if (omnic__media_proc_init(&prep, m, OMNIC_MODALITY_IMAGE, max_image_pixels, &err) != OMNIC_OK) {
            fprintf(stderr, "omnic run: --image: %s\n", err.msg);
            goto out;
        }
        for (size_t k = 0; k < n_images; k++) {
            char *bytes = NULL;
            size_t len = 0;
            item_ptrs[k] = &items[k];
            if (omnic__read_file(images[k], OMNIC_MAX_MEDIA_BYTES, &bytes, &len, &err) != OMNIC_OK ||
                omnic__media_prepare(&prep, (const uint8_t *)bytes, len, NULL, NULL, &items[k], &err) !=
                    OMNIC_OK) {
                fprintf(stderr, "omnic run: --image %s: %s\n", images[k], err.msg);
                omnic_free(bytes);
                omnic__media_proc_deinit(&prep);
                goto out;
            }
            omnic_free(bytes);
            if (items[k].limited && max_image_pixels > 0)
                fprintf(stderr,
                        "omnic run: warning: --image %s resized from %lldx%lld to %lldx%lld by "
                        "--max-image-pixels %lld\n",
                        images[k], (long long)items[k].in_w, (long long)items[k].in_h,
                        (long long)items[k].out_w, (long long)items[k].out_h, (long long)max_image_pixels);
            else if (items[k].limited)
                fprintf(stderr,
                        "omnic run: warning: --image %s resized from %lldx%lld to %lldx%lld to fit the "
                        "encoder's capacity "
                        "of %lld pixels, below the checkpoint's max_pixels\n",
                        images[k], (long long)items[k].in_w, (long long)items[k].in_h,
                        (long long)items[k].out_w, (long long)items[k].out_h,
                        (long long)omnic__media_proc_max_pixels(&prep, false));
        }
        omnic__media_proc_deinit(&prep);
    }
    if (n_audio) { /* decode + resample + the checkpoint's feature extractor */
        omnic__media_proc prep;
        if (omnic__media_proc_init(&prep, m, OMNIC_MODALITY_AUDIO, 0, &err) != OMNIC_OK) {
            fprintf(stderr, "omnic run: --audio: %s\n", err.msg);
            goto out;
        }
        for (size_t k = 0; k < n_audio; k++) { /* the clips after the images */
            char *bytes = NULL;
            size_t len = 0;
            omnic__media_item *it = &items[n_images + k];
            item_ptrs[n_images + k] = it;
            if (omnic__read_file(audios[k], OMNIC_MAX_MEDIA_BYTES, &bytes, &len, &err) != OMNIC_OK ||
                omnic__media_prepare(&prep, (const uint8_t *)bytes, len, NULL, NULL, it, &err) != OMNIC_OK) {
                fprintf(stderr, "omnic run: --audio %s: %s\n", audios[k], err.msg);
                omnic_free(bytes);
                omnic__media_proc_deinit(&prep);
                goto out;
            }
            omnic_free(bytes);
            if (it->in_w != it->out_w)
                fprintf(stderr, "omnic run: --audio %s resampled from %lld Hz to %lld Hz\n", audios[k],
                        (long long)it->in_w, (long long)it->out_w);
            if (it->limited)
                fprintf(stderr,
                        "omnic run: --audio %s truncated to its first %.0f s (the feature extractor keeps no "
                        "more)\n",
                        audios[k], (double)it->out_h / (double)it->out_w);
        }
        omnic__media_proc_deinit(&prep);
    }
    /* chat prompts of a model whose processor reads media placeholders in the text (models/media.h
     * prompt_tag: Phi4MultimodalProcessor's <|image_N|>, <|audio_N|>): images, then clips, before it */
    const char *image_tag = omnic__media_prompt_tag(m, OMNIC_MODALITY_IMAGE);
    const char *audio_tag = omnic__media_prompt_tag(m, OMNIC_MODALITY_AUDIO);
    size_t template_images = n_images;
    if (!token_list && !raw && ((n_images && image_tag) || (n_audio && audio_tag))) {
        size_t n = strlen(prompt) + 24 * (n_images + n_audio) + 1, w = 0;
        audio_prompt = omnic_alloc_array(n, 1);
        if (!audio_prompt) goto out;
        for (size_t k = 0; image_tag && k < n_images; k++)
            w += (size_t)snprintf(audio_prompt + w, n - w, image_tag, k + 1);
        for (size_t k = 0; audio_tag && k < n_audio; k++)
            w += (size_t)snprintf(audio_prompt + w, n - w, audio_tag, k + 1);
        snprintf(audio_prompt + w, n - w, "%s", prompt);
        prompt = audio_prompt;
        if (image_tag) template_images = 0;
    }
    const size_t n_items = n_images + n_audio;
    int64_t crops[OMNIC_MAX_REQUEST_IMAGES] = {0}; /* Gemma 3 pan-and-scan: the prompt names them */
    bool any_crops = false;
    for (size_t k = 0; k < n_images && k < OMNIC_MAX_REQUEST_IMAGES; k++)
        any_crops |= (crops[k] = items[k].crops) > 0;
    if (token_list) {
        if (parse_tokens(token_list, &ids, &n_ids) < 0) {
            rc = 2;
            goto out;
        }
    } else if (raw) {
        if (system) {
            fprintf(stderr, "omnic run: --system needs the chat template (drop --raw)\n");
            rc = 2;
            goto out;
        }
        size_t plen = 0; /* the processor's rewrite (Gemma 3's image sequences), as HF's processor(text=) */
        if (omnic__media_expand_prompt(m, omnic__engine_tokenizer(e), prompt, strlen(prompt),
                                       any_crops ? crops : NULL, any_crops ? n_images : 0, &text, &plen,
                                       &err) != OMNIC_OK ||
            omnic__tokenizer_encode(omnic__engine_tokenizer(e), text ? text : prompt,
                                    text ? plen : strlen(prompt), true, &ids, &n_ids, &err) != OMNIC_OK) {
            fprintf(stderr, "omnic run: prompt: %s\n", err.msg);
            goto out;
        }
    } else if (omnic__chat_prompt_images(m->ckpt, m, omnic__engine_tokenizer(e), system, prompt,
                                         template_images, audio_tag ? 0 : n_audio, any_crops ? crops : NULL,
                                         (omnic__model_supports_image(m) && !image_tag) ||
                                             (n_audio && !audio_tag),
                                         &text, &ids, &n_ids, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic run: %s\n", err.msg);
        goto out;
    }
    int64_t expanded = (int64_t)n_ids, rows = 0;
    for (size_t k = 0; k < n_items; k++)
        expanded += omnic__media_item_rows(m, &items[k], &rows, &err) == OMNIC_OK
                        ? omnic__media_item_parts(&items[k]) * (rows - 1)
                        : 0;
    if ((omnic__engine_gen_defaults(e)->set & ~given & OMNIC_GEN_MAX_TOKENS) && expanded < m->capacity &&
        n_predict > m->capacity - expanded)
        n_predict =
            m->capacity - expanded; /* generation_config.json's max_new_tokens: at most what fits (vLLM) */
    if (dump && expanded > m->chunk) {
        fprintf(stderr, "omnic run: --dump needs the prompt in one prefill chunk: %lld rows > --chunk %lld\n",
                (long long)expanded, (long long)m->chunk);
        rc = 2;
        goto out;
    }
    run_state st = {.dump = dump, .prompt = ids, .n_prompt = n_ids, .n_images = n_items, .cap = n_predict};
    for (size_t k = 0; k < n_items; k++)
        st.n_parts += omnic__media_item_parts(&items[k]);
    for (size_t k = 0; k < n_images; k++)
        st.image_parts += omnic__media_item_parts(&items[k]);
    for (size_t k = 0; dump && k < n_items; k++) { /* the encoder's input: pixel_values / input_features */
        char name[48];
        image_name((int64_t)n_items,
                   items[k].modality == OMNIC_MODALITY_AUDIO ? "input_features" : "pixel_values", (int64_t)k,
                   name, sizeof name);
        dump_tensor(&st, name, items[k].input);
    }
    if (dump && n_images && items[0].has_grid) { /* [n_images, 3] (t, h, w) */
        int32_t thw[3 * OMNIC_MAX_REQUEST_IMAGES];
        for (size_t k = 0; k < 3 * n_images; k++)
            thw[k] = (int32_t)items[k / 3].grid[k % 3];
        omnic__tensor t;
        int64_t d[2] = {(int64_t)n_images, 3};
        omnic__tensor_init(&t, OMNIC_DTYPE_I32, 2, d, &err);
        t.data = thw;
        dump_tensor(&st, "image_grid_thw", &t);
    }
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);
    st.generated = malloc((size_t)n_predict * sizeof *st.generated);
    if (!st.generated) {
        fprintf(stderr, "omnic run: out of memory for %lld tokens\n", (long long)n_predict);
        goto out;
    }
    omnic__gen_request r = {.prompt = ids,
                            .n_prompt = n_ids,
                            .sampling = sp,
                            .max_tokens = n_predict,
                            .stops = stops,
                            .n_stops = n_stops,
                            .skip_special = true,
                            .ignore_eos = ignore_eos,
                            .cb = on_event,
                            .cb_ctx = &st,
                            .on_prefill = dump ? on_prefill : NULL,
                            .on_encode = dump ? on_encode : NULL,
                            .media = item_ptrs,
                            .n_media = n_items};
    uint64_t id;
    st.t_submit = omnic__now();
    if (omnic__engine_submit(e, &r, &id, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic run: %s\n", err.msg);
        free(st.generated);
        goto out;
    }
    pthread_mutex_lock(&st.mu);
    while (!st.done)
        pthread_cond_wait(&st.cv, &st.mu);
    pthread_mutex_unlock(&st.mu);
    printf("\n");
    if (dump) dump_i32(&st, "generated", st.generated, st.n_generated < st.cap ? st.n_generated : st.cap);
    double pp = st.t_first > st.t_submit ? (double)st.prompt_tokens / (st.t_first - st.t_submit) : 0;
    double tg = st.n_generated > 1 && st.t_end > st.t_first
                    ? (double)(st.n_generated - 1) / (st.t_end - st.t_first)
                    : 0;
    fprintf(
        stderr,
        "omnic run: load %.2f s; prompt %lld tokens, %.2f tok/s; time to first token %.3f s; generated %lld "
        "tokens, %.2f tok/s; finish %s\n",
        t_load, (long long)st.prompt_tokens, pp, st.t_first > st.t_submit ? st.t_first - st.t_submit : 0.0,
        (long long)st.completion_tokens, tg, omnic__finish_name(st.finish));
    if (st.finish == OMNIC_FINISH_ERROR) fprintf(stderr, "omnic run: %s\n", st.error);
    rc = st.finish == OMNIC_FINISH_ERROR || st.dump_errors ? 1 : 0;
    free(st.generated);
out:
    for (size_t k = 0; k < n_images + n_audio; k++)
        omnic__media_item_deinit(&items[k]);
    omnic_free(audio_prompt);
    omnic_free(ids);
    omnic_free(text);
    omnic__engine_destroy(e);
    return rc;
}
