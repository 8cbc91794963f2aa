"""Checks of a running `omnic serve` on a model whose image rows attend both ways (tiny Gemma 3:
16-row image spans), started by tests/e2e/test_server_images.sh with --step-tokens and a prefill
chunk smaller than a span.

usage: span_checks.py PORT KEY
  - /v1/models advertises image input;
  - text, 1-image and 2-image requests interleaved (8 concurrent on 4 slots, decode steps that
    take prompt rows of text prompts beside them) == each alone;
  - a text-only request on a slot that just served an image request == alone (nothing of the
    image prompt's spans leaks);
  - afterwards no slot is busy and nothing is queued.
Only the Python standard library."""
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import check, metrics, post  # noqa: E402

C = "/v1/chat/completions"


def body(i):
    text = f"Tell me about {i} foxes and the dog. " * (1 + i % 3)  # some prompts longer than a chunk
    n_img = i % 3
    parts = [{"type": "image_url", "image_url": {"url": "photo.jpg" if k == 0 else "alpha.png"}} for k in range(n_img)]
    content = parts + [{"type": "text", "text": text}] if n_img else text
    return {"messages": [{"role": "user", "content": content}], "max_tokens": 12, "temperature": 0}


def text_of(st, js):
    return js["choices"][0]["message"]["content"] if st == 200 else None


def main():
    checks.PORT, checks.KEY = int(sys.argv[1]), sys.argv[2]
    st, _, data = checks.request("GET", "/v1/models")
    check(st == 200 and json.loads(data)["data"][0]["input_modalities"] == ["text", "image"],
          "/v1/models lists image input", data)
    reqs = [body(i) for i in range(8)]
    alone = [text_of(*post(C, r)[::2]) for r in reqs]
    together = [None] * len(reqs)

    def run(i):
        st, _, js = post(C, reqs[i])
        together[i] = text_of(st, js)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(reqs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(None not in alone and together == alone, "8 concurrent text / 1-image / 2-image requests == alone",
          (alone, together))
    # one slot: an image request, then a text request on the same slot
    check(text_of(*post(C, reqs[1])[::2]) == alone[1] and text_of(*post(C, reqs[0])[::2]) == alone[0],
          "text after image on a reused slot == alone")
    m = metrics()
    check(m.get("omnic_slots_busy") == 0 and m.get("omnic_queue_depth") == 0, "no busy slot or queued request after",
          {k: v for k, v in m.items() if "slots" in k or "queue" in k})
    print(f"span checks: {checks.checks - checks.failures}/{checks.checks} passed", flush=True)
    sys.exit(1 if checks.failures else 0)


if __name__ == "__main__":
    main()
