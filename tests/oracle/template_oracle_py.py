#!/usr/bin/env python3
"""Optional second chat-template oracle: Python jinja2 configured as transformers'
apply_chat_template configures it (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, the {% generation %} tag, tojson / raise_exception / strftime_now).

Same job and output formats as template_oracle.mjs. Needs a Python with jinja2 (Debian's
/usr/bin/python3 has none by default, so make test does not run this; set PY_JINJA2 to such a
Python when running tests/e2e/test_template_conformance.py to compare against it as well).

usage: python3 template_oracle_py.py JOB.json OUT.json
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    """transformers' AssistantTracker without the tracking: the body renders as usual."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    job = json.load(open(sys.argv[1], encoding="utf-8"))
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    compiled, results = {}, []
    for c in job["cases"]:
        try:
            t = compiled.get(c["template"])
            if t is None:
                t = compiled[c["template"]] = env.from_string(job["templates"][c["template"]])
            results.append({"id": c["id"], "ok": True, "out": t.render(**c["vars"])})
        except Exception as e:  # noqa: BLE001 - every failure is a result
            results.append({"id": c["id"], "ok": False, "error": str(e)})
    json.dump(results, open(sys.argv[2], "w", encoding="utf-8"))


if __name__ == "__main__":
    main()
