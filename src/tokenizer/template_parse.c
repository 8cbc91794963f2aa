/* Chat-template parser: tokens to an AST, following Python jinja2's parser (statement set of
 * transformers' environment: if/for/set/macro/call/filter/with/break/continue/generation/print
 * and raw) including its operator precedence. Also owns the template object and its memory. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tokenizer/template_internal.h"

/* ---- template memory -------------------------------------------------------------------- */

typedef struct omnic__jblock {
    struct omnic__jblock *next;
    size_t used, cap, pad;
    unsigned char data[];
} omnic__jblock;

void *omnic__jt_alloc(omnic__template *t, size_t n)
{
    if (n > SIZE_MAX - 64) return NULL;
    n = (n + 15) & ~(size_t)15;
    omnic__jblock *b = t->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = omnic_alloc_array(1, sizeof *b + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->next = t->blocks;
        t->blocks = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

void omnic__template_destroy(omnic__template *t)
{
    if (!t) return;
    omnic__jblock *b = t->blocks;
    while (b) {
        omnic__jblock *next = b->next;
        omnic_free(b);
        b = next;
    }
    omnic_free(t->src);
    omnic_free(t);
}

/* ---- parser state ----------------------------------------------------------------------- */

typedef struct open_block {
    const char *name; /* "for", "if", ... */
    const char *const *ends;
    size_t nends;
    int32_t line, col;
} open_block;

typedef struct parser {
    omnic__template *t;
    const omnic__jtok *tok;
    size_t n, i;
    omnic_err *err;
    int depth, max_depth;
    omnic__jnode *macro; /* innermost macro or call block being parsed */
    int loops;           /* for loops open around the current statement (reset in macros) */
    open_block open[OMNIC_MAX_TEMPLATE_NESTING + 2];
    size_t nopen;
} parser;

static omnic_status fail_at(parser *p, const omnic__jtok *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static omnic_status fail_at(parser *p, const omnic__jtok *t, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return OMNIC_FAIL(p->err, OMNIC_E_INVALID, "chat template syntax error at line %d, column %d: %s",
                      (int)t->line, (int)t->col, msg);
}

static const omnic__jtok *cur(const parser *p)
{
    return &p->tok[p->i];
}
static const omnic__jtok *peek(const parser *p, size_t k)
{
    return p->i + k < p->n ? &p->tok[p->i + k] : &p->tok[p->n - 1];
}
static void adv(parser *p)
{
    if (p->i + 1 < p->n) p->i++;
}

static bool is_name(const omnic__jtok *t, const char *s)
{
    return t->type == OMNIC_JT_NAME && t->len == strlen(s) && !memcmp(t->s, s, t->len);
}
static bool is_op(const omnic__jtok *t, int op)
{
    return t->type == OMNIC_JT_OP && t->op == op;
}

/* "'name'", "'%}'", "end of template", ... for messages. */
static void describe(const omnic__jtok *t, char *buf, size_t n)
{
    switch (t->type) {
    case OMNIC_JT_EOF:
        snprintf(buf, n, "end of template");
        break;
    case OMNIC_JT_DATA:
        snprintf(buf, n, "template text");
        break;
    case OMNIC_JT_VAR_BEGIN:
        snprintf(buf, n, "'{{'");
        break;
    case OMNIC_JT_VAR_END:
        snprintf(buf, n, "'}}'");
        break;
    case OMNIC_JT_BLOCK_BEGIN:
        snprintf(buf, n, "'{%%'");
        break;
    case OMNIC_JT_BLOCK_END:
        snprintf(buf, n, "'%%}'");
        break;
    case OMNIC_JT_NAME:
        snprintf(buf, n, "'%.*s'", (int)(t->len > 60 ? 60 : t->len), t->s);
        break;
    case OMNIC_JT_STRING:
        snprintf(buf, n, "a string");
        break;
    case OMNIC_JT_INT:
        snprintf(buf, n, "integer %lld", (long long)t->i);
        break;
    case OMNIC_JT_FLOAT:
        snprintf(buf, n, "a number");
        break;
    case OMNIC_JT_OP:
        snprintf(buf, n, "%s", omnic__jtokop_str(t->op));
        break;
    default:
        snprintf(buf, n, "a token");
        break;
    }
}

static omnic_status unexpected(parser *p, const char *expected)
{
    char d[96];
    describe(cur(p), d, sizeof d);
    if (expected) return fail_at(p, cur(p), "expected %s, got %s", expected, d);
    return fail_at(p, cur(p), "unexpected %s", d);
}

static omnic_status expect_op(parser *p, int op)
{
    if (!is_op(cur(p), op)) return unexpected(p, omnic__jtokop_str(op));
    adv(p);
    return OMNIC_OK;
}

static omnic_status expect_type(parser *p, int type, const char *what)
{
    if (cur(p)->type != type) return unexpected(p, what);
    adv(p);
    return OMNIC_OK;
}

static omnic_status enter(parser *p)
{
    if (++p->depth > p->max_depth)
        return OMNIC_FAIL(p->err, OMNIC_E_TOO_LARGE,
                          "chat template: blocks and expressions nested deeper than %d at line %d, column %d "
                          "(OMNIC_MAX_TEMPLATE_NESTING)",
                          p->max_depth, (int)cur(p)->line, (int)cur(p)->col);
    return OMNIC_OK;
}

static omnic_status node(parser *p, int kind, const omnic__jtok *at, omnic__jnode **out)
{
    omnic__jnode *n = omnic__jt_alloc(p->t, sizeof *n);
    if (!n) return OMNIC_FAIL(p->err, OMNIC_E_NOMEM, "out of memory parsing the chat template");
    n->kind = (uint8_t)kind;
    n->line = at->line;
    n->col = at->col;
    *out = n;
    return OMNIC_OK;
}

/* Growable kid arrays in template memory (old arrays are left behind; at most 2x waste). */
typedef struct kids {
    omnic__jnode **v;
    size_t n, cap;
} kids;

static omnic_status kids_push(parser *p, kids *k, omnic__jnode *x)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 4, bytes;
        omnic__jnode **v = omnic_size_mul(&bytes, cap, sizeof *v) ? omnic__jt_alloc(p->t, bytes) : NULL;
        if (!v) return OMNIC_FAIL(p->err, OMNIC_E_NOMEM, "out of memory parsing the chat template");
        if (k->n) memcpy(v, k->v, k->n * sizeof *v);
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = x;
    return OMNIC_OK;
}

static void kids_set(omnic__jnode *n, const kids *k)
{
    n->kids = k->v;
    n->nkids = k->n;
}

/* ---- expressions ------------------------------------------------------------------------ */

static omnic_status parse_expression(parser *p, bool with_condexpr, omnic__jnode **out);
static omnic_status parse_unary(parser *p, bool with_filter, omnic__jnode **out);
static omnic_status parse_tuple(parser *p, bool simplified, bool with_condexpr, const char *extra_end,
                                bool explicit_parens, omnic__jnode **out);
static omnic_status parse_postfix(parser *p, omnic__jnode *n, omnic__jnode **out);
static omnic_status parse_filter_expr(parser *p, omnic__jnode *n, omnic__jnode **out);

static omnic_status const_node(parser *p, const omnic__jtok *at, omnic__jv v, omnic__jnode **out)
{
    OMNIC_TRY(node(p, OMNIC_JN_CONST, at, out));
    (*out)->k = v;
    return OMNIC_OK;
}

/* Concatenation of adjacent string literals, as an immortal constant. */
static omnic_status string_const(parser *p, omnic__jnode **out)
{
    const omnic__jtok *first = cur(p);
    size_t total = 0, k = 0;
    while (peek(p, k)->type == OMNIC_JT_STRING)
        total += peek(p, k++)->str->len;
    omnic__jstr *s = first->str;
    if (k > 1) {
        s = omnic__jt_alloc(p->t, sizeof *s + total + 1);
        if (!s) return OMNIC_FAIL(p->err, OMNIC_E_NOMEM, "out of memory parsing the chat template");
        char *d = (char *)(s + 1);
        size_t o = 0;
        for (size_t j = 0; j < k; j++) {
            memcpy(d + o, peek(p, j)->str->p, peek(p, j)->str->len);
            o += peek(p, j)->str->len;
        }
        d[o] = '\0';
        s->h.rc = -1;
        s->h.kind = OMNIC_JV_STR;
        s->h.flags = OMNIC_JSTR_INLINE;
        s->len = o;
        s->ncp = omnic__ju8_count(d, o);
        s->p = d;
    }
    for (size_t j = 0; j < k; j++)
        adv(p);
    return const_node(p, first, omnic__jv_obj(&s->h), out);
}

static void note_name(parser *p, const omnic__jtok *t)
{
    if (!p->macro) return;
    if (is_name(t, "varargs"))
        p->macro->flags |= OMNIC_JMACRO_VARARGS;
    else if (is_name(t, "kwargs"))
        p->macro->flags |= OMNIC_JMACRO_KWARGS;
    else if (is_name(t, "caller"))
        p->macro->flags |= OMNIC_JMACRO_CALLER;
}

static omnic_status parse_list_or_dict(parser *p, bool dict, omnic__jnode **out)
{
    const omnic__jtok *at = cur(p);
    adv(p); /* [ or { */
    kids k = {0};
    int close = dict ? OMNIC_JTOK_RBRACE : OMNIC_JTOK_RBRACKET;
    while (!is_op(cur(p), close)) {
        if (k.n) OMNIC_TRY(expect_op(p, OMNIC_JTOK_COMMA));
        if (is_op(cur(p), close)) break;
        omnic__jnode *x;
        OMNIC_TRY(parse_expression(p, true, &x));
        if (dict) {
            omnic__jnode *pair, *v;
            OMNIC_TRY(expect_op(p, OMNIC_JTOK_COLON));
            OMNIC_TRY(parse_expression(p, true, &v));
            OMNIC_TRY(node(p, OMNIC_JN_PAIR, at, &pair));
            pair->a = x;
            pair->b = v;
            x = pair;
        }
        OMNIC_TRY(kids_push(p, &k, x));
    }
    OMNIC_TRY(expect_op(p, close));
    OMNIC_TRY(node(p, dict ? OMNIC_JN_DICT : OMNIC_JN_LIST, at, out));
    kids_set(*out, &k);
    return OMNIC_OK;
}

static omnic_status parse_primary(parser *p, omnic__jnode **out)
{
    const omnic__jtok *t = cur(p);
    switch (t->type) {
    case OMNIC_JT_NAME:
        if (is_name(t, "true") || is_name(t, "True") || is_name(t, "false") || is_name(t, "False")) {
            adv(p);
            return const_node(p, t, omnic__jv_bool(t->s[0] == 't' || t->s[0] == 'T'), out);
        }
        if (is_name(t, "none") || is_name(t, "None")) {
            adv(p);
            return const_node(p, t, omnic__jv_none(), out);
        }
        note_name(p, t);
        OMNIC_TRY(node(p, OMNIC_JN_NAME, t, out));
        (*out)->s = t->s;
        (*out)->slen = t->len;
        adv(p);
        return OMNIC_OK;
    case OMNIC_JT_STRING:
        return string_const(p, out);
    case OMNIC_JT_INT:
        adv(p);
        return const_node(p, t, omnic__jv_int(t->i), out);
    case OMNIC_JT_FLOAT:
        adv(p);
        return const_node(p, t, omnic__jv_float(t->f), out);
    case OMNIC_JT_OP:
        if (t->op == OMNIC_JTOK_LPAREN) {
            adv(p);
            OMNIC_TRY(parse_tuple(p, false, true, NULL, true, out));
            return expect_op(p, OMNIC_JTOK_RPAREN);
        }
        if (t->op == OMNIC_JTOK_LBRACKET) return parse_list_or_dict(p, false, out);
        if (t->op == OMNIC_JTOK_LBRACE) return parse_list_or_dict(p, true, out);
        break;
    default:
        break;
    }
    return unexpected(p, "an expression");
}

/* Call arguments from '(' to ')' into kids: positional expressions, then KWARG, STARARG,
 * DSTARARG nodes. */
static omnic_status parse_call_args(parser *p, kids *k)
{
    OMNIC_TRY(expect_op(p, OMNIC_JTOK_LPAREN));
    bool kw = false, star = false, dstar = false;
    size_t count = 0;
    while (!is_op(cur(p), OMNIC_JTOK_RPAREN)) {
        if (count++) {
            OMNIC_TRY(expect_op(p, OMNIC_JTOK_COMMA));
            if (is_op(cur(p), OMNIC_JTOK_RPAREN)) break;
        }
        const omnic__jtok *at = cur(p);
        omnic__jnode *x;
        if (is_op(at, OMNIC_JTOK_MUL) || is_op(at, OMNIC_JTOK_POW)) {
            bool two = at->op == OMNIC_JTOK_POW;
            if (two ? dstar : star)
                return fail_at(p, at, "only one %s argument is allowed", two ? "**" : "*");
            adv(p);
            omnic__jnode *e;
            OMNIC_TRY(parse_expression(p, true, &e));
            OMNIC_TRY(node(p, two ? OMNIC_JN_DSTARARG : OMNIC_JN_STARARG, at, &x));
            x->a = e;
            if (two)
                dstar = true;
            else
                star = true;
        } else if (at->type == OMNIC_JT_NAME && is_op(peek(p, 1), OMNIC_JTOK_ASSIGN)) {
            if (dstar) return fail_at(p, at, "keyword argument after **");
            adv(p);
            adv(p);
            omnic__jnode *e;
            OMNIC_TRY(parse_expression(p, true, &e));
            OMNIC_TRY(node(p, OMNIC_JN_KWARG, at, &x));
            x->s = at->s;
            x->slen = at->len;
            x->a = e;
            kw = true;
        } else {
            if (kw || star || dstar) return fail_at(p, at, "positional argument follows keyword argument");
            OMNIC_TRY(parse_expression(p, true, &x));
        }
        OMNIC_TRY(kids_push(p, k, x));
    }
    return expect_op(p, OMNIC_JTOK_RPAREN);
}

/* After '[': a subscript expression or a slice (SLICE with a == NULL). */
static omnic_status parse_subscribed(parser *p, omnic__jnode **out)
{
    const omnic__jtok *at = cur(p);
    omnic__jnode *parts[3] = {NULL, NULL, NULL};
    if (is_op(cur(p), OMNIC_JTOK_COLON)) {
        adv(p);
    } else {
        OMNIC_TRY(parse_expression(p, true, &parts[0]));
        if (!is_op(cur(p), OMNIC_JTOK_COLON)) {
            *out = parts[0];
            return OMNIC_OK;
        }
        adv(p);
    }
    if (!is_op(cur(p), OMNIC_JTOK_COLON) && !is_op(cur(p), OMNIC_JTOK_RBRACKET) &&
        !is_op(cur(p), OMNIC_JTOK_COMMA))
        OMNIC_TRY(parse_expression(p, true, &parts[1]));
    if (is_op(cur(p), OMNIC_JTOK_COLON)) {
        adv(p);
        if (!is_op(cur(p), OMNIC_JTOK_RBRACKET) && !is_op(cur(p), OMNIC_JTOK_COMMA))
            OMNIC_TRY(parse_expression(p, true, &parts[2]));
    }
    OMNIC_TRY(node(p, OMNIC_JN_SLICE, at, out));
    (*out)->b = parts[0];
    (*out)->c = parts[1];
    (*out)->d = parts[2];
    return OMNIC_OK;
}

static omnic_status parse_postfix(parser *p, omnic__jnode *n, omnic__jnode **out)
{
    for (;;) {
        const omnic__jtok *at = cur(p);
        if (is_op(at, OMNIC_JTOK_DOT)) {
            adv(p);
            const omnic__jtok *a = cur(p);
            omnic__jnode *x;
            if (a->type == OMNIC_JT_NAME) {
                OMNIC_TRY(node(p, OMNIC_JN_GETATTR, a, &x));
                x->a = n;
                x->s = a->s;
                x->slen = a->len;
            } else if (a->type == OMNIC_JT_INT) {
                omnic__jnode *k;
                OMNIC_TRY(const_node(p, a, omnic__jv_int(a->i), &k));
                OMNIC_TRY(node(p, OMNIC_JN_GETITEM, a, &x));
                x->a = n;
                x->b = k;
            } else {
                return unexpected(p, "an attribute name");
            }
            adv(p);
            n = x;
        } else if (is_op(at, OMNIC_JTOK_LBRACKET)) {
            adv(p);
            kids k = {0};
            while (!is_op(cur(p), OMNIC_JTOK_RBRACKET)) {
                if (k.n) OMNIC_TRY(expect_op(p, OMNIC_JTOK_COMMA));
                omnic__jnode *x;
                OMNIC_TRY(parse_subscribed(p, &x));
                OMNIC_TRY(kids_push(p, &k, x));
            }
            OMNIC_TRY(expect_op(p, OMNIC_JTOK_RBRACKET));
            if (k.n == 0) return fail_at(p, at, "empty subscript []");
            omnic__jnode *x;
            if (k.n == 1 && k.v[0]->kind == OMNIC_JN_SLICE && !k.v[0]->a) {
                x = k.v[0];
                x->a = n;
            } else {
                OMNIC_TRY(node(p, OMNIC_JN_GETITEM, at, &x));
                x->a = n;
                if (k.n == 1) {
                    x->b = k.v[0];
                } else {
                    for (size_t i = 0; i < k.n; i++)
                        if (k.v[i]->kind == OMNIC_JN_SLICE && !k.v[i]->a)
                            return fail_at(p, at,
                                           "a slice inside a multi-dimensional subscript is not supported");
                    omnic__jnode *tup;
                    OMNIC_TRY(node(p, OMNIC_JN_TUPLE, at, &tup));
                    kids_set(tup, &k);
                    x->b = tup;
                }
            }
            n = x;
        } else if (is_op(at, OMNIC_JTOK_LPAREN)) {
            omnic__jnode *x;
            OMNIC_TRY(node(p, OMNIC_JN_CALL, at, &x));
            kids k = {0};
            OMNIC_TRY(parse_call_args(p, &k));
            x->a = n;
            kids_set(x, &k);
            n = x;
        } else {
            break;
        }
    }
    *out = n;
    return OMNIC_OK;
}

/* name(.name)* as one dotted name pointing into the source. */
static omnic_status dotted_name(parser *p, const char **s, size_t *len)
{
    const omnic__jtok *t = cur(p);
    if (t->type != OMNIC_JT_NAME) return unexpected(p, "a name");
    *s = t->s;
    *len = t->len;
    adv(p);
    while (is_op(cur(p), OMNIC_JTOK_DOT) && peek(p, 1)->type == OMNIC_JT_NAME) {
        const omnic__jtok *x = peek(p, 1);
        *len = (size_t)(x->s + x->len - *s);
        adv(p);
        adv(p);
    }
    return OMNIC_OK;
}

/* | name(args) chains; n may be NULL (filter blocks, set blocks). With start_inline the
 * first '|' is already consumed (or absent). */
static omnic_status parse_filter(parser *p, omnic__jnode *n, bool start_inline, omnic__jnode **out)
{
    while (is_op(cur(p), OMNIC_JTOK_PIPE) || start_inline) {
        if (!start_inline) adv(p);
        start_inline = false;
        const omnic__jtok *at = cur(p);
        omnic__jnode *x;
        OMNIC_TRY(node(p, OMNIC_JN_FILTER, at, &x));
        OMNIC_TRY(dotted_name(p, &x->s, &x->slen));
        if (is_op(cur(p), OMNIC_JTOK_LPAREN)) {
            kids k = {0};
            OMNIC_TRY(parse_call_args(p, &k));
            kids_set(x, &k);
        }
        x->a = n;
        n = x;
    }
    *out = n;
    return OMNIC_OK;
}

static omnic_status parse_test(parser *p, omnic__jnode *n, omnic__jnode **out)
{
    const omnic__jtok *at = cur(p);
    adv(p); /* is */
    bool negated = false;
    if (is_name(cur(p), "not")) {
        negated = true;
        adv(p);
    }
    omnic__jnode *x;
    OMNIC_TRY(node(p, OMNIC_JN_TEST, at, &x));
    OMNIC_TRY(dotted_name(p, &x->s, &x->slen));
    x->a = n;
    x->op = negated;
    const omnic__jtok *t = cur(p);
    if (is_op(t, OMNIC_JTOK_LPAREN)) {
        kids k = {0};
        OMNIC_TRY(parse_call_args(p, &k));
        kids_set(x, &k);
    } else if ((t->type == OMNIC_JT_NAME || t->type == OMNIC_JT_STRING || t->type == OMNIC_JT_INT ||
                t->type == OMNIC_JT_FLOAT || is_op(t, OMNIC_JTOK_LBRACKET) || is_op(t, OMNIC_JTOK_LBRACE)) &&
               !is_name(t, "else") && !is_name(t, "or") && !is_name(t, "and")) {
        if (is_name(t, "is")) return fail_at(p, t, "you cannot chain multiple tests with is");
        omnic__jnode *arg;
        OMNIC_TRY(parse_primary(p, &arg));
        OMNIC_TRY(parse_postfix(p, arg, &arg));
        kids k = {0};
        OMNIC_TRY(kids_push(p, &k, arg));
        kids_set(x, &k);
    }
    *out = x;
    return OMNIC_OK;
}

static omnic_status parse_filter_expr(parser *p, omnic__jnode *n, omnic__jnode **out)
{
    for (;;) {
        if (is_op(cur(p), OMNIC_JTOK_PIPE)) {
            OMNIC_TRY(parse_filter(p, n, false, &n));
        } else if (is_name(cur(p), "is")) {
            OMNIC_TRY(parse_test(p, n, &n));
        } else if (is_op(cur(p), OMNIC_JTOK_LPAREN)) {
            omnic__jnode *x;
            OMNIC_TRY(node(p, OMNIC_JN_CALL, cur(p), &x));
            kids k = {0};
            OMNIC_TRY(parse_call_args(p, &k));
            x->a = n;
            kids_set(x, &k);
            n = x;
        } else {
            break;
        }
    }
    *out = n;
    return OMNIC_OK;
}

static omnic_status parse_unary(parser *p, bool with_filter, omnic__jnode **out)
{
    const omnic__jtok *t = cur(p);
    omnic__jnode *n;
    if (is_op(t, OMNIC_JTOK_SUB) || is_op(t, OMNIC_JTOK_ADD)) {
        adv(p);
        OMNIC_TRY(enter(p));
        omnic__jnode *x;
        OMNIC_TRY(parse_unary(p, false, &x));
        p->depth--;
        OMNIC_TRY(node(p, OMNIC_JN_UNARY, t, &n));
        n->op = t->op == OMNIC_JTOK_SUB ? OMNIC_JOP_NEG : OMNIC_JOP_POS;
        n->a = x;
    } else {
        OMNIC_TRY(parse_primary(p, &n));
    }
    OMNIC_TRY(parse_postfix(p, n, &n));
    if (with_filter) OMNIC_TRY(parse_filter_expr(p, n, &n));
    *out = n;
    return OMNIC_OK;
}

static omnic_status binop(parser *p, const omnic__jtok *at, int op, omnic__jnode *a, omnic__jnode *b,
                          omnic__jnode **out)
{
    OMNIC_TRY(node(p, OMNIC_JN_BINOP, at, out));
    (*out)->op = (uint8_t)op;
    (*out)->a = a;
    (*out)->b = b;
    return OMNIC_OK;
}

static omnic_status parse_pow(parser *p, omnic__jnode **out)
{
    omnic__jnode *left, *right;
    OMNIC_TRY(parse_unary(p, true, &left));
    while (is_op(cur(p), OMNIC_JTOK_POW)) {
        const omnic__jtok *at = cur(p);
        adv(p);
        OMNIC_TRY(parse_unary(p, true, &right));
        OMNIC_TRY(binop(p, at, OMNIC_JOP_POW, left, right, &left));
    }
    *out = left;
    return OMNIC_OK;
}

static omnic_status parse_math2(parser *p, omnic__jnode **out)
{
    omnic__jnode *left, *right;
    OMNIC_TRY(parse_pow(p, &left));
    for (;;) {
        const omnic__jtok *at = cur(p);
        int op = is_op(at, OMNIC_JTOK_MUL)        ? OMNIC_JOP_MUL
                 : is_op(at, OMNIC_JTOK_DIV)      ? OMNIC_JOP_DIV
                 : is_op(at, OMNIC_JTOK_FLOORDIV) ? OMNIC_JOP_FLOORDIV
                 : is_op(at, OMNIC_JTOK_MOD)      ? OMNIC_JOP_MOD
                                                  : 0;
        if (!op) break;
        adv(p);
        OMNIC_TRY(parse_pow(p, &right));
        OMNIC_TRY(binop(p, at, op, left, right, &left));
    }
    *out = left;
    return OMNIC_OK;
}

static omnic_status parse_concat(parser *p, omnic__jnode **out)
{
    const omnic__jtok *at = cur(p);
    omnic__jnode *first;
    OMNIC_TRY(parse_math2(p, &first));
    if (!is_op(cur(p), OMNIC_JTOK_TILDE)) {
        *out = first;
        return OMNIC_OK;
    }
    kids k = {0};
    OMNIC_TRY(kids_push(p, &k, first));
    while (is_op(cur(p), OMNIC_JTOK_TILDE)) {
        adv(p);
        omnic__jnode *x;
        OMNIC_TRY(parse_math2(p, &x));
        OMNIC_TRY(kids_push(p, &k, x));
    }
    OMNIC_TRY(node(p, OMNIC_JN_CONCAT, at, out));
    kids_set(*out, &k);
    return OMNIC_OK;
}

static omnic_status parse_math1(parser *p, omnic__jnode **out)
{
    omnic__jnode *left, *right;
    OMNIC_TRY(parse_concat(p, &left));
    while (is_op(cur(p), OMNIC_JTOK_ADD) || is_op(cur(p), OMNIC_JTOK_SUB)) {
        const omnic__jtok *at = cur(p);
        adv(p);
        OMNIC_TRY(parse_concat(p, &right));
        OMNIC_TRY(binop(p, at, at->op == OMNIC_JTOK_ADD ? OMNIC_JOP_ADD : OMNIC_JOP_SUB, left, right, &left));
    }
    *out = left;
    return OMNIC_OK;
}

static omnic_status parse_compare(parser *p, omnic__jnode **out)
{
    const omnic__jtok *at = cur(p);
    omnic__jnode *first;
    OMNIC_TRY(parse_math1(p, &first));
    kids k = {0};
    for (;;) {
        const omnic__jtok *t = cur(p);
        int op = 0;
        if (t->type == OMNIC_JT_OP) {
            op = t->op == OMNIC_JTOK_EQ     ? OMNIC_JOP_EQ
                 : t->op == OMNIC_JTOK_NE   ? OMNIC_JOP_NE
                 : t->op == OMNIC_JTOK_LT   ? OMNIC_JOP_LT
                 : t->op == OMNIC_JTOK_LTEQ ? OMNIC_JOP_LE
                 : t->op == OMNIC_JTOK_GT   ? OMNIC_JOP_GT
                 : t->op == OMNIC_JTOK_GTEQ ? OMNIC_JOP_GE
                                            : 0;
            if (op) adv(p);
        } else if (is_name(t, "in")) {
            op = OMNIC_JOP_IN;
            adv(p);
        } else if (is_name(t, "not") && is_name(peek(p, 1), "in")) {
            op = OMNIC_JOP_NOTIN;
            adv(p);
            adv(p);
        }
        if (!op) break;
        omnic__jnode *x, *operand;
        OMNIC_TRY(parse_math1(p, &x));
        OMNIC_TRY(node(p, OMNIC_JN_OPERAND, t, &operand));
        operand->op = (uint8_t)op;
        operand->a = x;
        OMNIC_TRY(kids_push(p, &k, operand));
    }
    if (k.n == 0) {
        *out = first;
        return OMNIC_OK;
    }
    OMNIC_TRY(node(p, OMNIC_JN_COMPARE, at, out));
    (*out)->a = first;
    kids_set(*out, &k);
    return OMNIC_OK;
}

static omnic_status parse_not(parser *p, omnic__jnode **out)
{
    const omnic__jtok *t = cur(p);
    if (is_name(t, "not")) {
        adv(p);
        OMNIC_TRY(enter(p));
        omnic__jnode *x;
        OMNIC_TRY(parse_not(p, &x));
        p->depth--;
        OMNIC_TRY(node(p, OMNIC_JN_UNARY, t, out));
        (*out)->op = OMNIC_JOP_NOT;
        (*out)->a = x;
        return OMNIC_OK;
    }
    return parse_compare(p, out);
}

static omnic_status parse_and(parser *p, omnic__jnode **out)
{
    omnic__jnode *left, *right;
    OMNIC_TRY(parse_not(p, &left));
    while (is_name(cur(p), "and")) {
        const omnic__jtok *at = cur(p);
        adv(p);
        OMNIC_TRY(parse_not(p, &right));
        OMNIC_TRY(binop(p, at, OMNIC_JOP_AND, left, right, &left));
    }
    *out = left;
    return OMNIC_OK;
}

static omnic_status parse_or(parser *p, omnic__jnode **out)
{
    omnic__jnode *left, *right;
    OMNIC_TRY(parse_and(p, &left));
    while (is_name(cur(p), "or")) {
        const omnic__jtok *at = cur(p);
        adv(p);
        OMNIC_TRY(parse_and(p, &right));
        OMNIC_TRY(binop(p, at, OMNIC_JOP_OR, left, right, &left));
    }
    *out = left;
    return OMNIC_OK;
}

static omnic_status parse_condexpr(parser *p, omnic__jnode **out)
{
    OMNIC_TRY(enter(p));
    omnic__jnode *e1;
    OMNIC_TRY(parse_or(p, &e1));
    while (is_name(cur(p), "if")) {
        const omnic__jtok *at = cur(p);
        adv(p);
        omnic__jnode *e2, *e3 = NULL, *c;
        OMNIC_TRY(parse_or(p, &e2));
        if (is_name(cur(p), "else")) {
            adv(p);
            OMNIC_TRY(parse_condexpr(p, &e3));
        }
        OMNIC_TRY(node(p, OMNIC_JN_COND, at, &c));
        c->a = e2;
        c->b = e1;
        c->c = e3;
        e1 = c;
    }
    p->depth--;
    *out = e1;
    return OMNIC_OK;
}

static omnic_status parse_expression(parser *p, bool with_condexpr, omnic__jnode **out)
{
    if (with_condexpr) return parse_condexpr(p, out);
    OMNIC_TRY(enter(p));
    OMNIC_TRY(parse_or(p, out));
    p->depth--;
    return OMNIC_OK;
}

static bool tuple_end(const parser *p, const char *extra_end)
{
    const omnic__jtok *t = cur(p);
    return t->type == OMNIC_JT_VAR_END || t->type == OMNIC_JT_BLOCK_END || is_op(t, OMNIC_JTOK_RPAREN) ||
           t->type == OMNIC_JT_EOF || (extra_end && is_name(t, extra_end));
}

static omnic_status parse_tuple(parser *p, bool simplified, bool with_condexpr, const char *extra_end,
                                bool explicit_parens, omnic__jnode **out)
{
    const omnic__jtok *at = cur(p);
    kids k = {0};
    bool is_tuple = false;
    for (;;) {
        if (k.n) OMNIC_TRY(expect_op(p, OMNIC_JTOK_COMMA));
        if (tuple_end(p, extra_end)) break;
        omnic__jnode *x;
        if (simplified)
            OMNIC_TRY(parse_primary(p, &x));
        else
            OMNIC_TRY(parse_expression(p, with_condexpr, &x));
        OMNIC_TRY(kids_push(p, &k, x));
        if (is_op(cur(p), OMNIC_JTOK_COMMA))
            is_tuple = true;
        else
            break;
    }
    if (!is_tuple) {
        if (k.n) {
            *out = k.v[0];
            return OMNIC_OK;
        }
        if (!explicit_parens) return unexpected(p, "an expression");
    }
    OMNIC_TRY(node(p, OMNIC_JN_TUPLE, at, out));
    kids_set(*out, &k);
    return OMNIC_OK;
}

/* ---- statements ---------------------------------------------------------------------------- */

static omnic_status subparse(parser *p, const char *const *ends, size_t nends, omnic__jnode **out);

static bool is_end(const parser *p, const char *const *ends, size_t nends)
{
    if (cur(p)->type != OMNIC_JT_BLOCK_BEGIN) return false;
    for (size_t i = 0; i < nends; i++)
        if (is_name(peek(p, 1), ends[i])) return true;
    return false;
}

static void ends_text(const char *const *ends, size_t nends, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < nends && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s'%s'",
                              i == 0           ? ""
                              : i + 1 == nends ? " or "
                                               : ", ",
                              ends[i]);
}

/* Expects the opening tag's %}, parses a body up to one of ends (with BLOCK_BEGIN consumed and
 * the cursor on the end name), and with drop_needle also consumes the name. */
static omnic_status parse_statements(parser *p, const char *block, const omnic__jtok *open,
                                     const char *const *ends, size_t nends, bool drop_needle,
                                     omnic__jnode **out)
{
    OMNIC_TRY(expect_type(p, OMNIC_JT_BLOCK_END, "'%}'"));
    if (p->nopen >= sizeof p->open / sizeof p->open[0])
        return OMNIC_FAIL(
            p->err, OMNIC_E_TOO_LARGE,
            "chat template: blocks nested deeper than %zu at line %d (OMNIC_MAX_TEMPLATE_NESTING)",
            sizeof p->open / sizeof p->open[0], (int)open->line);
    p->open[p->nopen++] = (open_block){block, ends, nends, open->line, open->col};
    omnic_status rc = subparse(p, ends, nends, out);
    p->nopen--;
    OMNIC_TRY(rc);
    if (cur(p)->type == OMNIC_JT_EOF) {
        char e[128];
        ends_text(ends, nends, e, sizeof e);
        return fail_at(p, cur(p),
                       "unexpected end of template: the '%s' block opened at line %d, column %d needs %s",
                       block, (int)open->line, (int)open->col, e);
    }
    adv(p); /* BLOCK_BEGIN */
    if (drop_needle) adv(p);
    return OMNIC_OK;
}

/* An assignment target: name, tuple of names, or (with_namespace) name.attr. */
static omnic_status parse_assign_target(parser *p, bool name_only, bool with_namespace, const char *extra_end,
                                        omnic__jnode **out)
{
    const omnic__jtok *t = cur(p);
    if (with_namespace && t->type == OMNIC_JT_NAME && is_op(peek(p, 1), OMNIC_JTOK_DOT)) {
        const omnic__jtok *attr = peek(p, 2);
        if (attr->type != OMNIC_JT_NAME) {
            adv(p);
            adv(p);
            return unexpected(p, "an attribute name");
        }
        omnic__jnode *ns, *x;
        OMNIC_TRY(node(p, OMNIC_JN_NAME, t, &ns));
        ns->s = t->s;
        ns->slen = t->len;
        OMNIC_TRY(node(p, OMNIC_JN_NSATTR, t, &x));
        x->a = ns;
        x->s = attr->s;
        x->slen = attr->len;
        adv(p);
        adv(p);
        adv(p);
        *out = x;
        return OMNIC_OK;
    }
    omnic__jnode *x;
    if (name_only) {
        if (t->type != OMNIC_JT_NAME) return unexpected(p, "a name");
        OMNIC_TRY(parse_primary(p, &x));
    } else {
        OMNIC_TRY(parse_tuple(p, true, true, extra_end, false, &x));
    }
    bool ok = x->kind == OMNIC_JN_NAME;
    if (x->kind == OMNIC_JN_TUPLE) {
        ok = x->nkids > 0;
        for (size_t i = 0; i < x->nkids; i++)
            if (x->kids[i]->kind != OMNIC_JN_NAME) ok = false;
    }
    if (!ok) return fail_at(p, t, "cannot assign to this expression (expected a name or names)");
    for (size_t i = 0; i < x->nkids; i++)
        if (x->kids[i]->kind == OMNIC_JN_NAME && x->kids[i]->slen == 4 && !memcmp(x->kids[i]->s, "loop", 4))
            return fail_at(p, t, "cannot assign to 'loop'");
    *out = x;
    return OMNIC_OK;
}

static omnic_status parse_for(parser *p, const omnic__jtok *open, omnic__jnode **out)
{
    omnic__jnode *n;
    OMNIC_TRY(node(p, OMNIC_JN_FOR, open, &n));
    OMNIC_TRY(parse_assign_target(p, false, false, "in", &n->a));
    if (!is_name(cur(p), "in")) return unexpected(p, "'in'");
    adv(p);
    OMNIC_TRY(parse_tuple(p, false, false, "recursive", false, &n->b));
    if (is_name(cur(p), "if")) {
        adv(p);
        OMNIC_TRY(parse_expression(p, true, &n->c));
    }
    if (is_name(cur(p), "recursive"))
        return OMNIC_FAIL(p->err, OMNIC_E_UNSUPPORTED,
                          "chat template at line %d, column %d: recursive for loops are not supported",
                          (int)cur(p)->line, (int)cur(p)->col);
    static const char *const ends1[] = {"endfor", "else"};
    static const char *const ends2[] = {"endfor"};
    p->loops++;
    omnic_status rc = parse_statements(p, "for", open, ends1, 2, false, &n->d);
    p->loops--;
    OMNIC_TRY(rc);
    bool has_else = is_name(cur(p), "else");
    adv(p);
    if (has_else) OMNIC_TRY(parse_statements(p, "for", open, ends2, 1, true, &n->e));
    *out = n;
    return OMNIC_OK;
}

static omnic_status parse_if(parser *p, const omnic__jtok *open, omnic__jnode **out)
{
    static const char *const ends1[] = {"elif", "else", "endif"};
    static const char *const ends2[] = {"endif"};
    omnic__jnode *result, *n;
    OMNIC_TRY(node(p, OMNIC_JN_IF, open, &result));
    n = result;
    for (;;) {
        OMNIC_TRY(parse_tuple(p, false, false, NULL, false, &n->a));
        OMNIC_TRY(parse_statements(p, "if", open, ends1, 3, false, &n->b));
        const omnic__jtok *t = cur(p);
        adv(p);
        if (is_name(t, "elif")) {
            omnic__jnode *x;
            OMNIC_TRY(node(p, OMNIC_JN_IF, t, &x));
            n->c = x;
            n = x;
            continue;
        }
        if (is_name(t, "else")) OMNIC_TRY(parse_statements(p, "if", open, ends2, 1, true, &n->c));
        break;
    }
    *out = result;
    return OMNIC_OK;
}

static omnic_status parse_signature(parser *p, omnic__jnode *n)
{
    OMNIC_TRY(expect_op(p, OMNIC_JTOK_LPAREN));
    kids k = {0};
    bool defaults = false;
    while (!is_op(cur(p), OMNIC_JTOK_RPAREN)) {
        if (k.n) OMNIC_TRY(expect_op(p, OMNIC_JTOK_COMMA));
        const omnic__jtok *t = cur(p);
        if (t->type != OMNIC_JT_NAME) return unexpected(p, "a parameter name");
        omnic__jnode *param;
        OMNIC_TRY(node(p, OMNIC_JN_PARAM, t, &param));
        param->s = t->s;
        param->slen = t->len;
        adv(p);
        for (size_t i = 0; i < k.n; i++)
            if (k.v[i]->slen == t->len && !memcmp(k.v[i]->s, t->s, t->len))
                return fail_at(p, t, "duplicate parameter '%.*s'", (int)t->len, t->s);
        if (is_op(cur(p), OMNIC_JTOK_ASSIGN)) {
            adv(p);
            OMNIC_TRY(parse_expression(p, true, &param->a));
            defaults = true;
        } else if (defaults) {
            return fail_at(p, t, "non-default parameter '%.*s' follows a default parameter", (int)t->len,
                           t->s);
        }
        OMNIC_TRY(kids_push(p, &k, param));
    }
    OMNIC_TRY(expect_op(p, OMNIC_JTOK_RPAREN));
    kids_set(n, &k);
    return OMNIC_OK;
}

static omnic_status parse_macro_body(parser *p, omnic__jnode *n, const char *block, const omnic__jtok *open,
                                     const char *end)
{
    const char *const *ends = NULL;
    static const char *const m_ends[] = {"endmacro"};
    static const char *const c_ends[] = {"endcall"};
    ends = !strcmp(end, "endmacro") ? m_ends : c_ends;
    omnic__jnode *saved = p->macro;
    int saved_loops = p->loops;
    p->macro = n;
    p->loops = 0;
    omnic_status rc = parse_statements(p, block, open, ends, 1, true, &n->b);
    p->macro = saved;
    p->loops = saved_loops;
    return rc;
}

static omnic_status parse_set(parser *p, const omnic__jtok *open, omnic__jnode **out)
{
    omnic__jnode *target;
    OMNIC_TRY(parse_assign_target(p, false, true, NULL, &target));
    omnic__jnode *n;
    if (is_op(cur(p), OMNIC_JTOK_ASSIGN)) {
        adv(p);
        OMNIC_TRY(node(p, OMNIC_JN_SET, open, &n));
        n->a = target;
        OMNIC_TRY(parse_tuple(p, false, true, NULL, false, &n->b));
        *out = n;
        return OMNIC_OK;
    }
    static const char *const ends[] = {"endset"};
    OMNIC_TRY(node(p, OMNIC_JN_SET_BLOCK, open, &n));
    n->a = target;
    if (is_op(cur(p), OMNIC_JTOK_PIPE)) OMNIC_TRY(parse_filter(p, NULL, false, &n->c));
    OMNIC_TRY(parse_statements(p, "set", open, ends, 1, true, &n->b));
    *out = n;
    return OMNIC_OK;
}

static omnic_status parse_statement(parser *p, omnic__jnode **out)
{
    const omnic__jtok *open = cur(p); /* the name after {% */
    if (open->type != OMNIC_JT_NAME) return unexpected(p, "a tag name");
    static const char *const unsupported[] = {"include", "import", "from", "extends", "block", "autoescape"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (is_name(open, unsupported[i]))
            return OMNIC_FAIL(
                p->err, OMNIC_E_UNSUPPORTED,
                "chat template at line %d, column %d: {%% %s %%} is not supported (chat templates are "
                "rendered alone)",
                (int)open->line, (int)open->col, unsupported[i]);
    OMNIC_TRY(enter(p));
    adv(p);
    omnic__jnode *n = NULL;
    if (is_name(open, "for")) {
        OMNIC_TRY(parse_for(p, open, &n));
    } else if (is_name(open, "if")) {
        OMNIC_TRY(parse_if(p, open, &n));
    } else if (is_name(open, "set")) {
        OMNIC_TRY(parse_set(p, open, &n));
    } else if (is_name(open, "macro")) {
        OMNIC_TRY(node(p, OMNIC_JN_MACRO, open, &n));
        const omnic__jtok *name = cur(p);
        if (name->type != OMNIC_JT_NAME) return unexpected(p, "a macro name");
        n->s = name->s;
        n->slen = name->len;
        adv(p);
        OMNIC_TRY(parse_signature(p, n));
        OMNIC_TRY(parse_macro_body(p, n, "macro", open, "endmacro"));
    } else if (is_name(open, "call")) {
        OMNIC_TRY(node(p, OMNIC_JN_CALL_BLOCK, open, &n));
        if (is_op(cur(p), OMNIC_JTOK_LPAREN)) OMNIC_TRY(parse_signature(p, n));
        OMNIC_TRY(parse_expression(p, true, &n->a));
        if (n->a->kind != OMNIC_JN_CALL) return fail_at(p, open, "{%% call %%} needs a macro call");
        OMNIC_TRY(parse_macro_body(p, n, "call", open, "endcall"));
    } else if (is_name(open, "filter")) {
        static const char *const ends[] = {"endfilter"};
        OMNIC_TRY(node(p, OMNIC_JN_FILTER_BLOCK, open, &n));
        OMNIC_TRY(parse_filter(p, NULL, true, &n->a));
        OMNIC_TRY(parse_statements(p, "filter", open, ends, 1, true, &n->b));
    } else if (is_name(open, "with")) {
        static const char *const ends[] = {"endwith"};
        OMNIC_TRY(node(p, OMNIC_JN_WITH, open, &n));
        kids k = {0};
        while (cur(p)->type != OMNIC_JT_BLOCK_END) {
            if (k.n) OMNIC_TRY(expect_op(p, OMNIC_JTOK_COMMA));
            omnic__jnode *set;
            OMNIC_TRY(node(p, OMNIC_JN_SET, cur(p), &set));
            OMNIC_TRY(parse_assign_target(p, false, false, NULL, &set->a));
            OMNIC_TRY(expect_op(p, OMNIC_JTOK_ASSIGN));
            OMNIC_TRY(parse_expression(p, true, &set->b));
            OMNIC_TRY(kids_push(p, &k, set));
        }
        kids_set(n, &k);
        OMNIC_TRY(parse_statements(p, "with", open, ends, 1, true, &n->b));
    } else if (is_name(open, "generation")) {
        /* transformers' AssistantTracker extension: the body renders as usual */
        static const char *const ends[] = {"endgeneration"};
        OMNIC_TRY(parse_statements(p, "generation", open, ends, 1, true, &n));
    } else if (is_name(open, "break") || is_name(open, "continue")) {
        if (p->loops == 0) return fail_at(p, open, "'%.*s' outside of a for loop", (int)open->len, open->s);
        OMNIC_TRY(node(p, open->s[0] == 'b' ? OMNIC_JN_BREAK : OMNIC_JN_CONTINUE, open, &n));
    } else if (is_name(open, "print")) {
        OMNIC_TRY(node(p, OMNIC_JN_OUTPUT, open, &n));
        OMNIC_TRY(parse_tuple(p, false, true, NULL, false, &n->a));
    } else {
        char d[96];
        describe(open, d, sizeof d);
        if (p->nopen) {
            const open_block *ob = &p->open[p->nopen - 1];
            char e[128];
            ends_text(ob->ends, ob->nends, e, sizeof e);
            return fail_at(
                p, open,
                "unknown or misplaced tag %s: the innermost open block is '%s' (line %d, column %d) "
                "which needs %s",
                d, ob->name, (int)ob->line, (int)ob->col, e);
        }
        if (open->len > 3 && !memcmp(open->s, "end", 3))
            return fail_at(p, open, "unexpected tag %s: there is no open block to close", d);
        if (is_name(open, "else") || is_name(open, "elif"))
            return fail_at(p, open, "unexpected tag %s outside of an if or for block", d);
        return fail_at(p, open, "unknown tag %s", d);
    }
    p->depth--;
    OMNIC_TRY(expect_type(p, OMNIC_JT_BLOCK_END, "'%}'"));
    *out = n;
    return OMNIC_OK;
}

static omnic_status subparse(parser *p, const char *const *ends, size_t nends, omnic__jnode **out)
{
    const omnic__jtok *at = cur(p);
    kids k = {0};
    for (;;) {
        const omnic__jtok *t = cur(p);
        omnic__jnode *x = NULL;
        if (t->type == OMNIC_JT_EOF) break;
        if (t->type == OMNIC_JT_DATA) {
            OMNIC_TRY(node(p, OMNIC_JN_TEXT, t, &x));
            x->s = t->s;
            x->slen = t->len;
            adv(p);
        } else if (t->type == OMNIC_JT_VAR_BEGIN) {
            adv(p);
            OMNIC_TRY(node(p, OMNIC_JN_OUTPUT, t, &x));
            OMNIC_TRY(parse_tuple(p, false, true, NULL, false, &x->a));
            OMNIC_TRY(expect_type(p, OMNIC_JT_VAR_END, "'}}'"));
        } else if (t->type == OMNIC_JT_BLOCK_BEGIN) {
            if (ends && is_end(p, ends, nends)) break;
            adv(p);
            OMNIC_TRY(parse_statement(p, &x));
        } else {
            return unexpected(p, NULL);
        }
        if (x) OMNIC_TRY(kids_push(p, &k, x));
    }
    OMNIC_TRY(node(p, OMNIC_JN_BODY, at, out));
    kids_set(*out, &k);
    return OMNIC_OK;
}

omnic_status omnic__template_parse(const char *src, size_t len, const omnic__template_opts *opts,
                                   omnic__template **out, omnic_err *err)
{
    size_t max_bytes = opts && opts->max_bytes ? opts->max_bytes : OMNIC_MAX_TEMPLATE_BYTES;
    int max_nesting = opts && opts->max_nesting ? opts->max_nesting : OMNIC_MAX_TEMPLATE_NESTING;
    if (max_nesting > OMNIC_MAX_TEMPLATE_NESTING) max_nesting = OMNIC_MAX_TEMPLATE_NESTING;
    if (!src && len) return OMNIC_FAIL(err, OMNIC_E_INVALID, "chat template: NULL source");
    if (len > max_bytes)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "chat template of %zu bytes is over %zu (OMNIC_MAX_TEMPLATE_BYTES)", len,
                          max_bytes);
    size_t valid = omnic__ju8_valid(src, len);
    if (valid != len) {
        int line = 1, col = 1;
        for (size_t i = 0; i < valid; i++) {
            if (src[i] == '\n')
                line++, col = 1;
            else if (((unsigned char)src[i] & 0xC0u) != 0x80u)
                col++;
        }
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "chat template: invalid UTF-8 at line %d, column %d (byte offset %zu of %zu)", line,
                          col, valid, len);
    }
    omnic_status rc = OMNIC_OK;
    omnic__jtoks toks = {0};
    parser *p = NULL;
    omnic__template *t = omnic_alloc_array(1, sizeof *t);
    if (!t || !(t->src = omnic_malloc(len + 1))) goto nomem;
    if (len) memcpy(t->src, src, len);
    t->src[len] = '\0';
    t->src_len = len;
    if ((rc = omnic__jlex(t, &toks, err)) != OMNIC_OK) goto fail;
    if (!(p = omnic_alloc_array(1, sizeof *p))) goto nomem;
    p->t = t;
    p->tok = toks.v;
    p->n = toks.n;
    p->err = err;
    p->max_depth = max_nesting;
    if ((rc = subparse(p, NULL, 0, &t->root)) != OMNIC_OK) goto fail;
    omnic_free(p);
    omnic_free(toks.v);
    *out = t;
    return OMNIC_OK;
nomem:
    rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory parsing the chat template");
fail:
    omnic_free(p);
    omnic_free(toks.v);
    omnic__template_destroy(t);
    return rc;
}
