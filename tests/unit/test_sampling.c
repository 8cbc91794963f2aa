/* Sampling: greedy ties and NaN, seeded determinism, each filter's effect, penalties,
 * the distribution of draws, and parameter validation. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/sampling.h"

static omnic__sampler make(omnic__sampling_params p, int64_t V)
{
    omnic__sampler s;
    omnic_err err;
    assert_int_equal(omnic__sampler_init(&s, &p, V, &err), OMNIC_OK);
    return s;
}

static void test_greedy(void **state)
{
    (void)state;
    omnic__sampler s = make(omnic__sampling_defaults(), 5);
    float l[5] = {1, 3, NAN, 3, -2};
    assert_int_equal(omnic__sampler_sample(&s, l), 1); /* tie: lowest id; NaN never chosen */
    float all_nan[5] = {NAN, NAN, NAN, NAN, NAN};
    assert_int_equal(omnic__sampler_sample(&s, all_nan), 0);
    omnic__sampler_deinit(&s);
}

static void draw(omnic__sampling_params p, const float *l, int64_t V, int n, int *counts)
{
    omnic__sampler s = make(p, V);
    memset(counts, 0, (size_t)V * sizeof *counts);
    for (int i = 0; i < n; i++) {
        omnic__sampler_reset(&s, &p); /* no penalties accumulate */
        p.seed++;
        s.p.seed = p.seed;
        int32_t t = omnic__sampler_sample(&s, l);
        assert_true(t >= 0 && t < V);
        counts[t]++;
    }
    omnic__sampler_deinit(&s);
}

static void test_distribution(void **state)
{
    (void)state;
    float l[4] = {logf(0.5f), logf(0.3f), logf(0.2f), -INFINITY};
    omnic__sampling_params p = omnic__sampling_defaults();
    p.temperature = 1.0f;
    int c[4];
    draw(p, l, 4, 20000, c);
    assert_true(fabs(c[0] / 20000.0 - 0.5) < 0.02);
    assert_true(fabs(c[1] / 20000.0 - 0.3) < 0.02);
    assert_true(fabs(c[2] / 20000.0 - 0.2) < 0.02);
    assert_int_equal(c[3], 0);
    /* top_k = 2 drops the third */
    p.top_k = 2;
    draw(p, l, 4, 4000, c);
    assert_int_equal(c[2], 0);
    assert_true(c[0] > c[1] && c[1] > 0);
    /* top_p = 0.75: 0.5 < 0.75, 0.5 + 0.3 crosses it: keep two */
    p.top_k = 0;
    p.top_p = 0.75f;
    draw(p, l, 4, 4000, c);
    assert_int_equal(c[2], 0);
    assert_true(c[1] > 0);
    /* tiny top_p: only the most likely */
    p.top_p = 0.01f;
    draw(p, l, 4, 500, c);
    assert_int_equal(c[0], 500);
    /* min_p = 0.5: keep p >= 0.25 (0.5 and 0.3) */
    p.top_p = 1.0f;
    p.min_p = 0.5f;
    draw(p, l, 4, 4000, c);
    assert_int_equal(c[2], 0);
    assert_true(c[1] > 0);
    /* top_k = 1 is greedy at any temperature */
    p.min_p = 0;
    p.top_k = 1;
    p.temperature = 5.0f;
    draw(p, l, 4, 300, c);
    assert_int_equal(c[0], 300);
    /* low temperature sharpens */
    p.top_k = 0;
    p.temperature = 0.05f;
    draw(p, l, 4, 1000, c);
    assert_true(c[0] > 990);
}

