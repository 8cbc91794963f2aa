/* Engine: streamed text equals the decode of the generated tokens; concurrent requests
 * on fewer slots give exactly what each gives alone; cancellation, stop strings,
 * timeouts, admission (capacity, queue) and metrics. Uses a tiny qwen2 checkpoint. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "model_testutil.h"

#include "core/sync.h"
#include "engine/engine.h"
#include "engine/media.h"
#include "engine/media_memo.h"
#include "engine/modality.h"
#include "engine/prefix_cache.h"
#include "models/clip_media.h"
#include "models/media.h"
#include "models/qwen2vl_media.h"

static char dir[128];

/* Collects one request's events. */
static atomic_int done_seq; /* DONE events so far, all sinks */

typedef struct sink {
    int seq; /* done_seq when this one finished */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    char text[16384];
    size_t len;
    int32_t tokens[512];
    int n_tokens;
    omnic__finish finish;
    int64_t prompt_tokens, completion_tokens, cached_tokens;
} sink;

static void sink_init(sink *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

static void on_event(void *ctx, const omnic__gen_event *ev)
{
    sink *s = ctx;
    pthread_mutex_lock(&s->mu);
    if (ev->kind == OMNIC_EV_TEXT) {
        if (s->len + ev->len < sizeof s->text) {
            memcpy(s->text + s->len, ev->text, ev->len);
            s->len += ev->len;
        }
        if (ev->token >= 0 && s->n_tokens < 512) s->tokens[s->n_tokens++] = ev->token;
    } else {
        s->done = true;
        s->seq = atomic_fetch_add(&done_seq, 1);
        s->finish = ev->finish;
        s->prompt_tokens = ev->prompt_tokens;
        s->completion_tokens = ev->completion_tokens;
        s->cached_tokens = ev->cached_tokens;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

static void sink_wait(sink *s)
{
    pthread_mutex_lock(&s->mu);
    while (!s->done)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static omnic__engine *engine_chunk_ctx(const char *model, int slots, int max_queue, int64_t step_tokens,
                                       int64_t chunk, int64_t ctx)
{
    omnic__engine_opts o = {.model = {.backend = "cpu",
                                      .threads = 2,
                                      .ctx = ctx,
                                      .slots = slots,
                                      .chunk = chunk,
                                      .step_tokens = step_tokens},
                            .max_queue = max_queue};
    omnic__engine *e = NULL;
    omnic_err err;
    omnic_status s = omnic__engine_create(model, &o, &e, &err);
    if (s != OMNIC_OK) fprintf(stderr, "engine: %s\n", err.msg);
    assert_int_equal(s, OMNIC_OK);
    return e;
}

static omnic__engine *engine_chunk(const char *model, int slots, int max_queue, int64_t step_tokens,
                                   int64_t chunk)
{
    return engine_chunk_ctx(model, slots, max_queue, step_tokens, chunk, 256);
}

/* Context ctx rows per slot (image prompts of Phi-4-multimodal are 460 rows and more). */
static omnic__engine *engine_ctx(const char *model, int slots, int max_queue, int64_t step_tokens,
                                 int64_t ctx)
{
    return engine_chunk_ctx(model, slots, max_queue, step_tokens, 16, ctx);
}

static omnic__engine *engine_at(const char *model, int slots, int max_queue, int64_t step_tokens)
{
    return engine_chunk(model, slots, max_queue, step_tokens, 16);
}

static omnic__engine *engine_steps(int slots, int max_queue, int64_t step_tokens)
{
    return engine_at(dir, slots, max_queue, step_tokens);
}

static omnic__engine *engine(int slots, int max_queue)
{
    return engine_steps(slots, max_queue, 0);
}

static const int32_t PROMPTS[8][6] = {{5, 17, 300, 42, 7, 9},   {100, 200, 300, 400, 1, 2},
                                      {3, 3, 3, 3, 3, 3},       {11, 22, 33, 44, 55, 66},
                                      {250, 251, 252, 0, 1, 7}, {8, 9, 10, 11, 12, 13},
                                      {400, 30, 20, 10, 5, 1},  {77, 88, 99, 111, 222, 333}};

static omnic__gen_request req(const int32_t *prompt, size_t n, int64_t max_tokens, sink *s)
{
    omnic__gen_request r = {.prompt = prompt,
                            .n_prompt = n,
                            .sampling = omnic__sampling_defaults(),
                            .max_tokens = max_tokens,
                            .skip_special = true,
                            .ignore_eos = true,
                            .cb = on_event,
                            .cb_ctx = s};
    return r;
}

/* Waits for each of together[0..n) and checks it got the tokens alone[i] got. */
static void expect_same_tokens(sink *together, const sink *alone, int n)
{
    for (int i = 0; i < n; i++) {
        sink_wait(&together[i]);
        assert_int_equal(together[i].n_tokens, alone[i].n_tokens);
        assert_memory_equal(together[i].tokens, alone[i].tokens, sizeof(int32_t) * (size_t)alone[i].n_tokens);
    }
}

static void run_one(omnic__engine *e, omnic__gen_request r, sink *s)
{
    uint64_t id;
    omnic_err err;
    assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_OK);
    sink_wait(s);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/omnic-test-engine-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char cmd[4096];
    snprintf(
        cmd, sizeof cmd,
        PY
        " tools/mktiny.py --family qwen2 --out %s >/dev/null && " PY
        " tools/mktiny.py --family phi3 --out %s/phi3 >/dev/null && " PY
        " tools/mktiny.py --family llava --vision clip --text llama --dtype f32 --out %s/llava >/dev/null && "
        "mkdir %s/mrope && cp %s/*.json %s/*.safetensors %s/mrope/ && " PY
        " -c \"import json,sys; p=sys.argv[1]; c=json.load(open(p)); "
        "c['rope_scaling']={'type':'mrope','mrope_section':[2,3,3]}; json.dump(c,open(p,'w'))\" "
        "%s/mrope/config.json && " PY
        " tools/mktiny.py --family qwen2_vl --dtype f32 --out %s/qvl >/dev/null && " PY
        " tools/mktiny.py --family qwen3_vl --dtype f32 --out %s/q3vl >/dev/null && " PY
        " tools/mktiny.py --family qwen3_vl_moe --dtype f32 --out %s/q3vlm >/dev/null && " PY
        " tools/mktiny.py --family phi4mm --dtype f32 --out %s/p4mm >/dev/null && " PY
        " tools/mktiny.py --family phi4mm --dtype f32 --no-adapters --out %s/p4mm0 >/dev/null && " PY
        " tools/mktiny.py --family gemma3n --dtype f32 --out %s/g3n >/dev/null",
        dir, dir, dir, dir, dir, dir, dir, dir, dir, dir, dir, dir, dir, dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return mt_rmdir(dir);
}

/* Streamed text is exactly the tokenizer's decode of the generated tokens. */
static void test_stream_equals_decode(void **state)
{
    (void)state;
    omnic__engine *e = engine(1, 8);
    sink s;
    sink_init(&s);
    run_one(e, req(PROMPTS[0], 6, 40, &s), &s);
    assert_int_equal(s.finish, OMNIC_FINISH_LENGTH);
    assert_int_equal(s.n_tokens, 40);
    assert_int_equal(s.completion_tokens, 40);
    assert_int_equal(s.prompt_tokens, 6);
    char *text;
    size_t len;
    omnic_err err;
    assert_int_equal(omnic__tokenizer_decode(omnic__engine_tokenizer(e), s.tokens, (size_t)s.n_tokens, true,
                                             &text, &len, &err),
                     OMNIC_OK);
    assert_int_equal(len, s.len);
    assert_memory_equal(text, s.text, len);
    omnic_free(text);
    omnic__engine_destroy(e);
}

/* 8 concurrent requests on 4 slots: each output bit-identical to the request run alone. */
static void test_concurrent_equals_alone(void **state)
{
    (void)state;
    static sink alone[8], together[8];
    omnic__engine *e1 = engine(1, 8);
    for (int i = 0; i < 8; i++) {
        sink_init(&alone[i]);
        omnic__gen_request r = req(PROMPTS[i], 6 - (size_t)(i % 3), 20 + i, &alone[i]);
        if (i % 2) { /* some sampled with a seed: the same seed gives the same tokens */
            r.sampling.temperature = 0.8f;
            r.sampling.top_p = 0.9f;
            r.sampling.seed = 1000 + (uint64_t)i;
        }
        run_one(e1, r, &alone[i]);
    }
    omnic__engine_destroy(e1);
    omnic__engine *e4 = engine(4, 8);
    uint64_t ids[8];
    omnic_err err;
    for (int i = 0; i < 8; i++) {
        sink_init(&together[i]);
        omnic__gen_request r = req(PROMPTS[i], 6 - (size_t)(i % 3), 20 + i, &together[i]);
        if (i % 2) {
            r.sampling.temperature = 0.8f;
            r.sampling.top_p = 0.9f;
            r.sampling.seed = 1000 + (uint64_t)i;
        }
        assert_int_equal(omnic__engine_submit(e4, &r, &ids[i], &err), OMNIC_OK);
    }
    expect_same_tokens(together, alone, 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(together[i].len, alone[i].len);
        assert_memory_equal(together[i].text, alone[i].text, alone[i].len);
    }
    omnic__metrics snap;
    omnic__metrics_snapshot(omnic__engine_metrics(e4), &snap);
    assert_int_equal(snap.requests[OMNIC_FINISH_LENGTH], 8);
    assert_true(snap.decode_rows > snap.decode_steps); /* rows were batched */
    omnic__engine_destroy(e4);
}

/* Mixed steps: long prompts prefilled beside decoding streams (inside their decode calls)
 * give the same tokens as each request alone, and the decoding streams go on meanwhile. */
static void test_mixed_steps_equal_alone(void **state)
{
    (void)state;
    enum { N = 4, LONG = 70 };
    static int32_t prompts[N][LONG];
    static const size_t lens[N] = {6, LONG, 5, LONG - 9};
    for (int i = 0; i < N; i++)
        for (int j = 0; j < LONG; j++)
            prompts[i][j] = (int32_t)((i * 101 + j * 37 + 5) % 500);
    static sink alone[N], together[N];
    omnic__engine *e1 = engine_steps(1, 8, 6);
    for (int i = 0; i < N; i++) {
        sink_init(&alone[i]);
        run_one(e1, req(prompts[i], lens[i], 24, &alone[i]), &alone[i]);
    }
    omnic__engine_destroy(e1);
    omnic__engine *e = engine_steps(3, 8, 6);
    uint64_t id;
    omnic_err err;
    for (int i = 0; i < N; i++) {
        sink_init(&together[i]);
        omnic__gen_request r = req(prompts[i], lens[i], 24, &together[i]);
        assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_OK);
    }
    expect_same_tokens(together, alone, N);
    omnic__metrics snap;
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    fprintf(stderr, "mixed steps: %llu prompt rows prefilled inside decode calls\n",
            (unsigned long long)snap.mixed_prompt_rows);
    assert_true(snap.mixed_prompt_rows > 0);
    omnic__engine_destroy(e);
}

/* LongRoPE (tiny phi3: original 64, context 256): sequences that cross 64 while decoding
 * replay their history with the long factors; batched, with and without mixed steps, each
 * gives the tokens it gives alone. */
static void test_longrope_replay_batched(void **state)
{
    (void)state;
    enum { N = 3, MAXP = 80 };
    static int32_t prompts[N][MAXP];
    static const size_t lens[N] = {50, 60, 75};
    for (int i = 0; i < N; i++)
        for (int j = 0; j < MAXP; j++)
            prompts[i][j] = (int32_t)((i * 53 + j * 29 + 3) % 500);
    char phi3[160];
    snprintf(phi3, sizeof phi3, "%s/phi3", dir);
    for (int64_t steps = 0; steps <= 6; steps += 6) {
        static sink alone[N], together[N];
        omnic__engine *e1 = engine_at(phi3, 1, 8, steps);
        for (int i = 0; i < N; i++) {
            sink_init(&alone[i]);
            run_one(e1, req(prompts[i], lens[i], 30, &alone[i]), &alone[i]);
            assert_int_equal(alone[i].n_tokens, 30);
        }
        omnic__engine_destroy(e1);
        omnic__engine *e = engine_at(phi3, N, 8, steps);
        uint64_t id;
        omnic_err err;
        for (int i = 0; i < N; i++) {
            sink_init(&together[i]);
            omnic__gen_request r = req(prompts[i], lens[i], 30, &together[i]);
            assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_OK);
        }
        expect_same_tokens(together, alone, N);
        omnic__engine_destroy(e);
    }
}

/* Image requests (tiny LLaVA): a prompt with the image placeholder and pixel_values, its
 * pixels made up (the processor is tested elsewhere). */
typedef struct image_req {
    int32_t prompt[16];
    size_t n;
    omnic__media_item item; /* pixels as the CLIP processor would give them */
    const omnic__media_item *media[1];
} image_req;

static void image_req_init(image_req *ir, const omnic__model *m, int k)
{
    omnic_err err;
    const int64_t S = omnic__clip_media_of(m)->image_size;
    int64_t d[3] = {3, S, S};
    ir->item = (omnic__media_item){.modality = OMNIC_MODALITY_IMAGE, .grid = {1, 1, 1}};
    assert_int_equal(omnic__tensor_create(&ir->item.input, OMNIC_DTYPE_F32, 3, d, &err), OMNIC_OK);
    float *px = ir->item.input->data;
    for (int64_t i = 0; i < 3 * S * S; i++)
        px[i] = (float)((i * 7 + k * 13) % 41) / 20.0f - 1.0f;
    ir->media[0] = &ir->item;
    ir->n = 0;
    for (int i = 0; i < 5; i++)
        ir->prompt[ir->n++] = (int32_t)(30 + i * 11 + k);
    ir->prompt[ir->n++] = omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE);
    for (int i = 0; i < 4; i++)
        ir->prompt[ir->n++] = (int32_t)(200 + i * 3 + k);
}

/* Text and image requests interleaved on 4 slots: each one's tokens equal its run alone;
 * an image request cancelled before it runs, and one cancelled while it prefills, free
 * their slots (busy slots back to zero); placeholder / image count mismatches are refused. */
static void test_images_mixed_batch(void **state)
{
    (void)state;
    char llava[160];
    snprintf(llava, sizeof llava, "%s/llava", dir);
    enum { N = 6 };
    static sink alone[N], together[N];
    static image_req ir[N];
    omnic__engine *e1 = engine_at(llava, 1, 8, 0);
    const omnic__model *m = omnic__engine_model(e1);
    assert_true(omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE) >= 0 &&
                omnic__clip_media_of(m)->image_tokens > 1);
    omnic__gen_request rs[N];
    for (int i = 0; i < N; i++) {
        image_req_init(&ir[i], m, i);
        rs[i] = i % 2 ? req(PROMPTS[i], 6, 12, NULL) : req(ir[i].prompt, ir[i].n, 12, NULL);
        if (i % 2 == 0) rs[i].media = ir[i].media, rs[i].n_media = 1;
    }
    for (int i = 0; i < N; i++) {
        sink_init(&alone[i]);
        rs[i].cb_ctx = &alone[i];
        run_one(e1, rs[i], &alone[i]);
        assert_int_equal(alone[i].finish, OMNIC_FINISH_LENGTH);
        assert_int_equal(alone[i].prompt_tokens, (int64_t)rs[i].n_prompt); /* logical tokens */
    }
    /* mismatches: an image without a placeholder, a placeholder without an image */
    uint64_t id;
    omnic_err err;
    omnic__gen_request bad = rs[1];
    bad.media = ir[0].media, bad.n_media = 1;
    assert_int_equal(omnic__engine_submit(e1, &bad, &id, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "0 image placeholders but 1 images"));
    bad = rs[0];
    bad.n_media = 0;
    assert_int_equal(omnic__engine_submit(e1, &bad, &id, &err), OMNIC_E_INVALID);
    /* media of a modality the model does not take: refused, naming it */
    omnic__media_item clip = ir[0].item;
    clip.modality = OMNIC_MODALITY_AUDIO;
    const omnic__media_item *clipp = &clip;
    bad = rs[1];
    bad.media = &clipp, bad.n_media = 1;
    assert_int_equal(omnic__engine_submit(e1, &bad, &id, &err), OMNIC_E_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "does not take audio input"));
    omnic__engine_destroy(e1);
    omnic__engine *e = engine_at(llava, 4, 16, 0);
    for (int i = 0; i < N; i++) {
        sink_init(&together[i]);
        rs[i].cb_ctx = &together[i];
        assert_int_equal(omnic__engine_submit(e, &rs[i], &id, &err), OMNIC_OK);
    }
    expect_same_tokens(together, alone, N);
    /* cancel: one queued behind a long request, one right after it starts */
    sink a, b, c;
    sink_init(&a), sink_init(&b), sink_init(&c);
    omnic__gen_request ra = req(PROMPTS[1], 6, 200, &a), rb = rs[0], rc = rs[2];
    rb.cb_ctx = &b, rc.cb_ctx = &c;
    uint64_t ida, idb, idc;
    assert_int_equal(omnic__engine_submit(e, &ra, &ida, &err), OMNIC_OK);
    assert_int_equal(omnic__engine_submit(e, &rb, &idb, &err), OMNIC_OK);
    omnic__engine_cancel(e, idb);
    assert_int_equal(omnic__engine_submit(e, &rc, &idc, &err), OMNIC_OK);
    omnic__engine_cancel(e, idc);
    omnic__engine_cancel(e, ida);
    sink_wait(&a), sink_wait(&b), sink_wait(&c);
    assert_int_equal(b.finish, OMNIC_FINISH_CANCELLED);
    assert_int_equal(c.finish, OMNIC_FINISH_CANCELLED);
    omnic__metrics snap;
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    assert_int_equal(snap.slots_busy, 0);
    assert_int_equal(snap.queue_depth, 0);
    omnic__engine_destroy(e);
    /* mixed steps: image prompts' rows ride in decode calls (text.embeddings_decode) beside the
     * others' decode rows, token prompts' too; every request's tokens equal its run alone */
    static sink alone_m[N], together_m[N];
    e1 = engine_at(llava, 1, 8, 8);
    assert_true(omnic__engine_model(e1)->embed_decode.finalized);
    for (int i = 0; i < N; i++) {
        sink_init(&alone_m[i]);
        rs[i].cb_ctx = &alone_m[i];
        run_one(e1, rs[i], &alone_m[i]);
    }
    omnic__engine_destroy(e1);
    e = engine_at(llava, 4, 16, 8);
    int64_t text_rows = 0;
    for (int i = 0; i < N; i++) {
        sink_init(&together_m[i]);
        rs[i].cb_ctx = &together_m[i];
        if (i % 2) text_rows += (int64_t)rs[i].n_prompt;
        assert_int_equal(omnic__engine_submit(e, &rs[i], &id, &err), OMNIC_OK);
    }
    expect_same_tokens(together_m, alone_m, N);
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    assert_true(snap.mixed_prompt_rows > (uint64_t)text_rows); /* image rows rode too */
    omnic__engine_destroy(e);
    for (int i = 0; i < N; i++)
        omnic__media_item_deinit(&ir[i].item);
}

