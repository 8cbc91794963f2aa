/* `omnic tokenize` and `omnic detokenize`: text <-> token ids with a model's tokenizer.json, one
 * text per call or one JSON value per line (--jsonl). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/limits.h"
#include "tokenizer/detok_stream.h"
#include "tokenizer/tokenizer.h"

/* Reads all of stdin into an owned buffer (NUL-terminated). Returns 0, or 1 after printing an error. */
static int read_stdin(const char *cmd, char **out, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = omnic_malloc(cap);
    if (!buf) {
        fprintf(stderr, "omnic %s: out of memory reading stdin\n", cmd);
        return 1;
    }
    for (;;) {
        if (cap - n < 4096) {
            if (cap >= OMNIC_MAX_CLI_INPUT_BYTES) {
                fprintf(stderr, "omnic %s: stdin is over the %zu byte limit\n", cmd,
                        (size_t)OMNIC_MAX_CLI_INPUT_BYTES);
                omnic_free(buf);
                return 1;
            }
            char *p = omnic_realloc(buf, cap * 2);
            if (!p) {
                fprintf(stderr, "omnic %s: out of memory reading stdin\n", cmd);
                omnic_free(buf);
                return 1;
            }
            buf = p;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, stdin);
        n += r;
        if (r == 0) break;
    }
    if (ferror(stdin)) {
        fprintf(stderr, "omnic %s: error reading stdin\n", cmd);
        omnic_free(buf);
        return 1;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

static void print_ids(const int32_t *ids, size_t n)
{
    putchar('[');
    for (size_t i = 0; i < n; i++)
        printf(i ? ",%d" : "%d", (int)ids[i]);
    fputs("]\n", stdout);
}

/* Writes s[0..n) (valid UTF-8) as a JSON string. */
static void print_json_string(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"':
            fputs("\\\"", stdout);
            break;
        case '\\':
            fputs("\\\\", stdout);
            break;
        case '\n':
            fputs("\\n", stdout);
            break;
        case '\r':
            fputs("\\r", stdout);
            break;
        case '\t':
            fputs("\\t", stdout);
            break;
        default:
            if (c < 0x20)
                printf("\\u%04x", c);
            else
                putchar(c);
        }
    }
    fputs("\"\n", stdout);
}

typedef struct opts {
    const char *model;
    bool special; /* tokenize: add special tokens; detokenize: skip them */
    bool jsonl;
    bool stream;
} opts;

static int parse_opts(const char *cmd, int argc, char **argv, opts *o, void (*usage)(FILE *))
{
    memset(o, 0, sizeof *o);
    bool is_tok = !strcmp(cmd, "tokenize");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        int r = omnic__arg_str(argc, argv, &i, "-m", "--model", &o->model);
        if (r < 0) return 2;
        if (r) continue;
        if (is_tok && !strcmp(a, "--special"))
            o->special = true;
        else if (!is_tok && !strcmp(a, "--skip-special"))
            o->special = true;
        else if (!is_tok && !strcmp(a, "--stream"))
            o->stream = true;
        else if (!strcmp(a, "--jsonl"))
            o->jsonl = true;
        else {
            fprintf(stderr, "omnic %s: unknown option '%s'\n", cmd, a);
            usage(stderr);
            return 2;
        }
    }
    if (!o->model) {
        fprintf(stderr, "omnic %s: -m DIR|tokenizer.json is required\n", cmd);
        usage(stderr);
        return 2;
    }
    return -1;
}

