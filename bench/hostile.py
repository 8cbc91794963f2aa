#!/usr/bin/python3
"""A well-behaved client's latency while each attack of tests/e2e/test_hostile.py runs
(bench/hostile.md). Starts `omnic serve` on the attack suite's tiny LLaVA (made here, with its
template bombs), then for the quiet run and for each attack: the attack runs in a loop in the
background while the good client, on 127.0.0.1, sends --samples greedy completions one after
another (and polls /health between them) from its own process, so that the attackers' Python
threads, which hold this interpreter's lock while they build and read their bodies, cannot stall
its clock; reports each one's p50/p99 completion latency and /health latency, and the p99 ratio
to the quiet run (the target: within 2x). Standard library + the suite's helpers (numpy/PIL for
its images)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests/e2e"))
import test_hostile as th  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def good_run_here(port, n):
    lat, health, texts = [], [], []
    for _ in range(n):
        t0 = time.time()
        texts.append(th.good_completion(port))
        lat.append(time.time() - t0)
        t0 = time.time()
        th.http(port, "GET", "/health")
        health.append(time.time() - t0)
    return lat, health, texts


def good_run(port, n):
    """good_run_here in a child process (--good-run PORT N): (latencies, /health latencies, texts)."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--good-run", str(port), str(n)],
                         check=True, stdout=subprocess.PIPE).stdout
    lat, health, texts = json.loads(out)
    return lat, health, set(texts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--omnic", default=os.path.join(ROOT, "build/release/omnic"))
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--only", default="", help="comma-separated substrings of attack names")
    a = ap.parse_args()
    th.OMNIC = a.omnic
    attacks = [("png zTXt chunks", th.attack_png), ("CMYK JPEG bomb", th.attack_jpeg),
               ("300 idle header connections", th.attack_idle_headers), ("slow-loris", th.attack_slowloris),
               ("stalled 8 MiB uploads", th.attack_uploads), ("JSON expansion", th.attack_json),
               ("template bombs", th.attack_template), ("completion flood", th.attack_flood),
               ("image decode load", th.attack_images_busy), ("malformed HTTP", th.attack_http)]
    with tempfile.TemporaryDirectory() as tmp:
        model = th.make_model(tmp)
        srv = th.Server(model, tmp)
        try:
            q_lat, q_health, q_text = good_run(srv.port, a.samples)
            q99 = pct(q_lat, 99)
            print("| case | completion p50 (ms) | p90 (ms) | p99 (ms) | p99 / quiet | /health p99 (ms) | same output |")
            print("|---|---|---|---|---|---|---|")
            print(f"| quiet | {pct(q_lat, 50) * 1000:.0f} | {pct(q_lat, 90) * 1000:.0f} | {q99 * 1000:.0f} | 1.00 | "
                  f"{pct(q_health, 99) * 1000:.1f} | - |", flush=True)
            for name, fn in attacks:
                if a.only and not any(o in name for o in a.only.split(",")):
                    continue
                stop = threading.Event()

                def loop():
                    while not stop.is_set():
                        fn(srv)
                t = threading.Thread(target=loop, daemon=True)
                t.start()
                time.sleep(0.3)  # the attack is under way
                lat, health, texts = good_run(srv.port, a.samples)
                stop.set()
                t.join(60)
                print(f"| {name} | {pct(lat, 50) * 1000:.0f} | {pct(lat, 90) * 1000:.0f} | {pct(lat, 99) * 1000:.0f} | "
                      f"{pct(lat, 99) / q99:.2f} | {pct(health, 99) * 1000:.1f} | "
                      f"{'yes' if texts == q_text else 'NO'} |", flush=True)
        finally:
            srv.stop()
    if th.failures:
        print(f"({len(th.failures)} attack checks failed while looping: {th.failures[:3]})")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--good-run":
        print(json.dumps(good_run_here(int(sys.argv[2]), int(sys.argv[3]))))
        sys.exit(0)
    main()
