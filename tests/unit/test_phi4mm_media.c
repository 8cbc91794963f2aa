/* Phi-4-multimodal's audio and image tables (models/phi4mm_media.c, phi4mm_image.c) through a whole
 * checkpoint (tools/mktiny.py --family phi4mm, f32, seed 0) against the real Hugging Face code
 * (tests/golden/phi4mm_audio/model, tools/hf_golden/make_phi4mm_audio_goldens.py): a WAV clip
 * decoded and turned into features by omnic equals HF's Phi4MultimodalFeatureExtractor output, and
 * its speech / vision-speech rows (audio.encode) equal the checkpoint's
 * Phi4MultimodalAudioEmbedding in both modes. Then the merge (placeholders expanded, the speech
 * adapter asked for), the <|audio_N|> / <|image_N|> prompt rewrite, the capability predicate (audio
 * is served with the speech LoRA adapter, images with the vision one, each refused by name without
 * it), the HD crop grid and row counts of images, adapter folders that do not load, and refused
 * clips. (The image path's numerics are the HF goldens' phi4mm-*-1img / 2img / image_audio.) */
#include <string.h>

#include "model_testutil.h"

#include "core/npy.h"
#include "engine/media.h"
#include "engine/modality.h"
#include "io/checkpoint.h"
#include "io/json.h"
#include "models/family.h"
#include "models/lora.h"
#include "models/model.h"
#include "models/phi4mm_audio.h"
#include "models/phi4mm_vision.h"
#include "tokenizer/tokenizer.h"

#define GOLDEN "tests/golden/phi4mm_audio/model"

