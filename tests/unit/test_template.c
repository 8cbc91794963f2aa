/* Chat templates (src/tokenizer/template*.c): semantics against Python jinja2, syntax and
 * runtime errors with their positions, the limits that bound hostile templates, allocation
 * failures, concurrent renders of one template, and the variables transformers passes.
 *
 * CASES' expected outputs were produced by Python jinja2 3.1.6 configured as transformers
 * configures it (tests/oracle/template_oracle_py.py) from CASE_VARS. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "core/sync.h"
#include "io/json.h"
#include "tokenizer/template.h"

/* Parses and renders tmpl with vars (JSON object text); returns the status, *out owned. */
static omnic_status render_opts(const char *tmpl, const char *vars, const omnic__template_opts *opts,
                                char **out, omnic_err *err)
{
    omnic__template *t = NULL;
    json_t *v = NULL;
    *out = NULL;
    omnic_err_clear(err);
    omnic_status rc = omnic__json_parse(vars ? vars : "{}", strlen(vars ? vars : "{}"), "vars", &v, err);
    if (rc == OMNIC_OK) rc = omnic__template_parse(tmpl, strlen(tmpl), opts, &t, err);
    if (rc == OMNIC_OK) rc = omnic__template_render(t, v, opts, out, NULL, err);
    omnic__template_destroy(t);
    json_decref(v);
    return rc;
}

static omnic_status render(const char *tmpl, const char *vars, char **out, omnic_err *err)
{
    return render_opts(tmpl, vars, NULL, out, err);
}

static void expect(const char *tmpl, const char *vars, const char *want)
{
    char *out;
    omnic_err err;
    omnic_status rc = render(tmpl, vars, &out, &err);
    if (rc != OMNIC_OK) print_error("template: %s\nfailed: %s\n", tmpl, err.msg);
    assert_int_equal(rc, OMNIC_OK);
    if (strcmp(out, want)) print_error("template: %s\n", tmpl);
    assert_string_equal(out, want);
    omnic_free(out);
}

/* Fails with code, and the message contains every one of the NULL-terminated substrings. */
static void expect_err_opts(const char *tmpl, const char *vars, const omnic__template_opts *opts,
                            omnic_status code, ...)
{
    char *out;
    omnic_err err;
    omnic_status rc = render_opts(tmpl, vars, opts, &out, &err);
    if (rc != code)
        print_error("template: %s\nstatus %s, message: %s\n", tmpl, omnic_status_name(rc), err.msg);
    assert_int_equal(rc, code);
    assert_null(out);
    assert_int_equal(err.code, code);
    va_list ap;
    va_start(ap, code);
    for (const char *s; (s = va_arg(ap, const char *));) {
        if (!strstr(err.msg, s)) print_error("template: %s\nmessage '%s' lacks '%s'\n", tmpl, err.msg, s);
        assert_non_null(strstr(err.msg, s));
    }
    va_end(ap);
}
#define expect_err(tmpl, vars, code, ...) expect_err_opts(tmpl, vars, NULL, code, __VA_ARGS__, NULL)

static const char CASE_VARS[] =
    "{\"x\": [3, 1, 2], \"d\": {\"b\": 1, \"a\": 2}, \"s\": \"Hello World\", \"u\": \"h\\u00e9llo "
    "\\u4e16\\u754c\", \"n\": 7, \"f\": 2.5, \"z\": null, \"items\": [{\"n\": \"b\", \"v\": 2, \"t\": "
    "\"x\"}, {\"n\": \"A\", \"v\": 1}, {\"n\": \"a\", \"v\": 3, \"t\": \"y\"}], \"messages\": [{\"role\": "
    "\"system\", \"content\": \"sys\"}, {\"role\": \"user\", \"content\": [{\"type\": \"image\"}, {\"type\": "
    "\"text\", \"text\": \"What is it?\"}]}]}";