/* A 16 kHz 16-bit mono WAV of n samples: two tones that depend on k (malloc'd). */
static uint8_t *wav_bytes(int64_t n, int k, size_t *len)
{
    *len = 44 + (size_t)n * 2;
    uint8_t *b = calloc(1, *len);
    const uint32_t riff = (uint32_t)(*len - 8), fmt_len = 16, rate = 16000, bps = 32000,
                   data = (uint32_t)(n * 2);
    const uint16_t pcm = 1, ch = 1, align = 2, bits = 16;
    memcpy(b, "RIFF", 4), memcpy(b + 4, &riff, 4), memcpy(b + 8, "WAVEfmt ", 8), memcpy(b + 16, &fmt_len, 4);
    memcpy(b + 20, &pcm, 2), memcpy(b + 22, &ch, 2), memcpy(b + 24, &rate, 4), memcpy(b + 28, &bps, 4);
    memcpy(b + 32, &align, 2), memcpy(b + 34, &bits, 2), memcpy(b + 36, "data", 4), memcpy(b + 40, &data, 4);
    for (int64_t i = 0; i < n; i++) {
        double v =
            0.3 * sin(2 * M_PI * (150 + 40 * k) * i / 16000.0) + 0.1 * sin(2 * M_PI * 1234 * i / 16000.0);
        int16_t q = (int16_t)lrint(v * 32767);
        memcpy(b + 44 + i * 2, &q, 2);
    }
    return b;
}

