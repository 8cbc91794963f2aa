#!/usr/bin/python3
"""A long prompt never stalls the decoding streams (issue 18, bounded steps by default): `omnic serve`
with its default flags on a Qwen3-0.6B-shaped random checkpoint (mktiny --preset qwen3-0.6b, q4_0:
a 2000-token prompt takes seconds to prefill here, a 512-row chunk a large part of a second), 3 slots
streaming long completions; a 2000-token prompt arrives while they decode.

  - the streams' tokens are the same as in a quiet run, and the long prompt's completion is the
    same as when it runs alone (every token prompt takes the batch-invariant kernels);
  - no gap between two of the streams' tokens while it prefills comes near a chunk's prefill
    (each below a quarter of one 512-row chunk's prefill alone) and their p99 gap stays below 3x
    their p90 gap when nothing prefills (their contexts grow: late steps are slower) (the decode calls carry the prompt's rows, sized to
    OMNIC_STEP_RISE x a decode step; the factors are generous for a shared machine, the hard
    targets are in bench/serve.md);
  - /metrics shows the prompt rows carried by decode calls and a step budget.
Standard library only; release builds (run by scripts/test.sh with the release omnic)."""
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PY = "/usr/bin/python3"
LONG = 2000
STREAM_TOKENS = 800
failed = 0


def fail(msg):
    global failed
    failed += 1
    print("FAIL:", msg, flush=True)


def start(model, log):
    return serve_util.start([OMNIC, "serve", "-m", model, "--parallel", "4", "--ctx", "2560", "--quant", "q4_0",
                             "--threads", "2", "--prefix-cache-mb", "0"], log)


def stream(port, prompt, max_tokens, out):
    """Streams one completion of token ids; out gets the text and (time, count) per chunk."""
    serve_util.stream(port, "/v1/completions", {"prompt": prompt, "max_tokens": max_tokens}, out)


def main():
    rng = random.Random(18)
    prompts = [[rng.randrange(0, 500) for _ in range(24)] for _ in range(3)]  # the tokenizer has 520 ids
    long_prompt = [rng.randrange(0, 500) for _ in range(LONG)]
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "qwen3")
        subprocess.run([PY, os.path.join(ROOT, "tools", "mktiny.py"), "--family", "qwen3", "--preset", "qwen3-0.6b",
                        "--out", model], check=True, stdout=subprocess.DEVNULL)
        proc, port = start(model, os.path.join(tmp, "server.log"))
        try:
            long_alone = {}
            t0 = time.time()
            stream(port, long_prompt, 4, long_alone)
            alone_s = time.time() - t0
            quiet = [{} for _ in prompts]
            ts = [threading.Thread(target=stream, args=(port, prompts[k], STREAM_TOKENS, quiet[k]))
                  for k in range(len(prompts))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            base = sorted(serve_util.gaps(quiet, 0, float("inf")))
            base_p50 = statistics.median(base) if base else float("nan")
            base_p90 = base[int(0.9 * (len(base) - 1))] if base else float("nan")
            rows0 = serve_util.metrics(port).get("omnic_mixed_prompt_rows_total", 0)
            busy = [{} for _ in prompts]
            ts = [threading.Thread(target=stream, args=(port, prompts[k], STREAM_TOKENS, busy[k]))
                  for k in range(len(prompts))]
            for t in ts:
                t.start()
            while any(len(b.get("times", [])) < 10 for b in busy):  # all three decoding
                time.sleep(0.01)
            long_busy = {}
            t_long = time.time()
            stream(port, long_prompt, 4, long_busy)
            t_done = time.time()
            for t in ts:
                t.join()
            m = serve_util.metrics(port)
            for k in range(len(prompts)):
                if busy[k].get("status") != 200 or busy[k].get("text") != quiet[k].get("text"):
                    fail(f"stream {k}: {busy[k].get('status')}, its text differs from its quiet run")
            if long_busy.get("status") != 200 or long_busy.get("text") != long_alone.get("text"):
                fail(f"the long prompt beside the streams: {long_busy.get('status')} {long_busy.get('text')!r} "
                     f"vs alone {long_alone.get('text')!r}")
            first = long_busy["times"][0][0] if long_busy.get("times") else t_done
            during = serve_util.gaps(busy, t_long, first)
            worst = max(during) if during else float("inf")
            rows = m.get("omnic_mixed_prompt_rows_total", 0) - rows0
            print(f"long prompt alone {alone_s:.2f} s, beside 3 streams {first - t_long:.2f} s; streams' median gap "
                  f"{base_p50 * 1000:.0f} ms quiet, {statistics.median(during) * 1000 if during else 0:.0f} ms "
                  f"during it, longest {worst * 1000:.0f} ms ({len(during)} gaps); {rows:.0f} prompt rows in "
                  f"decode calls; step budget {m.get('omnic_step_budget_seconds', 0) * 1000:.1f} ms", flush=True)
            if alone_s < 1.0:
                fail(f"the long prompt prefills in {alone_s:.2f} s alone: too fast to measure interference")
            chunk_s = alone_s * 512 / LONG  # one default chunk's prefill: what a step waited for before
            p99 = sorted(during)[int(0.99 * (len(during) - 1))] if during else float("inf")
            if len(during) < 10 or worst > chunk_s / 4 or p99 > 3 * base_p90:
                fail(f"the streams waited {worst * 1000:.0f} ms at once (p99 {p99 * 1000:.0f} ms; quiet p90 "
                     f"{base_p90 * 1000:.0f} ms, a chunk's prefill {chunk_s * 1000:.0f} ms) while the prompt "
                     f"prefilled")
            if rows < LONG / 4:
                fail(f"only {rows:.0f} of the prompt's rows rode in decode calls")
            if not m.get("omnic_step_budget_seconds", 0) > 0:
                fail("no step budget in /metrics")
        finally:
            proc.terminate()
            proc.wait()
    print("test_prompt_interference:", "ok" if not failed else f"{failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