static int load(const char *cmd, const char *path, omnic__tokenizer **t)
{
    omnic_err err;
    omnic_err_clear(&err);
    if (omnic__tokenizer_load(path, t, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic %s: %s\n", cmd, err.msg);
        return 1;
    }
    return 0;
}

/* The next line of buf (without its '\n'); false at the end. A final line without '\n' counts. */
static bool next_line(char **cur, char *end, char **line, size_t *len)
{
    if (*cur >= end) return false;
    char *nl = memchr(*cur, '\n', (size_t)(end - *cur));
    *line = *cur;
    *len = nl ? (size_t)(nl - *cur) : (size_t)(end - *cur);
    *cur = nl ? nl + 1 : end;
    return true;
}

static void usage_tokenize(FILE *f)
{
    fprintf(f, "usage: omnic tokenize -m DIR|tokenizer.json [--special] [--jsonl]\n"
               "  reads stdin as one text and prints its token ids as a JSON array\n"
               "  --special  add the special tokens of the post-processor (BOS/EOS)\n"
               "  --jsonl    each stdin line is one JSON string; prints one JSON array per line\n");
}

int omnic__cli_tokenize(int argc, char **argv)
{
    opts o;
    int r = parse_opts("tokenize", argc, argv, &o, usage_tokenize);
    if (r >= 0) return r;
    omnic__tokenizer *t = NULL;
    if (load("tokenize", o.model, &t)) return 1;
    char *in = NULL;
    size_t n = 0;
    int rc = 1;
    if (read_stdin("tokenize", &in, &n)) goto out;
    omnic_err err;
    omnic_err_clear(&err);
    if (!o.jsonl) {
        int32_t *ids;
        size_t k;
        if (omnic__tokenizer_encode(t, in, n, o.special, &ids, &k, &err) != OMNIC_OK) {
            fprintf(stderr, "omnic tokenize: %s\n", err.msg);
            goto out;
        }
        print_ids(ids, k);
        omnic_free(ids);
        rc = 0;
        goto out;
    }
    char *cur = in, *line;
    size_t len, lineno = 0;
    while (next_line(&cur, in + n, &line, &len)) {
        lineno++;
        json_error_t je;
        json_t *v = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!v || !json_is_string(v)) {
            fprintf(stderr, "omnic tokenize: stdin line %zu: %s\n", lineno,
                    v ? "expected a JSON string" : je.text);
            json_decref(v);
            goto out;
        }
        int32_t *ids;
        size_t k;
        omnic_status st = omnic__tokenizer_encode(t, json_string_value(v), json_string_length(v), o.special,
                                                  &ids, &k, &err);
        json_decref(v);
        if (st != OMNIC_OK) {
            fprintf(stderr, "omnic tokenize: stdin line %zu: %s\n", lineno, err.msg);
            goto out;
        }
        print_ids(ids, k);
        omnic_free(ids);
    }
    rc = 0;
out:
    if (fflush(stdout) != 0 && rc == 0) {
        fprintf(stderr, "omnic tokenize: error writing stdout\n");
        rc = 1;
    }
    omnic_free(in);
    omnic__tokenizer_free(t);
    return rc;
}

static void usage_detokenize(FILE *f)
{
    fprintf(f, "usage: omnic detokenize -m DIR|tokenizer.json [--skip-special] [--jsonl] [--stream]\n"
               "  reads a JSON array of token ids from stdin and prints the text\n"
               "  --skip-special  leave out special tokens\n"
               "  --jsonl         each stdin line is one JSON array; prints one JSON string per line\n"
               "  --stream        decode through the streaming detokenizer (text as it becomes final)\n");
}

/* The ids of JSON array v into an owned array. Returns 0, or 1 after printing an error. */
static int ids_of(const json_t *v, const char *where, int32_t **ids, size_t *n)
{
    if (!json_is_array(v)) {
        fprintf(stderr, "omnic detokenize: %s: expected a JSON array of token ids\n", where);
        return 1;
    }
    size_t k = json_array_size(v);
    if (k > OMNIC_MAX_DECODE_IDS) {
        fprintf(stderr, "omnic detokenize: %s: %zu ids, over the %zu limit\n", where, k,
                (size_t)OMNIC_MAX_DECODE_IDS);
        return 1;
    }
    int32_t *a = omnic_alloc_array(k ? k : 1, sizeof *a);
    if (!a) {
        fprintf(stderr, "omnic detokenize: %s: out of memory for %zu ids\n", where, k);
        return 1;
    }
    for (size_t i = 0; i < k; i++) {
        const json_t *e = json_array_get(v, i);
        json_int_t x = json_is_integer(e) ? json_integer_value(e) : -1;
        if (!json_is_integer(e) || x < INT32_MIN || x > INT32_MAX) {
            fprintf(stderr, "omnic detokenize: %s: element %zu is not a token id\n", where, i);
            omnic_free(a);
            return 1;
        }
        a[i] = (int32_t)x;
    }
    *ids = a;
    *n = k;
    return 0;
}