/* An encode callback that cancels its request once its first item is encoded (the scheduler thread
 * calls it outside the engine's lock; the submitting thread publishes the id first). */
static omnic__engine *g_cancel_engine;
static uint64_t g_cancel_id;
static atomic_bool g_cancel_id_set;
static atomic_int g_cancel_calls;

static void cancel_after_first_encode(void *ctx, int64_t k, const omnic__tensor *features,
                                      const omnic__tensor *projected, int n_side,
                                      const omnic__tensor *const *side, const char *const *names)
{
    (void)ctx, (void)features, (void)projected, (void)n_side, (void)side, (void)names;
    atomic_fetch_add(&g_cancel_calls, 1);
    while (!atomic_load(&g_cancel_id_set))
        sched_yield();
    if (k == 0) omnic__engine_cancel(g_cancel_engine, g_cancel_id);
}

/* Phi-4-multimodal with its speech and vision LoRA adapters (mktiny phi4mm): audio prompts (the
 * speech adapter), text prompts (none), image prompts (the vision adapter) and image + audio
 * prompts (the vision adapter, vision-speech rows) interleaved on 4 slots give the tokens each
 * gives alone, with and without mixed steps; the 1-slot runs rotate the kinds on one slot, so a
 * text request that follows a media one runs without its adapter: its tokens equal those of the
 * same checkpoint without adapter folders. A cancelled audio request frees its slot, and so does an
 * image + audio request cancelled between its encodes. */
static void test_adapters_mixed_batch(void **state)
{
    (void)state;
    char p4mm[160], p4mm0[160];
    snprintf(p4mm, sizeof p4mm, "%s/p4mm", dir);
    snprintf(p4mm0, sizeof p4mm0, "%s/p4mm0", dir);
    enum { N = 8 };
    static sink alone[N], together[N], plain[N], alone_m[N], together_m[N];
    omnic__engine *e1 = engine_ctx(p4mm, 1, 8, 0, 1024);
    const omnic__model *m = omnic__engine_model(e1);
    assert_true(omnic__model_accepts(m, OMNIC_MODALITY_AUDIO));
    assert_true(omnic__model_accepts(m, OMNIC_MODALITY_IMAGE));
    omnic__media_proc prep, prep_img;
    omnic_err err;
    assert_int_equal(omnic__media_proc_init(&prep, m, OMNIC_MODALITY_AUDIO, 0, &err), OMNIC_OK);
    assert_int_equal(omnic__media_proc_init(&prep_img, m, OMNIC_MODALITY_IMAGE, 0, &err), OMNIC_OK);
    static omnic__media_item items[N][2];
    static const omnic__media_item *mp[N][2];
    static int32_t prompts[N][16];
    omnic__gen_request rs[N];
    const int32_t pad = omnic__media_placeholder(m, OMNIC_MODALITY_AUDIO),
                  ipad = omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE);
    for (int i = 0; i < N; i++) {
        const int kind = i % 4; /* 0 audio, 1 text, 2 image, 3 image + audio */
        if (kind == 1) {
            rs[i] = req(PROMPTS[i], 6, 10, NULL);
            continue;
        }
        int n = 0, k = 0;
        for (int j = 0; j < 4; j++)
            prompts[i][n++] = (int32_t)(20 + j * 9 + i);
        if (kind >= 2) { /* a 60 x 40 image (one HD crop, padded) whose pixels depend on i */
            omnic__image img;
            assert_int_equal(omnic__image_alloc(&img, 60, 40, &err), OMNIC_OK);
            for (int64_t p = 0; p < 60 * 40 * 3; p++)
                img.data[p] = (uint8_t)((p * (7 + i)) % 251);
            omnic__decoded_media d = {.image = &img};
            assert_int_equal(omnic__media_preprocess(&prep_img, &d, &items[i][k], &err), OMNIC_OK);
            omnic__image_deinit(&img);
            mp[i][k] = &items[i][k], k++;
            prompts[i][n++] = ipad;
        }
        if (kind != 2) {
            size_t len;
            uint8_t *w = wav_bytes(8000 + 1600 * i, i, &len); /* 0.5 s .. 0.9 s */
            assert_int_equal(omnic__media_prepare(&prep, w, len, NULL, NULL, &items[i][k], &err), OMNIC_OK);
            free(w);
            mp[i][k] = &items[i][k], k++;
            prompts[i][n++] = pad;
        }
        for (int j = 0; j < 3; j++)
            prompts[i][n++] = (int32_t)(300 + j * 5 + i);
        rs[i] = req(prompts[i], (size_t)n, 10, NULL);
        rs[i].media = mp[i], rs[i].n_media = (size_t)k;
    }
    omnic__media_proc_deinit(&prep);
    omnic__media_proc_deinit(&prep_img);
    for (int i = 0; i < N; i++) {
        sink_init(&alone[i]);
        rs[i].cb_ctx = &alone[i];
        run_one(e1, rs[i], &alone[i]);
        assert_int_equal(alone[i].finish, OMNIC_FINISH_LENGTH);
    }
    omnic__engine_destroy(e1);
    /* text after audio on one slot == the checkpoint without adapters */
    omnic__engine *e0 = engine_ctx(p4mm0, 1, 8, 0, 1024);
    for (int i = 1; i < N; i += 4) {
        sink_init(&plain[i]);
        rs[i].cb_ctx = &plain[i];
        run_one(e0, rs[i], &plain[i]);
        assert_int_equal(plain[i].n_tokens, alone[i].n_tokens);
        assert_memory_equal(plain[i].tokens, alone[i].tokens, sizeof(int32_t) * (size_t)alone[i].n_tokens);
    }
    /* without the adapter folders an audio prompt is refused by name */
    uint64_t id;
    assert_int_equal(omnic__engine_submit(e0, &rs[0], &id, &err), OMNIC_E_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "speech LoRA adapter"));
    omnic__engine_destroy(e0);
    omnic__engine *e = engine_ctx(p4mm, 4, 16, 0, 1024);
    for (int i = 0; i < N; i++) {
        sink_init(&together[i]);
        rs[i].cb_ctx = &together[i];
        assert_int_equal(omnic__engine_submit(e, &rs[i], &id, &err), OMNIC_OK);
    }
    expect_same_tokens(together, alone, N);
    /* cancel an audio request right after submitting it: its slot comes back */
    sink c;
    sink_init(&c);
    omnic__gen_request rc = rs[0];
    rc.cb_ctx = &c;
    assert_int_equal(omnic__engine_submit(e, &rc, &id, &err), OMNIC_OK);
    omnic__engine_cancel(e, id);
    sink_wait(&c);
    omnic__metrics snap;
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    assert_int_equal(snap.slots_busy, 0);
    omnic__engine_destroy(e);
    /* mixed steps: prompt rows of both kinds ride in decode calls beside adapter and plain rows */
    e1 = engine_ctx(p4mm, 1, 8, 8, 1024);
    for (int i = 0; i < N; i++) {
        sink_init(&alone_m[i]);
        rs[i].cb_ctx = &alone_m[i];
        run_one(e1, rs[i], &alone_m[i]);
    }
    omnic__engine_destroy(e1);
    e = engine_ctx(p4mm, 4, 16, 8, 1024);
    for (int i = 0; i < N; i++) {
        sink_init(&together_m[i]);
        rs[i].cb_ctx = &together_m[i];
        assert_int_equal(omnic__engine_submit(e, &rs[i], &id, &err), OMNIC_OK);
    }
    expect_same_tokens(together_m, alone_m, N);
    /* cancelled between its two encodes (the image's rows in, the clip's not yet): the request ends
     * cancelled, its slot comes back, and the next image + audio request gives its tokens alone */
    sink cx;
    sink_init(&cx);
    omnic__gen_request rx = rs[3]; /* image + audio */
    rx.cb_ctx = &cx;
    rx.on_encode = cancel_after_first_encode;
    atomic_store(&g_cancel_id_set, false);
    g_cancel_engine = e;
    assert_int_equal(omnic__engine_submit(e, &rx, &g_cancel_id, &err), OMNIC_OK);
    atomic_store(&g_cancel_id_set, true);
    sink_wait(&cx);
    assert_int_equal(cx.finish, OMNIC_FINISH_CANCELLED);
    assert_int_equal(atomic_load(&g_cancel_calls), 1); /* the clip was never encoded */
    sink_init(&together_m[3]);
    rs[3].cb_ctx = &together_m[3];
    run_one(e, rs[3], &together_m[3]);
    expect_same_tokens(&together_m[3], &alone_m[3], 1);
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    assert_int_equal(snap.slots_busy, 0);
    omnic__engine_destroy(e);
    for (int i = 0; i < N; i++)
        omnic__media_item_deinit(&items[i][0]), omnic__media_item_deinit(&items[i][1]);
}

