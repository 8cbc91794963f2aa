#!/usr/bin/python3
"""Goldens for the special tokens of chat prompts (tests/data/chat_bos.json), from the real
Hugging Face code. Run on a machine with the oracle site folders (/work/shared/reference/
hf-oracle.md); CI only reads the JSON (tests/e2e/test_chat_bos.py).

For each case: a tiny checkpoint (tools/mktiny.py, optionally with its chat template replaced
by a chat_template.jinja), one conversation, and the route Hugging Face takes:
  processor  ProcessorMixin.apply_chat_template(conv, tokenize=True, add_generation_prompt=True)
  tokenizer  PreTrainedTokenizerBase.apply_chat_template(conv, tokenize=True, add_generation_prompt=True)
  raw        tokenizer(text) (add_special_tokens=True: what /v1/completions and omnic run --raw do)
The real transformers method runs (4.57.6 and 5.2.0: both must agree) on a stand-in object whose
special_tokens_map comes from tokenizer_config.json; the two things it cannot do here are done by
the project's oracles: the template is rendered by @huggingface/jinja (tests/oracle/
template_oracle.mjs, given exactly the variables transformers passes), and the text is tokenized
by the Rust tokenizers library (tests/oracle/tokenize_oracle.mjs) with the add_special_tokens value
transformers chose (the tokenizers package of the oracle site is a stub).

usage: /usr/bin/python3 tools/ref/chat_bos_golden.py [OUT=tests/data/chat_bos.json]
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "tests", "oracle")
SITES = {"4.57.6": ("/opt/hfo/site457", {}), "5.2.0": ("/opt/hfo/site520", {"HFO_FAKE_TORCH_VERSION": "2.4.0"})}

LLAVA = ["--family", "llava", "--vision", "clip", "--text", "llama"]  # Llama-3 tokenizer: <|begin_of_text|>
LLAVA15 = LLAVA + ["--tokenizer", "llama2"]  # LLaVA-1.5's Llama-2 tokenizer: <s>
BOS_FIRST = ("{{ bos_token }}{% for message in messages %}{{ message['role'].upper() + ': ' }}"
             "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
             "{{ content['text'] + ' ' }}{% endfor %}{% endfor %}{% if add_generation_prompt %}"
             "{{ 'ASSISTANT:' }}{% endif %}")
NO_BOS_TEXT = ("{% for message in messages %}{{ message['role'].upper() + ': ' + message['content'] + ' ' }}"
               "{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")


def parts(text):
    return [{"type": "text", "text": text}]


# name, mktiny args, chat_template.jinja (None: the checkpoint's own), route, conversation (or raw text);
# {"type": "image"} parts are given to omnic run as --image tests/data/demo.png
CASES = [
    ("llava15_image_and_text", LLAVA15, None, "processor",
     [{"role": "user", "content": [{"type": "image"}] + parts("What is in the picture?")}]),
    ("llava15_text_only", LLAVA15, None, "processor",
     [{"role": "user", "content": parts("Describe the picture.")}]),
    ("llava15_template_writes_bos", LLAVA15, BOS_FIRST, "processor",
     [{"role": "user", "content": parts("Describe the picture.")}]),
    ("llava15_raw", LLAVA15, None, "raw", "USER: Describe the picture. ASSISTANT:"),
    ("llava_template_without_bos", LLAVA, None, "processor",
     [{"role": "user", "content": parts("Describe the picture.")}]),
    ("llava_system_and_user", LLAVA, None, "processor",
     [{"role": "system", "content": parts("Be brief.")}, {"role": "user", "content": parts("hi")}]),
    ("llava_template_writes_bos", LLAVA, BOS_FIRST, "processor",
     [{"role": "user", "content": parts("Describe the picture.")}]),
    ("qwen2_vl_no_bos_token", ["--family", "qwen2_vl"], None, "processor",
     [{"role": "user", "content": parts("Describe the picture.")}]),
    ("llama3_template_writes_bos", ["--family", "llama"], None, "tokenizer",
     [{"role": "user", "content": "Describe the picture."}]),
    ("llama_template_without_bos", ["--family", "llama"], NO_BOS_TEXT, "tokenizer",
     [{"role": "user", "content": "Describe the picture."}]),
    ("llava_raw", LLAVA, None, "raw", "USER: Describe the picture. ASSISTANT:"),
]

# Runs inside the oracle Python: the real apply_chat_template with render and tokenizer call
# replaced by recordings. stdin: {"route", "conv", "template", "special_tokens_map"};
# stdout: {"render_vars": ..., "add_special_tokens": ...} for the parent to complete.
CHILD = r'''
import json, sys
import hfo_shim
hfo_shim.patch_transformers()
import transformers
from transformers import processing_utils, tokenization_utils_base
job = json.load(sys.stdin)
seen = {}

def render(conversations, chat_template=None, add_generation_prompt=False, **kw):
    named = ("tools", "documents", "return_assistant_tokens_mask", "continue_final_message")
    vars_ = {k: v for k, v in kw.items() if k not in named and v is not None}
    vars_.update(messages=conversations[0], add_generation_prompt=add_generation_prompt)
    seen["render_vars"] = vars_
    return [job["rendered"]], [[]]

processing_utils.render_jinja_template = render
tokenization_utils_base.render_jinja_template = render

class Tok:
    special_tokens_map = job["special_tokens_map"]
    bos_token = job["special_tokens_map"].get("bos_token")
    def get_chat_template(self, chat_template=None, tools=None):
        return job["template"]
    def __call__(self, text, **kw):
        seen["add_special_tokens"] = kw.get("add_special_tokens", True)  # the tokenizer's default
        seen["text"] = text
        return {"input_ids": []}

class Proc:
    tokenizer = Tok()
    chat_template = job["template"]
    def __call__(self, text=None, images=None, videos=None, audio=None, **kw):
        return self.tokenizer(text, **kw)

if job["route"] == "processor":
    processing_utils.ProcessorMixin.apply_chat_template(Proc(), job["conv"], tokenize=True, add_generation_prompt=True)
else:
    tokenization_utils_base.PreTrainedTokenizerBase.apply_chat_template(
        Tok(), job["conv"], tokenize=True, add_generation_prompt=True)
seen["transformers"] = transformers.__version__
print(json.dumps(seen))
'''


def run_hf(version, job):
    site, env = SITES[version]
    r = subprocess.run(["/usr/bin/python3", "-c", CHILD], input=json.dumps(job), capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": site, **env})
    if r.returncode != 0:
        raise SystemExit(f"transformers {version}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def node(script, *args):
    subprocess.run(["node", os.path.join(ORACLE, script), *args], check=True, cwd=ORACLE)


def special_tokens_map(tc):
    """tokenizer.special_tokens_map as transformers builds it from tokenizer_config.json."""
    m = {}
    for k in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        v = tc.get(k)
        if isinstance(v, dict):
            v = v.get("content")
        if v is not None:
            m[k] = v
    if tc.get("additional_special_tokens"):
        m["additional_special_tokens"] = tc["additional_special_tokens"]
    return m


def checkpoint_template(d):
    if os.path.exists(os.path.join(d, "chat_template.jinja")):
        return open(os.path.join(d, "chat_template.jinja"), encoding="utf-8").read()
    if os.path.exists(os.path.join(d, "chat_template.json")):
        return json.load(open(os.path.join(d, "chat_template.json")))["chat_template"]
    return json.load(open(os.path.join(d, "tokenizer_config.json")))["chat_template"]


def make_checkpoint(tmp, name, args, template):
    d = os.path.join(tmp, name)
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "mktiny.py"), *args, "--out", d], check=True,
                   capture_output=True)
    if template is not None:
        with open(os.path.join(d, "chat_template.jinja"), "w", encoding="utf-8") as f:
            f.write(template)
    return d


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "chat_bos.json")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, args, template, route, conv in CASES:
            d = make_checkpoint(tmp, name, args, template)
            tc = json.load(open(os.path.join(d, "tokenizer_config.json")))
            stm = special_tokens_map(tc)
            if route == "raw":
                text, add_special, versions = conv, True, {}
            else:
                tmpl = checkpoint_template(d)
                # 1) which variables transformers renders with, 2) the render, 3) its add_special_tokens
                probe = run_hf("4.57.6", {"route": route, "conv": conv, "template": tmpl,
                                          "special_tokens_map": stm, "rendered": ""})
                job_path, out_path = os.path.join(tmp, "job.json"), os.path.join(tmp, "out.json")
                json.dump({"templates": {"t": tmpl}, "cases": [{"id": 0, "template": "t",
                                                               "vars": probe["render_vars"]}]}, open(job_path, "w"))
                node("template_oracle.mjs", job_path, out_path)
                res = json.load(open(out_path))[0]
                if not res["ok"]:
                    raise SystemExit(f"{name}: template: {res['error']}")
                text = res["out"]
                versions = {}
                for v in SITES:
                    seen = run_hf(v, {"route": route, "conv": conv, "template": tmpl, "special_tokens_map": stm,
                                      "rendered": text})
                    versions[v] = seen["add_special_tokens"]
                if len(set(versions.values())) != 1:
                    raise SystemExit(f"{name}: transformers versions disagree: {versions}")
                add_special = versions["4.57.6"]
            corpus, prefix = os.path.join(tmp, "corpus.jsonl"), os.path.join(tmp, "tok")
            with open(corpus, "w", encoding="utf-8") as f:
                f.write(json.dumps(text) + "\n")
            node("tokenize_oracle.mjs", os.path.join(d, "tokenizer.json"), corpus, prefix, "0")
            enc = json.loads(open(prefix + ".expect.jsonl", encoding="utf-8").readline())
            results.append({"name": name, "mktiny": args, "chat_template": template, "route": route,
                            "conversation": conv, "text": text, "add_special_tokens": add_special,
                            "ids": enc["special" if add_special else "plain"]})
            print(f"{name}: add_special_tokens={add_special} ids[:4]={results[-1]['ids'][:4]}")
    doc = {"made_by": "tools/ref/chat_bos_golden.py",
           "transformers": list(SITES), "tokenizers": "@anush008/tokenizers (tests/oracle/package-lock.json)",
           "cases": results}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
