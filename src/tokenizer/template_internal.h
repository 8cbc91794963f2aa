/* Internals of the chat-template interpreter, shared by template_lex.c (tokens),
 * template_parse.c (AST), template_value.c (values), template_eval.c (statements and
 * expressions) and template_builtins.c (filters, tests, methods, globals).
 *
 * Semantics are Python jinja2's (3.1, as transformers configures it) wherever the two
 * JavaScript/Python implementations differ: `{{ none }}` prints "None", `~` binds tighter than
 * `+`, comparisons chain, for-loop bodies get a fresh scope per iteration, strings are indexed
 * by code point, `'a' + 1` is an error, undefined prints as "" but fails on attribute access.
 *
 * Memory: values are refcounted (omnic__jv holds a reference). Template constants and
 * static builtins are immortal (rc < 0: never written, so renders may share them). Every
 * other allocation of a render goes through omnic__jmem_* and counts against max_memory.
 * Only namespaces and scopes can form cycles; the render ends by sweeping both lists. */
#ifndef OMNIC_TOKENIZER_TEMPLATE_INTERNAL_H
#define OMNIC_TOKENIZER_TEMPLATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tokenizer/template.h"

/* ---- values ---------------------------------------------------------------------------- */

typedef enum omnic__jkind {
    OMNIC_JV_UNDEF = 0, /* jinja2 Undefined: prints "", falsy, fails on attribute access */
    OMNIC_JV_NONE,
    OMNIC_JV_BOOL,
    OMNIC_JV_INT,   /* int64; overflow is an error */
    OMNIC_JV_FLOAT, /* double */
    OMNIC_JV_STR,   /* omnic__jstr: UTF-8, immutable */
    OMNIC_JV_LIST,  /* omnic__jlist: list or tuple (flag), immutable once built */
    OMNIC_JV_DICT,  /* omnic__jdict: string keys in insertion order, immutable once built */
    OMNIC_JV_NS,    /* omnic__jdict used as a namespace(): the only mutable container */
    OMNIC_JV_FUNC,  /* omnic__jfunc: macro, caller, builtin global or bound method */
    OMNIC_JV_LOOP,  /* omnic__jloop: a for loop's `loop` object */
    OMNIC_JV_KIND_COUNT
} omnic__jkind;

/* Heap object header. rc < 0: immortal. next links the free worklist (frees are iterative,
 * so a deeply nested value never recurses). */
typedef struct omnic__jobj {
    int32_t rc;
    uint8_t kind;
    uint8_t flags;
    struct omnic__jobj *next;
} omnic__jobj;

struct omnic__jnode;

typedef struct omnic__jv {
    uint8_t kind; /* omnic__jkind */
    uint8_t aux;  /* UNDEF: the kind of the object that lacked the name (OMNIC_JV_KIND_COUNT: a variable) */
    union {
        bool b;
        int64_t i;
        double f;
        omnic__jobj *o;
        const struct omnic__jnode *node; /* UNDEF: the node that produced it, for messages */
    } u;
} omnic__jv;

#define OMNIC_JSTR_INLINE 0u   /* data follows the header */
#define OMNIC_JSTR_OWNED 1u    /* data is a separate omnic__jmem block owned by the string */
#define OMNIC_JSTR_BORROWED 2u /* data lives elsewhere for the whole render (JSON input, AST) */
typedef struct omnic__jstr {
    omnic__jobj h; /* flags: OMNIC_JSTR_* */
    size_t len;    /* bytes */
    size_t ncp;    /* code points */
    const char *p; /* NUL-terminated unless BORROWED */
} omnic__jstr;

#define OMNIC_JLIST_TUPLE 1u
#define OMNIC_JLIST_GROUP 2u /* a groupby result tuple: .grouper is [0], .list is [1] */
typedef struct omnic__jlist {
    omnic__jobj h;
    size_t n, cap;
    omnic__jv *v;
} omnic__jlist;