static void test_seed_determinism(void **state)
{
    (void)state;
    enum { V = 1000 };
    static float l[V];
    for (int i = 0; i < V; i++) l[i] = sinf((float)i) * 3;
    omnic__sampling_params p = omnic__sampling_defaults();
    p.temperature = 0.9f;
    p.top_p = 0.95f;
    p.seed = 1234;
    omnic__sampler a = make(p, V), b = make(p, V);
    int same = 1, diff_seed_same = 1;
    int32_t seq[64];
    for (int i = 0; i < 64; i++) {
        seq[i] = omnic__sampler_sample(&a, l);
        same &= seq[i] == omnic__sampler_sample(&b, l);
    }
    assert_true(same);
    p.seed = 1235;
    omnic__sampler_reset(&b, &p);
    for (int i = 0; i < 64; i++) diff_seed_same &= seq[i] == omnic__sampler_sample(&b, l);
    assert_false(diff_seed_same);
    /* reset with the first seed replays the sequence */
    p.seed = 1234;
    omnic__sampler_reset(&a, &p);
    for (int i = 0; i < 64; i++) assert_int_equal(omnic__sampler_sample(&a, l), seq[i]);
    omnic__sampler_deinit(&a);
    omnic__sampler_deinit(&b);
}

static void test_penalties(void **state)
{
    (void)state;
    float l[3] = {2.0f, 1.5f, -1.0f};
    omnic__sampling_params p = omnic__sampling_defaults();
    p.repetition_penalty = 2.0f; /* token 0: 2 / 2 = 1 < 1.5 */
    omnic__sampler s = make(p, 3);
    int32_t prompt[1] = {0};
    omnic__sampler_add_prompt(&s, prompt, 1);
    assert_int_equal(omnic__sampler_sample(&s, l), 1);
    omnic__sampler_deinit(&s);
    /* frequency penalty: each generation of token 0 costs 0.3; presence 0.1 once */
    p = omnic__sampling_defaults();
    p.frequency_penalty = 0.3f;
    p.presence_penalty = 0.1f;
    s = make(p, 3);
    assert_int_equal(omnic__sampler_sample(&s, l), 0); /* 2.0 */
    assert_int_equal(omnic__sampler_sample(&s, l), 0); /* 2.0 - 0.1 - 0.3 = 1.6 > 1.5 */
    assert_int_equal(omnic__sampler_sample(&s, l), 1); /* 2.0 - 0.1 - 0.6 = 1.3 < 1.5 */
    omnic__sampler_deinit(&s);
}

static void test_validation(void **state)
{
    (void)state;
    omnic_err err;
    omnic__sampling_params p = omnic__sampling_defaults();
    p.top_p = 0;
    assert_int_equal(omnic__sampling_validate(&p, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "top_p 0"));
    p = omnic__sampling_defaults();
    p.temperature = -1;
    assert_int_equal(omnic__sampling_validate(&p, &err), OMNIC_E_INVALID);
    p = omnic__sampling_defaults();
    p.temperature = NAN;
    assert_int_equal(omnic__sampling_validate(&p, &err), OMNIC_E_INVALID);
    p = omnic__sampling_defaults();
    p.top_k = -3;
    assert_int_equal(omnic__sampling_validate(&p, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "top_k -3"));
    p = omnic__sampling_defaults();
    p.min_p = 1.5f;
    assert_int_equal(omnic__sampling_validate(&p, &err), OMNIC_E_INVALID);
    p = omnic__sampling_defaults();
    p.repetition_penalty = 0;
    assert_int_equal(omnic__sampling_validate(&p, &err), OMNIC_E_INVALID);
    p = omnic__sampling_defaults();
    p.frequency_penalty = 3;
    assert_int_equal(omnic__sampling_validate(&p, &err), OMNIC_E_INVALID);
    omnic__sampler s;
    assert_int_equal(omnic__sampler_init(&s, &p, 10, &err), OMNIC_E_INVALID);
    p = omnic__sampling_defaults();
    assert_int_equal(omnic__sampler_init(&s, &p, 0, &err), OMNIC_E_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),    cmocka_unit_test(test_distribution), cmocka_unit_test(test_seed_determinism),
        cmocka_unit_test(test_penalties), cmocka_unit_test(test_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
