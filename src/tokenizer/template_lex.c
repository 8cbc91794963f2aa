/* Chat-template lexer: splits a template into text and tag tokens the way Python jinja2's
 * lexer does with trim_blocks=True and lstrip_blocks=True (transformers' settings):
 * whitespace control with '-' (and '+' on blocks), {% raw %}, comments, string escapes as
 * Python's unicode-escape codec reads them, and tag ends found only outside brackets. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tokenizer/template_internal.h"

typedef struct lexer {
    omnic__template *t;
    const char *s;
    size_t n;
    size_t pos;
    int32_t line, col; /* of pos */
    omnic__jtoks *toks;
    omnic_err *err;
    char stack[OMNIC_MAX_TEMPLATE_NESTING]; /* expected closing brackets inside a tag */
    size_t depth;
} lexer;

static omnic_status lex_fail(lexer *lx, int32_t line, int32_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static omnic_status lex_fail(lexer *lx, int32_t line, int32_t col, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return OMNIC_FAIL(lx->err, OMNIC_E_INVALID, "chat template syntax error at line %d, column %d: %s",
                      (int)line, (int)col, msg);
}

/* Moves the cursor to byte offset to (>= pos), keeping line and column. */
static void move_to(lexer *lx, size_t to)
{
    for (size_t i = lx->pos; i < to; i++) {
        unsigned char c = (unsigned char)lx->s[i];
        if (c == '\n') {
            lx->line++;
            lx->col = 1;
        } else if ((c & 0xC0u) != 0x80u) {
            lx->col++;
        }
    }
    lx->pos = to;
}

static omnic_status push(lexer *lx, omnic__jtok tok)
{
    omnic__jtoks *t = lx->toks;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256, bytes;
        if (!omnic_size_mul(&bytes, cap, sizeof *t->v))
            return OMNIC_FAIL(lx->err, OMNIC_E_NOMEM, "too many tokens");
        omnic__jtok *v = omnic_realloc(t->v, bytes);
        if (!v) return OMNIC_FAIL(lx->err, OMNIC_E_NOMEM, "out of memory lexing the chat template");
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = tok;
    return OMNIC_OK;
}

static omnic_status push_simple(lexer *lx, uint8_t type, uint8_t op, int32_t line, int32_t col)
{
    omnic__jtok tok = {.type = type, .op = op, .line = line, .col = col};
    return push(lx, tok);
}

/* Whitespace at byte offset i: its length in bytes, or 0. */
static size_t space_at(const char *s, size_t n, size_t i)
{
    unsigned char c = (unsigned char)s[i];
    if (c < 0x80u) return (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) ? 1 : 0;
    size_t j = i;
    uint32_t cp = omnic__ju8_next(s, n, &j);
    return omnic__ju8_space(cp) ? j - i : 0;
}

static size_t skip_space(const char *s, size_t n, size_t i)
{
    size_t k;
    while (i < n && (k = space_at(s, n, i)) > 0)
        i += k;
    return i;
}

/* End of s[b, e) with trailing whitespace removed (Python's str.rstrip()). */
static size_t rstrip_end(const char *s, size_t b, size_t e)
{
    while (e > b) {
        size_t st = e - 1;
        while (st > b && ((unsigned char)s[st] & 0xC0u) == 0x80u)
            st--;
        if (space_at(s, e, st) != e - st) break;
        e = st;
    }
    return e;
}

/* Text token for s[b, e) before a tag; applies '-' stripping or lstrip_blocks. is_var: the tag
 * is {{ (lstrip_blocks does not apply). */
static omnic_status emit_data(lexer *lx, size_t b, size_t e, char sign, bool is_var)
{
    if (sign == '-') {
        e = rstrip_end(lx->s, b, e);
    } else if (sign != '+' && !is_var) {
        size_t lpos = b;
        bool nl = false;
        for (size_t i = e; i > b; i--)
            if (lx->s[i - 1] == '\n') {
                lpos = i;
                nl = true;
                break;
            }
        bool line_starting = b == 0 || lx->s[b - 1] == '\n';
        if (nl || line_starting) {
            size_t i = lpos;
            while (i < e && (lx->s[i] == ' ' || lx->s[i] == '\t'))
                i++;
            if (i == e) e = lpos;
        }
    }
    if (e > b) {
        omnic__jtok tok = {
            .type = OMNIC_JT_DATA, .line = lx->line, .col = lx->col, .s = lx->s + b, .len = e - b};
        OMNIC_TRY(push(lx, tok));
    }
    return OMNIC_OK;
}

static bool starts(const lexer *lx, size_t i, const char *lit)
{
    size_t k = strlen(lit);
    return i + k <= lx->n && !memcmp(lx->s + i, lit, k);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string literal starting at lx->pos (the quote). Unescapes like Python's unicode-escape. */
static omnic_status lex_string(lexer *lx)
{
    const char *s = lx->s;
    char q = s[lx->pos];
    int32_t line = lx->line, col = lx->col;
    size_t i = lx->pos + 1, end = 0;
    bool found = false;
    while (i < lx->n) {
        if (s[i] == '\\' && i + 1 < lx->n) {
            i += 2;
            continue;
        }
        if (s[i] == q) {
            end = i;
            found = true;
            break;
        }
        i++;
    }
    if (!found) return lex_fail(lx, line, col, "unterminated string literal");
    size_t raw = end - (lx->pos + 1), cap;
    /* Unescaped text is never longer than the raw text. */
    if (!omnic_size_add(&cap, sizeof(omnic__jstr) + 1, raw))
        return OMNIC_FAIL(lx->err, OMNIC_E_TOO_LARGE, "string literal too long");
    omnic__jstr *str = omnic__jt_alloc(lx->t, cap);
    if (!str) return OMNIC_FAIL(lx->err, OMNIC_E_NOMEM, "out of memory lexing the chat template");
    char *d = (char *)(str + 1);
    size_t o = 0;
    for (size_t k = lx->pos + 1; k < end;) {
        char c = s[k];
        if (c != '\\') {
            d[o++] = c;
            k++;
            continue;
        }
        char e = s[k + 1];
        k += 2;
        uint32_t cp;
        int digits = 0;
        switch (e) {
        case '\\':
            d[o++] = '\\';
            continue;
        case '\'':
            d[o++] = '\'';
            continue;
        case '"':
            d[o++] = '"';
            continue;
        case 'a':
            d[o++] = '\a';
            continue;
        case 'b':
            d[o++] = '\b';
            continue;
        case 'f':
            d[o++] = '\f';
            continue;
        case 'n':
            d[o++] = '\n';
            continue;
        case 'r':
            d[o++] = '\r';
            continue;
        case 't':
            d[o++] = '\t';
            continue;
        case 'v':
            d[o++] = '\v';
            continue;
        case '\n':
            continue; /* line continuation */
        case 'x':
            digits = 2;
            break;
        case 'u':
            digits = 4;
            break;
        case 'U':
            digits = 8;
            break;
        default:
            if (e >= '0' && e <= '7') {
                cp = (uint32_t)(e - '0');
                for (int m = 0; m < 2 && k < end && s[k] >= '0' && s[k] <= '7'; m++, k++)
                    cp = cp * 8 + (uint32_t)(s[k] - '0');
                o += omnic__ju8_put(d + o, cp);
                continue;
            }
            /* unknown escapes keep the backslash (Python) */
            d[o++] = '\\';
            k--;
            continue;
        }
        cp = 0;
        for (int m = 0; m < digits; m++) {
            int h = k + (size_t)m < end ? hexval(s[k + (size_t)m]) : -1;
            if (h < 0)
                return lex_fail(lx, line, col,
                                "truncated \\%c escape in a string literal (needs %d hex digits)", e, digits);
            cp = cp * 16 + (uint32_t)h;
        }
        k += (size_t)digits;
        if (cp > 0x10FFFFu || (cp >= 0xD800u && cp <= 0xDFFFu))
            return lex_fail(lx, line, col, "\\%c escape U+%04X is not a Unicode scalar value", e,
                            (unsigned)cp);
        /* \xNN with NN < 0x80 is one byte; larger values are code points (Python). */
        o += omnic__ju8_put(d + o, cp);
    }
    d[o] = '\0';
    str->h.rc = -1;
    str->h.kind = OMNIC_JV_STR;
    str->h.flags = OMNIC_JSTR_INLINE;
    str->len = o;
    str->ncp = omnic__ju8_count(d, o);
    str->p = d;
    omnic__jtok tok = {.type = OMNIC_JT_STRING, .line = line, .col = col, .str = str};
    OMNIC_TRY(push(lx, tok));
    move_to(lx, end + 1);
    return OMNIC_OK;
}

static bool isdig(char c, int base)
{
    if (base == 16) return hexval(c) >= 0;
    return c >= '0' && c < (char)('0' + (base > 10 ? 10 : base));
}

/* Digits with single underscores between them, from i; returns the end (== i: none). */
static size_t digits_end(const lexer *lx, size_t i, int base)
{
    size_t j = i;
    if (j >= lx->n || !isdig(lx->s[j], base)) return i;
    while (j < lx->n) {
        if (isdig(lx->s[j], base))
            j++;
        else if (lx->s[j] == '_' && j + 1 < lx->n && isdig(lx->s[j + 1], base))
            j++;
        else
            break;
    }
    return j;
}

static omnic_status lex_number(lexer *lx)
{
    const char *s = lx->s;
    size_t b = lx->pos, i = b;
    int32_t line = lx->line, col = lx->col;
    bool after_dot = lx->toks->n > 0 && lx->toks->v[lx->toks->n - 1].type == OMNIC_JT_OP &&
                     lx->toks->v[lx->toks->n - 1].op == OMNIC_JTOK_DOT;
    int base = 10;
    if (s[i] == '0' && i + 2 < lx->n && strchr("xXoObB", s[i + 1])) {
        base = (s[i + 1] == 'x' || s[i + 1] == 'X') ? 16 : (s[i + 1] == 'o' || s[i + 1] == 'O') ? 8 : 2;
        size_t j = i + 2;
        if (s[j] == '_') j++;
        size_t e = digits_end(lx, j, base);
        if (e == j)
            base = 10; /* "0x" without digits: just 0 */
        else
            i = e;
    }
    bool is_float = false;
    if (base == 10) {
        i = digits_end(lx, b, 10);
        if (!after_dot) {
            if (i + 1 < lx->n && s[i] == '.' && isdig(s[i + 1], 10)) {
                i = digits_end(lx, i + 1, 10);
                is_float = true;
            }
            if (i < lx->n && (s[i] == 'e' || s[i] == 'E')) {
                size_t j = i + 1;
                if (j < lx->n && (s[j] == '+' || s[j] == '-')) j++;
                size_t e = digits_end(lx, j, 10);
                if (e > j) {
                    i = e;
                    is_float = true;
                }
            }
        }
    }
    char buf[128];
    size_t k = 0;
    for (size_t j = (base == 10 ? b : b + 2); j < i && k + 1 < sizeof buf; j++)
        if (s[j] != '_') buf[k++] = s[j];
    buf[k] = '\0';
    if (i - b >= sizeof buf) return lex_fail(lx, line, col, "number literal too long");
    omnic__jtok tok = {.line = line, .col = col};
    if (is_float) {
        tok.type = OMNIC_JT_FLOAT;
        tok.f = strtod(buf, NULL);
    } else {
        uint64_t v = 0;
        for (size_t j = 0; j < k; j++) {
            int d = hexval(buf[j]);
            if (v > (UINT64_C(0x7fffffffffffffff) - (uint64_t)d) / (uint64_t)base)
                return lex_fail(lx, line, col, "integer literal %s does not fit in 64 bits", buf);
            v = v * (uint64_t)base + (uint64_t)d;
        }
        tok.type = OMNIC_JT_INT;
        tok.i = (int64_t)v;
    }
    OMNIC_TRY(push(lx, tok));
    move_to(lx, i);
    return OMNIC_OK;
}

static const struct {
    const char *s;
    uint8_t op;
} OPS[] = {
    {"//", OMNIC_JTOK_FLOORDIV}, {"**", OMNIC_JTOK_POW},      {"==", OMNIC_JTOK_EQ},
    {"!=", OMNIC_JTOK_NE},       {">=", OMNIC_JTOK_GTEQ},     {"<=", OMNIC_JTOK_LTEQ},
    {"+", OMNIC_JTOK_ADD},       {"-", OMNIC_JTOK_SUB},       {"/", OMNIC_JTOK_DIV},
    {"*", OMNIC_JTOK_MUL},       {"%", OMNIC_JTOK_MOD},       {"~", OMNIC_JTOK_TILDE},
    {"[", OMNIC_JTOK_LBRACKET},  {"]", OMNIC_JTOK_RBRACKET},  {"(", OMNIC_JTOK_LPAREN},
    {")", OMNIC_JTOK_RPAREN},    {"{", OMNIC_JTOK_LBRACE},    {"}", OMNIC_JTOK_RBRACE},
    {">", OMNIC_JTOK_GT},        {"<", OMNIC_JTOK_LT},        {"=", OMNIC_JTOK_ASSIGN},
    {".", OMNIC_JTOK_DOT},       {":", OMNIC_JTOK_COLON},     {"|", OMNIC_JTOK_PIPE},
    {",", OMNIC_JTOK_COMMA},     {";", OMNIC_JTOK_SEMICOLON},
};

const char *omnic__jtokop_str(int op)
{
    static const char *const quoted[] = {
        [OMNIC_JTOK_ADD] = "'+'",       [OMNIC_JTOK_SUB] = "'-'",       [OMNIC_JTOK_DIV] = "'/'",
        [OMNIC_JTOK_FLOORDIV] = "'//'", [OMNIC_JTOK_MUL] = "'*'",       [OMNIC_JTOK_MOD] = "'%'",
        [OMNIC_JTOK_POW] = "'**'",      [OMNIC_JTOK_TILDE] = "'~'",     [OMNIC_JTOK_LBRACKET] = "'['",
        [OMNIC_JTOK_RBRACKET] = "']'",  [OMNIC_JTOK_LPAREN] = "'('",    [OMNIC_JTOK_RPAREN] = "')'",
        [OMNIC_JTOK_LBRACE] = "'{'",    [OMNIC_JTOK_RBRACE] = "'}'",    [OMNIC_JTOK_EQ] = "'=='",
        [OMNIC_JTOK_NE] = "'!='",       [OMNIC_JTOK_GT] = "'>'",        [OMNIC_JTOK_GTEQ] = "'>='",
        [OMNIC_JTOK_LT] = "'<'",        [OMNIC_JTOK_LTEQ] = "'<='",     [OMNIC_JTOK_ASSIGN] = "'='",
        [OMNIC_JTOK_DOT] = "'.'",       [OMNIC_JTOK_COLON] = "':'",     [OMNIC_JTOK_PIPE] = "'|'",
        [OMNIC_JTOK_COMMA] = "','",     [OMNIC_JTOK_SEMICOLON] = "';'",
    };
    if (op <= 0 || op > OMNIC_JTOK_SEMICOLON) return "an operator";
    return quoted[op];
}

/* The inside of a {{ }} or {% %} tag, from lx->pos to its end token (pushed). */
static omnic_status lex_tag(lexer *lx, bool is_var, int32_t open_line, int32_t open_col)
{
    const char *s = lx->s;
    lx->depth = 0;
    for (;;) {
        move_to(lx, skip_space(s, lx->n, lx->pos));
        if (lx->pos >= lx->n)
            return lex_fail(lx, open_line, open_col,
                            "unexpected end of template: '%s' is never closed with '%s'",
                            is_var ? "{{" : "{%", is_var ? "}}" : "%}");
        size_t p = lx->pos;
        int32_t line = lx->line, col = lx->col;
        if (lx->depth == 0) {
            if (is_var && (starts(lx, p, "-}}") || starts(lx, p, "}}"))) {
                bool strip = s[p] == '-';
                OMNIC_TRY(push_simple(lx, OMNIC_JT_VAR_END, 0, line, col));
                move_to(lx, p + (strip ? 3 : 2));
                if (strip) move_to(lx, skip_space(s, lx->n, lx->pos));
                return OMNIC_OK;
            }
            if (!is_var && (starts(lx, p, "-%}") || starts(lx, p, "+%}") || starts(lx, p, "%}"))) {
                char sign = s[p] == '%' ? 0 : s[p];
                OMNIC_TRY(push_simple(lx, OMNIC_JT_BLOCK_END, 0, line, col));
                move_to(lx, p + (sign ? 3 : 2));
                if (sign == '-')
                    move_to(lx, skip_space(s, lx->n, lx->pos));
                else if (!sign && lx->pos < lx->n && s[lx->pos] == '\n')
                    move_to(lx, lx->pos + 1); /* trim_blocks */
                return OMNIC_OK;
            }
        }
        char c = s[p];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            size_t e = p + 1;
            while (e < lx->n && ((s[e] >= 'a' && s[e] <= 'z') || (s[e] >= 'A' && s[e] <= 'Z') ||
                                 (s[e] >= '0' && s[e] <= '9') || s[e] == '_'))
                e++;
            omnic__jtok tok = {.type = OMNIC_JT_NAME, .line = line, .col = col, .s = s + p, .len = e - p};
            OMNIC_TRY(push(lx, tok));
            move_to(lx, e);
            continue;
        }
        if (c >= '0' && c <= '9') {
            OMNIC_TRY(lex_number(lx));
            continue;
        }
        if (c == '\'' || c == '"') {
            OMNIC_TRY(lex_string(lx));
            continue;
        }
        size_t k;
        for (k = 0; k < sizeof OPS / sizeof OPS[0]; k++)
            if (starts(lx, p, OPS[k].s)) break;
        if (k == sizeof OPS / sizeof OPS[0]) {
            size_t j = p;
            uint32_t cp = omnic__ju8_next(s, lx->n, &j);
            if (cp >= 0x20 && cp < 0x7f)
                return lex_fail(lx, line, col, "unexpected character '%c'", (char)cp);
            return lex_fail(lx, line, col, "unexpected character U+%04X", (unsigned)cp);
        }
        uint8_t op = OPS[k].op;
        if (op == OMNIC_JTOK_LPAREN || op == OMNIC_JTOK_LBRACKET || op == OMNIC_JTOK_LBRACE) {
            if (lx->depth >= sizeof lx->stack)
                return OMNIC_FAIL(lx->err, OMNIC_E_TOO_LARGE,
                                  "chat template: brackets nested deeper than %zu at line %d, column %d "
                                  "(OMNIC_MAX_TEMPLATE_NESTING)",
                                  sizeof lx->stack, (int)line, (int)col);
            lx->stack[lx->depth++] = op == OMNIC_JTOK_LPAREN ? ')' : op == OMNIC_JTOK_LBRACKET ? ']' : '}';
        } else if (op == OMNIC_JTOK_RPAREN || op == OMNIC_JTOK_RBRACKET || op == OMNIC_JTOK_RBRACE) {
            if (lx->depth == 0) return lex_fail(lx, line, col, "unexpected '%c'", c);
            if (lx->stack[lx->depth - 1] != c)
                return lex_fail(lx, line, col, "unexpected '%c', expected '%c'", c, lx->stack[lx->depth - 1]);
            lx->depth--;
        }
        OMNIC_TRY(push_simple(lx, OMNIC_JT_OP, op, line, col));
        move_to(lx, p + strlen(OPS[k].s));
    }
}

/* {% raw %} ... {% endraw %}: begins at lx->pos, just after "{%" and its sign. Returns
 * true in *is_raw when this is a raw block (fully consumed). */
static omnic_status try_raw(lexer *lx, size_t after_sign, int32_t line, int32_t col, bool *is_raw)
{
    const char *s = lx->s;
    *is_raw = false;
    size_t i = skip_space(s, lx->n, after_sign);
    if (!starts(lx, i, "raw")) return OMNIC_OK;
    i = skip_space(s, lx->n, i + 3);
    size_t body;
    if (starts(lx, i, "-%}"))
        body = skip_space(s, lx->n, i + 3);
    else if (starts(lx, i, "%}"))
        body = i + 2;
    else
        return OMNIC_OK;
    *is_raw = true;
    /* find {%[-+]? endraw (+%}|-%}|%}) */
    for (size_t j = body; j + 1 < lx->n; j++) {
        if (s[j] != '{' || s[j + 1] != '%') continue;
        size_t k = j + 2;
        char sign = 0;
        if (k < lx->n && (s[k] == '-' || s[k] == '+')) sign = s[k++];
        k = skip_space(s, lx->n, k);
        if (!starts(lx, k, "endraw")) continue;
        k = skip_space(s, lx->n, k + 6);
        size_t end;
        if (starts(lx, k, "+%}"))
            end = k + 3;
        else if (starts(lx, k, "-%}"))
            end = skip_space(s, lx->n, k + 3);
        else if (starts(lx, k, "%}"))
            end = k + 2 + (k + 2 < lx->n && s[k + 2] == '\n' ? 1 : 0);
        else
            continue;
        move_to(lx, body);
        OMNIC_TRY(emit_data(lx, body, j, sign, false));
        move_to(lx, end);
        return OMNIC_OK;
    }
    return lex_fail(lx, line, col,
                    "unexpected end of template: {%% raw %%} is never closed with {%% endraw %%}");
}

omnic_status omnic__jlex(omnic__template *t, omnic__jtoks *toks, omnic_err *err)
{
    /* newlines: \r\n and \r become \n; one trailing newline is dropped */
    char *w = t->src;
    size_t o = 0;
    for (size_t i = 0; i < t->src_len; i++) {
        if (w[i] == '\r') {
            w[o++] = '\n';
            if (i + 1 < t->src_len && w[i + 1] == '\n') i++;
        } else {
            w[o++] = w[i];
        }
    }
    if (o > 0 && w[o - 1] == '\n') o--;
    w[o] = '\0';
    t->src_len = o;

    lexer lx = {.t = t, .s = t->src, .n = o, .line = 1, .col = 1, .toks = toks, .err = err};
    while (lx.pos < lx.n) {
        const char *s = lx.s;
        size_t j = lx.pos;
        const char *hit = NULL;
        while (j + 1 < lx.n) {
            const char *q = memchr(s + j, '{', lx.n - 1 - j);
            if (!q) break;
            j = (size_t)(q - s);
            if (s[j + 1] == '{' || s[j + 1] == '%' || s[j + 1] == '#') {
                hit = q;
                break;
            }
            j++;
        }
        if (!hit) {
            OMNIC_TRY(emit_data(&lx, lx.pos, lx.n, '+', false)); /* no tag follows: no stripping */
            move_to(&lx, lx.n);
            break;
        }
        char kind = s[j + 1];
        size_t after = j + 2;
        char sign = 0;
        if (after < lx.n && (s[after] == '-' || (s[after] == '+' && kind != '{'))) sign = s[after];
        /* the text before the tag, with the tag's whitespace control (cursor at the text) */
        OMNIC_TRY(emit_data(&lx, lx.pos, j, sign, kind == '{'));
        move_to(&lx, j);
        int32_t tline = lx.line, tcol = lx.col;
        if (kind == '%') {
            bool is_raw = false;
            OMNIC_TRY(try_raw(&lx, after + (sign ? 1 : 0), tline, tcol, &is_raw));
            if (is_raw) continue;
        }
        if (kind == '#') {
            size_t k = after + (sign ? 1 : 0);
            const char *end = NULL;
            for (size_t m = k; m + 1 < lx.n; m++)
                if (s[m] == '#' && s[m + 1] == '}') {
                    end = s + m;
                    break;
                }
            if (!end)
                return lex_fail(&lx, tline, tcol,
                                "unexpected end of template: comment is never closed with '#}'");
            size_t m = (size_t)(end - s), next = m + 2;
            char esign = m > k && (s[m - 1] == '-' || s[m - 1] == '+') ? s[m - 1] : 0;
            if (esign == '-')
                next = skip_space(s, lx.n, next);
            else if (!esign && next < lx.n && s[next] == '\n')
                next++;
            move_to(&lx, next);
            continue;
        }
        OMNIC_TRY(push_simple(&lx, kind == '{' ? OMNIC_JT_VAR_BEGIN : OMNIC_JT_BLOCK_BEGIN, 0, tline, tcol));
        move_to(&lx, after + (sign ? 1 : 0));
        OMNIC_TRY(lex_tag(&lx, kind == '{', tline, tcol));
    }
    omnic__jtok eof = {.type = OMNIC_JT_EOF, .line = lx.line, .col = lx.col};
    return push(&lx, eof);
}