/* Gemma 3n with its audio and vision towers (mktiny gemma3n): one-clip prompts, text prompts,
 * two-clip prompts, image prompts and image + clip prompts interleaved on 3 slots give the tokens
 * each gives alone, with and without mixed steps (the media rows take the embeddings prefill with
 * their per-layer ids; the text rows beside them the decode calls); a request cancelled right
 * after submitting, and a two-clip request cancelled between its encodes, end cancelled and free
 * their slots, and the next request gives its tokens alone. */
static void test_gemma3n_media_mixed_batch(void **state)
{
    (void)state;
    char g3n[160];
    snprintf(g3n, sizeof g3n, "%s/g3n", dir);
    enum { N = 5 };
    static sink alone[N], together[N], alone_m[N], together_m[N];
    omnic__engine *e1 = engine_ctx(g3n, 1, 8, 0, 1024);
    const omnic__model *m = omnic__engine_model(e1);
    assert_true(omnic__model_accepts(m, OMNIC_MODALITY_AUDIO));
    assert_true(omnic__model_accepts(m, OMNIC_MODALITY_IMAGE));
    omnic__media_proc prep, prep_img;
    omnic_err err;
    assert_int_equal(omnic__media_proc_init(&prep, m, OMNIC_MODALITY_AUDIO, 0, &err), OMNIC_OK);
    assert_int_equal(omnic__media_proc_init(&prep_img, m, OMNIC_MODALITY_IMAGE, 0, &err), OMNIC_OK);
    const int32_t ipad = omnic__media_placeholder(m, OMNIC_MODALITY_IMAGE);
    static omnic__media_item items[N][2];
    static const omnic__media_item *mp[N][2];
    static int32_t prompts[N][16];
    omnic__gen_request rs[N];
    const int32_t pad = omnic__media_placeholder(m, OMNIC_MODALITY_AUDIO);
    for (int i = 0; i < N; i++) {
        const int kind = i; /* 0 one clip, 1 text, 2 two clips, 3 an image, 4 an image and a clip */
        if (kind == 1) {
            rs[i] = req(PROMPTS[i], 6, 10, NULL);
            continue;
        }
        int n = 0, k = 0;
        for (int j = 0; j < 4; j++)
            prompts[i][n++] = (int32_t)(20 + j * 9 + i);
        if (kind >= 3) { /* a 60 x 40 image whose pixels depend on i */
            omnic__image img;
            assert_int_equal(omnic__image_alloc(&img, 60, 40, &err), OMNIC_OK);
            for (int64_t p = 0; p < 60 * 40 * 3; p++)
                img.data[p] = (uint8_t)((p * (7 + i)) % 251);
            omnic__decoded_media d = {.image = &img};
            assert_int_equal(omnic__media_preprocess(&prep_img, &d, &items[i][k], &err), OMNIC_OK);
            omnic__image_deinit(&img);
            mp[i][k] = &items[i][k], k++;
            prompts[i][n++] = ipad;
        }
        for (int c = 0; c < (kind == 2 ? 2 : kind == 3 ? 0 : 1); c++) {
            size_t len;
            uint8_t *w = wav_bytes(8000 + 1600 * i + 800 * c, i + c, &len); /* 0.5 s .. 1.4 s */
            assert_int_equal(omnic__media_prepare(&prep, w, len, NULL, NULL, &items[i][k], &err), OMNIC_OK);
            free(w);
            mp[i][k] = &items[i][k], k++;
            prompts[i][n++] = pad;
            prompts[i][n++] = (int32_t)(300 + c);
        }
        rs[i] = req(prompts[i], (size_t)n, 10, NULL);
        rs[i].media = mp[i], rs[i].n_media = (size_t)k;
    }
    omnic__media_proc_deinit(&prep);
    omnic__media_proc_deinit(&prep_img);
    for (int i = 0; i < N; i++) {
        sink_init(&alone[i]);
        rs[i].cb_ctx = &alone[i];
        run_one(e1, rs[i], &alone[i]);
        assert_int_equal(alone[i].finish, OMNIC_FINISH_LENGTH);
    }
    omnic__engine_destroy(e1);
    uint64_t id;
    omnic__engine *e = engine_ctx(g3n, 3, 16, 0, 1024);
    for (int i = 0; i < N; i++) {
        sink_init(&together[i]);
        rs[i].cb_ctx = &together[i];
        assert_int_equal(omnic__engine_submit(e, &rs[i], &id, &err), OMNIC_OK);
    }
    expect_same_tokens(together, alone, N);
    sink c;
    sink_init(&c);
    omnic__gen_request rc = rs[0];
    rc.cb_ctx = &c;
    assert_int_equal(omnic__engine_submit(e, &rc, &id, &err), OMNIC_OK);
    omnic__engine_cancel(e, id);
    sink_wait(&c);
    omnic__metrics snap;
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    assert_int_equal(snap.slots_busy, 0);
    omnic__engine_destroy(e);
    e1 = engine_ctx(g3n, 1, 8, 8, 1024);
    for (int i = 0; i < N; i++) {
        sink_init(&alone_m[i]);
        rs[i].cb_ctx = &alone_m[i];
        run_one(e1, rs[i], &alone_m[i]);
    }
    omnic__engine_destroy(e1);
    e = engine_ctx(g3n, 3, 16, 8, 1024);
    for (int i = 0; i < N; i++) {
        sink_init(&together_m[i]);
        rs[i].cb_ctx = &together_m[i];
        assert_int_equal(omnic__engine_submit(e, &rs[i], &id, &err), OMNIC_OK);
    }
    expect_same_tokens(together_m, alone_m, N);
    sink cx;
    sink_init(&cx);
    omnic__gen_request rx = rs[2]; /* two clips */
    rx.cb_ctx = &cx;
    rx.on_encode = cancel_after_first_encode;
    atomic_store(&g_cancel_calls, 0);
    atomic_store(&g_cancel_id_set, false);
    g_cancel_engine = e;
    assert_int_equal(omnic__engine_submit(e, &rx, &g_cancel_id, &err), OMNIC_OK);
    atomic_store(&g_cancel_id_set, true);
    sink_wait(&cx);
    assert_int_equal(cx.finish, OMNIC_FINISH_CANCELLED);
    assert_int_equal(atomic_load(&g_cancel_calls), 1); /* the second clip was never encoded */
    sink_init(&together_m[2]);
    rs[2].cb_ctx = &together_m[2];
    run_one(e, rs[2], &together_m[2]);
    expect_same_tokens(&together_m[2], &alone_m[2], 1);
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    assert_int_equal(snap.slots_busy, 0);
    omnic__engine_destroy(e);
    for (int i = 0; i < N; i++)
        omnic__media_item_deinit(&items[i][0]), omnic__media_item_deinit(&items[i][1]);
}

