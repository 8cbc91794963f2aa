/* PCRE2-backed patterns with Hugging Face find_matches semantics, plus literal patterns. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>
#include <pthread.h>
#include <string.h>

#include "core/limits.h"

struct omnic__regex {
    pcre2_code *code;
    bool jit;
};

/* PCRE2 allocates through omnic's allocator. */
static void *rx_malloc(PCRE2_SIZE n, void *ud)
{
    (void)ud;
    return omnic_malloc(n);
}
static void rx_free(void *p, void *ud)
{
    (void)ud;
    omnic_free(p);
}

/* Created on first use; a failed creation (out of memory) is retried by the next call. */
static pcre2_general_context *g_gctx;
static pthread_mutex_t g_gctx_mu = PTHREAD_MUTEX_INITIALIZER;
static pcre2_general_context *gctx(void)
{
    pthread_mutex_lock(&g_gctx_mu);
    if (!g_gctx) g_gctx = pcre2_general_context_create(rx_malloc, rx_free, NULL);
    pcre2_general_context *g = g_gctx;
    pthread_mutex_unlock(&g_gctx_mu);
    return g;
}

/* Oniguruma -> PCRE2 translation (see regex.h). */
#define ONIG_WORD "\\p{L}\\p{M}\\p{Nd}\\p{Pc}"

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static omnic_status translate(const char *p, size_t n, omnic__tbuf *o, omnic_err *err)
{
    int depth = 0; /* character class nesting */
    size_t i = 0;
    while (i < n) {
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            char x = p[i + 1];
            const char *rep = NULL;
            if (x == 'w')
                rep = depth ? ONIG_WORD : "[" ONIG_WORD "]";
            else if (x == 'W' && !depth)
                rep = "[^" ONIG_WORD "]";
            else if (x == 'h')
                rep = depth ? "0-9a-fA-F" : "[0-9a-fA-F]";
            else if (x == 'H' && !depth)
                rep = "[^0-9a-fA-F]";
            if (rep) {
                OMNIC_TRY(omnic__tbuf_put(o, rep, strlen(rep), err));
                i += 2;
                continue;
            }
            if (x == 'u' && i + 6 <= n && is_hex(p[i + 2]) && is_hex(p[i + 3]) && is_hex(p[i + 4]) &&
                is_hex(p[i + 5])) {
                OMNIC_TRY(omnic__tbuf_put(o, "\\x{", 3, err));
                OMNIC_TRY(omnic__tbuf_put(o, p + i + 2, 4, err));
                OMNIC_TRY(omnic__tbuf_put(o, "}", 1, err));
                i += 6;
                continue;
            }
            size_t cl = omnic__utf8_len((unsigned char)x);
            if (i + 1 + cl > n) cl = n - i - 1;
            OMNIC_TRY(omnic__tbuf_put(o, p + i, 1 + cl, err));
            i += 1 + cl;
            continue;
        }
        if (c == '[') {
            if (depth && i + 1 < n && p[i + 1] == ':') { /* POSIX class [:name:] */
                const char *end = NULL;
                for (size_t k = i + 2; k + 1 < n; k++)
                    if (p[k] == ':' && p[k + 1] == ']') {
                        end = p + k + 2;
                        break;
                    }
                if (end) {
                    OMNIC_TRY(omnic__tbuf_put(o, p + i, (size_t)(end - (p + i)), err));
                    i = (size_t)(end - p);
                    continue;
                }
            }
            depth++;
            OMNIC_TRY(omnic__tbuf_put(o, "[", 1, err));
            i++;
            if (i < n && p[i] == '^') {
                OMNIC_TRY(omnic__tbuf_put(o, "^", 1, err));
                i++;
            }
            if (i < n && p[i] == ']') { /* a leading ']' is a literal */
                OMNIC_TRY(omnic__tbuf_put(o, "\\]", 2, err));
                i++;
            }
            continue;
        }
        if (c == ']' && depth) depth--;
        OMNIC_TRY(omnic__tbuf_put(o, &p[i], 1, err));
        i++;
    }
    return OMNIC_OK;
}

omnic_status omnic__regex_compile(const char *pat, size_t len, omnic__rx_dialect d, const char *what,
                                  omnic__regex **out, omnic_err *err)
{
    if (len > OMNIC_MAX_TOKENIZER_REGEX)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: regex of %zu bytes is over the %d byte limit", what,
                          len, OMNIC_MAX_TOKENIZER_REGEX);
    if (!gctx()) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory creating the PCRE2 context", what);
    omnic__tbuf t = {0};
    omnic__regex *re = NULL;
    pcre2_compile_context *cctx = NULL;
    omnic_status st;
    if (d == OMNIC__RX_ONIG) {
        st = translate(pat, len, &t, err);
        if (st != OMNIC_OK) goto fail;
    } else {
        st = omnic__tbuf_put(&t, pat, len, err);
        if (st != OMNIC_OK) goto fail;
    }
    re = omnic_malloc(sizeof *re);
    cctx = pcre2_compile_context_create(gctx());
    if (!re || !cctx) {
        st = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory compiling a regex", what);
        goto fail;
    }
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK;
    if (d == OMNIC__RX_ONIG) opts |= PCRE2_MULTILINE;
    int ec;
    PCRE2_SIZE eo;
    re->code = pcre2_compile((PCRE2_SPTR)(t.p ? t.p : ""), t.len, opts, &ec, &eo, cctx);
    if (!re->code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        int shown = len > 200 ? 200 : (int)len;
        st = OMNIC_FAIL(err, ec == PCRE2_ERROR_HEAP_FAILED ? OMNIC_E_NOMEM : OMNIC_E_INVALID,
                        "%s: regex '%.*s'%s does not compile (at offset %zu: %s)", what, shown, pat,
                        len > 200 ? "..." : "", (size_t)eo, (const char *)msg);
        goto fail;
    }
    re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
    pcre2_compile_context_free(cctx);
    omnic__tbuf_free(&t);
    *out = re;
    return OMNIC_OK;
