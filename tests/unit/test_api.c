/* The public C API (include/omnic/omnic.h) on tiny checkpoints: loading and info, requests
 * from several threads at once on one model (each reply equal to the same request alone),
 * token-id prompts, cancel, and the errors of bad calls (versions, no prompt or two, image
 * counts, images to a text model, bad JSON, bad sampling). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "model_testutil.h"
#include "omnic/omnic.h"

static char g_dir[64];

typedef struct reply {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    char text[4096];
    size_t len;
    char finish[16];
    int64_t completion;
} reply;

static void on_event(void *user, const omnic_event *ev)
{
    reply *r = user;
    pthread_mutex_lock(&r->mu);
    if (ev->kind == OMNIC_EVENT_TEXT) {
        size_t n = ev->len < sizeof r->text - 1 - r->len ? ev->len : sizeof r->text - 1 - r->len;
        memcpy(r->text + r->len, ev->text, n);
        r->len += n;
    } else {
        snprintf(r->finish, sizeof r->finish, "%s", ev->finish);
        r->completion = ev->completion_tokens;
        r->done = true;
        pthread_cond_signal(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

static void reply_init(reply *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static void reply_wait(reply *r)
{
    pthread_mutex_lock(&r->mu);
    while (!r->done)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

static omnic_request chat_request(const char *messages, reply *r)
{
    return (omnic_request){.api_version = OMNIC_API_VERSION,
                           .messages_json = messages,
                           .max_tokens = 12,
                           .ignore_eos = true,
                           .on_event = on_event,
                           .user = r};
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/omnic-test-api-%d", (int)getpid());
    sh("rm -rf %s && " PY " tools/mktiny.py --family qwen2 --out %s/q >/dev/null && " PY
       " tools/mktiny.py --family llava --vision clip --text llama --out %s/llava >/dev/null",
       g_dir, g_dir, g_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return mt_rmdir(g_dir);
}

static const char *const questions[] = {
    "[{\"role\": \"user\", \"content\": \"Tell me about foxes.\"}]",
    "[{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Two\"}, {\"type\": \"text\", \"text\": "
    "\"parts\"}]}]",
    "[{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"The dog?\"}]",
    "[{\"role\": \"user\", \"content\": \"A longer question about the quick brown fox and the lazy dog.\"}]",
};
enum { NQ = sizeof questions / sizeof questions[0] };

typedef struct job {
    omnic_model *m;
    int q;
    reply r;
} job;

static void *submit_thread(void *arg)
{
    job *j = arg;
    omnic_request req = chat_request(questions[j->q], &j->r);
    uint64_t id;
    omnic_err err;
    omnic_err_clear(&err);
    if (omnic_submit(j->m, &req, &id, &err) != OMNIC_OK) {
        fprintf(stderr, "submit: %s\n", err.msg);
        j->r.done = true;
        snprintf(j->r.finish, sizeof j->r.finish, "failed");
        return NULL;
    }
    reply_wait(&j->r);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/q", g_dir);
    omnic_model_params p = omnic_model_params_default();
    p.parallel = 2;
    p.threads = 1;
    omnic_model *m = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    assert_int_equal(omnic_model_load(path, &p, &m, &err), OMNIC_OK);
    omnic_model_info info = omnic_model_get_info(m);
    assert_string_equal(info.family, "qwen2");
    assert_int_equal(info.parallel, 2);
    assert_true(info.chat_template && !info.image_input && !info.audio_input);
    assert_int_equal(strlen(info.identity), 64);
    job alone[NQ], together[2 * NQ];
    for (int q = 0; q < NQ; q++) { /* each alone */
        alone[q] = (job){.m = m, .q = q};
        reply_init(&alone[q].r);
        submit_thread(&alone[q]);
        assert_string_equal(alone[q].r.finish, "length");
        assert_int_equal(alone[q].r.completion, 12);
    }
    pthread_t th[2 * NQ]; /* twice each, from 8 threads at once, on 2 slots */
    for (int i = 0; i < 2 * NQ; i++) {
        together[i] = (job){.m = m, .q = i % NQ};
        reply_init(&together[i].r);
        assert_int_equal(pthread_create(&th[i], NULL, submit_thread, &together[i]), 0);
    }
    for (int i = 0; i < 2 * NQ; i++) {
        pthread_join(th[i], NULL);
        assert_string_equal(together[i].r.finish, "length");
        assert_string_equal(together[i].r.text, alone[i % NQ].r.text);
    }
    omnic_model_free(m);
}