/* An M-RoPE decoder (qwen2 + rope_scaling mrope) generates from text exactly what the 1-D
 * model does (text rows have one coordinate on all axes), alone and batched, with and without
 * mixed steps: the engine feeds [n, 3] positions everywhere. */
static void test_mrope_engine(void **state)
{
    (void)state;
    char mr[160];
    snprintf(mr, sizeof mr, "%s/mrope", dir);
    static sink want[4], got[4];
    static int32_t longp[40];
    for (int j = 0; j < 40; j++)
        longp[j] = (int32_t)((j * 31 + 7) % 500);
    for (int64_t steps = 0; steps <= 6; steps += 6) {
        omnic__engine *plain = engine_at(dir, 2, 8, steps), *e = engine_at(mr, 2, 8, steps);
        uint64_t id;
        omnic_err err;
        for (int i = 0; i < 4; i++) {
            omnic__gen_request r = i == 3 ? req(longp, 40, 10, NULL) : req(PROMPTS[i], 6, 10, NULL);
            sink_init(&want[i]), sink_init(&got[i]);
            r.cb_ctx = &want[i];
            assert_int_equal(omnic__engine_submit(plain, &r, &id, &err), OMNIC_OK);
            r.cb_ctx = &got[i];
            assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_OK);
        }
        for (int i = 0; i < 4; i++) {
            sink_wait(&want[i]), sink_wait(&got[i]);
            assert_int_equal(got[i].n_tokens, want[i].n_tokens);
            assert_memory_equal(got[i].tokens, want[i].tokens, sizeof(int32_t) * (size_t)want[i].n_tokens);
        }
        omnic__engine_destroy(plain), omnic__engine_destroy(e);
    }
}

/* Qwen2-VL and Qwen3-VL (tiny): image requests of two grid sizes interleaved with text requests
 * on 3 slots equal each alone; an image request's rope_delta (and Qwen3-VL's DeepStack rows) never
 * reach the next request of its slot (text after an image on a 1-slot engine == the text on a
 * fresh engine); chunks of 1, 7 and whole agree (DeepStack rows split across chunks). */
static void qwen_vl_batch(const char *sub)
{
    char qvl[160];
    snprintf(qvl, sizeof qvl, "%s/%s", dir, sub);
    enum { N = 5 };
    static sink alone[N], together[N], fresh, after;
    omnic__engine *e1 = engine_at(qvl, 1, 8, 0);
    const omnic__model *m = omnic__engine_model(e1);
    const omnic__qwen2vl_media *qm = omnic__qwen2vl_media_of(m);
    assert_non_null(qm);
    const int64_t K = qm->qvit->cfg.patch_dim;
    static const int64_t grids[N][3] = {{1, 4, 6}, {0}, {1, 2, 2}, {0}, {1, 6, 4}};
    static omnic__media_item px[N];
    static const omnic__media_item *pxp[N];
    static int32_t prompts[N][16];
    size_t lens[N];
    omnic__gen_request rs[N];
    omnic_err err;
    for (int i = 0; i < N; i++) {
        size_t n = 0;
        for (int j = 0; j < 4; j++)
            prompts[i][n++] = (int32_t)(40 + 7 * j + i);
        if (grids[i][0]) {
            int64_t d[2] = {grids[i][0] * grids[i][1] * grids[i][2], K};
            px[i] = (omnic__media_item){.modality = OMNIC_MODALITY_IMAGE,
                                        .has_grid = true,
                                        .grid = {grids[i][0], grids[i][1], grids[i][2]}};
            assert_int_equal(omnic__tensor_create(&px[i].input, OMNIC_DTYPE_F32, 2, d, &err), OMNIC_OK);
            for (int64_t v = 0; v < d[0] * K; v++)
                ((float *)px[i].input->data)[v] = (float)((v * 13 + i) % 29) / 14.0f - 1.0f;
            pxp[i] = &px[i];
            prompts[i][n++] = qm->spec.vision_start_token_id;
            prompts[i][n++] = qm->spec.image_token_id;
            prompts[i][n++] = qm->qvit->cfg.vision_end_id;
        }
        for (int j = 0; j < 3; j++)
            prompts[i][n++] = (int32_t)(200 + 5 * j + i);
        lens[i] = n;
        rs[i] = req(prompts[i], n, 12, NULL);
        if (px[i].input) rs[i].media = &pxp[i], rs[i].n_media = 1;
    }
    for (int i = 0; i < N; i++) {
        sink_init(&alone[i]);
        rs[i].cb_ctx = &alone[i];
        run_one(e1, rs[i], &alone[i]);
        assert_int_equal(alone[i].finish, OMNIC_FINISH_LENGTH);
        assert_int_equal(alone[i].prompt_tokens, (int64_t)lens[i]);
    }
    /* after the last image request, the same slot runs a text request: as on a fresh engine */
    omnic__gen_request rt = rs[1];
    sink_init(&after);
    rt.cb_ctx = &after;
    run_one(e1, rt, &after);
    omnic__engine_destroy(e1);
    omnic__engine *ef = engine_at(qvl, 1, 8, 0);
    sink_init(&fresh);
    rt.cb_ctx = &fresh;
    run_one(ef, rt, &fresh);
    omnic__engine_destroy(ef);
    assert_int_equal(after.n_tokens, fresh.n_tokens);
    assert_memory_equal(after.tokens, fresh.tokens, sizeof(int32_t) * (size_t)fresh.n_tokens);
    /* a grid whose patches do not match is refused */
    omnic__engine *e = engine_at(qvl, 3, 8, 0);
    uint64_t id;
    omnic__gen_request bad = rs[0];
    omnic__media_item wrong = px[0];
    memcpy(wrong.grid, grids[2], sizeof wrong.grid);
    const omnic__media_item *wrongp = &wrong;
    bad.media = &wrongp;
    assert_int_equal(omnic__engine_submit(e, &bad, &id, &err), OMNIC_E_INVALID);
    for (int i = 0; i < N; i++) {
        sink_init(&together[i]);
        rs[i].cb_ctx = &together[i];
        assert_int_equal(omnic__engine_submit(e, &rs[i], &id, &err), OMNIC_OK);
    }
    expect_same_tokens(together, alone, N);
    omnic__engine_destroy(e);
    /* mixed steps: M-RoPE image rows ride in decode calls with their 3-axis positions */
    static sink alone_m[N], together_m[N];
    e1 = engine_at(qvl, 1, 8, 6);
    for (int i = 0; i < N; i++) {
        sink_init(&alone_m[i]);
        rs[i].cb_ctx = &alone_m[i];
        run_one(e1, rs[i], &alone_m[i]);
    }
    omnic__engine_destroy(e1);
    e = engine_at(qvl, 3, 8, 6);
    for (int i = 0; i < N; i++) {
        sink_init(&together_m[i]);
        rs[i].cb_ctx = &together_m[i];
        assert_int_equal(omnic__engine_submit(e, &rs[i], &id, &err), OMNIC_OK);
    }
    expect_same_tokens(together_m, alone_m, N);
    omnic__metrics snap;
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    assert_true(snap.mixed_prompt_rows > 0);
    omnic__engine_destroy(e);
    /* chunking invariance: the image prompt prefilled in chunks of 1, 7 and whole gives the
     * same tokens (positions must not break at chunk boundaries) */
    static const int64_t chunks[] = {1, 7, 256};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        omnic__engine *ec = engine_chunk(qvl, 1, 8, 0, chunks[c]);
        sink sc;
        sink_init(&sc);
        rs[0].cb_ctx = &sc;
        run_one(ec, rs[0], &sc);
        assert_int_equal(sc.n_tokens, alone[0].n_tokens);
        assert_memory_equal(sc.tokens, alone[0].tokens, sizeof(int32_t) * (size_t)alone[0].n_tokens);
        omnic__engine_destroy(ec);
    }
    for (int i = 0; i < N; i++)
        omnic__media_item_deinit(&px[i]);
    memset(px, 0, sizeof px);
}

static void test_qwen2vl_batch(void **state)
{
    (void)state;
    qwen_vl_batch("qvl");
    qwen_vl_batch("q3vl");
    qwen_vl_batch("q3vlm"); /* DeepStack with routed experts */
}

/* Cancelling frees the slot: the next request on a 1-slot engine runs. */
static void test_cancel(void **state)
{
    (void)state;
    omnic__engine *e = engine(1, 8);
    sink a, b;
    sink_init(&a);
    sink_init(&b);
    uint64_t ida, idb;
    omnic_err err;
    omnic__gen_request ra = req(PROMPTS[1], 6, 200, &a), rb = req(PROMPTS[2], 6, 5, &b);
    assert_int_equal(omnic__engine_submit(e, &ra, &ida, &err), OMNIC_OK);
    assert_int_equal(omnic__engine_submit(e, &rb, &idb, &err), OMNIC_OK);
    for (int i = 0; i < 2000; i++) { /* wait until a is generating */
        pthread_mutex_lock(&a.mu);
        int n = a.n_tokens;
        pthread_mutex_unlock(&a.mu);
        if (n >= 2) break;
        usleep(1000);
    }
    omnic__engine_cancel(e, ida);
    sink_wait(&a);
    assert_int_equal(a.finish, OMNIC_FINISH_CANCELLED);
    assert_true(a.completion_tokens < 200);
    sink_wait(&b);
    assert_int_equal(b.finish, OMNIC_FINISH_LENGTH);
    assert_int_equal(b.n_tokens, 5);
    omnic__engine_cancel(e, 999999); /* unknown ids are ignored */
    omnic__engine_destroy(e);
}