typedef struct omnic__jdict {
    omnic__jobj h;
    size_t n, cap;
    omnic__jstr **k;
    omnic__jv *v;
    uint32_t *idx; /* open-addressed index of entry+1, built past 8 entries */
    size_t idx_cap;
    struct omnic__jdict *ns_prev, *ns_next; /* namespaces: the render's list of live ones */
} omnic__jdict;

typedef enum omnic__jfkind {
    OMNIC_JF_MACRO,  /* node: N_MACRO; closure: defining scope */
    OMNIC_JF_CALLER, /* node: N_CALL_BLOCK (caller() of a call block); closure */
    OMNIC_JF_GLOBAL, /* builtin global function: id */
    OMNIC_JF_METHOD, /* bound method: self + name */
} omnic__jfkind;

struct omnic__jscope;
typedef struct omnic__jfunc {
    omnic__jobj h;
    uint8_t fkind;
    int id; /* OMNIC_JF_GLOBAL: index in the globals table */
    const struct omnic__jnode *node;
    struct omnic__jscope *closure; /* reference */
    omnic__jv self;                /* METHOD */
    const char *name;              /* METHOD / GLOBAL */
    size_t name_len;
} omnic__jfunc;

typedef struct omnic__jloop {
    omnic__jobj h;
    size_t index0, length;
    omnic__jlist *items; /* reference: previtem/nextitem */
} omnic__jloop;

/* ---- scopes ---------------------------------------------------------------------------- */

typedef struct omnic__jvar {
    const char *name; /* borrowed: the AST or the vars JSON (both outlive the render) */
    size_t len;
    omnic__jv v;
} omnic__jvar;

typedef struct omnic__jscope {
    int32_t rc;
    struct omnic__jscope *parent; /* reference */
    size_t n, cap;
    omnic__jvar *vars;
    struct omnic__jscope *prev, *next; /* the render's list of live scopes */
} omnic__jscope;

/* ---- AST ------------------------------------------------------------------------------- */

typedef enum omnic__jnkind {
    /* statements */
    OMNIC_JN_BODY,       /* kids */
    OMNIC_JN_TEXT,       /* s, slen */
    OMNIC_JN_OUTPUT,     /* a: expression */
    OMNIC_JN_IF,         /* a: test, b: body, c: else (BODY or IF) or NULL */
    OMNIC_JN_FOR,        /* a: target, b: iterable, c: filter test or NULL, d: body, e: else or NULL */
    OMNIC_JN_SET,        /* a: target (NAME, TUPLE of NAME, NSATTR), b: value */
    OMNIC_JN_SET_BLOCK,  /* a: target, b: body, c: filter chain (FILTER with a == NULL at the bottom) or NULL
                          */
    OMNIC_JN_MACRO,      /* s: name, kids: PARAM, b: body, flags: OMNIC_JMACRO_* */
    OMNIC_JN_CALL_BLOCK, /* a: CALL, kids: PARAM of caller, b: body, flags */
    OMNIC_JN_FILTER_BLOCK, /* a: filter chain, b: body */
    OMNIC_JN_WITH,         /* kids: SET, b: body */
    OMNIC_JN_BREAK,
    OMNIC_JN_CONTINUE,
    /* expressions */
    OMNIC_JN_CONST,   /* k */
    OMNIC_JN_NAME,    /* s */
    OMNIC_JN_GETATTR, /* a: object, s: name */
    OMNIC_JN_GETITEM, /* a: object, b: key */
    OMNIC_JN_SLICE,   /* a: object, b: start, c: stop, d: step (each may be NULL) */
    OMNIC_JN_CALL,    /* a: callee, kids: arguments (expressions, KWARG, STARARG, DSTARARG) */
    OMNIC_JN_FILTER,  /* a: operand, s: name, kids: arguments */
    OMNIC_JN_TEST,    /* a: operand, s: name, kids: arguments, op: 1 when negated */
    OMNIC_JN_UNARY,   /* op: OMNIC_JOP_NOT / NEG / POS, a */
    OMNIC_JN_BINOP,   /* op, a, b */
    OMNIC_JN_CONCAT,  /* kids */
    OMNIC_JN_COMPARE, /* a: first operand, kids: OPERAND (op, a) */
    OMNIC_JN_OPERAND,
    OMNIC_JN_COND,  /* a: test, b: value when true, c: value when false or NULL */
    OMNIC_JN_LIST,  /* kids */
    OMNIC_JN_TUPLE, /* kids */
    OMNIC_JN_DICT,  /* kids: PAIR (a: key, b: value) */
    OMNIC_JN_PAIR,
    OMNIC_JN_KWARG,    /* s: name, a: value */
    OMNIC_JN_STARARG,  /* a */
    OMNIC_JN_DSTARARG, /* a */
    OMNIC_JN_PARAM,    /* s: name, a: default or NULL */
    OMNIC_JN_NSATTR,   /* set target `ns.attr`: a: NAME, s: attr */
} omnic__jnkind;