static const struct case_ {
    const char *tmpl, *want;
} CASES[] = {
    {"{{ 1 }}|{{ -2 }}|{{ 1.5 }}|{{ 1.0 }}|{{ 1e20 }}|{{ 0.1 + 0.2 }}|{{ 'str' }}|{{ \"dq\" }}|{{ true }}|{{ "
     "False }}|{{ none }}|{{ None }}",
     "1|-2|1.5|1.0|1e+20|0.30000000000000004|str|dq|True|False|None|None"},
    {"{{ [1, 'a', none, true, 1.5] }}|{{ {'k': 'v', 'n': [1]} }}|{{ (1,) }}|{{ (1, 2) }}|{{ () }}|{{ "
     "\"it's\" }}|{{ ['it\\'s', 'q\"'] }}",
     "[1, 'a', None, True, 1.5]|{'k': 'v', 'n': [1]}|(1,)|(1, 2)|()|it's|[\"it's\", 'q\"']"},
    {"{{ 'a\\tb\\\\c\\'d\\\"e' }}|{{ '\\u00e9\\x41\\101' }}|{{ 'x' 'y' }}|{{ '\\q' }}",
     "a\tb\\c'd\"e|\303\251AA|xy|\\q"},
    {"{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 2 ** 3 ** 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 / 2 "
     "}}|{{ 2 ** -1 }}|{{ -2 ** 2 }}|{{ 1.5 // 1 }}|{{ -1.5 % 1 }}",
     "7|9|64|3|-4|2|3.5|0.5|4|1.0|0.5"},
    {"{{ 'a' ~ 1 ~ none ~ true ~ undefined_thing }}|{{ 2 * 3 ~ 4 }}|{{ 'a' ~ 'b' + 'c' }}|{{ 'x' * 3 }}|{{ "
     "[1] * 2 }}|{{ [1] + [2] }}|{{ 'a' + 'b' }}",
     "a1NoneTrue|64|abc|xxx|[1, 1]|[1, 2]|ab"},
    {"{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 1 == 1.0 }}|{{ true == 1 }}|{{ [1, [2]] == [1, [2]] }}|{{ (1, 2) == "
     "[1, 2] }}|{{ {'a': 1} == {'a': 1} }}|{{ 'a' != 'b' }}",
     "True|False|True|True|True|False|True|True"},
    {"{{ 'ell' in s }}|{{ 2 in x }}|{{ 'a' in d }}|{{ 'z' not in d }}|{{ 'x' in undefined_thing }}",
     "True|True|True|True|False"},
    {"{{ n > 5 and 'yes' }}|{{ 0 or 'alt' }}|{{ [] or none }}|{{ not n }}|{{ 'a' if n > 5 else 'b' }}|{{ 'a' "
     "if n > 50 }}|{{ 1 if 0 else 2 if 0 else 3 }}",
     "yes|alt|None|False|a||3"},
    {"{{ x[0] }}|{{ x[-1] }}|{{ x[9] }}|{{ x[1:] }}|{{ x[:-1] }}|{{ x[::-1] }}|{{ x[::2] }}|{{ s[::-1] }}|{{ "
     "s[1:4] }}|{{ u[1] }}|{{ u[-2:] }}|{{ u[::-1] }}|{{ x.0 }}",
     "3|2||[1, 2]|[3, 1]|[2, 1, 3]|[3, 2]|dlroW "
     "olleH|ell|\303\251|\344\270\226\347\225\214|\347\225\214\344\270\226 oll\303\251h|3"},
    {"{{ d.a }}|{{ d['b'] }}|{{ d.missing }}|{{ d.get('a') }}|{{ d.get('zz', 'dflt') }}|{{ d.get('zz') }}|{{ "
     "d.items() | list }}|{{ d.keys() | list }}|{{ d.values() | list }}",
     "2|1||2|dflt|None|[('b', 1), ('a', 2)]|['b', 'a']|[1, 2]"},
    {"{{ messages[1].content[1].text }}|{{ messages[0]['role'] }}|{{ messages[-1].content | "
     "selectattr('type', 'equalto', 'image') | list | length }}",
     "What is it?|system|1"},
    {"{{ s.upper() }}|{{ s.lower() }}|{{ \"they're bill's\".title() }}|{{ 'hELLO'.capitalize() }}|{{ "
     "'aBc'.swapcase() }}|{{ u.upper() }}|{{ '\\u00df'.upper() }}",
     "HELLO WORLD|hello world|They'Re Bill'S|Hello|AbC|H\303\211LLO \344\270\226\347\225\214|SS"},
    {"{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\nab\\n'.lstrip('\\n') }}|{{ 'ab  '.rstrip() "
     "}}|{{ 'abcba'.rstrip('ab') }}",
     "a b|a|ab\n|ab|abc"},
    {"{{ 'a,b,,c'.split(',') }}|{{ '  a  b c '.split() }}|{{ 'a b c d'.split(' ', 1) }}|{{ 'a b c "
     "d'.rsplit(' ', 1) }}|{{ 'a\\nb\\r\\nc'.splitlines() }}|{{ 'x</think>y'.split('</think>')[-1] }}",
     "['a', 'b', '', 'c']|['a', 'b', 'c']|['a', 'b c d']|['a b c', 'd']|['a', 'b', 'c']|y"},
    {"{{ s.startswith('He') }}|{{ s.startswith(('x', 'Hel')) }}|{{ s.endswith('ld') }}|{{ s.find('o') }}|{{ "
     "s.rfind('o') }}|{{ s.find('zz') }}|{{ s.count('l') }}|{{ s.index('W') }}|{{ u.find('\\u4e16') }}",
     "True|True|True|4|7|-1|3|6|6"},
    {"{{ s.replace('l', 'L') }}|{{ s.replace('l', 'L', 2) }}|{{ '{} and {}'.format(1, 'b') }}|{{ "
     "'{1}{0}'.format('a', 'b') }}|{{ '{name}!'.format(name='x') }}|{{ '%s-%d-%.2f' % ('a', 3, 1.234) }}|{{ "
     "', '.join(['a', 'b']) }}",
     "HeLLo WorLd|HeLLo World|1 and b|ba|x!|a-3-1.23|a, b"},
    {"{{ 'abc'.zfill(6) }}|{{ 'ab'.ljust(4, '*') }}|{{ 'ab'.rjust(4) }}|{{ 'abc'.center(7, '.') }}|{{ "
     "'x.y'.removeprefix('x.') }}|{{ 'abc'.isalpha() }}{{ '12'.isdigit() }}{{ ' '.isspace() }}{{ 'Ab "
     "Cd'.istitle() }}",
     "000abc|ab**|  ab|..abc..|y|TrueTrueTrueTrue"},
    {"{{ s | upper }}|{{ s | lower }}|{{ 'hello-world foo(bar' | title }}|{{ 'hELLO' | capitalize }}|{{ s | "
     "length }}|{{ u | length }}|{{ x | count }}|{{ undefined_thing | length }}",
     "HELLO WORLD|hello world|Hello-World Foo(Bar|Hello|11|8|3|0"},
    {"{{ '  pad  ' | trim }}|{{ '--x--' | trim('-') }}|{{ s | replace('o', '0') }}|{{ x | join(', ') }}|{{ x "
     "| join }}|{{ items | join('/', attribute='n') }}|{{ 'abc' | join('-') }}",
     "pad|x|Hell0 W0rld|3, 1, 2|312|b/A/a|a-b-c"},
    {"{{ x | first }}|{{ x | last }}|{{ s | first }}|{{ d | first }}|{{ [] | first }}|{{ x | sort }}|{{ x | "
     "sort(reverse=true) }}|{{ x | reverse | list }}|{{ s | reverse }}|{{ x | list }}|{{ s | list }}",
     "3|2|H|b||[1, 2, 3]|[3, 2, 1]|[2, 1, 3]|dlroW olleH|[3, 1, 2]|['H', 'e', 'l', 'l', 'o', ' ', 'W', 'o', "
     "'r', 'l', 'd']"},
    {"{{ items | sort(attribute='n') | map(attribute='n') | join }}|{{ items | sort(attribute='n', "
     "case_sensitive=true) | map(attribute='n') | join }}|{{ items | map(attribute='t', default='?') | list "
     "}}",
     "Aab|Aab|['x', '?', 'y']"},
    {"{{ ['b', 'A', 'a', 'B'] | unique | list }}|{{ ['b', 'A', 'a'] | unique(case_sensitive=true) | list "
     "}}|{{ x | max }}|{{ x | min }}|{{ items | max(attribute='v') }}|{{ x | sum }}|{{ items | "
     "sum(attribute='v') }}",
     "['b', 'A']|['b', 'A', 'a']|3|1|{'n': 'a', 'v': 3, 't': 'y'}|6|6"},
    {"{{ items | selectattr('t') | map(attribute='n') | list }}|{{ items | rejectattr('t') | "
     "map(attribute='n') | list }}|{{ items | selectattr('t', 'equalto', 'y') | list }}|{{ items | "
     "selectattr('v', 'gt', 1) | map(attribute='n') | join }}",
     "['b', 'a']|['A']|[{'n': 'a', 'v': 3, 't': 'y'}]|ba"},
    {"{{ x | select('odd') | list }}|{{ x | reject('odd') | list }}|{{ [0, 1, '', 'a', none] | select | list "
     "}}|{{ x | map('string') | list }}|{{ ['a', 'b'] | map('upper') | list }}",
     "[3, 1]|[2]|[1, 'a']|['3', '1', '2']|['A', 'B']"},
    {"{{ d | dictsort }}|{{ d | dictsort(reverse=true) }}|{{ {'b': 2, 'a': 1} | dictsort(by='value') }}|{{ d "
     "| items | list }}|{{ undefined_thing | items | list }}",
     "[('a', 2), ('b', 1)]|[('b', 1), ('a', 2)]|[('a', 1), ('b', 2)]|[('b', 1), ('a', 2)]|[]"},
    {"{{ '3' | int }}|{{ '3.7' | int }}|{{ 'x' | int }}|{{ 'x' | int(5) }}|{{ 3.9 | int }}|{{ '0x1A' | "
     "int(0, 16) }}|{{ '3.5' | float }}|{{ 3 | float }}|{{ 'abc' | float }}|{{ true | int }}",
     "3|3|0|5|3|26|3.5|3.0|0.0|1"},
    {"{{ 2.5 | round }}|{{ 3.5 | round }}|{{ 2.675 | round(2) }}|{{ 2.1 | round(0, 'ceil') }}|{{ 2.9 | "
     "round(method='floor') }}|{{ 3 | round }}|{{ -2.5 | abs }}|{{ -3 | abs }}",
     "2.0|4.0|2.67|3.0|2.0|3|2.5|3"},
    {"{{ undefined_thing | default('dflt') }}|{{ '' | default('dflt') }}|{{ '' | default('dflt', true) }}|{{ "
     "z | default('d') }}|{{ undefined_thing | d('x') }}",
     "dflt||dflt|None|x"},
    {"{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) "
     "}}|{{ 'a\\nb' | indent('> ') }}",
     "a\n    b\n\n    c|  a\n  b|a\n  \n  b|a\n> b"},
    {"{{ '<a href=\"x\">&\\'</a>' | e }}|{{ '<b>' | safe }}|{{ s | wordcount }}|{{ 'hello' | center(11) "
     "}}|{{ 'long sentence with words' | truncate(12) }}|{{ 'long sentence with words' | truncate(12, true) "
     "}}",
     "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt;|<b>|2|   hello   |long...|long sent..."},
    {"{{ '%s and %s' | format('a', 'b') }}|{{ 1 | string }}|{{ 12.5 | string }}|{{ z | string }}|{{ [1] | "
     "string }}|{{ true | string }}|{{ x | batch(2) | list }}",
     "a and b|1|12.5|None|[1]|True|[[3, 1], [2]]"},
    {"{% for g in items | groupby('n') %}{{ g.grouper }}:{{ g.list | length }};{% endfor %}|{% for k, v in "
     "items | groupby('t', default='none') %}{{ k }}={{ v | map(attribute='n') | join }} {% endfor %}",
     "A:2;b:1;|none=A x=b y=a "},
    {"{{ d | tojson }}|{{ x | tojson }}|{{ u | tojson }}|{{ '\"\\n\\t\\\\' | tojson }}|{{ z | tojson }}|{{ "
     "1.0 | tojson }}|{{ true | tojson }}|{{ [] | tojson(indent=2) }}|{{ {} | tojson(indent=2) }}",
     "{\"b\": 1, \"a\": 2}|[3, 1, 2]|\"h\303\251llo "
     "\344\270\226\347\225\214\"|\"\\\"\\n\\t\\\\\"|null|1.0|true|[]|{}"},
    {"{{ d | tojson(indent=2) }}|{{ d | tojson(sort_keys=true) }}|{{ d | tojson(separators=(',', ':')) }}|{{ "
     "u | tojson(ensure_ascii=true) }}|{{ '\\U0001F600' | tojson(ensure_ascii=true) }}|{{ x | "
     "tojson(indent=0) }}",
     "{\n  \"b\": 1,\n  \"a\": 2\n}|{\"a\": 2, \"b\": 1}|{\"b\":1,\"a\":2}|\"h\\u00e9llo "
     "\\u4e16\\u754c\"|\"\\ud83d\\ude00\"|[\n3,\n1,\n2\n]"},
    {"{{ items[0] | tojson(indent=1) }}", "{\n \"n\": \"b\",\n \"v\": 2,\n \"t\": \"x\"\n}"},
    {"{{ n is odd }}|{{ n is even }}|{{ n is divisibleby 7 }}|{{ n is divisibleby(3) }}|{{ n is number }}|{{ "
     "f is float }}|{{ n is integer }}|{{ true is number }}|{{ true is integer }}|{{ true is boolean }}",
     "True|False|True|False|True|True|True|True|False|True"},
    {"{{ s is string }}|{{ x is sequence }}|{{ d is mapping }}|{{ x is mapping }}|{{ s is iterable }}|{{ n "
     "is iterable }}|{{ undefined_thing is defined }}|{{ undefined_thing is undefined }}|{{ z is none }}|{{ "
     "z is not none }}|{{ false is false }}|{{ 0 is false }}",
     "True|True|True|False|True|False|False|True|True|False|True|False"},
    {"{{ n is eq 7 }}|{{ n is equalto 7 }}|{{ n is ne 7 }}|{{ n is lt 8 }}|{{ n is gt 8 }}|{{ n is ge 7 "
     "}}|{{ 2 is in x }}|{{ 'ab' is lower }}|{{ 'AB' is upper }}|{{ x is sameas x }}|{{ 'upper' is filter "
     "}}|{{ 'odd' is test }}",
     "True|True|False|True|False|True|True|True|True|True|True|True"},
    {"{{ messages[1].content is string }}|{{ messages[1].content is iterable }}|{{ messages[0].content is "
     "string }}|{{ undefined_thing is sequence }}|{{ range is callable }}",
     "False|True|True|True|True"},
    {"{% for i in x %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first "
     "}}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}|{% endfor %}",
     "1032TrueFalse31|2121FalseFalse332|3210FalseTrue31|"},
    {"{% for i in x %}{{ loop.cycle('a', 'b') }}{% endfor %}|{% for i in [] %}x{% else %}empty{% endfor "
     "%}|{% for i in x if i > 1 %}{{ i }}{{ loop.length }}{% endfor %}|{% for i in undefined_thing %}x{% "
     "endfor %}",
     "aba|empty|3222|"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|{% for c "
     "in u %}{{ c }}.{% endfor %}|{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}",
     "b=1;a=2;|ba|h.\303\251.l.l.o. .\344\270\226.\347\225\214.|37"},
    {"{% for i in x %}{% if i == 1 %}{% break %}{% endif %}{{ i }}{% endfor %}|{% for i in x %}{% if i == 1 "
     "%}{% continue %}{% endif %}{{ i }}{% endfor %}|{% for i in [1] %}{% continue %}{% else %}E{% endfor %}",
     "3|32|E"},
    {"{% for m in messages[::-1] %}{{ m.role }}{{ (messages | length - 1) - loop.index0 }}{% endfor %}|{% "
     "for i in [1, 2] %}{% for j in [3, 4] %}{{ loop.index }}{{ i }}{{ j }}{% endfor %}{{ loop.index }}{% "
     "endfor %}",
     "user1system0|11321411232242"},
    {"{% set c = 0 %}{% for i in [1, 2] %}{% set c = c + 1 %}{{ c }}{% endfor %}{{ c }}|{% set ns = "
     "namespace(c=0) %}{% for i in x %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}|{{ ns }}",
     "110|6|<Namespace {'c': 6}>"},
    {"{% for i in [1, 2] %}{% if i == 2 %}[{{ y }}]{% endif %}{% set y = i %}{% endfor %}|{% if true %}{% "
     "set q = 1 %}{% endif %}{{ q }}|{% set a, b = 1, 2 %}{{ a }}{{ b }}",
     "[]|1|12"},
    {"{% set blk %}in {{ n }}{% endset %}[{{ blk }}]|{% set blk2 | upper %}shout{% endset %}{{ blk2 }}|{% "
     "filter upper %}up {{ s }}{% endfilter %}|{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]",
     "[in 7]|SHOUT|UP HELLO WORLD|3[]"},
    {"{% set ns = namespace(l=[]) %}{% set ns.l = ns.l + [1] %}{% set ns.l = ns.l + [2] %}{{ ns.l }}|{{ "
     "namespace(a=1).a }}|{{ namespace({'q': 2}).q }}|{{ dict(a=1, b=2) }}|{{ dict(d, z=1) }}",
     "[1, 2]|1|2|{'a': 1, 'b': 2}|{'b': 1, 'a': 2, 'z': 1}"},
    {"{{ range(5) | list }}|{{ range(1, 10, 3) | list }}|{{ range(5, 0, -2) | list }}|{{ range(0) | list }}",
     "[0, 1, 2, 3, 4]|[1, 4, 7]|[5, 3, 1]|[]"},
    {"{% macro m(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ m(b=5, a=4) }}|{{ m() }}",
     "1-2|1-3|4-5|-2"},
    {"{% macro v() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ v(1, 2, k=3) }}|{% macro w(a) %}{{ a }}{{ "
     "caller() }}{% endmacro %}{% call w(1) %}body{% endcall %}|{% macro z2(q) %}[{{ caller(q * 2) }}]{% "
     "endmacro %}{% call(y) z2(4) %}got {{ y }}{% endcall %}",
     "(1, 2){'k': 3}|1body|[got 8]"},
    {"{% macro rec(k) %}{% if k > 0 %}{{ k }}{{ rec(k - 1) }}{% endif %}{% endmacro %}{{ rec(5) }}|{% macro "
     "g() %}{{ late }}{% endmacro %}{% set late = 99 %}{{ g() }}",
     "54321|99"},
    {"a\n  {% if true %}\n    b\n  {% endif %}\nc\n", "a\n    b\nc"},
    {"{%- for i in x -%}\n  {{ i }}\n{%- endfor -%}\n", "312"},
    {"a {#- comment -#} b\n{# c #}\nd", "ab\nd"},
    {"x  {%- if true %} y {%+ if true %}z{% endif %}{% endif %}|    {%+ if true %}keep{% endif %}",
     "x y z|    keep"},
    {"{% raw %}\n  {{ x }} {% if %}\n{% endraw %}\nafter|{% generation %}gen{% endgeneration %}",
     "\n  {{ x }} {% if %}\nafter|gen"},
    {"line1\r\nline2\r\n{% if true %}\r\nx{% endif %}", "line1\nline2\nx"},
    {"{{ {'a': {'b': 1}} }}|{{ x\n  | join(',') }}|{%\n  set y2 = 1\n%}{{ y2 }}", "{'a': {'b': 1}}|3,1,2|1"},
};

static void test_python_semantics(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        expect(CASES[i].tmpl, CASE_VARS, CASES[i].want);
}

static void test_none_and_undefined(void **state)
{
    (void)state;
    /* Python prints None; Undefined prints nothing but fails on use */
    expect("[{{ none }}][{{ nope }}][{{ nope | string }}][{{ nope is defined }}]", NULL, "[None][][][False]");
    expect("{{ d.missing is defined }}|{{ d.missing | default('x') }}", "{\"d\": {}}", "False|x");
    expect_err("{{ nope.attr }}", NULL, OMNIC_E_INVALID, "line 1", "'nope' is undefined");
    expect_err("\n{{ d.a.b }}", "{\"d\": {}}", OMNIC_E_INVALID, "line 2",
               "'dict object' has no attribute 'a'");
    expect_err("{{ nope() }}", NULL, OMNIC_E_INVALID, "'nope' is undefined");
    expect_err("{{ nope + 1 }}", NULL, OMNIC_E_INVALID, "'nope' is undefined");
    expect_err("{{ x[5].y }}", "{\"x\": [1]}", OMNIC_E_INVALID, "'list object' has no element 5");
    expect_err("{{ nope | tojson }}", NULL, OMNIC_E_INVALID, "not JSON serializable");
}

static void test_syntax_errors(void **state)
{
    (void)state;
    /* unclosed tags and blocks: the position of the problem, and the block that is open */
    expect_err("ab\ncd {{ x", NULL, OMNIC_E_INVALID, "line 2, column 4", "'{{' is never closed");
    expect_err("{% if x %}\nyes", NULL, OMNIC_E_INVALID, "line 2, column 4",
               "'if' block opened at line 1, column 4", "'endif'");
    expect_err("{% for x in y %}\n  {{ x }}", NULL, OMNIC_E_INVALID, "'for' block opened at line 1",
               "'endfor'");
    expect_err("{# never closed", NULL, OMNIC_E_INVALID, "line 1, column 1", "comment is never closed");
    expect_err("{{ 'abc }}", NULL, OMNIC_E_INVALID, "line 1, column 4", "unterminated string");
    /* unknown statement */
    expect_err("x\n\n  {% frobnicate %}", NULL, OMNIC_E_INVALID, "line 3, column 6",
               "unknown tag 'frobnicate'");
    /* bad expressions */
    expect_err("{{ 1 + }}", NULL, OMNIC_E_INVALID, "line 1, column 8", "expected an expression, got '}}'");
    expect_err("{{ (1 }}", NULL, OMNIC_E_INVALID, "line 1, column 7", "unexpected '}', expected ')'");
    expect_err("{{ x | }}", NULL, OMNIC_E_INVALID, "line 1, column 8", "expected a name");
    expect_err("{{ a b }}", NULL, OMNIC_E_INVALID, "line 1, column 6", "expected '}}', got 'b'");
    expect_err("{% set %}", NULL, OMNIC_E_INVALID, "line 1, column 8");
    expect_err("{{ '\\xZZ' }}", NULL, OMNIC_E_INVALID, "\\x escape");
    /* unmatched end tags */
    expect_err("text {% endfor %}", NULL, OMNIC_E_INVALID, "line 1, column 9", "'endfor'", "no open block");
    expect_err("{% for x in y %}\n{% if x %}\n{% endfor %}", NULL, OMNIC_E_INVALID, "line 3, column 4",
               "innermost open block is 'if' (line 2, column 4)");
    expect_err("{% if a %}{% else %}{% else %}{% endif %}", NULL, OMNIC_E_INVALID, "misplaced tag 'else'");
    expect_err("{% break %}", NULL, OMNIC_E_INVALID, "'break' outside of a for loop");
    expect_err("{% macro m(a=1, b) %}{% endmacro %}", NULL, OMNIC_E_INVALID, "non-default parameter 'b'");
    expect_err("{% include 'other.jinja' %}", NULL, OMNIC_E_UNSUPPORTED, "{% include %} is not supported");
    /* the source must be UTF-8 */
    expect_err("ok\n\xff", NULL, OMNIC_E_INVALID, "invalid UTF-8 at line 2, column 1");
}

static void test_runtime_errors(void **state)
{
    (void)state;
    /* raise_exception's message surfaces with the line */
    expect_err("{% for m in messages %}\n{% if m.role == 'tool' %}{{ raise_exception('Tools are not "
               "supported: ' ~ m.role) "
               "}}{% endif %}{% endfor %}",
               "{\"messages\": [{\"role\": \"user\"}, {\"role\": \"tool\"}]}", OMNIC_E_INVALID, "line 2",
               "Tools are not supported: tool");
    expect_err("{{ 'a' + 1 }}", NULL, OMNIC_E_INVALID, "can only concatenate str (not \"int\") to str");
    expect_err("{{ 1 // 0 }}", NULL, OMNIC_E_INVALID, "division or modulo by zero");
    expect_err("{{ x.append(1) }}", "{\"x\": []}", OMNIC_E_INVALID, "'append'", "unsafe");
    expect_err("{% set x = 1 %}{% set x.a = 2 %}", NULL, OMNIC_E_INVALID, "non-namespace");
    expect_err("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", NULL, OMNIC_E_INVALID, "takes not more than 1");
    expect_err("{% macro m(a) %}{% endmacro %}{{ m(q=1) }}", NULL, OMNIC_E_INVALID,
               "no keyword argument 'q'");
    expect_err("{{ x | frob }}", "{\"x\": 1}", OMNIC_E_INVALID, "no filter named 'frob'");
    expect_err("{{ x is frob }}", "{\"x\": 1}", OMNIC_E_INVALID, "no test named 'frob'");
    expect_err("{{ 9223372036854775807 + 1 }}", NULL, OMNIC_E_INVALID, "integer overflow");
    expect_err("{% for a, b in x %}{% endfor %}", "{\"x\": [[1, 2, 3]]}", OMNIC_E_INVALID,
               "too many values to unpack");
    expect_err("{{ [1, 'a'] | sort }}", NULL, OMNIC_E_INVALID, "'<' not supported");
}

static void test_limits(void **state)
{
    (void)state;
    omnic__template_opts o = {0};
    char big[4096];
    /* infinite recursion */
    expect_err("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, OMNIC_E_TOO_LARGE,
               "OMNIC_MAX_TEMPLATE_CALL_DEPTH", "deeper than 64");
    /* exponential recursion within the depth limit */
    expect_err(
        "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
        NULL, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_ITERATIONS", "1000000");
    /* huge ranges */
    expect_err("{% for i in range(1000000000) %}{% endfor %}", NULL, OMNIC_E_TOO_LARGE,
               "OMNIC_MAX_TEMPLATE_RANGE", "1000000000 items", "100000");
    expect_err("{{ range(-9223372036854775807, 9223372036854775807) | length }}", NULL, OMNIC_E_TOO_LARGE,
               "OMNIC_MAX_TEMPLATE_RANGE");
    /* nested loops */
    expect_err("{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% "
               "endfor %}"
               "{% endfor %}",
               NULL, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_ITERATIONS", "1000000");
    /* output explosion from nested loops (limit lowered to 1 MiB to keep the test fast) */
    o.max_output = 1 << 20;
    expect_err_opts(
        "{% for i in range(2000) %}{% for j in range(100) %}{{ 'xxxxxxxxxx' }}{% endfor %}{% endfor %}", NULL,
        &o, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_OUTPUT", "1048576", NULL);
    /* a string doubled through a namespace */
    expect_err_opts(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        NULL, &o, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_OUTPUT", NULL);
    expect_err_opts("{{ 'x' * 100000000 }}", NULL, &o, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_OUTPUT", NULL);
    /* large strings rebuilt in a loop (each freed again: within the memory bound, not the work bound) */
    expect_err("{% for i in range(100000) %}{% set x = 'a' * 60000000 %}{% endfor %}", NULL,
               OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_WORK_BYTES", "1073741824");
    o = (omnic__template_opts){.max_work = 1 << 20};
    expect_err_opts("{% for i in range(1000) %}{% set x = 'a' * 10000 %}{% endfor %}", NULL, &o,
                    OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_WORK_BYTES", "1048576", NULL);
    /* many distinct live strings */
    o = (omnic__template_opts){.max_memory = 4 << 20};
    expect_err_opts(
        "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = ns.l + ['x' * 10000 ~ i] %}"
        "{% endfor %}",
        NULL, &o, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_MEMORY", "4194304", NULL);
    /* template size */
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    o = (omnic__template_opts){.max_bytes = 1024};
    expect_err_opts(big, NULL, &o, OMNIC_E_TOO_LARGE, "4095 bytes", "OMNIC_MAX_TEMPLATE_BYTES", NULL);
    /* nesting: parentheses, blocks, unary operators */
    size_t k = 0;
    k += (size_t)snprintf(big, sizeof big, "{{ ");
    for (int i = 0; i < 300; i++)
        big[k++] = '(';
    big[k++] = '1';
    for (int i = 0; i < 300; i++)
        big[k++] = ')';
    snprintf(big + k, sizeof big - k, " }}");
    expect_err(big, NULL, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_NESTING");
    k = 0;
    for (int i = 0; i < 200; i++)
        k += (size_t)snprintf(big + k, sizeof big - k, "{%% if 1 %%}");
    expect_err(big, NULL, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_NESTING");
    k = (size_t)snprintf(big, sizeof big, "{{ ");
    for (int i = 0; i < 300; i++)
        k += (size_t)snprintf(big + k, sizeof big - k, "not ");
    snprintf(big + k, sizeof big - k, "1 }}");
    expect_err(big, NULL, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_NESTING");
    /* a namespace that contains itself: printing stops at the value depth (and nothing leaks) */
    expect_err("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns }}", NULL, OMNIC_E_TOO_LARGE,
               "OMNIC_MAX_TEMPLATE_VALUE_DEPTH");
    expect_err("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns | tojson }}", NULL, OMNIC_E_INVALID,
               "Namespace is not JSON serializable");
    /* deeply nested input */
    k = (size_t)snprintf(big, sizeof big, "{\"deep\": ");
    for (int i = 0; i < 300; i++)
        big[k++] = '[';
    for (int i = 0; i < 300; i++)
        big[k++] = ']';
    snprintf(big + k, sizeof big - k, "}");
    expect_err("{{ deep }}", big, OMNIC_E_TOO_LARGE, "OMNIC_MAX_TEMPLATE_VALUE_DEPTH");
    /* macro closures over loop scopes form cycles; the render frees them */
    expect("{% set ns = namespace(f=none) %}{% for i in [1, 2] %}{% macro m() %}{{ i }}{% endmacro %}"
           "{% set ns.f = m %}{% endfor %}{{ ns.f() }}",
           NULL, "2");
}

/* A template with most features, for the allocation-failure and thread tests. */
static const char RICH[] =
    "{%- set ns = namespace(n=0, seen=[]) -%}\n"
    "{%- macro part(p, i=0) -%}{%- if p.type == 'text' -%}{{ p.text | trim }}{%- else -%}<{{ p.type | upper "
    "}}>"
    "{%- endif -%}{%- endmacro -%}\n"
    "{%- for m in messages if m.role != 'ignored' -%}\n"
    "  {%- set ns.n = ns.n + 1 -%}{%- set ns.seen = ns.seen + [m.role] -%}\n"
    "  <|{{ m.role }}|>{% if m.content is string %}{{ m.content.strip() }}{% else %}"
    "{% for p in m.content %}{{ part(p, loop.index0) }}{% endfor %}{% endif %}"
    "{{ ' #' ~ loop.index if not loop.last }}\n"
    "{%- endfor -%}\n"
    "{{ ns.n }} {{ ns.seen | unique | join(',') }} {{ tools | tojson }} {{ messages[0].content[:3] }}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}";
static const char RICH_VARS[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \" be brief \"}, {\"role\": \"user\", \"content\": "
    "[{\"type\": \"image\"}, {\"type\": \"text\", \"text\": \" hi \"}]}, {\"role\": \"ignored\", "
    "\"content\": \"x\"}, "
    "{\"role\": \"assistant\", \"content\": \"ok\"}], \"tools\": [{\"name\": \"f\", \"args\": {\"a\": 1}}], "
    "\"add_generation_prompt\": true}";
static const char RICH_OUT[] =
    "<|system|>be brief #1<|user|><IMAGE>hi #2<|assistant|>ok3 system,user,assistant "
    "[{\"name\": \"f\", \"args\": {\"a\": 1}}]  be<|assistant|>";

static void test_rich(void **state)
{
    (void)state;
    expect(RICH, RICH_VARS, RICH_OUT);
}

/* Every allocation of parse and render fails in turn: a clean E_NOMEM each time, never a crash,
 * and no leak (LeakSanitizer checks the sanitize build at exit). */
static void alloc_failures(const char *tmpl, const char *vars, const char *want)
{
    json_t *v = NULL;
    omnic_err err;
    assert_int_equal(omnic__json_parse(vars, strlen(vars), "vars", &v, &err), OMNIC_OK);
    bool done = false;
    for (long n = 0; n < 100000 && !done; n++) {
        omnic__template *t = NULL;
        char *out = NULL;
        omnic_err_clear(&err);
        omnic__alloc_fail_after(n);
        omnic_status rc = omnic__template_parse(tmpl, strlen(tmpl), NULL, &t, &err);
        if (rc == OMNIC_OK) rc = omnic__template_render(t, v, NULL, &out, NULL, &err);
        long injected = omnic__alloc_injected_failures();
        omnic__alloc_fail_after(-1);
        if (injected == 0) {
            assert_int_equal(rc, OMNIC_OK);
            assert_string_equal(out, want);
            done = true;
        } else {
            if (rc != OMNIC_E_NOMEM)
                print_error("%s\nn=%ld: %s %s\n", tmpl, n, omnic_status_name(rc), err.msg);
            assert_int_equal(rc, OMNIC_E_NOMEM);
            assert_null(out);
            assert_true(err.msg[0] != '\0');
        }
        omnic_free(out);
        omnic__template_destroy(t);
    }
    assert_true(done);
    json_decref(v);
}

/* The iteration and memory limits cut renders off at every point: a clean E_TOO_LARGE each time
 * and no leak. */
static void limit_failures(const char *tmpl, const char *vars, const char *want)
{
    char *out;
    omnic_err err;
    omnic_status rc = OMNIC_E_TOO_LARGE;
    for (uint64_t it = 1; rc != OMNIC_OK; it++) {
        omnic__template_opts o = {.max_iterations = it};
        rc = render_opts(tmpl, vars, &o, &out, &err);
        if (rc != OMNIC_OK && rc != OMNIC_E_TOO_LARGE)
            print_error("%s\niterations %llu: %s\n", tmpl, (unsigned long long)it, err.msg);
        assert_true(rc == OMNIC_OK || rc == OMNIC_E_TOO_LARGE);
        if (rc == OMNIC_OK) assert_string_equal(out, want);
        omnic_free(out);
    }
    rc = OMNIC_E_TOO_LARGE;
    for (size_t mem = 16; rc != OMNIC_OK; mem += mem / 8 + 16) {
        omnic__template_opts o = {.max_memory = mem};
        rc = render_opts(tmpl, vars, &o, &out, &err);
        if (rc != OMNIC_OK && rc != OMNIC_E_TOO_LARGE)
            print_error("%s\nmemory %zu: %s\n", tmpl, mem, err.msg);
        assert_true(rc == OMNIC_OK || rc == OMNIC_E_TOO_LARGE);
        if (rc == OMNIC_OK) assert_string_equal(out, want);
        omnic_free(out);
    }
}

static void test_limit_failures(void **state)
{
    (void)state;
    limit_failures(RICH, RICH_VARS, RICH_OUT);
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        limit_failures(CASES[i].tmpl, CASE_VARS, CASES[i].want);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    alloc_failures(RICH, RICH_VARS, RICH_OUT);
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        alloc_failures(CASES[i].tmpl, CASE_VARS, CASES[i].want);
}

typedef struct {
    const omnic__template *t;
    const json_t *v;
    int ok;
} thread_arg;

static void *render_many(void *p)
{
    thread_arg *a = p;
    for (int i = 0; i < 200; i++) {
        char *out = NULL;
        omnic_err err;
        if (omnic__template_render(a->t, a->v, NULL, &out, NULL, &err) == OMNIC_OK && !strcmp(out, RICH_OUT))
            a->ok++;
        omnic_free(out);
    }
    return NULL;
}

/* One parsed template rendered from several threads at once (constants are shared, immutable). */
static void test_concurrent_renders(void **state)
{
    (void)state;
    omnic__template *t = NULL;
    json_t *v = NULL;
    omnic_err err;
    assert_int_equal(omnic__template_parse(RICH, strlen(RICH), NULL, &t, &err), OMNIC_OK);
    assert_int_equal(omnic__json_parse(RICH_VARS, strlen(RICH_VARS), "vars", &v, &err), OMNIC_OK);
    pthread_t th[4];
    thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thread_arg){t, v, 0};
        assert_int_equal(pthread_create(&th[i], NULL, render_many, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].ok, 200);
    }
    json_decref(v);
    omnic__template_destroy(t);
}

static void test_strftime_now(void **state)
{
    (void)state;
    omnic__template_opts o = {.now = 1721952000}; /* 2024-07-26 00:00:00 UTC */
    char *out;
    omnic_err err;
    setenv("TZ", "UTC", 1);
    assert_int_equal(
        render_opts("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d') }}", NULL, &o, &out, &err),
        OMNIC_OK);
    assert_string_equal(out, "26 Jul 2024|2024-07-26");
    omnic_free(out);
}

static void test_chat_vars(void **state)
{
    (void)state;
    omnic_err err;
    json_t *tc = NULL, *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi"), *extra, *v = NULL;
    const char *cfg =
        "{\"bos_token\": \"<s>\", \"eos_token\": {\"__type\": \"AddedToken\", \"content\": \"</s>\"}, "
        "\"unk_token\": null, \"pad_token\": \"<pad>\", \"additional_special_tokens\": [\"<a>\", "
        "{\"content\": \"<b>\"}], \"chat_template\": \"x\"}";
    assert_int_equal(omnic__json_parse(cfg, strlen(cfg), "tokenizer_config.json", &tc, &err), OMNIC_OK);
    /* special tokens (string and AddedToken forms), tools/documents null, the generation flag */
    assert_int_equal(omnic__template_chat_vars(tc, msgs, NULL, true, &v, &err), OMNIC_OK);
    assert_string_equal(json_string_value(json_object_get(v, "bos_token")), "<s>");
    assert_string_equal(json_string_value(json_object_get(v, "eos_token")), "</s>");
    assert_null(json_object_get(v, "unk_token"));
    assert_string_equal(json_string_value(json_array_get(json_object_get(v, "additional_special_tokens"), 1)),
                        "<b>");
    assert_true(json_is_null(json_object_get(v, "tools")));
    assert_true(json_is_null(json_object_get(v, "documents")));
    assert_true(json_is_true(json_object_get(v, "add_generation_prompt")));
    assert_ptr_equal(json_object_get(v, "messages"), msgs);
    json_decref(v);
    /* extra keyword arguments override, and give add_generation_prompt when the flag is off */
    extra = json_pack("{s:b, s:[s], s:s}", "add_generation_prompt", 1, "tools", "t", "bos_token", "<BOS>");
    assert_int_equal(omnic__template_chat_vars(tc, msgs, extra, false, &v, &err), OMNIC_OK);
    assert_true(json_is_true(json_object_get(v, "add_generation_prompt")));
    assert_string_equal(json_string_value(json_object_get(v, "bos_token")), "<BOS>");
    assert_true(json_is_array(json_object_get(v, "tools")));
    json_decref(v);
    json_decref(extra);
    assert_int_equal(omnic__template_chat_vars(NULL, msgs, NULL, false, &v, &err), OMNIC_OK);
    assert_true(json_is_false(json_object_get(v, "add_generation_prompt")));
    assert_null(json_object_get(v, "bos_token"));
    json_decref(v);
    /* wrong types */
    assert_int_equal(omnic__template_chat_vars(NULL, tc, NULL, false, &v, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "must be a JSON array"));
    json_object_set_new(tc, "bos_token", json_integer(3));
    assert_int_equal(omnic__template_chat_vars(tc, msgs, NULL, false, &v, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "'bos_token' is an integer"));
    json_decref(tc);
    json_decref(msgs);
}

/* A render past its deadline stops with E_TIMEOUT; one with time left is unaffected. */
static void test_deadline(void **state)
{
    (void)state;
    char *out = NULL;
    omnic_err err;
    const char *tmpl = "{% for i in range(20000) %}{% for j in range(20) %}{% endfor %}{% endfor %}done";
    omnic__template_opts o = {.deadline = omnic__now() - 1};
    assert_int_equal(render_opts(tmpl, "{}", &o, &out, &err), OMNIC_E_TIMEOUT);
    assert_non_null(strstr(err.msg, "time ran out"));
    assert_null(out);
    o.deadline = omnic__now() + 600;
    assert_int_equal(render_opts(tmpl, "{}", &o, &out, &err), OMNIC_OK);
    assert_string_equal(out, "done");
    omnic_free(out);
    /* the step budget names the number */
    omnic__template_opts few = {.max_iterations = 1000};
    assert_int_equal(render_opts(tmpl, "{}", &few, &out, &err), OMNIC_E_TOO_LARGE);
    assert_non_null(strstr(err.msg, "1000"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_semantics),
        cmocka_unit_test(test_none_and_undefined),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_runtime_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_rich),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_limit_failures),
        cmocka_unit_test(test_concurrent_renders),
        cmocka_unit_test(test_strftime_now),
        cmocka_unit_test(test_chat_vars),
        cmocka_unit_test(test_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
