/* `omnic template -m DIR`: renders a conversation (stdin JSON) with a checkpoint's chat template,
 * passing the variables transformers' apply_chat_template passes. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/limits.h"
#include "io/checkpoint.h"
#include "io/file.h"
#include "tokenizer/template.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: omnic template -m DIR [--template FILE] [--add-generation-prompt] [--bos TOKEN] "
               "[--eos TOKEN]\n"
               "                      < conversation.json\n"
               "  stdin: a JSON list of messages, or {\"messages\": [...], ...keyword arguments}\n"
               "  -m DIR                   checkpoint whose chat template and tokenizer_config.json to use\n"
               "  --template FILE          render FILE (Jinja text) instead of the checkpoint's template\n"
               "  --add-generation-prompt  set add_generation_prompt (else the input's value, else false)\n"
               "  --bos TOKEN, --eos TOKEN bos_token / eos_token (default: tokenizer_config.json's)\n"
               "prints the rendered prompt to stdout (no newline added)\n");
}

/* Reads all of stdin (at most max bytes) into an owned buffer. */
static char *read_stdin(size_t max, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = omnic_malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                fprintf(stderr, "omnic template: stdin is over %zu bytes (OMNIC_MAX_CLI_INPUT_BYTES)\n", max);
                omnic_free(buf);
                return NULL;
            }
            size_t ncap = cap * 2 > max ? max : cap * 2;
            char *nb = omnic_realloc(buf, ncap);
            if (!nb) {
                omnic_free(buf);
                fprintf(stderr, "omnic template: out of memory reading stdin\n");
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        size_t k = fread(buf + n, 1, cap - n, stdin);
        n += k;
        if (k == 0) break;
    }
    if (ferror(stdin)) {
        fprintf(stderr, "omnic template: cannot read stdin\n");
        omnic_free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int omnic__cli_template(int argc, char **argv)
{
    const char *dir = NULL, *tmpl_path = NULL, *bos = NULL, *eos = NULL;
    bool agp = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--add-generation-prompt")) {
            agp = true;
            continue;
        }
        int r;
        if ((r = omnic__arg_str(argc, argv, &i, "-m", "--model", &dir)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--template", &tmpl_path)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--bos", &bos)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--eos", &eos)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        fprintf(stderr, "omnic template: unknown option '%s'\n", a);
        usage(stderr);
        return 2;
    }
    if (!dir && !tmpl_path) {
        fprintf(stderr, "omnic template: -m DIR is required (or --template FILE)\n");
        usage(stderr);
        return 2;
    }

    int status = 1;
    omnic_err err;
    omnic_err_clear(&err);
    omnic__checkpoint *ck = NULL;
    omnic__template *t = NULL;
    char *file_text = NULL, *input = NULL, *out = NULL;
    json_t *conv = NULL, *extra = NULL, *vars = NULL;
    const char *text = NULL, *source = NULL;
    size_t text_len = 0, input_len = 0, out_len = 0;

    if (dir) {
        if (omnic__checkpoint_open(dir, &ck, &err) != OMNIC_OK) {
            fprintf(stderr, "omnic template: %s: %s\n", dir, err.msg);
            goto done;
        }
        if (ck->chat_template) {
            text = ck->chat_template;
            text_len = strlen(text);
            source = ck->chat_template_source;
        }
    }
    if (tmpl_path) {
        if (omnic__read_file(tmpl_path, OMNIC_MAX_TEMPLATE_BYTES, &file_text, &text_len, &err) != OMNIC_OK) {
            fprintf(stderr, "omnic template: %s\n", err.msg);
            goto done;
        }
        text = file_text;
        source = tmpl_path;
    }
    if (!text) {
        fprintf(
            stderr,
            "omnic template: %s has no chat template (looked for chat_template.jinja, chat_template.json, "
            "tokenizer_config.json and processor_config.json); pass --template FILE\n",
            dir);
        goto done;
    }

    if (!(input = read_stdin(OMNIC_MAX_CLI_INPUT_BYTES, &input_len))) goto done;
    json_error_t jerr;
    conv = json_loadb(input, input_len, JSON_DECODE_ANY, &jerr);
    if (!conv) {
        fprintf(stderr, "omnic template: stdin: malformed JSON at line %d, column %d: %s\n", jerr.line,
                jerr.column, jerr.text);
        goto done;
    }
    const json_t *messages = conv;
    if (json_is_object(conv)) {
        messages = json_object_get(conv, "messages");
        if (!json_is_array(messages)) {
            fprintf(stderr, "omnic template: stdin: 'messages' must be a list of messages\n");
            goto done;
        }
        if (!(extra = json_copy(conv)) || json_object_del(extra, "messages")) {
            fprintf(stderr, "omnic template: out of memory\n");
            goto done;
        }
    } else if (!json_is_array(conv)) {
        fprintf(stderr, "omnic template: stdin must be a list of messages or {\"messages\": [...], ...}\n");
        goto done;
    }
    if (omnic__template_chat_vars(ck ? ck->tokenizer_config : NULL, messages, extra, agp, &vars, &err) !=
        OMNIC_OK) {
        fprintf(stderr, "omnic template: %s\n", err.msg);
        goto done;
    }
    if ((bos && json_object_set_new(vars, "bos_token", json_string(bos))) ||
        (eos && json_object_set_new(vars, "eos_token", json_string(eos)))) {
        fprintf(stderr, "omnic template: --bos/--eos must be valid UTF-8\n");
        goto done;
    }
    if (omnic__template_parse(text, text_len, NULL, &t, &err) != OMNIC_OK ||
        omnic__template_render(t, vars, NULL, &out, &out_len, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic template: %s: %s\n", source, err.msg);
        goto done;
    }
    if (fwrite(out, 1, out_len, stdout) != out_len || fflush(stdout)) {
        fprintf(stderr, "omnic template: cannot write stdout\n");
        goto done;
    }
    status = 0;
done:
    omnic_free(out);
    omnic__template_destroy(t);
    json_decref(vars);
    json_decref(extra);
    json_decref(conv);
    omnic_free(input);
    omnic_free(file_text);
    omnic__checkpoint_close(ck);
    return status;
}