typedef enum omnic__jop {
    OMNIC_JOP_NONE = 0,
    OMNIC_JOP_ADD,
    OMNIC_JOP_SUB,
    OMNIC_JOP_MUL,
    OMNIC_JOP_DIV,
    OMNIC_JOP_FLOORDIV,
    OMNIC_JOP_MOD,
    OMNIC_JOP_POW,
    OMNIC_JOP_AND,
    OMNIC_JOP_OR,
    OMNIC_JOP_NOT,
    OMNIC_JOP_NEG,
    OMNIC_JOP_POS,
    OMNIC_JOP_EQ,
    OMNIC_JOP_NE,
    OMNIC_JOP_LT,
    OMNIC_JOP_LE,
    OMNIC_JOP_GT,
    OMNIC_JOP_GE,
    OMNIC_JOP_IN,
    OMNIC_JOP_NOTIN,
} omnic__jop;

#define OMNIC_JMACRO_VARARGS 1u /* the body reads `varargs` */
#define OMNIC_JMACRO_KWARGS 2u  /* the body reads `kwargs` */
#define OMNIC_JMACRO_CALLER 4u  /* the body reads `caller` */

typedef struct omnic__jnode {
    uint8_t kind; /* omnic__jnkind */
    uint8_t op;   /* omnic__jop, or a flag */
    uint16_t flags;
    int32_t line, col;
    struct omnic__jnode *a, *b, *c, *d, *e;
    struct omnic__jnode **kids;
    size_t nkids;
    const char *s; /* names and text: template-owned */
    size_t slen;
    omnic__jv k; /* CONST: an immortal value */
} omnic__jnode;

/* A parsed template: the AST and the memory behind its names, texts and constants. */
struct omnic__template {
    char *src; /* normalized source (newlines as \n); TEXT and names point into it */
    size_t src_len;
    omnic__jnode *root;           /* BODY */
    struct omnic__jblock *blocks; /* chunk allocator for nodes, kid arrays and constants */
};

/* Chunk allocation from the template (zeroed, 16-byte aligned). NULL when out of memory. */
void *omnic__jt_alloc(omnic__template *t, size_t n);

/* ---- tokens (template_lex.c) ----------------------------------------------------------- */

typedef enum omnic__jtt {
    OMNIC_JT_EOF = 0,
    OMNIC_JT_DATA, /* s, len: text outside tags (whitespace control applied) */
    OMNIC_JT_VAR_BEGIN,
    OMNIC_JT_VAR_END,
    OMNIC_JT_BLOCK_BEGIN,
    OMNIC_JT_BLOCK_END,
    OMNIC_JT_NAME,   /* s, len */
    OMNIC_JT_STRING, /* str: immortal constant */
    OMNIC_JT_INT,    /* i */
    OMNIC_JT_FLOAT,  /* f */
    OMNIC_JT_OP,     /* op: one of OMNIC_JTOK_* */
} omnic__jtt;