/* A stop string taken from the greedy output ends the text right before it. */
static void test_stop_string(void **state)
{
    (void)state;
    omnic__engine *e = engine(1, 8);
    sink full, cut;
    sink_init(&full);
    run_one(e, req(PROMPTS[3], 6, 30, &full), &full);
    assert_true(full.len > 8);
    char stop[4] = {0};
    size_t at = full.len / 2;
    memcpy(stop, full.text + at, 3);
    size_t first = (size_t)(strstr(full.text, stop) - full.text); /* earliest occurrence */
    sink_init(&cut);
    omnic__gen_request r = req(PROMPTS[3], 6, 30, &cut);
    const char *stops[1] = {stop};
    r.stops = stops;
    r.n_stops = 1;
    run_one(e, r, &cut);
    assert_int_equal(cut.finish, OMNIC_FINISH_STOP);
    assert_int_equal(cut.len, first);
    assert_memory_equal(cut.text, full.text, first);
    omnic__engine_destroy(e);
}

static void test_admission(void **state)
{
    (void)state;
    omnic__engine *e = engine(1, 2);
    sink s;
    sink_init(&s);
    uint64_t id;
    omnic_err err;
    omnic__gen_request r = req(PROMPTS[0], 6, 251, &s);
    assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_E_CAPACITY);
    assert_non_null(strstr(err.msg, "prompt of 6 tokens + max_tokens 251 exceeds the context of 256 tokens"));
    r.max_tokens = 0;
    assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_E_INVALID);
    r.max_tokens = 5;
    r.n_prompt = 0;
    assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_E_INVALID);
    int32_t bad[2] = {1, 999999};
    r.prompt = bad;
    r.n_prompt = 2;
    assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "999999"));
    r = req(PROMPTS[0], 6, 5, &s);
    r.sampling.top_p = 2;
    assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_E_INVALID);
    /* queue of 2 behind one busy slot: the 4th long request is refused */
    static sink q[4];
    int ok = 0, full = 0;
    for (int i = 0; i < 4; i++) {
        sink_init(&q[i]);
        omnic__gen_request rq = req(PROMPTS[i], 6, 200, &q[i]);
        omnic_status st = omnic__engine_submit(e, &rq, &id, &err);
        if (st == OMNIC_OK) ok++;
        if (st == OMNIC_E_TOO_LARGE) {
            full++;
            assert_non_null(strstr(err.msg, "queue is full (2 requests waiting)"));
            q[i].done = true;
        }
    }
    assert_true(full >= 1);
    omnic__metrics snap;
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    assert_int_equal(snap.rejected[OMNIC_REJECT_CAPACITY], 1);
    assert_true(snap.rejected[OMNIC_REJECT_QUEUE_FULL] >= 1);
    omnic__engine_destroy(e); /* cancels the rest */
    for (int i = 0; i < 4; i++)
        sink_wait(&q[i]);
    (void)ok;
}

static void test_timeout_and_metrics(void **state)
{
    (void)state;
    omnic__engine *e = engine(1, 8);
    sink s;
    sink_init(&s);
    omnic__gen_request r = req(PROMPTS[4], 6, 250, &s);
    r.timeout_s = 0.001;
    run_one(e, r, &s);
    assert_int_equal(s.finish, OMNIC_FINISH_TIMEOUT);
    omnic__metrics snap;
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    char *text;
    size_t len;
    omnic_err err;
    assert_int_equal(omnic__metrics_render(&snap, &text, &len, &err), OMNIC_OK);
    assert_non_null(strstr(text, "omnic_requests_total{finish_reason=\"timeout\"} 1"));
    assert_non_null(strstr(text, "omnic_time_to_first_token_seconds_bucket{le=\"+Inf\"}"));
    assert_non_null(strstr(text, "omnic_slots_total 1"));
    omnic_free(text);
    omnic__engine_destroy(e);
}

/* A request waiting in the queue behind a busy slot times out there (it never gets a slot),
 * and started_s moves the origin of its timeout back (a server's upload and preparation). */
static void test_queued_timeout(void **state)
{
    (void)state;
    omnic__engine *e = engine(1, 8);
    sink busy, queued, late;
    sink_init(&busy);
    sink_init(&queued);
    sink_init(&late);
    uint64_t id, busy_id;
    omnic_err err;
    omnic__gen_request r = req(PROMPTS[0], 6, 240, &busy);
    r.ignore_eos = true;
    assert_int_equal(omnic__engine_submit(e, &r, &busy_id, &err), OMNIC_OK);
    omnic__gen_request q = req(PROMPTS[1], 6, 5, &queued);
    q.timeout_s = 0.002; /* the busy request's 240 tokens take longer */
    assert_int_equal(omnic__engine_submit(e, &q, &id, &err), OMNIC_OK);
    sink_wait(&queued);
    assert_int_equal(queued.finish, OMNIC_FINISH_TIMEOUT);
    assert_int_equal(queued.completion_tokens, 0);
    assert_false(busy.done); /* it timed out while the slot was still busy */
    /* started 10 s ago with a 5 s timeout: over before it is queued */
    omnic__gen_request l = req(PROMPTS[2], 6, 5, &late);
    l.timeout_s = 5;
    l.started_s = omnic__now() - 10;
    assert_int_equal(omnic__engine_submit(e, &l, &id, &err), OMNIC_OK);
    sink_wait(&late);
    assert_int_equal(late.finish, OMNIC_FINISH_TIMEOUT);
    omnic__engine_cancel(e, busy_id);
    sink_wait(&busy);
    omnic__engine_destroy(e);
}

/* Fair admission: a free slot goes to the queued request whose client holds the fewest slots,
 * FIFO among equals; the last quarter of the queue is kept for clients with nothing queued. */
static void test_fair_admission(void **state)
{
    (void)state;
    omnic__engine *e = engine(2, 8);
    static sink a[4], b, c[8];
    uint64_t id;
    omnic_err err;
    for (int i = 0; i < 4; i++) {
        sink_init(&a[i]);
        omnic__gen_request r = req(PROMPTS[i], 6, i < 2 ? 120 : 5, &a[i]);
        r.client = 1; /* A: two long requests take both slots, two short ones queue */
        assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_OK);
    }
    sink_init(&b);
    omnic__gen_request rb = req(PROMPTS[5], 6, 5, &b);
    rb.client = 2; /* B queues last, holds no slot */
    assert_int_equal(omnic__engine_submit(e, &rb, &id, &err), OMNIC_OK);
    for (int i = 0; i < 4; i++)
        sink_wait(&a[i]);
    sink_wait(&b);
    /* FIFO would admit A's third and fourth first; B ends before A's fourth */
    assert_true(b.seq < a[3].seq);
    /* a queue of 8 behind two busy slots: 6 for one client, the last 2 for others */
    omnic__engine_destroy(e);
    e = engine(2, 8);
    int ok = 0;
    for (int i = 0; i < 8; i++) {
        sink_init(&c[i]);
        omnic__gen_request r = req(PROMPTS[i], 6, 120, &c[i]);
        r.client = 7;
        omnic_status st = omnic__engine_submit(e, &r, &id, &err);
        if (st == OMNIC_OK) ok++;
        if (st != OMNIC_OK) {
            assert_int_equal(st, OMNIC_E_TOO_LARGE);
            assert_non_null(strstr(err.msg, "kept for other clients"));
            c[i].done = true;
        }
    }
    assert_true(ok >= 6 && ok <= 8); /* 2 may be in slots already */
    sink_init(&b);
    omnic__gen_request other = req(PROMPTS[1], 6, 3, &b);
    other.client = 8;
    assert_int_equal(omnic__engine_submit(e, &other, &id, &err), OMNIC_OK);
    omnic__engine_destroy(e); /* cancels the rest */
    sink_wait(&b);
    for (int i = 0; i < 8; i++)
        sink_wait(&c[i]);
}

static omnic__engine *engine_cache(const char *model, int64_t cache_bytes)
{
    omnic__engine_opts o = {.model = {.backend = "cpu", .threads = 2, .ctx = 256, .slots = 1, .chunk = 16},
                            .max_queue = 8,
                            .encoder_cache_bytes = cache_bytes};
    omnic__engine *e = NULL;
    omnic_err err;
    assert_int_equal(omnic__engine_create(model, &o, &e, &err), OMNIC_OK);
    return e;
}

static omnic__metrics cache_metrics(omnic__engine *e)
{
    omnic__metrics snap;
    omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
    return snap;
}

/* The encoder cache: a repeated image (same content key) is not encoded again and gives the
 * same tokens as with the cache off; a budget of one image's rows evicts the older one; an item
 * without a key is never cached. */
