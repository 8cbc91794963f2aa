/* Chat prompts: the special tokens added after the template, as transformers 4.57.6 / 5.2.0 add
 * them (tokenizer.apply_chat_template: none; processor.apply_chat_template: the post-processor's,
 * unless the rendered text starts with the tokenizer's bos_token string). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/chat.h"

/* Whitespace-split BPE whose post-processor adds <s> ... </s> (ids 1 and 2): "abc" is 7. */
static const char *k_tok =
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n"
    " \"added_tokens\": [\n"
    "  {\"id\": 0, \"content\": \"<unk>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false,"
    "   \"normalized\": false, \"special\": true},\n"
    "  {\"id\": 1, \"content\": \"<s>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false,"
    "   \"normalized\": false, \"special\": true},\n"
    "  {\"id\": 2, \"content\": \"</s>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false,"
    "   \"normalized\": false, \"special\": true}],\n"
    " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"},\n"
    " \"post_processor\": {\"type\": \"TemplateProcessing\",\n"
    "   \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", "
    "\"type_id\": 0}},"
    "              {\"SpecialToken\": {\"id\": \"</s>\", \"type_id\": 0}}],\n"
    "   \"pair\": [], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1], \"tokens\": [\"<s>\"]},"
    "                                   \"</s>\": {\"id\": \"</s>\", \"ids\": [2], \"tokens\": "
    "[\"</s>\"]}}},\n"
    " \"decoder\": null,\n"
    " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\", "
    "\"continuing_subword_prefix\": null,"
    "   \"end_of_word_suffix\": null, \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": "
    "false,\n"
    "   \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"a\": 3, \"b\": 4, \"c\": 5, \"ab\": 6, \"abc\": "
    "7},\n"
    "   \"merges\": [\"a b\", \"ab c\"]}}\n";

/* Renders [{"role": "user", "content": "abc"}] with template under tokenizer_config tc and
 * checks the ids. */
static void expect(const char *tc, const char *template, bool processor, const int32_t *want, size_t n_want)
{
    omnic_err err;
    omnic_err_clear(&err);
    omnic__tokenizer *tok = NULL;
    assert_int_equal(omnic__tokenizer_load_buffer(k_tok, strlen(k_tok), tc, strlen(tc), "tok", &tok, &err),
                     OMNIC_OK);
    json_error_t je;
    json_t *tcj = json_loads(tc, 0, &je),
           *msgs = json_loads("[{\"role\": \"user\", \"content\": \"abc\"}]", 0, &je);
    assert_non_null(tcj);
    assert_non_null(msgs);
    char dir[] = "ck";
    omnic__checkpoint ck = {.dir = dir,
                            .tokenizer_config = tcj,
                            .chat_template = (char *)(uintptr_t) template,
                            .chat_template_source = "chat_template.jinja"};
    omnic__chat *c = NULL;
    if (omnic__chat_create(&ck, NULL, processor, &c, &err) != OMNIC_OK) fail_msg("%s", err.msg);
    char *text = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    if (omnic__chat_apply(c, tok, msgs, false, NULL, NULL, NULL, 0, &text, &ids, &n, &err) != OMNIC_OK)
        fail_msg("%s", err.msg);
    if (n != n_want || memcmp(ids, want, n * sizeof *ids) != 0) {
        char got[128] = "";
        for (size_t i = 0; i < n && strlen(got) < 100; i++)
            snprintf(got + strlen(got), 12, "%d ", ids[i]);
        fail_msg("template %s (processor %d) on '%s': ids %s, want %zu ids", template, processor, text, got,
                 n_want);
    }
    omnic_free(text);
    omnic_free(ids);
    omnic__chat_destroy(c);
    json_decref(msgs);
    json_decref(tcj);
    omnic__tokenizer_free(tok);
}

static void test_special_tokens(void **state)
{
    (void)state;
    const char *tc = "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";
    const char *plain = "{{ messages[0]['content'] }}",
               *with_bos = "{{ bos_token }}{{ messages[0]['content'] }}";
    /* text-only (tokenizer.apply_chat_template): never any */
    expect(tc, plain, false, (int32_t[]){7}, 1);
    expect(tc, with_bos, false, (int32_t[]){1, 7}, 2);
    /* processor: the post-processor's tokens (both of them here) unless the text starts with bos_token */
    expect(tc, plain, true, (int32_t[]){1, 7, 2}, 3);
    expect(tc, with_bos, true, (int32_t[]){1, 7}, 2);
    /* startswith, exactly: a space before the BOS does not count (HF then has two) */
    expect(tc, " {{ bos_token }}{{ messages[0]['content'] }}", true, (int32_t[]){1, 1, 7, 2}, 4);
    /* bos_token given as an AddedToken object */
    expect("{\"bos_token\": {\"content\": \"<s>\", \"__type\": \"AddedToken\"}}", with_bos, true,
           (int32_t[]){1, 7}, 2);
    /* no bos_token (Qwen2): nothing to compare with, the post-processor runs */
    expect("{\"bos_token\": null}", with_bos, true, (int32_t[]){1, 7, 2}, 3);
    expect("{}", "<s>{{ messages[0]['content'] }}", true, (int32_t[]){1, 1, 7, 2}, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_special_tokens)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