typedef enum omnic__jtokop {
    OMNIC_JTOK_ADD = 1,  /* + */
    OMNIC_JTOK_SUB,      /* - */
    OMNIC_JTOK_DIV,      /* / */
    OMNIC_JTOK_FLOORDIV, /* // */
    OMNIC_JTOK_MUL,      /* * */
    OMNIC_JTOK_MOD,      /* % */
    OMNIC_JTOK_POW,      /* ** */
    OMNIC_JTOK_TILDE,    /* ~ */
    OMNIC_JTOK_LBRACKET,
    OMNIC_JTOK_RBRACKET,
    OMNIC_JTOK_LPAREN,
    OMNIC_JTOK_RPAREN,
    OMNIC_JTOK_LBRACE,
    OMNIC_JTOK_RBRACE,
    OMNIC_JTOK_EQ,   /* == */
    OMNIC_JTOK_NE,   /* != */
    OMNIC_JTOK_GT,   /* > */
    OMNIC_JTOK_GTEQ, /* >= */
    OMNIC_JTOK_LT,   /* < */
    OMNIC_JTOK_LTEQ, /* <= */
    OMNIC_JTOK_ASSIGN,
    OMNIC_JTOK_DOT,
    OMNIC_JTOK_COLON,
    OMNIC_JTOK_PIPE,
    OMNIC_JTOK_COMMA,
    OMNIC_JTOK_SEMICOLON,
} omnic__jtokop;

typedef struct omnic__jtok {
    uint8_t type; /* omnic__jtt */
    uint8_t op;   /* omnic__jtokop */
    int32_t line, col;
    const char *s; /* DATA, NAME: points into the template's source */
    size_t len;
    int64_t i;
    double f;
    omnic__jstr *str; /* STRING */
} omnic__jtok;

typedef struct omnic__jtoks {
    omnic__jtok *v;
    size_t n, cap;
} omnic__jtoks;

/* Normalizes newlines of t->src in place (\r\n, \r -> \n) and drops one trailing newline
 * (jinja2's keep_trailing_newline=False), then tokenizes with trim_blocks and lstrip_blocks.
 * Fills *toks (owned: omnic_free(toks->v)). Errors: E_INVALID "line L, column C: ...", E_NOMEM. */
omnic_status omnic__jlex(omnic__template *t, omnic__jtoks *toks, omnic_err *err);

/* "'+'" style spelling of an operator token, for messages. */
const char *omnic__jtokop_str(int op);

/* ---- renders ----------------------------------------------------------------------------- */

typedef struct omnic__jbuf {
    char *p; /* omnic__jmem block; NUL-terminated when cap > 0 */
    size_t n, cap;
} omnic__jbuf;

typedef struct omnic__jrender {
    const omnic__template *t;
    omnic__template_opts lim; /* with defaults filled in */
    omnic_err *err;
    size_t live, peak; /* bytes held through omnic__jmem */
    size_t work;       /* bytes allocated through omnic__jmem in all (grown reallocations count
                        * their growth), bounded by lim.max_work */
    uint64_t steps;
    int depth;              /* macro/caller calls in progress */
    int32_t line;           /* line of the node being evaluated, for messages */
    int jump;               /* 1: break, 2: continue pending */
    omnic__jbuf *out;       /* where statements write */
    omnic__jobj *free_list; /* worklist of objects whose count reached zero */
    bool freeing;
    bool sweeping;            /* final sweep: scopes and namespaces are not freed on rc == 0 */
    omnic__jscope *scopes;    /* live scopes */
    omnic__jdict *namespaces; /* live namespaces */
} omnic__jrender;