/* Decodes ids (whole or streamed); prints the text raw or as a JSON string line. */
static int detok_one(const omnic__tokenizer *t, const opts *o, const int32_t *ids, size_t n,
                     const char *where)
{
    omnic_err err;
    omnic_err_clear(&err);
    if (!o->stream) {
        char *text;
        size_t len;
        if (omnic__tokenizer_decode(t, ids, n, o->special, &text, &len, &err) != OMNIC_OK) {
            fprintf(stderr, "omnic detokenize: %s: %s\n", where, err.msg);
            return 1;
        }
        if (o->jsonl)
            print_json_string(text, len);
        else
            fwrite(text, 1, len, stdout);
        omnic_free(text);
        return 0;
    }
    omnic__detok_stream s;
    if (omnic__detok_stream_init(&s, t, o->special, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic detokenize: %s\n", err.msg);
        return 1;
    }
    char *acc = NULL;
    size_t acc_len = 0, acc_cap = 0;
    int rc = 1;
    for (size_t i = 0; i <= n; i++) {
        const char *piece;
        size_t len;
        omnic_status st = i < n ? omnic__detok_stream_push(&s, ids[i], &piece, &len, &err)
                                : omnic__detok_stream_flush(&s, &piece, &len, &err);
        if (st != OMNIC_OK) {
            fprintf(stderr, "omnic detokenize: %s: %s\n", where, err.msg);
            goto out;
        }
        if (!o->jsonl) {
            fwrite(piece, 1, len, stdout);
            fflush(stdout);
            continue;
        }
        if (acc_len + len + 1 > acc_cap) {
            size_t cap = (acc_len + len + 1) * 2;
            char *p = omnic_realloc(acc, cap);
            if (!p) {
                fprintf(stderr, "omnic detokenize: %s: out of memory\n", where);
                goto out;
            }
            acc = p;
            acc_cap = cap;
        }
        memcpy(acc + acc_len, piece, len);
        acc_len += len;
    }
    if (o->jsonl) print_json_string(acc ? acc : "", acc_len);
    rc = 0;
out:
    omnic_free(acc);
    omnic__detok_stream_deinit(&s);
    return rc;
}

int omnic__cli_detokenize(int argc, char **argv)
{
    opts o;
    int r = parse_opts("detokenize", argc, argv, &o, usage_detokenize);
    if (r >= 0) return r;
    omnic__tokenizer *t = NULL;
    if (load("detokenize", o.model, &t)) return 1;
    char *in = NULL;
    size_t n = 0;
    int rc = 1;
    if (read_stdin("detokenize", &in, &n)) goto out;
    if (!o.jsonl) {
        json_error_t je;
        json_t *v = json_loadb(in, n, JSON_DECODE_ANY, &je);
        if (!v) {
            fprintf(stderr, "omnic detokenize: stdin:%d:%d: %s\n", je.line, je.column, je.text);
            goto out;
        }
        int32_t *ids = NULL;
        size_t k = 0;
        int bad = ids_of(v, "stdin", &ids, &k);
        json_decref(v);
        if (bad) goto out;
        rc = detok_one(t, &o, ids, k, "stdin");
        omnic_free(ids);
        goto out;
    }
    char *cur = in, *line;
    size_t len, lineno = 0;
    while (next_line(&cur, in + n, &line, &len)) {
        lineno++;
        char where[64];
        snprintf(where, sizeof where, "stdin line %zu", lineno);
        json_error_t je;
        json_t *v = json_loadb(line, len, JSON_DECODE_ANY, &je);
        if (!v) {
            fprintf(stderr, "omnic detokenize: %s: %s\n", where, je.text);
            goto out;
        }
        int32_t *ids = NULL;
        size_t k = 0;
        int bad = ids_of(v, where, &ids, &k);
        json_decref(v);
        if (bad) goto out;
        bad = detok_one(t, &o, ids, k, where);
        omnic_free(ids);
        if (bad) goto out;
    }
    rc = 0;
out:
    if (fflush(stdout) != 0 && rc == 0) {
        fprintf(stderr, "omnic detokenize: error writing stdout\n");
        rc = 1;
    }
    omnic_free(in);
    omnic__tokenizer_free(t);
    return rc;
}