static void test_tokens_cancel_errors(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/q", g_dir);
    omnic_model *m = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    assert_int_equal(omnic_model_load(path, NULL, &m, &err), OMNIC_OK);
    reply r;
    reply_init(&r);
    const int32_t ids[] = {1, 2, 3, 4, 5};
    omnic_request req = {.api_version = OMNIC_API_VERSION,
                         .tokens = ids,
                         .n_tokens = 5,
                         .max_tokens = 2000,
                         .ignore_eos = true,
                         .on_event = on_event,
                         .user = &r};
    uint64_t id;
    assert_int_equal(omnic_submit(m, &req, &id, &err), OMNIC_OK);
    omnic_cancel(m, id);
    reply_wait(&r);
    assert_string_equal(r.finish, "cancelled");
    assert_true(r.completion < 2000);
    omnic_cancel(m, id); /* finished: ignored */

    struct {
        omnic_request req;
        omnic_status want;
        const char *needle;
    } bad[] = {
        {{.api_version = OMNIC_API_VERSION + 1, .tokens = ids, .n_tokens = 5, .on_event = on_event},
         OMNIC_E_INVALID,
         "api_version"},
        {{.api_version = OMNIC_API_VERSION, .on_event = on_event}, OMNIC_E_INVALID, "one of messages_json"},
        {{.api_version = OMNIC_API_VERSION, .tokens = ids, .n_tokens = 5, .messages_json = "[]",
          .on_event = on_event},
         OMNIC_E_INVALID,
         "one of messages_json"},
        {{.api_version = OMNIC_API_VERSION, .tokens = ids, .n_tokens = 5}, OMNIC_E_INVALID, "on_event"},
        {{.api_version = OMNIC_API_VERSION, .messages_json = "[{\"role\": ", .on_event = on_event},
         OMNIC_E_INVALID,
         "messages_json: line 1"},
        {{.api_version = OMNIC_API_VERSION, .messages_json = "{}", .on_event = on_event},
         OMNIC_E_INVALID,
         "non-empty array"},
        {{.api_version = OMNIC_API_VERSION,
          .tokens = ids,
          .n_tokens = 5,
          .n_images = 1,
          .images = &(omnic_media){"x", 1},
          .on_event = on_event},
         OMNIC_E_UNSUPPORTED,
         "does not take image input"},
        {{.api_version = OMNIC_API_VERSION, .tokens = ids, .n_tokens = 5, .top_p = 2.0f, .on_event = on_event},
         OMNIC_E_INVALID,
         "top_p"},
        {{.api_version = OMNIC_API_VERSION, .tokens = ids, .n_tokens = 5, .max_tokens = 1 << 30,
          .on_event = on_event},
         OMNIC_E_CAPACITY,
         "exceeds the context of 2048"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        omnic_err_clear(&err);
        bad[i].req.user = &r;
        omnic_status s = omnic_submit(m, &bad[i].req, &id, &err);
        if (s != bad[i].want || !strstr(err.msg, bad[i].needle))
            fprintf(stderr, "bad call %zu: %s '%s'\n", i, omnic_status_name(s), err.msg);
        assert_int_equal(s, bad[i].want);
        assert_non_null(strstr(err.msg, bad[i].needle));
    }
    omnic_model_free(m);

    omnic_model_params p = omnic_model_params_default();
    p.api_version = 0;
    assert_int_equal(omnic_model_load(path, &p, &m, &err), OMNIC_E_INVALID);
    assert_int_not_equal(omnic_model_load("/nonexistent/omnic", NULL, &m, &err), OMNIC_OK);
    assert_non_null(strstr(err.msg, "/nonexistent/omnic"));
}

static void test_image_count(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/llava", g_dir);
    omnic_model *m = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    assert_int_equal(omnic_model_load(path, NULL, &m, &err), OMNIC_OK);
    assert_true(omnic_model_get_info(m).image_input);
    reply r;
    reply_init(&r);
    omnic_request req =
        chat_request("[{\"role\": \"user\", \"content\": [{\"type\": \"image\"}, {\"type\": \"text\", \"text\": "
                     "\"What?\"}]}]",
                     &r);
    uint64_t id;
    assert_int_equal(omnic_submit(m, &req, &id, &err), OMNIC_E_INVALID); /* one part, no image */
    assert_non_null(strstr(err.msg, "1 image parts in messages_json, 0 images"));
    req.images = &(omnic_media){"not an image", 12};
    req.n_images = 1;
    assert_int_not_equal(omnic_submit(m, &req, &id, &err), OMNIC_OK);
    assert_non_null(strstr(err.msg, "images[0]"));
    omnic_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_tokens_cancel_errors),
        cmocka_unit_test(test_image_count),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