/* Raises a runtime error "line N: <message>" (line of the node being evaluated). */
omnic_status omnic__jfail(omnic__jrender *r, omnic_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Counts n work items (loop iterations, calls, filter items) against max_iterations. */
omnic_status omnic__jstep(omnic__jrender *r, uint64_t n);

/* Allocation accounted against max_memory. E_TOO_LARGE names the limit; E_NOMEM. */
omnic_status omnic__jmem_alloc(omnic__jrender *r, size_t n, void **out);
omnic_status omnic__jmem_realloc(omnic__jrender *r, void *p, size_t n, void **out);
void omnic__jmem_free(omnic__jrender *r, void *p);
/* n * elem bytes, the product checked for overflow. */
omnic_status omnic__jmem_array(omnic__jrender *r, size_t n, size_t elem, void **out);
omnic_status omnic__jmem_realloc_array(omnic__jrender *r, void *p, size_t n, size_t elem, void **out);

/* Output buffers: appends fail with E_TOO_LARGE past max_output. reserve: room for extra more
 * bytes (and the NUL) in one allocation. */
omnic_status omnic__jbuf_reserve(omnic__jrender *r, omnic__jbuf *b, size_t extra);
omnic_status omnic__jbuf_put(omnic__jrender *r, omnic__jbuf *b, const char *s, size_t n);
omnic_status omnic__jbuf_putc(omnic__jrender *r, omnic__jbuf *b, char c);
omnic_status omnic__jbuf_printf(omnic__jrender *r, omnic__jbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void omnic__jbuf_free(omnic__jrender *r, omnic__jbuf *b);

/* ---- value helpers (template_value.c) ------------------------------------------------ */

static inline omnic__jv omnic__jv_undef(const omnic__jnode *n, uint8_t aux)
{
    omnic__jv v = {.kind = OMNIC_JV_UNDEF, .aux = aux};
    v.u.node = n;
    return v;
}
static inline omnic__jv omnic__jv_none(void)
{
    omnic__jv v = {.kind = OMNIC_JV_NONE};
    return v;
}
static inline omnic__jv omnic__jv_bool(bool b)
{
    omnic__jv v = {.kind = OMNIC_JV_BOOL};
    v.u.b = b;
    return v;
}
static inline omnic__jv omnic__jv_int(int64_t i)
{
    omnic__jv v = {.kind = OMNIC_JV_INT};
    v.u.i = i;
    return v;
}
static inline omnic__jv omnic__jv_float(double f)
{
    omnic__jv v = {.kind = OMNIC_JV_FLOAT};
    v.u.f = f;
    return v;
}
static inline omnic__jv omnic__jv_obj(omnic__jobj *o)
{
    omnic__jv v = {.kind = o->kind};
    v.u.o = o;
    return v;
}
static inline bool omnic__jv_is_obj(omnic__jv v)
{
    return v.kind >= OMNIC_JV_STR && v.kind < OMNIC_JV_KIND_COUNT;
}
#define OMNIC_JSTR(v) ((omnic__jstr *)(v).u.o)
#define OMNIC_JLIST(v) ((omnic__jlist *)(v).u.o)
#define OMNIC_JDICT(v) ((omnic__jdict *)(v).u.o)
#define OMNIC_JFUNC(v) ((omnic__jfunc *)(v).u.o)
#define OMNIC_JLOOP(v) ((omnic__jloop *)(v).u.o)

static inline omnic__jv omnic__jv_ref(omnic__jv v)
{
    if (omnic__jv_is_obj(v) && v.u.o->rc >= 0) v.u.o->rc++;
    return v;
}
void omnic__jv_unref(omnic__jrender *r, omnic__jv v);

/* New values (a reference each); E_NOMEM / E_TOO_LARGE. */
omnic_status omnic__jstr_new(omnic__jrender *r, const char *s, size_t len, omnic__jv *out);
/* Takes ownership of b's memory (b is left empty), also on failure. */
omnic_status omnic__jstr_from_buf(omnic__jrender *r, omnic__jbuf *b, omnic__jv *out);
/* A string over memory that outlives the render (not copied). */
omnic_status omnic__jstr_borrow(omnic__jrender *r, const char *s, size_t len, omnic__jv *out);
omnic_status omnic__jlist_new(omnic__jrender *r, size_t cap, bool tuple, omnic__jv *out);
/* Appends (takes the reference of v, also on failure). */
omnic_status omnic__jlist_push(omnic__jrender *r, omnic__jlist *l, omnic__jv v);
omnic_status omnic__jdict_new(omnic__jrender *r, bool ns, omnic__jv *out);
/* Sets key (borrows k: referenced) to v (takes the reference, also on failure). */
omnic_status omnic__jdict_set(omnic__jrender *r, omnic__jdict *d, omnic__jstr *k, omnic__jv v);
/* As omnic__jdict_set with a key given as bytes (a new key string is made when absent). */
omnic_status omnic__jdict_setc(omnic__jrender *r, omnic__jdict *d, const char *k, size_t klen, omnic__jv v);
/* Borrowed value of key k, or NULL. */
omnic__jv *omnic__jdict_get(const omnic__jdict *d, const char *k, size_t klen);

/* A JSON value as a template value (strings borrowed from j, which must outlive the render). */
omnic_status omnic__jv_from_json(omnic__jrender *r, const json_t *j, int depth, omnic__jv *out);

/* Python truthiness. */
bool omnic__jv_truthy(omnic__jv v);
/* Python's type names for messages ("str", "list", "dict", "int", "NoneType", "Undefined", ...). */
const char *omnic__jv_type(omnic__jv v);
const char *omnic__jkind_type(int kind);

/* str(v) appended to b (Undefined -> "", None -> "None", True, 1.5, ['a', 1], {'k': 'v'}). */
omnic_status omnic__jv_write_str(omnic__jrender *r, omnic__jbuf *b, omnic__jv v);
/* repr(v) appended to b. */
omnic_status omnic__jv_write_repr(omnic__jrender *r, omnic__jbuf *b, omnic__jv v, int depth);
/* str(v) as a string value (strings are returned referenced, not copied). */
omnic_status omnic__jv_to_str(omnic__jrender *r, omnic__jv v, omnic__jv *out);
/* Python's repr of a float ("1.0", "1e+20", "0.1"). */
void omnic__jfloat_repr(double f, char *buf, size_t n);

typedef struct omnic__jjson_opts {
    const char *indent; /* NULL: one line */
    size_t indent_len;
    const char *item_sep, *key_sep;
    size_t item_sep_len, key_sep_len;
    bool sort_keys, ensure_ascii;
} omnic__jjson_opts;
/* json.dumps(v, ...) appended to b: Python's output byte for byte. */
omnic_status omnic__jv_write_json(omnic__jrender *r, omnic__jbuf *b, omnic__jv v, const omnic__jjson_opts *o,
                                  int depth);

/* Python ==. E_TOO_LARGE past the value depth. */
omnic_status omnic__jv_eq(omnic__jrender *r, omnic__jv a, omnic__jv b, int depth, bool *out);
/* Python <, for sorting and comparisons: *out is -1, 0 or 1. Errors when the types do not order. */
omnic_status omnic__jv_cmp(omnic__jrender *r, omnic__jv a, omnic__jv b, bool ignore_case, int depth,
                           int *out);

/* ---- UTF-8 ----------------------------------------------------------------------------- */

/* Decodes the code point at s[*i] (valid UTF-8) and advances *i. */
uint32_t omnic__ju8_next(const char *s, size_t len, size_t *i);
/* Encodes cp into out (4 bytes room); returns the byte count. */
size_t omnic__ju8_put(char *out, uint32_t cp);
/* Number of code points of valid UTF-8. */
size_t omnic__ju8_count(const char *s, size_t len);
/* Byte offset of code point index k (k <= count). */
size_t omnic__ju8_offset(const char *s, size_t len, size_t k);
/* Python's str.isspace for one code point. */
bool omnic__ju8_space(uint32_t cp);
/* Length of the longest valid UTF-8 prefix. */
size_t omnic__ju8_valid(const char *s, size_t len);

/* ---- evaluation (template_eval.c) --------------------------------------------------- */

omnic_status omnic__jeval(omnic__jrender *r, const omnic__jnode *n, omnic__jscope *s, omnic__jv *out);
omnic_status omnic__jexec(omnic__jrender *r, const omnic__jnode *n, omnic__jscope *s);

omnic_status omnic__jscope_new(omnic__jrender *r, omnic__jscope *parent, omnic__jscope **out);
void omnic__jscope_unref(omnic__jrender *r, omnic__jscope *s);
/* Binds name (borrowed; must outlive the render) in s, taking the reference of v. */
omnic_status omnic__jscope_set(omnic__jrender *r, omnic__jscope *s, const char *name, size_t len,
                               omnic__jv v);

/* Evaluated call arguments: positional then keyword. Each value holds a reference. */
typedef struct omnic__jargs {
    omnic__jv *pos;
    size_t npos;
    const char **kname;
    size_t *klen;
    omnic__jv *kw;
    size_t nkw;
    size_t cap_pos, cap_kw;
    omnic__jv hold; /* a ** mapping whose keys the keyword names borrow */
} omnic__jargs;
void omnic__jargs_free(omnic__jrender *r, omnic__jargs *a);
omnic_status omnic__jargs_push(omnic__jrender *r, omnic__jargs *a, omnic__jv v);
omnic_status omnic__jargs_push_kw(omnic__jrender *r, omnic__jargs *a, const char *name, size_t len,
                                  omnic__jv v);

/* Calls a callable value (macro, caller, global, method). */
omnic_status omnic__jcall(omnic__jrender *r, omnic__jv fn, omnic__jargs *args, omnic__jv *out);
/* obj.name (Python getattr then getitem). *out may be Undefined (n: node for messages). */
omnic_status omnic__jgetattr(omnic__jrender *r, omnic__jv obj, const char *name, size_t len,
                             const omnic__jnode *n, omnic__jv *out);
/* obj[key] (getitem then getattr). */
omnic_status omnic__jgetitem(omnic__jrender *r, omnic__jv obj, omnic__jv key, const omnic__jnode *n,
                             omnic__jv *out);
/* Raises the UndefinedError for v ("'x' is undefined", "'dict object' has no attribute 'y'"). */
omnic_status omnic__jundef_fail(omnic__jrender *r, omnic__jv v);
/* Python's a <op> b for + - * / // % ** (op: OMNIC_JOP_*). */
omnic_status omnic__jbinop(omnic__jrender *r, int op, omnic__jv a, omnic__jv b, omnic__jv *out);
/* Python's `x in c`. */
omnic_status omnic__jcontains(omnic__jrender *r, omnic__jv x, omnic__jv c, bool *out);
/* Iterates: a list of the items of v (list, tuple, dict keys, string characters, Undefined -> []). */
omnic_status omnic__jiter(omnic__jrender *r, omnic__jv v, omnic__jv *out_list);

/* d.items(): a new list of (key, value) tuples. */
omnic_status omnic__jdict_items(omnic__jrender *r, const omnic__jdict *d, omnic__jv *out);

/* ---- builtin arguments (template_strings.c) ---------------------------------------------- */

#define OMNIC_JNAME_IS(name, len, lit) ((len) == sizeof(lit) - 1 && !memcmp((name), (lit), (len)))

/* Binds a's positional and keyword arguments to the parameter names: out[i] points at the
 * argument or is NULL. Errors (E_INVALID) name `what` for too many or unknown arguments. */
omnic_status omnic__jbind(omnic__jrender *r, const char *what, omnic__jargs *a, const char *const *names,
                          size_t n, const omnic__jv **out);
/* Declares `arg[]` bound to the listed parameter names (in a function with r and a). */
#define OMNIC_JBIND(what, ...)                                                                               \
    static const char *const names_[] = {__VA_ARGS__};                                                       \
    const omnic__jv *arg[sizeof names_ / sizeof names_[0]];                                                  \
    OMNIC_TRY(omnic__jbind(r, what, a, names_, sizeof names_ / sizeof names_[0], arg))
#define OMNIC_JNO_ARGS(what)                                                                                 \
    do {                                                                                                     \
        if (a->npos || a->nkw) return omnic__jfail(r, OMNIC_E_INVALID, "%s takes no arguments", what);       \
    } while (0)

static inline bool omnic__jarg_given(const omnic__jv *v)
{
    return v && v->kind != OMNIC_JV_UNDEF;
}
static inline bool omnic__jarg_bool(const omnic__jv *v, bool dflt)
{
    return omnic__jarg_given(v) ? omnic__jv_truthy(*v) : dflt;
}
/* An integer argument (bools count; absent or None: dflt). */
omnic_status omnic__jarg_int(omnic__jrender *r, const omnic__jv *v, int64_t dflt, const char *what,
                             int64_t *out);
/* A string argument. */
omnic_status omnic__jarg_str(omnic__jrender *r, const omnic__jv *v, const char *what,
                             const omnic__jstr **out);

/* ---- strings (template_strings.c) --------------------------------------------------------- */

typedef enum omnic__jcase {
    OMNIC_JCASE_UPPER,      /* str.upper() (and the upper filter) */
    OMNIC_JCASE_LOWER,      /* str.lower() */
    OMNIC_JCASE_TITLE,      /* str.title() */
    OMNIC_JCASE_CAPITALIZE, /* str.capitalize() */
    OMNIC_JCASE_SWAP,       /* str.swapcase() */
    OMNIC_JCASE_JTITLE,     /* jinja2's title filter: words split at whitespace - ( { [ < */
} omnic__jcase;
omnic_status omnic__jstr_case(omnic__jrender *r, const omnic__jstr *s, int mode, omnic__jv *out);
/* strip / lstrip / rstrip (which: 1 left, 2 right, 3 both) of chars (NULL: whitespace). */
omnic_status omnic__jstr_strip(omnic__jrender *r, omnic__jv s, const omnic__jstr *chars, int which,
                               omnic__jv *out);
/* s.replace(old, rep, count) (count < 0: all). */
omnic_status omnic__jstr_replace(omnic__jrender *r, omnic__jv s, const omnic__jstr *old,
                                 const omnic__jstr *rep, int64_t count, omnic__jv *out);
omnic_status omnic__jstr_splitlines(omnic__jrender *r, const omnic__jstr *s, bool keepends, omnic__jv *out);
/* s.center(width, fill) (fill NULL: space). */
omnic_status omnic__jstr_center(omnic__jrender *r, omnic__jv s, int64_t width, const omnic__jstr *fill,
                                omnic__jv *out);
/* str(x).isupper() / .islower(). */
omnic_status omnic__jstr_case_test(omnic__jrender *r, omnic__jv x, bool upper, bool *out);
/* fmt % args (Python's printf-style formatting: %s %r %d %i %x %f %e %g %%, flags, width, precision). */
omnic_status omnic__jstr_percent(omnic__jrender *r, const omnic__jstr *fmt, omnic__jv args, omnic__jv *out);
bool omnic__jstr_method_exists(const char *name, size_t len);
omnic_status omnic__jstr_method(omnic__jrender *r, omnic__jv self, const char *name, size_t len,
                                omnic__jargs *a, omnic__jv *out);

/* ---- filters (template_filters.c), tests, methods, globals (template_builtins.c) ------ */

/* Applies filter name to x (borrowed). E_INVALID for an unknown filter. */
omnic_status omnic__jfilter(omnic__jrender *r, const char *name, size_t len, omnic__jv x, omnic__jargs *a,
                            omnic__jv *out);
bool omnic__jfilter_exists(const char *name, size_t len);
/* Runs test name on x. */
omnic_status omnic__jtest(omnic__jrender *r, const char *name, size_t len, omnic__jv x, omnic__jargs *a,
                          bool *out);
bool omnic__jtest_exists(const char *name, size_t len);
/* Whether type kind has a method name (str, dict, list, loop). */
bool omnic__jmethod_exists(int kind, const char *name, size_t len);
omnic_status omnic__jmethod(omnic__jrender *r, omnic__jv self, const char *name, size_t len, omnic__jargs *a,
                            omnic__jv *out);
/* Global functions: index in the table, or -1. */
int omnic__jglobal_find(const char *name, size_t len);
omnic__jv omnic__jglobal_value(int id);
omnic_status omnic__jglobal_call(omnic__jrender *r, int id, omnic__jargs *a, omnic__jv *out);

#endif