static void test_encoder_cache(void **state)
{
    (void)state;
    char llava[160];
    snprintf(llava, sizeof llava, "%s/llava", dir);
    static image_req ir[2];
    static sink off, on[3], evict[3], nokey;
    omnic__engine *e = engine_cache(llava, -1);
    const omnic__model *m = omnic__engine_model(e);
    for (int i = 0; i < 2; i++) {
        image_req_init(&ir[i], m, i);
        omnic__media_item_key(&ir[i].item);
        assert_true(ir[i].item.has_key);
    }
    assert_memory_not_equal(ir[0].item.key, ir[1].item.key, 32);
    omnic__gen_request r = req(ir[0].prompt, ir[0].n, 12, &off);
    r.media = ir[0].media, r.n_media = 1;
    sink_init(&off);
    run_one(e, r, &off);
    assert_int_equal(cache_metrics(e).enc_cache_misses, 0); /* off: never consulted */
    int64_t R = 0;
    omnic_err err;
    assert_int_equal(omnic__media_item_rows(m, &ir[0].item, &R, &err), OMNIC_OK);
    const int64_t one = R * m->dec.cfg.hidden * (int64_t)sizeof(float);
    omnic__engine_destroy(e);

    e = engine_cache(llava, 0); /* the default budget */
    for (int k = 0; k < 3; k++) {
        sink_init(&on[k]);
        r.cb_ctx = &on[k];
        run_one(e, r, &on[k]);
        assert_int_equal(on[k].n_tokens, off.n_tokens);
        assert_memory_equal(on[k].tokens, off.tokens, (size_t)off.n_tokens * sizeof off.tokens[0]);
    }
    omnic__metrics mm = cache_metrics(e);
    assert_int_equal(mm.enc_cache_misses, 1);
    assert_int_equal(mm.enc_cache_hits, 2);
    assert_int_equal(mm.enc_cache_entries, 1);
    assert_int_equal(mm.enc_cache_bytes, one);
    /* an item without a key: encoded, not looked up */
    omnic__media_item plain = ir[0].item;
    plain.has_key = false;
    const omnic__media_item *pp = &plain;
    omnic__gen_request rn = r;
    rn.media = &pp;
    sink_init(&nokey);
    rn.cb_ctx = &nokey;
    run_one(e, rn, &nokey);
    assert_memory_equal(nokey.tokens, off.tokens, (size_t)off.n_tokens * sizeof off.tokens[0]);
    assert_int_equal(cache_metrics(e).enc_cache_misses, 1);
    omnic__engine_destroy(e);

    e = engine_cache(llava, one); /* room for one image's rows */
    const int order[3] = {0, 1, 0};
    for (int k = 0; k < 3; k++) {
        omnic__gen_request rk = req(ir[order[k]].prompt, ir[order[k]].n, 12, &evict[k]);
        rk.media = ir[order[k]].media, rk.n_media = 1;
        sink_init(&evict[k]);
        run_one(e, rk, &evict[k]);
    }
    mm = cache_metrics(e);
    assert_int_equal(mm.enc_cache_hits, 0); /* the second image evicted the first */
    assert_int_equal(mm.enc_cache_misses, 3);
    assert_int_equal(mm.enc_cache_evictions, 2);
    assert_int_equal(mm.enc_cache_entries, 1);
    assert_memory_equal(evict[2].tokens, off.tokens, (size_t)off.n_tokens * sizeof off.tokens[0]);
    omnic__engine_destroy(e);
    omnic__media_item_deinit(&ir[0].item);
    omnic__media_item_deinit(&ir[1].item);
}

/* The media memo: the same bytes through the same processor skip decode and preprocessing (a
 * hit is the very item: key, input, rows); other bytes or decode limits are other entries; a
 * processor without an identity never keeps; a memo smaller than one item keeps nothing; no
 * memo when the encoder cache is off. */
static void test_media_memo(void **state)
{
    (void)state;
    char llava[160], png[200];
    snprintf(llava, sizeof llava, "%s/llava", dir);
    snprintf(png, sizeof png, "%s/memo.png", dir);
    sh(PY " -c \"import numpy as np; from PIL import Image; Image.fromarray((np.arange(40*30*3) %% 251)"
          ".astype(np.uint8).reshape(30, 40, 3)).save('%s')\"",
       png);
    static uint8_t buf[1 << 16];
    FILE *f = fopen(png, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 0 && n < sizeof buf);
    omnic_err err;
    omnic__engine *e = engine_cache(llava, -1);
    assert_null(omnic__engine_media_memo(e)); /* no encoder cache: nothing to skip to */
    omnic__engine_destroy(e);
    e = engine_cache(llava, 0);
    omnic__media_memo *memo = omnic__engine_media_memo(e);
    assert_non_null(memo);
    omnic__media_proc p;
    assert_int_equal(omnic__media_proc_init(&p, omnic__engine_model(e), OMNIC_MODALITY_IMAGE, 0, &err),
                     OMNIC_OK);
    omnic__media_item a, b, c, d;
    bool hit = true;
    assert_int_equal(omnic__media_prepare_memo(memo, &p, buf, n, NULL, NULL, &a, NULL, &hit, &err), OMNIC_OK);
    assert_false(hit);
    omnic__media_times t = {1, 1};
    assert_int_equal(omnic__media_prepare_memo(memo, &p, buf, n, NULL, NULL, &b, &t, &hit, &err), OMNIC_OK);
    assert_true(hit);
    assert_true(t.decode == 0 && t.preprocess == 0);
    assert_true(a.has_key && b.has_key);
    assert_memory_equal(a.key, b.key, 32);
    assert_int_equal(a.rows, b.rows);
    assert_int_equal(a.in_w, b.in_w);
    assert_int_equal(omnic__tensor_bytes(a.input), omnic__tensor_bytes(b.input));
    assert_memory_equal(a.input->data, b.input->data, omnic__tensor_bytes(a.input));
    assert_true(a.input->data != b.input->data); /* a copy: each owned by its holder */
    const omnic__image_limits lim = {.max_pixels = 1 << 20};
    assert_int_equal(omnic__media_prepare_memo(memo, &p, buf, n, &lim, NULL, &c, NULL, &hit, &err), OMNIC_OK);
    assert_false(hit); /* other limits: another entry */
    buf[n - 1] ^= 1;   /* other bytes (the PNG's trailer CRC: a decode error, nothing kept) */
    assert_int_not_equal(omnic__media_prepare_memo(memo, &p, buf, n, NULL, NULL, &d, NULL, &hit, &err),
                         OMNIC_OK);
    buf[n - 1] ^= 1;
    omnic__media_proc anon = p;
    anon.has_ident = false;
    omnic__blob_cache_stats st0, st1;
    omnic__media_memo_stats(memo, &st0);
    assert_int_equal(omnic__media_prepare_memo(memo, &anon, buf, n, NULL, NULL, &d, NULL, &hit, &err),
                     OMNIC_OK);
    assert_false(hit);
    omnic__media_memo_stats(memo, &st1);
    assert_int_equal(st1.hits, 1);
    assert_int_equal(st1.misses, 3);
    assert_int_equal(st1.entries, 2);
    assert_int_equal(st0.misses, st1.misses); /* not consulted */
    omnic__media_item_deinit(&d);
    omnic__media_memo *tiny = NULL;
    assert_int_equal(omnic__media_memo_create(64, &tiny, &err), OMNIC_OK);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(omnic__media_prepare_memo(tiny, &p, buf, n, NULL, NULL, &d, NULL, &hit, &err),
                         OMNIC_OK);
        assert_false(hit);
        omnic__media_item_deinit(&d);
    }
    omnic__media_memo_destroy(tiny);
    omnic__media_item_deinit(&a);
    omnic__media_item_deinit(&b);
    omnic__media_item_deinit(&c);
    omnic__media_proc_deinit(&p);
    omnic__engine_destroy(e);
}

static omnic__engine *engine_prefix(const char *model, int slots, int64_t chunk, int64_t bytes, int64_t block)
{
    omnic__engine_opts o = {
        .model = {.backend = "cpu", .threads = 2, .ctx = 256, .slots = slots, .chunk = chunk},
        .max_queue = 8,
        .prefix_cache_bytes = bytes,
        .prefix_block = block};
    omnic__engine *e = NULL;
    omnic_err err;
    assert_int_equal(omnic__engine_create(model, &o, &e, &err), OMNIC_OK);
    return e;
}

/* The prefix cache: prompts that share whole blocks of a prefix reuse its KV rows and give the
 * tokens they give with the cache off (chunks of 16 and 5, slot reuse, two slots at once); the
 * reused rows and cached_tokens are counted; a prompt never reuses its own last row; a budget of
 * one block evicts and stays correct; an image prompt repeated reuses its image rows. */