fail:
    pcre2_compile_context_free(cctx);
    omnic_free(re);
    omnic__tbuf_free(&t);
    return st;
}

void omnic__regex_free(omnic__regex *re)
{
    if (!re) return;
    pcre2_code_free(re->code);
    omnic_free(re);
}

omnic_status omnic__rx_scratch_init(omnic__rx_scratch *s, omnic_err *err)
{
    memset(s, 0, sizeof *s);
    if (!gctx()) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory creating the PCRE2 context");
    s->md = pcre2_match_data_create(1, gctx());
    s->mctx = pcre2_match_context_create(gctx());
    s->stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, gctx());
    if (!s->md || !s->mctx || !s->stack) {
        omnic__rx_scratch_deinit(s);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory creating regex match state");
    }
    pcre2_jit_stack_assign(s->mctx, NULL, s->stack);
    return OMNIC_OK;
}

void omnic__rx_scratch_deinit(omnic__rx_scratch *s)
{
    if (!s) return;
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mctx);
    pcre2_jit_stack_free(s->stack);
    memset(s, 0, sizeof *s);
}

/* 1: match at [*ms, *me); 0: none; error status otherwise (negative). */
static int search(const omnic__regex *re, omnic__rx_scratch *s, const char *text, size_t len, size_t start,
                  size_t *ms, size_t *me, omnic_err *err, omnic_status *st)
{
    pcre2_match_data *md = s->md;
    int rc = re->jit ? pcre2_jit_match(re->code, (PCRE2_SPTR)text, len, start, 0, md, s->mctx)
                     : pcre2_match(re->code, (PCRE2_SPTR)text, len, start, PCRE2_NO_UTF_CHECK, md, s->mctx);
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc < 0) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof msg);
        *st = OMNIC_FAIL(err, rc == PCRE2_ERROR_NOMEMORY ? OMNIC_E_NOMEM : OMNIC_E_INVALID,
                         "tokenizer: regex match failed on %zu bytes of text: %s", len, (const char *)msg);
        return -1;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *ms = ov[0];
    *me = ov[1];
    return 1;
}

omnic_status omnic__regex_segments(const omnic__regex *re, omnic__rx_scratch *s, const char *text, size_t len,
                                   omnic__tsegs *segs, omnic_err *err)
{
    if (len == 0) return omnic__tsegs_push(segs, 0, 0, false, err);
    size_t prev = 0, last_end = 0;
    bool have_last = false;
    size_t last_match_end = 0;
    while (last_end <= len) {
        size_t ms, me;
        omnic_status st = OMNIC_OK;
        int r = search(re, s, text, len, last_end, &ms, &me, err, &st);
        if (r < 0) return st;
        if (r == 0) break;
        if (ms == me && have_last && last_match_end == me) {
            /* onig find_iter: skip an empty match right after the previous one */
            last_end += last_end < len ? omnic__utf8_len((unsigned char)text[last_end]) : 1;
            continue;
        }
        last_end = me;
        last_match_end = me;
        have_last = true;
        if (prev != ms) OMNIC_TRY(omnic__tsegs_push(segs, prev, ms, false, err));
        OMNIC_TRY(omnic__tsegs_push(segs, ms, me, true, err));
        prev = me;
    }
    if (prev != len) OMNIC_TRY(omnic__tsegs_push(segs, prev, len, false, err));
    return OMNIC_OK;
}

omnic_status omnic__literal_segments(const char *pat, size_t plen, const char *text, size_t len,
                                     omnic__tsegs *segs, omnic_err *err)
{
    if (len == 0) return omnic__tsegs_push(segs, 0, 0, false, err);
    size_t prev = 0;
    if (plen) {
        size_t i = 0;
        while (i + plen <= len) {
            const char *hit = memmem(text + i, len - i, pat, plen);
            if (!hit) break;
            size_t ms = (size_t)(hit - text);
            if (prev != ms) OMNIC_TRY(omnic__tsegs_push(segs, prev, ms, false, err));
            OMNIC_TRY(omnic__tsegs_push(segs, ms, ms + plen, true, err));
            prev = i = ms + plen;
        }
    }
    if (prev != len) OMNIC_TRY(omnic__tsegs_push(segs, prev, len, false, err));
    return OMNIC_OK;
}
