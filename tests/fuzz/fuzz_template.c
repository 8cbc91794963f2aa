/* libFuzzer target for chat templates: the input is the template text, rendered against a fixed
 * conversation (system, multi-turn, image and text parts, tools). Every input must parse or fail
 * with a message, and render or fail with a message, within the server's limits: never a crash,
 * a hang or unbounded memory. Seeds: tests/fuzz/corpus/template/ (real chat templates). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/budget.h"
#include "io/json.h"
#include "tokenizer/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char VARS[] =
    "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_generation_prompt\": true, \"tools\": "
    "[{\"type\": "
    "\"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": "
    "{\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}], \"documents\": null, \"messages\": ["
    "{\"role\": \"system\", \"content\": \"You are helpful.\"},"
    "{\"role\": \"user\", \"content\": [{\"type\": \"image\"}, {\"type\": \"text\", \"text\": \"What is "
    "this?\"}]},"
    "{\"role\": \"assistant\", \"content\": \"<think>\\nhmm\\n</think>\\n\\nA cat.\", \"tool_calls\": "
    "[{\"type\": "
    "\"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}]},"
    "{\"role\": \"tool\", \"content\": \"sunny\"},"
    "{\"role\": \"user\", \"content\": \"Thanks! \\u00e9\\u4e16 \\ud83d\\ude00\"}]}";

static void check(omnic_status rc, const omnic_err *err)
{
    if (rc != OMNIC_OK &&
        (err->code != rc || memchr(err->msg, '\0', sizeof err->msg) == NULL || !err->msg[0]))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *vars;
    omnic_err err;
    if (!vars && omnic__json_parse(VARS, strlen(VARS), "fuzz vars", &vars, &err) != OMNIC_OK)
        __builtin_trap();
    /* the production limits: the server's per-request budget (core/budget.h) and the library's
     * caps for the rest; the fixed clock keeps runs reproducible */
    omnic__budget b;
    omnic__budget_server(&b);
    omnic__template_opts opts = {.max_output = b.template_output,
                                 .max_work = b.template_work,
                                 .max_iterations = b.template_steps,
                                 .now = 1721952000};
    omnic__template *t = NULL;
    char *out = NULL;
    size_t len = 0;
    omnic_err_clear(&err);
    omnic_status rc = omnic__template_parse((const char *)data, size, &opts, &t, &err);
    check(rc, &err);
    if (rc == OMNIC_OK) {
        omnic_err_clear(&err);
        rc = omnic__template_render(t, vars, &opts, &out, &len, &err);
        check(rc, &err);
        if (rc == OMNIC_OK && (strlen(out) > len || len > opts.max_output)) __builtin_trap();
        omnic_free(out);
    }
    omnic__template_destroy(t);
    return 0;
}