static void test_prefix_cache(void **state)
{
    (void)state;
    enum { N = 4, SHARED = 40, TAIL = 7, LEN = SHARED + TAIL };
    static int32_t prompts[N][LEN];
    for (int i = 0; i < N; i++)
        for (int t = 0; t < LEN; t++)
            prompts[i][t] = t < SHARED ? (int32_t)((t * 37 + 11) % 500) : (int32_t)((i * 101 + t * 13) % 500);
    static sink off[N], on[N];
    omnic__engine *e = engine_prefix(dir, 1, 16, -1, 16);
    for (int i = 0; i < N; i++) {
        sink_init(&off[i]);
        run_one(e, req(prompts[i], LEN, 10, &off[i]), &off[i]);
        assert_int_equal(off[i].cached_tokens, 0);
    }
    assert_int_equal(cache_metrics(e).prefix.misses, 0); /* off: never consulted */
    omnic__engine_destroy(e);
    const int64_t chunks[2] = {16, 5};
    size_t block_bytes = 0;
    for (int c = 0; c < 2; c++) {
        e = engine_prefix(dir, 2, chunks[c], 0, 16);
        sink_init(&on[0]);
        run_one(e, req(prompts[0], LEN, 10, &on[0]), &on[0]); /* stores blocks 0 and 1 (32 rows) */
        assert_int_equal(on[0].cached_tokens, 0);
        sink_init(&on[1]);
        run_one(e, req(prompts[1], LEN, 10, &on[1]), &on[1]); /* reuses them (the slot reused too) */
        assert_int_equal(on[1].cached_tokens, 32);
        uint64_t id;
        omnic_err err;
        for (int i = 2; i < N; i++) { /* two at once */
            sink_init(&on[i]);
            omnic__gen_request r = req(prompts[i], LEN, 10, &on[i]);
            assert_int_equal(omnic__engine_submit(e, &r, &id, &err), OMNIC_OK);
        }
        expect_same_tokens(on, off, N);
        omnic__metrics mm = cache_metrics(e);
        assert_int_equal(mm.prefix.reused_rows, 3 * 32);
        assert_int_equal(mm.prefix.hits, 3 * 2);
        assert_int_equal(mm.prefix.entries, 2); /* the shared blocks (47 rows hold 2 whole blocks) */
        assert_int_equal(mm.prefix.misses, 1);  /* the first prompt's lookup */
        block_bytes = mm.prefix.bytes / mm.prefix.entries;
        /* the same prompt again: its last block holds its last row, so 32 rows, not 47 */
        static sink again;
        sink_init(&again);
        run_one(e, req(prompts[0], 33, 10, &again), &again);
        assert_int_equal(again.cached_tokens, 32);
        omnic__engine_destroy(e);
    }
    /* a budget of one block and a half */
    e = engine_prefix(dir, 1, 16, (int64_t)(block_bytes * 3 / 2), 16);
    for (int i = 0; i < N; i++) {
        sink_init(&on[i]);
        run_one(e, req(prompts[i], LEN, 10, &on[i]), &on[i]);
    }
    expect_same_tokens(on, off, N);
    omnic__metrics mm = cache_metrics(e);
    assert_true(mm.prefix.evictions > 0);
    assert_int_equal(mm.prefix.entries, 1);
    omnic__engine_destroy(e);

    /* an image prompt twice: the second restores the rows before its last block */
    char llava[160];
    snprintf(llava, sizeof llava, "%s/llava", dir);
    static image_req ir;
    static sink img[2];
    e = engine_prefix(llava, 1, 16, 0, 4);
    image_req_init(&ir, omnic__engine_model(e), 0);
    for (int k = 0; k < 2; k++) {
        sink_init(&img[k]);
        omnic__gen_request r = req(ir.prompt, ir.n, 8, &img[k]);
        r.media = ir.media, r.n_media = 1;
        run_one(e, r, &img[k]);
    }
    assert_int_equal(img[0].cached_tokens, 0);
    assert_true(img[1].cached_tokens > 0);
    assert_true(cache_metrics(e).prefix.reused_rows > 9); /* past the image's 9 rows */
    expect_same_tokens(&img[1], &img[0], 1);
    omnic__engine_destroy(e);
    omnic__media_item_deinit(&ir.item);
}

/* Prefix-cache keys: rooted in the bundle identity (another checkpoint's or KV dtype's blocks
 * can never be found), chained (a block's key covers every row before it), and for embeddings
 * prompts covering the rest of a span that crosses the block's end. */
static void test_prefix_keys(void **state)
{
    (void)state;
    omnic__kv_pool kv;
    omnic_err err;
    assert_int_equal(omnic__kv_pool_init(&kv, 1, 1, 64, 1, 4, OMNIC_DTYPE_F16, &err), OMNIC_OK);
    omnic__prefix_cache *a, *b, *a2;
    assert_int_equal(omnic__prefix_cache_create(1 << 20, 4, &kv, "identity-a", &a, &err), OMNIC_OK);
    assert_int_equal(omnic__prefix_cache_create(1 << 20, 4, &kv, "identity-b", &b, &err), OMNIC_OK);
    assert_int_equal(omnic__prefix_cache_create(1 << 20, 4, &kv, "identity-a", &a2, &err), OMNIC_OK);
    int32_t t1[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, t2[12];
    memcpy(t2, t1, sizeof t1);
    t2[1] = 99; /* differs in block 0 only */
    uint8_t ka[3][32], kb[3][32], ka2[3][32], kc[3][32], kl[3][32], kad[3][32];
    assert_int_equal(omnic__prefix_cache_keys(a, t1, NULL, 12, 0, ka), 3);
    assert_int_equal(omnic__prefix_cache_keys(b, t1, NULL, 12, 0, kb), 3);
    assert_int_equal(omnic__prefix_cache_keys(a2, t1, NULL, 11, 0, ka2), 2); /* whole blocks only */
    assert_int_equal(omnic__prefix_cache_keys(a, t2, NULL, 12, 0, kc), 3);
    assert_int_equal(omnic__prefix_cache_keys(a, t1, NULL, 12, 1, kl), 3); /* the LongRoPE table */
    /* the adapter the rows ran with (the engine's variant: rope_long + 2 * (adapter + 1)) */
    assert_int_equal(omnic__prefix_cache_keys(a, t1, NULL, 12, 2, kad), 3);
    for (int i = 0; i < 3; i++) {
        assert_memory_not_equal(ka[i], kad[i], 32);
        assert_memory_not_equal(kl[i], kad[i], 32);
        assert_memory_not_equal(ka[i], kb[i], 32);
        assert_memory_not_equal(ka[i], kc[i], 32); /* the chain carries block 0's change */
        assert_memory_not_equal(ka[i], kl[i], 32);
    }
    assert_memory_equal(ka, ka2, 2 * 32);
    /* an embeddings prompt: 12 rows of width 2, a span over rows 2..6 crossing block 0's end */
    float emb[24], emb2[24];
    int32_t pos[12];
    for (int i = 0; i < 24; i++)
        emb[i] = emb2[i] = (float)i;
    for (int i = 0; i < 12; i++)
        pos[i] = i;
    emb2[2 * 5] = -1.0f; /* row 5: inside the span, after block 0 */
    omnic__row_span sp = {2, 7};
    omnic__prepared_prefill p1 = {
        .embeds = emb, .n_rows = 12, .hidden = 2, .positions = pos, .spans = &sp, .n_spans = 1};
    omnic__prepared_prefill p2 = p1;
    p2.embeds = emb2;
    uint8_t e1[3][32], e2[3][32];
    omnic__prefix_cache_keys(a, NULL, &p1, 12, 0, e1);
    omnic__prefix_cache_keys(a, NULL, &p2, 12, 0, e2);
    assert_memory_not_equal(e1[0], e2[0], 32); /* block 0's rows depend on row 5 through the span */
    p1.n_spans = p2.n_spans = 0;
    omnic__prefix_cache_keys(a, NULL, &p1, 12, 0, e1);
    omnic__prefix_cache_keys(a, NULL, &p2, 12, 0, e2);
    assert_memory_equal(e1[0], e2[0], 32); /* causal rows: block 0 does not */
    assert_memory_not_equal(e1[1], e2[1], 32);
    omnic__prefix_cache_destroy(a);
    omnic__prefix_cache_destroy(b);
    omnic__prefix_cache_destroy(a2);
    omnic__kv_pool_deinit(&kv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_equals_decode),
        cmocka_unit_test(test_concurrent_equals_alone),
        cmocka_unit_test(test_mixed_steps_equal_alone),
        cmocka_unit_test(test_longrope_replay_batched),
        cmocka_unit_test(test_images_mixed_batch),
        cmocka_unit_test(test_adapters_mixed_batch),
        cmocka_unit_test(test_gemma3n_media_mixed_batch),
        cmocka_unit_test(test_mrope_engine),
        cmocka_unit_test(test_qwen2vl_batch),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_stop_string),
        cmocka_unit_test(test_admission),
        cmocka_unit_test(test_timeout_and_metrics),
        cmocka_unit_test(test_queued_timeout),
        cmocka_unit_test(test_fair_admission),
        cmocka_unit_test(test_encoder_cache),
        cmocka_unit_test(test_media_memo),
        cmocka_unit_test(test_prefix_cache),
        cmocka_unit_test(test_prefix_keys),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