static char tmp[256];
static omnic__model *g_m;

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/omnic-p4mm-XXXXXX");
    if (!mkdtemp(tmp)) return -1;
    sh(PY " tools/mktiny.py --family phi4mm --dtype f32 --seed 0 --out %s/m >/dev/null", tmp);
    sh(PY " tools/mktiny.py --family phi4mm --dtype f32 --seed 0 --no-adapters --out %s/m0 >/dev/null", tmp);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/m", tmp);
    omnic__model_opts o = {.backend = "cpu", .threads = 2, .slots = 1};
    omnic_err err;
    if (omnic__model_open(dir, &o, &g_m, &err) != OMNIC_OK) {
        fprintf(stderr, "open %s: %s\n", dir, err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    omnic__model_close(g_m);
    return mt_rmdir(tmp);
}

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void compare(const char *stage, const float *got, int64_t rows, int64_t cols, const char *file)
{
    omnic__tensor *want = NULL;
    omnic_err err;
    if (omnic__npy_read(file, &want, &err) != OMNIC_OK) fail_msg("%s: %s", file, err.msg);
    assert_int_equal(want->dims[0], rows);
    assert_int_equal(want->dims[1], cols);
    double r = max_rel(got, want->data, rows * cols);
    print_message("%-13s [%lld, %lld]: max difference %.3g of the largest value\n", stage, (long long)rows,
                  (long long)cols, r);
    if (!(r <= 1e-4))
        fail_msg("%s differs from Hugging Face by %.3g (relative to its largest value)", stage, r);
    omnic__tensor_destroy(want);
}

static void test_against_hf(void **state)
{
    (void)state;
    omnic_err err;
    omnic__media_proc p;
    if (omnic__media_proc_init(&p, g_m, OMNIC_MODALITY_AUDIO, 0, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    size_t len;
    uint8_t *wav = read_all(GOLDEN "/clip.wav", &len);
    omnic__media_item it;
    if (omnic__media_prepare(&p, wav, len, NULL, NULL, &it, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    free(wav);
    assert_int_equal(it.modality, OMNIC_MODALITY_AUDIO);
    assert_int_equal(it.valid, 228); /* (36800 - 400) / 160 + 1 */
    assert_int_equal(it.rows, 29);   /* ceil(228 / 8) */
    assert_true(it.has_key);
    compare("features", it.input->data, 228, 80, GOLDEN "/features.npy");
    int64_t rows;
    assert_int_equal(omnic__media_item_rows(g_m, &it, &rows, &err), OMNIC_OK);
    assert_int_equal(rows, 29);
    const omnic__tensor *proj = NULL, *feat = NULL;
    if (omnic__media_encode(g_m, &it, &proj, &feat, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    const int64_t H = g_m->dec.cfg.hidden;
    assert_true(proj->dims[0] >= 29 && proj->dims[1] == H);
    compare("speech", proj->data, 29, H, GOLDEN "/speech.npy");
    const omnic__model_media *md = &g_m->media[OMNIC_MODALITY_AUDIO];
    assert_int_equal(md->n_side, 1);
    omnic__module *mod;
    int pi, fi;
    assert_int_equal(omnic__media_encode_start(g_m, &it, &mod, &pi, &fi, &err), OMNIC_OK);
    bool done = false;
    assert_int_equal(omnic__module_run(mod, 0, NULL, &done, &err), OMNIC_OK);
    assert_true(done);
    compare("vision_speech", omnic__module_output(mod, md->side_out[0])->data, 29, H, GOLDEN "/vision.npy");

    /* merge: text, the clip, text -> 4 + 29 rows, positions 0.., the clip's speech rows, the
     * speech adapter asked for; projected holds its speech rows then its vision-speech rows */
    const int32_t pad = md->placeholder_id;
    const int32_t logical[6] = {3, 7, pad, 11, 12, 13};
    float *projected = malloc(sizeof(float) * (size_t)(2 * 29 * H));
    memcpy(projected, proj->data, sizeof(float) * (size_t)(29 * H));
    memcpy(projected + 29 * H, omnic__module_output(mod, md->side_out[0])->data,
           sizeof(float) * (size_t)(29 * H));
    const omnic__media_item *items[1] = {&it};
    omnic__prepared_prefill pp;
    assert_int_equal(omnic__media_merge(g_m, logical, 6, items, 1, projected, &pp, &err), OMNIC_OK);
    assert_int_equal(pp.n_rows, 5 + 29);
    assert_int_equal(pp.adapter, OMNIC_ADAPTER_SPEECH);
    assert_int_equal(pp.pos_mode, OMNIC_POS_1D);
    assert_int_equal(pp.positions[33], 33);
    assert_memory_equal(pp.embeds + 2 * H, projected, sizeof(float) * (size_t)(29 * H));
    float row[64];
    assert_true(H <= 64);
    assert_int_equal(omnic__model_embed_tokens(g_m, &logical[3], 1, row, &err), OMNIC_OK);
    assert_memory_equal(pp.embeds + 31 * H, row, sizeof(float) * (size_t)H);
    omnic__prepared_prefill_deinit(&pp);
    /* a clip without its placeholder, and the other way round */
    const int32_t no_pad[3] = {3, 7, 11};
    assert_int_equal(omnic__media_merge(g_m, no_pad, 3, items, 1, projected, &pp, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "0 audio placeholders but 1 clips"));
    free(projected);
    omnic__media_item_deinit(&it);
    omnic__media_proc_deinit(&p);
}

static void test_prompt_and_capability(void **state)
{
    (void)state;
    omnic_err err;
    /* <|audio_N|> (Phi4MultimodalProcessor's placeholders) -> the one placeholder token */
    char path[300];
    snprintf(path, sizeof path, "%s/m/tokenizer.json", tmp);
    omnic__tokenizer *tok = NULL;
    assert_int_equal(omnic__tokenizer_load(path, &tok, &err), OMNIC_OK);
    const char *text = "<|user|><|audio_1|>Transcribe.<|audio_12|> <|audio_x|><|end|>";
    char *out = NULL;
    size_t n = 0;
    assert_int_equal(omnic__media_expand_prompt(g_m, tok, text, strlen(text), NULL, 0, &out, &n, &err),
                     OMNIC_OK);
    assert_non_null(out);
    assert_string_equal(out, "<|user|><|endoftext11|>Transcribe.<|endoftext11|> <|audio_x|><|end|>");
    omnic_free(out);
    text = "<|user|><|image_1|><|audio_1|>Say.<|image_2|<|image_|><|end|>"; /* images too; broken tags stay */
    assert_int_equal(omnic__media_expand_prompt(g_m, tok, text, strlen(text), NULL, 0, &out, &n, &err),
                     OMNIC_OK);
    assert_string_equal(out, "<|user|><|endoftext10|><|endoftext11|>Say.<|image_2|<|image_|><|end|>");
    omnic_free(out);
    omnic__tokenizer_free(tok);
    /* served with the speech adapter; without speech-lora/ the encoder runs but prompts are refused */
    assert_true(omnic__model_accepts(g_m, OMNIC_MODALITY_AUDIO));
    assert_true(omnic__model_accepts(g_m, OMNIC_MODALITY_IMAGE));
    assert_true(omnic__model_accepts(g_m, OMNIC_MODALITY_TEXT));
    assert_null(omnic__model_refusal(g_m, OMNIC_MODALITY_AUDIO));
    assert_int_equal(g_m->adapter_of[OMNIC_ADAPTER_SPEECH], 0);
    assert_int_equal(g_m->adapter_of[OMNIC_ADAPTER_VISION], 1);
    assert_int_equal(g_m->adapter_of[OMNIC_ADAPTER_NONE], -1);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/m0", tmp);
    omnic__model_opts o = {.backend = "cpu", .threads = 1, .slots = 1};
    omnic__model *m0 = NULL;
    assert_int_equal(omnic__model_open(dir, &o, &m0, &err), OMNIC_OK);
    assert_false(omnic__model_accepts(m0, OMNIC_MODALITY_AUDIO));
    const char *why = omnic__model_refusal(m0, OMNIC_MODALITY_AUDIO);
    assert_non_null(why);
    assert_non_null(strstr(why, "speech LoRA adapter"));
    assert_false(omnic__model_accepts(m0, OMNIC_MODALITY_IMAGE));
    why = omnic__model_refusal(m0, OMNIC_MODALITY_IMAGE);
    assert_non_null(why);
    assert_non_null(strstr(why, "vision LoRA adapter"));
    assert_null(m0->dec.lora);
    omnic__model_close(m0);
    /* --quant quantizes the adapters like the base (each stack; the identity says so) */
    snprintf(dir, sizeof dir, "%s/m", tmp);
    omnic__model_opts oq = {.backend = "cpu", .threads = 1, .slots = 1, .quant = "q8_0"};
    omnic__model *mq = NULL;
    assert_int_equal(omnic__model_open(dir, &oq, &mq, &err), OMNIC_OK);
    assert_true(mq->dec.lora->layers[0].a_qkv->dtype == OMNIC_DTYPE_Q8_0); /* rank 8: not whole x16 groups */
    assert_true(mq->dec.lora->layers[0].a_down->dtype == OMNIC_DTYPE_Q8_0);
    assert_int_equal(mq->dec.lora->layers[0].b_up->dtype,
                     OMNIC_DTYPE_F32); /* rows of rank 8: not whole blocks */
    assert_memory_not_equal(mq->identity, g_m->identity, sizeof mq->identity);
    omnic__model_close(mq);
}

/* A WAV of n 16-bit samples at rate (silence). */
static uint8_t *wav_of(int64_t n, int rate, size_t *len)
{
    *len = 44 + (size_t)n * 2;
    uint8_t *b = calloc(1, *len);
    uint32_t v;
    memcpy(b, "RIFF", 4);
    v = (uint32_t)(*len - 8);
    memcpy(b + 4, &v, 4);
    memcpy(b + 8, "WAVEfmt ", 8);
    v = 16;
    memcpy(b + 16, &v, 4);
    uint16_t fmt = 1, ch = 1, bits = 16, align = 2;
    memcpy(b + 20, &fmt, 2);
    memcpy(b + 22, &ch, 2);
    v = (uint32_t)rate;
    memcpy(b + 24, &v, 4);
    v = (uint32_t)rate * 2;
    memcpy(b + 28, &v, 4);
    memcpy(b + 32, &align, 2);
    memcpy(b + 34, &bits, 2);
    memcpy(b + 36, "data", 4);
    v = (uint32_t)(n * 2);
    memcpy(b + 40, &v, 4);
    return b;
}

/* Adapter folders that do not load: each a load error naming the file and the problem. */
static void test_bad_adapters(void **state)
{
    (void)state;
    static const struct {
        const char *edit, *msg;
    } cases[] = {
        /* the rank config.json declares differs from the tensors' */
        {"sed -i 's/\"r\": 8/\"r\": 4/' %s/b/speech-lora/adapter_config.json", "do not fit r 4"},
        /* lora_alpha / r not a power of 2 */
        {"sed -i 's/\"lora_alpha\": 16/\"lora_alpha\": 12/' %s/b/speech-lora/adapter_config.json",
         "is not a power of 2"},
        /* a setting that changes the numbers */
        {"sed -i 's/\"use_dora\": false/\"use_dora\": true/' %s/b/vision-lora/adapter_config.json",
         "use_dora"},
        /* the last tensor of the file dropped: one half of a pair missing */
        {PY " -c \"import json,struct,sys;p=sys.argv[1];b=open(p,'rb').read();n=struct.unpack('<Q',b[:8])[0];"
            "h=json.loads(b[8:8+n]);k=max((k for k in h if k!='__metadata__'),key=lambda "
            "k:h[k]['data_offsets'][1]);"
            "e=h.pop(k)['data_offsets'][0];j=json.dumps(h).encode();j+=b' '*(-len(j)%%8);"
            "open(p,'wb').write(struct.pack('<Q',len(j))+j+b[8+n:8+n+e])\" "
            "%s/b/speech-lora/adapter_model.safetensors",
         "half"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sh("rm -rf %s/b && cp -r %s/m %s/b", tmp, tmp, tmp);
        sh(cases[i].edit, tmp);
        char dir[300];
        snprintf(dir, sizeof dir, "%s/b", tmp);
        omnic__model_opts o = {.backend = "cpu", .threads = 1, .slots = 1};
        omnic__model *m = NULL;
        omnic_err err;
        omnic_status rc = omnic__model_open(dir, &o, &m, &err);
        if (rc == OMNIC_OK || !strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: want \"%s\", got %s \"%s\"", i, cases[i].msg, omnic_status_name(rc), err.msg);
        assert_null(m);
    }
}

static void test_refused_clips(void **state)
{
    (void)state;
    omnic_err err;
    omnic__media_proc p;
    assert_int_equal(omnic__media_proc_init(&p, g_m, OMNIC_MODALITY_AUDIO, 0, &err), OMNIC_OK);
    omnic__media_item it;
    size_t len;
    uint8_t *b = wav_of(160, 16000, &len); /* 10 ms: shorter than one 25 ms frame */
    assert_int_equal(omnic__media_prepare(&p, b, len, NULL, NULL, &it, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "shorter than one 400-sample frame"));
    assert_null(it.input);
    free(b);
    b = wav_of(31 * 16000, 16000, &len); /* over the 30 s clip limit */
    assert_int_equal(omnic__media_prepare(&p, b, len, NULL, NULL, &it, &err), OMNIC_E_TOO_LARGE);
    assert_non_null(strstr(err.msg, "lasts 31.000 s"));
    free(b);
    b = wav_of(8000, 8000, &len); /* 1 s at 8 kHz: resampled to 16 kHz, 98 frames */
    assert_int_equal(omnic__media_prepare(&p, b, len, NULL, NULL, &it, &err), OMNIC_OK);
    assert_int_equal(it.valid, 98);
    assert_int_equal(it.in_w, 8000);
    assert_int_equal(it.out_w, 16000);
    omnic__media_item_deinit(&it);
    free(b);
    static const uint8_t png[] = "\x89PNG\r\n\x1a\n....";
    assert_int_equal(omnic__media_prepare(&p, png, sizeof png, NULL, NULL, &it, &err), OMNIC_E_UNSUPPORTED);
    omnic__media_proc_deinit(&p);
}

/* Phi4MultimodalImageProcessorFast's crop grid and row counts (image_processing_phi4_multimodal_fast.py;
 * reference notes C2.1): a W x H image -> 1 + tiles crops and the rows its placeholder expands to. */
static void test_image_crops(void **state)
{
    (void)state;
    static const struct {
        int64_t w, h, crops, rows, gj, gi, nw, nh;
    } cases[] = {
        {448, 448, 2, 545, 1, 1, 448, 448},        /* the notes' example: 256 + 16 + 1 + 16 * 17 */
        {640, 480, 5, 1065, 2, 2, 896, 672},       /* 2 x 2, 224 px padding: 16 patch rows masked */
        {30, 20, 2, 460, 1, 1, 448, 298},          /* upscaled, 150 px padding: 10 patch rows masked */
        {40, 30, 2, 477, 1, 1, 448, 336},          /* 30 * (448 / 40) rounds to 336.0 in double */
        {4480, 448, 11, 2849, 1, 10, 4480, 448},   /* 10 x 1, no padding */
        {3000, 3000, 37, 9585, 6, 6, 2688, 2688},  /* 7 x 7 > 36: the closest ratio (6, 6) by area */
        {5000, 1200, 37, 9344, 3, 12, 5376, 1290}, /* 12 x 3 = 36: 54 px padding, 3 patch rows */
        {1000, 300, 4, 1008, 1, 3, 1344, 403},
        {20000, 500, 37, 8928, 1, 36, 16128, 403}, /* 45 x 2 > 36: the ratio 40 -> (36, 1) */
    }; /* (the counts of the real processor, transformers 4.57.6, on these sizes) */
    omnic_err err;
    omnic__media_proc p;
    assert_int_equal(omnic__media_proc_init(&p, g_m, OMNIC_MODALITY_IMAGE, 0, &err), OMNIC_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        omnic__image img;
        assert_int_equal(omnic__image_alloc(&img, cases[i].w, cases[i].h, &err), OMNIC_OK);
        memset(img.data, 90, (size_t)(cases[i].w * cases[i].h * 3));
        omnic__decoded_media d = {.image = &img};
        omnic__media_item it;
        if (omnic__media_preprocess(&p, &d, &it, &err) != OMNIC_OK)
            fail_msg("%lldx%lld: %s", (long long)cases[i].w, (long long)cases[i].h, err.msg);
        assert_int_equal(it.input->dims[0], cases[i].crops);
        assert_int_equal(it.rows, cases[i].rows);
        assert_int_equal(it.grid[1], cases[i].gj);
        assert_int_equal(it.grid[2], cases[i].gi);
        assert_int_equal(it.out_w, cases[i].nw);
        assert_int_equal(it.out_h, cases[i].nh);
        int64_t rows = 0;
        assert_int_equal(omnic__media_item_rows(g_m, &it, &rows, &err), OMNIC_OK);
        assert_int_equal(rows, cases[i].rows);
        omnic__media_item_deinit(&it);
        omnic__image_deinit(&img);
    }
    /* too extreme an aspect ratio: a side under 10 px after the resize */
    omnic__image img;
    assert_int_equal(omnic__image_alloc(&img, 5000, 9, &err), OMNIC_OK);
    omnic__decoded_media d = {.image = &img};
    omnic__media_item it;
    assert_int_equal(omnic__media_preprocess(&p, &d, &it, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "too extreme"));
    omnic__image_deinit(&img);
    /* white padding and a white image edge are the same pixels, not the same item: 448x400 padded
     * (3 patch rows masked, 528 rows) vs the same image with 48 white rows (545 rows) */
    omnic__media_item two[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(omnic__image_alloc(&img, 448, k ? 448 : 400, &err), OMNIC_OK);
        memset(img.data, 255, (size_t)(448 * img.height * 3));
        for (int64_t q = 0; q < 448 * 400 * 3; q++)
            img.data[q] = (uint8_t)(q % 199);
        d.image = &img;
        assert_int_equal(omnic__media_preprocess(&p, &d, &two[k], &err), OMNIC_OK);
        omnic__media_item_key(&two[k]);
        omnic__image_deinit(&img);
    }
    assert_memory_equal(two[0].input->data, two[1].input->data, omnic__tensor_bytes(two[0].input));
    assert_int_equal(two[0].rows, 528);
    assert_int_equal(two[1].rows, 545);
    assert_memory_not_equal(two[0].key, two[1].key, sizeof two[0].key);
    omnic__media_item_deinit(&two[0]);
    omnic__media_item_deinit(&two[1]);
    omnic__media_proc_deinit(&p);
    /* a user pixel limit lowers the crops: 4 crops of 448^2 at most */
    assert_int_equal(omnic__media_proc_init(&p, g_m, OMNIC_MODALITY_IMAGE, 4 * 448 * 448, &err), OMNIC_OK);
    assert_int_equal(omnic__image_alloc(&img, 3000, 3000, &err), OMNIC_OK);
    assert_int_equal(omnic__media_preprocess(&p, &d, &it, &err), OMNIC_OK);
    assert_int_equal(it.input->dims[0], 5); /* (2, 2) */
    assert_true(it.limited);
    omnic__media_item_deinit(&it);
    omnic__image_deinit(&img);
    omnic__media_proc_deinit(&p);
}

/* microsoft/Phi-4-multimodal-instruct's published config.json (the original remote-code layout,
 * tests/golden/phi4mm_config) converted and parsed as omnic opens it equals what transformers' own
 * conversion script makes of it (converted.json, tools/hf_golden/make_phi4mm_config_golden.py): the
 * decoder, the conformer (from audio_processor.config) and the tower (SigLIP-so400m defaults). */
static void test_published_original_config(void **state)
{
    (void)state;
    omnic_err err;
    json_t *cfg = NULL, *want = NULL;
    assert_int_equal(omnic__json_load_file("tests/golden/phi4mm_config/config.json", 1 << 20, &cfg, &err),
                     OMNIC_OK);
    assert_int_equal(omnic__json_load_file("tests/golden/phi4mm_config/converted.json", 1 << 20, &want, &err),
                     OMNIC_OK);
    omnic__checkpoint ck = {.config = cfg}; /* no weights: the rename hook has none to set */
    const omnic__family *f = NULL;
    assert_int_equal(omnic__family_find(ck.config, &f, &err), OMNIC_OK);
    assert_non_null(f->convert);
    if (f->convert(&ck, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    omnic__text_config c;
    if (f->parse_config(ck.config, "config.json", &c, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    const json_t *t = json_object_get(want, "text"), *a = json_object_get(want, "audio"),
                 *v = json_object_get(want, "vision");
#define I(obj, key) json_integer_value(json_object_get(obj, key))
    assert_int_equal(c.hidden, I(t, "hidden_size"));
    assert_int_equal(c.intermediate, I(t, "intermediate_size"));
    assert_int_equal(c.n_layers, I(t, "num_hidden_layers"));
    assert_int_equal(c.n_heads, I(t, "num_attention_heads"));
    assert_int_equal(c.n_kv_heads, I(t, "num_key_value_heads"));
    assert_int_equal(c.vocab, I(t, "vocab_size"));
    assert_int_equal(c.max_pos, I(t, "max_position_embeddings"));
    assert_int_equal(c.rope_original_max_pos, I(t, "original_max_position_embeddings"));
    assert_int_equal(c.sliding_window, I(t, "sliding_window"));
    assert_int_equal(c.n_rot, (int64_t)(json_real_value(json_object_get(t, "partial_rotary_factor")) *
                                        (double)(c.hidden / c.n_heads)));
    assert_true(c.tie_embeddings == json_is_true(json_object_get(t, "tie_word_embeddings")));
    assert_true(json_equal(json_object_get(ck.config, "eos_token_id"), json_object_get(t, "eos_token_id")));
    omnic__p4a_config ac;
    if (omnic__p4a_config_parse(json_object_get(ck.config, "audio_config"), "audio_config", c.hidden, &ac,
                                &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(ac.hidden, I(a, "hidden_size"));
    assert_int_equal(ac.intermediate, I(a, "intermediate_size"));
    assert_int_equal(ac.n_blocks, I(a, "num_blocks"));
    assert_int_equal(ac.n_heads, I(a, "num_attention_heads"));
    assert_int_equal(ac.max_distance, I(a, "bias_max_distance"));
    assert_int_equal(ac.conv_channels, I(a, "nemo_conv_channels"));
    assert_int_equal(ac.time_reduction, I(a, "time_reduction"));
    assert_int_equal(ac.kernel_size, I(a, "kernel_size"));
    assert_int_equal(ac.input_size, I(a, "input_size"));
    omnic__p4v_config vc;
    if (omnic__p4v_config_parse(json_object_get(ck.config, "vision_config"), "vision_config", c.hidden, &vc,
                                &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(vc.hidden, I(v, "hidden_size"));
    assert_int_equal(vc.intermediate, I(v, "intermediate_size"));
    assert_int_equal(vc.n_layers, I(v, "num_hidden_layers"));
    assert_int_equal(vc.n_heads, I(v, "num_attention_heads"));
    assert_int_equal(vc.image_size, I(v, "image_size"));
    assert_int_equal(vc.patch, I(v, "patch_size"));
    assert_int_equal(vc.crop_size, I(v, "crop_size"));
    assert_int_equal(vc.layers_run, vc.n_layers + 1 + I(v, "feature_layer"));
    assert_int_equal(vc.image_token_id, I(v, "image_token_id"));
#undef I
    json_decref(ck.config);
    json_decref(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_hf),   cmocka_unit_test(test_prompt_and_capability),
        cmocka_unit_test(test_image_crops),  cmocka_unit_test(test_published_original_config),
        cmocka_unit_test(test_bad_adapters), cmocka_unit_test(test_refused_clips),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
