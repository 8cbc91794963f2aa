"""Checks of a running `omnic serve`, driven by tests/e2e/test_server.sh.

usage: checks.py CHECK PORT KEY [ARGS...]
  matrix MAX_N MAX_BODY   malformed requests: each gets the right status, type/code, param and
                          message; the server keeps serving
  concurrency             8 concurrent streams (greedy and seeded) on 4 slots == each alone
  disconnect              a client leaving mid-stream cancels its request and frees the slot
  queue                   (server with --parallel 1 --max-queue 1 --request-timeout 2 --ctx 16384)
                          queue overflow gives 429 + Retry-After; timeouts give 504 / an SSE error
  rss PID N               N sequential short requests; RSS after 100 vs after N
  drain PID               SIGTERM: in-flight stream finishes, new work gets 503, exit
  deadline PID            SIGINT past --shutdown-timeout: the in-flight stream gets an error
  slow                    (server with --max-backlog 2048) a client that stops reading is cancelled
Only the Python standard library."""
import http.client
import json
import os
import re
import signal
import socket
import struct
import sys
import threading
import time

PORT = 0
KEY = None
failures = 0
checks = 0


def check(cond, what, extra=None):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL: {what}" + (f" ({extra!r})" if extra is not None else ""), flush=True)
    return cond


def request(method, path, body=None, headers=None, key=True, timeout=60):
    """One request on a fresh connection: (status, headers, bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    h = {}
    if key and KEY:
        h["Authorization"] = "Bearer " + KEY
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    conn.close()
    return r.status, hdrs, data


def post(path, body, **kw):
    st, h, data = request("POST", path, body, **kw)
    try:
        js = json.loads(data) if data else None
    except ValueError:
        js = None
    return st, h, js


def stream(path, body, read_chunks=None):
    """POSTs a streaming request; returns (status, list of SSE data payloads, socket-level connection).
    With read_chunks, stops after that many events and returns the open connection."""
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    conn.request("POST", path, body=json.dumps(body),
                 headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    r = conn.getresponse()
    events = []
    if r.status != 200:
        r.read()
        conn.close()
        return r.status, events, None
    buf = b""
    while True:
        line = r.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            events.append(line[6:].strip().decode())
            if read_chunks and len(events) >= read_chunks:
                return r.status, events, conn
    conn.close()
    return r.status, events, None


def metrics():
    st, _, data = request("GET", "/metrics")
    out = {}
    for line in data.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        out[name] = float(value)
    return out


def stream_text(events):
    """Concatenated text of choice 0 of a completions or chat stream, and the finish reason."""
    text, finish, error = "", None, None
    for e in events:
        if e == "[DONE]":
            continue
        js = json.loads(e)
        if "error" in js:
            error = js["error"]
            continue
        for c in js.get("choices", []):
            if "text" in c:
                text += c["text"]
            else:
                text += c["delta"].get("content", "") or ""
            finish = c["finish_reason"] or finish
    return text, finish, error


# ---- malformed requests ----

def matrix(max_n, max_body):
    C, K = "/v1/chat/completions", "/v1/completions"
    msgs = [{"role": "user", "content": "hi"}]
    long_stop = "x" * 300
    # (name, method, path, body (dict/bytes/str/None), extra headers, key?, status, code, param, message regex)
    cases = [
        ("bad JSON", "POST", K, b'{"prompt": "x",}', None, True, 400, "invalid_json", None, r"parse.*request body:1:\d+"),
        ("truncated JSON", "POST", K, b'{"prompt": "x", "max_tokens": 1', None, True, 400, "invalid_json", None,
         r"parse"),
        ("JSON array body", "POST", K, b'[1, 2]', None, True, 400, "invalid_json", None, r"object"),
        ("empty body", "POST", K, b'', None, True, 400, "invalid_json", None, r"parse"),
        ("invalid UTF-8", "POST", K, b'{"prompt": "ab\xff\xfe"}', None, True, 400, "invalid_json", None,
         r"(?i)utf-8|decode|byte"),
        ("NUL escape", "POST", K, b'{"prompt": "a\\u0000b"}', None, True, 400, "invalid_json", None, r"NUL|\\\\u0000"),
        ("prompt wrong type", "POST", K, {"prompt": 5}, None, True, 400, "invalid_type", "prompt", r"prompt"),
        ("prompt missing", "POST", K, {"max_tokens": 3}, None, True, 400, "invalid_value", "prompt",
         r"Missing.*prompt"),
        ("prompt empty array", "POST", K, {"prompt": []}, None, True, 400, "invalid_value", "prompt", r"empty"),
        ("prompt mixed array", "POST", K, {"prompt": ["a", 5]}, None, True, 400, "invalid_type", "prompt[1]",
         r"prompt\[1\]"),
        ("token id outside vocab", "POST", K, {"prompt": [1, 2, 99999999]}, None, True, 400, "invalid_value", None,
         r"99999999.*vocabulary"),
        ("negative token id", "POST", K, {"prompt": [1, -2]}, None, True, 400, "invalid_value", "prompt[1]",
         r"-2"),
        ("max_tokens negative", "POST", K, {"prompt": "x", "max_tokens": -5}, None, True, 400, "invalid_value",
         "max_tokens", r"-5.*1\.\."),
        ("max_tokens zero", "POST", K, {"prompt": "x", "max_tokens": 0}, None, True, 400, "invalid_value",
         "max_tokens", r"0"),
        ("max_tokens huge", "POST", K, {"prompt": "x", "max_tokens": 1000000000}, None, True, 400,
         "context_length_exceeded", "max_tokens", r"1000000000.*context of \d+"),
        ("max_tokens past int", "POST", K, {"prompt": "x", "max_tokens": 1e30}, None, True, 400, "invalid_type",
         "max_tokens", r"integer"),
        ("max_tokens string", "POST", K, {"prompt": "x", "max_tokens": "10"}, None, True, 400, "invalid_type",
         "max_tokens", r"integer.*string"),
        ("max_tokens fraction", "POST", K, {"prompt": "x", "max_tokens": 2.5}, None, True, 400, "invalid_type",
         "max_tokens", r"integer"),
        ("temperature too high", "POST", K, {"prompt": "x", "temperature": 3}, None, True, 400, "invalid_value",
         "temperature", r"3.*\[0, 2\]"),
        ("temperature negative", "POST", K, {"prompt": "x", "temperature": -0.5}, None, True, 400, "invalid_value",
         "temperature", r"-0.5"),
        ("temperature string", "POST", K, {"prompt": "x", "temperature": "hot"}, None, True, 400, "invalid_type",
         "temperature", r"number"),
        ("top_p too high", "POST", K, {"prompt": "x", "top_p": 1.5}, None, True, 400, "invalid_value", "top_p",
         r"1.5"),
        ("presence_penalty", "POST", K, {"prompt": "x", "presence_penalty": 5}, None, True, 400, "invalid_value",
         "presence_penalty", r"5"),
        ("frequency_penalty", "POST", K, {"prompt": "x", "frequency_penalty": -3}, None, True, 400, "invalid_value",
         "frequency_penalty", r"-3"),
        ("top_k string", "POST", K, {"prompt": "x", "top_k": "x"}, None, True, 400, "invalid_type", "top_k",
         r"integer"),
        ("min_p too high", "POST", K, {"prompt": "x", "min_p": 2}, None, True, 400, "invalid_value", "min_p", r"2"),
        ("repetition_penalty 0", "POST", K, {"prompt": "x", "repetition_penalty": 0}, None, True, 400,
         "invalid_value", "repetition_penalty", r"\(0, 10\]"),
        ("seed string", "POST", K, {"prompt": "x", "seed": "abc"}, None, True, 400, "invalid_type", "seed",
         r"integer"),
        ("stream not bool", "POST", K, {"prompt": "x", "stream": "yes"}, None, True, 400, "invalid_type", "stream",
         r"boolean"),
        ("stream_options without stream", "POST", K, {"prompt": "x", "stream_options": {"include_usage": True}},
         None, True, 400, "invalid_value", "stream_options", r"stream"),
        ("n zero", "POST", K, {"prompt": "x", "n": 0}, None, True, 400, "invalid_value", "n", r"0"),
        ("n too large", "POST", K, {"prompt": "x", "n": max_n + 1}, None, True, 400, "invalid_value", "n",
         rf"{max_n + 1}.*1\.\.{max_n}"),
        ("stop too long", "POST", K, {"prompt": "x", "stop": long_stop}, None, True, 400, "invalid_value", "stop",
         r"300 bytes.*256"),
        ("too many stops", "POST", K, {"prompt": "x", "stop": ["a"] * 17}, None, True, 400, "invalid_value", "stop",
         r"17.*16"),
        ("stop wrong type", "POST", K, {"prompt": "x", "stop": 5}, None, True, 400, "invalid_type", "stop",
         r"string"),
        ("empty stop", "POST", K, {"prompt": "x", "stop": [""]}, None, True, 400, "invalid_value", "stop[0]",
         r"0 bytes"),
        ("logprobs", "POST", C, {"messages": msgs, "logprobs": True}, None, True, 400, "unsupported_parameter",
         "logprobs", r"not supported"),
        ("completions logprobs", "POST", K, {"prompt": "x", "logprobs": 3}, None, True, 400,
         "unsupported_parameter", "logprobs", r"not supported"),
        ("tools", "POST", C, {"messages": msgs, "tools": [{"type": "function", "function": {"name": "f"}}]}, None,
         True, 400, "unsupported_parameter", "tools", r"not supported"),
        ("tool_choice", "POST", C, {"messages": msgs, "tool_choice": "auto"}, None, True, 400,
         "unsupported_parameter", "tool_choice", r"not supported"),
        ("response_format", "POST", C, {"messages": msgs, "response_format": {"type": "json_object"}}, None, True,
         400, "unsupported_parameter", "response_format", r"not supported"),
        ("logit_bias", "POST", C, {"messages": msgs, "logit_bias": {"5": 10}}, None, True, 400,
         "unsupported_parameter", "logit_bias", r"not supported"),
        ("echo", "POST", K, {"prompt": "x", "echo": True}, None, True, 400, "unsupported_parameter", "echo",
         r"not supported"),
        ("messages missing", "POST", C, {"model": "x"}, None, True, 400, "invalid_value", "messages",
         r"Missing.*messages"),
        ("messages empty", "POST", C, {"messages": []}, None, True, 400, "invalid_value", "messages", r"empty"),
        ("messages not array", "POST", C, {"messages": "hi"}, None, True, 400, "invalid_type", "messages",
         r"array"),
        ("message not object", "POST", C, {"messages": ["hi"]}, None, True, 400, "invalid_type", "messages[0]",
         r"object"),
        ("unknown role", "POST", C, {"messages": [{"role": "wizard", "content": "x"}]}, None, True, 400,
         "invalid_value", "messages[0].role", r"wizard"),
        ("role missing", "POST", C, {"messages": [{"content": "x"}]}, None, True, 400, "invalid_value",
         "messages[0].role", r"Missing"),
        ("tool role", "POST", C, {"messages": [{"role": "tool", "content": "x", "tool_call_id": "a"}]}, None, True,
         400, "unsupported_parameter", "messages[0].role", r"tools"),
        ("content wrong type", "POST", C, {"messages": [{"role": "user", "content": 5}]}, None, True, 400,
         "invalid_type", "messages[0].content", r"string or an array"),
        ("content missing", "POST", C, {"messages": [{"role": "user"}]}, None, True, 400, "invalid_value",
         "messages[0].content", r"Missing"),
        ("image part", "POST", C, {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}, None, True, 400,
         "unsupported_parameter", "messages[0].content[0]", r"does not accept 'image_url'.*text"),
        ("unknown part type", "POST", C, {"messages": [{"role": "user", "content": [{"type": "hologram"}]}]}, None,
         True, 400, "invalid_value", "messages[0].content[0]", r"hologram"),
        ("text part without text", "POST", C, {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
         None, True, 400, "invalid_type", "messages[0].content[0].text", r"string"),
        ("unknown model", "POST", K, {"model": "gpt-4o", "prompt": "x"}, None, True, 404, "model_not_found",
         "model", r"gpt-4o"),
        ("missing API key", "POST", K, {"prompt": "x"}, None, False, 401, "invalid_api_key", None,
         r"didn't provide an API key"),
        ("wrong API key", "POST", K, {"prompt": "x"}, {"Authorization": "Bearer nope"}, False, 401,
         "invalid_api_key", None, r"Incorrect API key"),
        ("wrong auth scheme", "GET", "/v1/models", None, {"Authorization": "Basic " + (KEY or "")}, False, 401,
         "invalid_api_key", None, r"Incorrect"),
        ("unknown route", "GET", "/v1/nothing", None, None, True, 404, "unknown_url", None, r"/v1/nothing"),
        ("unknown model route", "GET", "/v1/models/other", None, None, True, 404, "model_not_found", "model",
         r"other"),
        ("wrong method", "GET", C, None, None, True, 405, "method_not_allowed", None, r"GET.*POST"),
        ("wrong method 2", "DELETE", "/v1/models", None, None, True, 405, "method_not_allowed", None, r"DELETE"),
        ("tokenize without content", "POST", "/tokenize", {"text": "x"}, None, True, 400, "invalid_value",
         "content", r"Missing"),
        ("detokenize bad ids", "POST", "/detokenize", {"tokens": ["a"]}, None, True, 400, "invalid_type",
         "tokens[0]", r"token id"),
        ("detokenize id outside vocab", "POST", "/detokenize", {"tokens": [5, 999999]}, None, True, 400,
         "invalid_value", "tokens", r"999999"),
    ]
    before = metrics()
    for name, method, path, body, hdrs, key, status, code, param, msg in cases:
        st, h, data = request(method, path, body, headers=hdrs, key=key)
        try:
            err = json.loads(data)["error"]
        except (ValueError, KeyError, TypeError):
            check(False, f"{name}: OpenAI error object", data[:200])
            continue
        ok = check(st == status, f"{name}: status {status}", (st, err.get("message")))
        ok &= check(set(err) == {"message", "type", "param", "code"}, f"{name}: error fields", sorted(err))
        ok &= check(err.get("code") == code, f"{name}: code {code}", err.get("code"))
        ok &= check(err.get("param") == param, f"{name}: param {param}", err.get("param"))
        ok &= check(re.search(msg, err.get("message", "")) is not None, f"{name}: message ~ /{msg}/",
                    err.get("message"))
        ok &= check(err.get("type") == ("invalid_request_error" if status < 500 else "server_error"),
                    f"{name}: type", err.get("type"))
        if status == 405:
            check("allow" in h, f"{name}: Allow header", h)
    # a body over the limit: refused from its Content-Length, before it is read
    s = socket.create_connection(("127.0.0.1", PORT))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (max_body + 1))
    s.sendall(b'{"prompt": "' + b"a" * 1000)
    resp = b""
    while b"\r\n\r\n" not in resp or not resp.rstrip().endswith(b"}"):
        got = s.recv(65536)
        if not got:
            break
        resp += got
    s.close()
    check(resp.startswith(b"HTTP/1.1 413") and b'"code":"request_too_large"' in resp and
          b"over the server's limit of %d" % max_body in resp, "oversized body: 413", resp[:300])
    # a chunked body over the limit (no Content-Length): read, refused at the end
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    conn.putrequest("POST", "/v1/completions")
    conn.putheader("Authorization", "Bearer " + KEY)
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    piece = b"a" * 65536
    sent = 0
    conn.send(b'%x\r\n{"prompt": "\r\n' % len(b'{"prompt": "'))
    while sent <= max_body:
        conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        sent += len(piece)
    conn.send(b'2\r\n"}\r\n0\r\n\r\n')
    r = conn.getresponse()
    body = r.read()
    conn.close()
    check(r.status == 413 and b"request_too_large" in body, "chunked oversized body: 413", (r.status, body[:200]))
    # NaN / Infinity are not JSON
    st, _, js = post("/v1/completions", b'{"prompt": "x", "temperature": NaN}')
    check(st == 400, "NaN temperature: 400", st)
    # the server still works, and the rejections are counted
    st, _, js = post("/v1/completions", {"prompt": "still alive", "max_tokens": 4, "temperature": 0})
    check(st == 200 and js["usage"]["completion_tokens"] >= 1, "a good request after the matrix", (st, js))
    after = metrics()
    for reason in ("auth", "malformed_json", "invalid_request", "unsupported", "not_found", "model_not_found",
                   "method_not_allowed", "body_too_large", "capacity"):
        k = f'omnic_http_rejected_total{{reason="{reason}"}}'
        check(after.get(k, 0) > before.get(k, 0), f"metrics count rejections ({reason})")
    check(after.get('omnic_http_responses_total{code="400"}', 0) > before.get('omnic_http_responses_total{code="400"}', 0),
          "metrics count responses by status")
    check(after.get('omnic_http_responses_total{code="500"}', 0) == 0, "no 500 at all")
    print(f"matrix: {len(cases) + 2} malformed requests", flush=True)


# ---- concurrency: 8 streams on 4 slots, each == alone ----

def bodies():
    """8 streaming requests: completions and chat, greedy and seeded sampling."""
    prompts = ["Once upon a time", "The capital of France", "aaaa bbbb cccc", "1 2 3 4 5 6",
               "Hello, world!", "zebra yak xylophone", "What is the meaning", "lorem ipsum dolor"]
    out = []
    for i, p in enumerate(prompts):
        b = {"max_tokens": 20 + 3 * i, "ignore_eos": True, "stream": True, "temperature": 0}
        if i % 2:
            b.update(temperature=0.8, top_p=0.9, seed=1000 + i)
        if i == 5:
            b.update(presence_penalty=0.5, frequency_penalty=0.3, top_k=40)
        if i in (2, 3, 6):
            b["messages"] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": p}]
            out.append(("/v1/chat/completions", b))
        else:
            b["prompt"] = p
            out.append(("/v1/completions", b))
    return out


def concurrency():
    bs = bodies()
    alone = []
    for path, b in bs:
        st, ev, _ = stream(path, b)
        check(st == 200 and ev[-1] == "[DONE]", "alone: stream ends with [DONE]")
        alone.append(stream_text(ev))
    results = [None] * len(bs)

    def run(i):
        st, ev, _ = stream(*bs[i])
        results[i] = (st, ev)

    peak = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            m = metrics()
            peak[0] = max(peak[0], m.get("omnic_slots_busy", 0))
            time.sleep(0.005)

    before = metrics()
    w = threading.Thread(target=watch)
    w.start()
    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(bs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    stop.set()
    w.join()
    after = metrics()
    for i, (st, ev) in enumerate(results):
        check(st == 200, f"concurrent {i}: 200", st)
        got = stream_text(ev)
        check(got == alone[i], f"concurrent {i} == alone", (got, alone[i]))
        check(got[1] == "length" and got[0], f"concurrent {i}: text, finish length", got)
    rows = after["omnic_decode_rows_total"] - before["omnic_decode_rows_total"]
    steps = after["omnic_decode_steps_total"] - before["omnic_decode_steps_total"]
    check(rows > steps, "decode steps were batched", (rows, steps))
    # continuous_usage_stats (vLLM's extension): usage so far in every chunk
    st, ev, _ = stream("/v1/chat/completions", {"messages": [{"role": "user", "content": "count"}], "max_tokens": 12,
                                                "ignore_eos": True, "stream": True,
                                                "stream_options": {"include_usage": True,
                                                                   "continuous_usage_stats": True}})
    used = [json.loads(e)["usage"]["completion_tokens"] for e in ev if e != "[DONE]"]
    check(st == 200 and used == sorted(used) and used[0] == 0 and used[-1] == 12 and len(used) >= 4,
          "continuous usage stats", used)
    print(f"concurrency: 8 streams (5 completions, 3 chat; 4 greedy, 4 seeded) on 4 slots bit-identical to "
          f"alone (peak busy slots {peak[0]:.0f}, {rows / max(steps, 1):.2f} rows per decode step)", flush=True)


# ---- disconnect ----

def disconnect():
    before = metrics()
    body = {"prompt": "A long story", "max_tokens": 8000, "ignore_eos": True, "stream": True, "temperature": 0}
    st, ev, conn = stream("/v1/completions", body, read_chunks=3)
    check(st == 200 and conn is not None, "long stream started", st)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    t0 = time.time()
    ok = False
    while time.time() - t0 < 20:
        m = metrics()
        if (m["omnic_slots_busy"] == 0 and
                m['omnic_requests_total{finish_reason="cancelled"}'] > before['omnic_requests_total{finish_reason="cancelled"}']):
            ok = True
            break
        time.sleep(0.02)
    dt = time.time() - t0
    check(ok, "disconnect: slot freed and the request counted cancelled", metrics())
    m = metrics()
    gen = m["omnic_generated_tokens_total"] - before["omnic_generated_tokens_total"]
    check(gen < 8000, "disconnect: generation stopped early", gen)
    check(m["omnic_http_client_disconnects_total"] > before["omnic_http_client_disconnects_total"],
          "disconnect counted")
    # a client that resets while its request waits (non-streamed, suspended): the watchdog notices.
    # (A plain close() sends the same FIN as a half-close, which is not a disconnect; a closed
    # peer's socket answers the response with a reset, or the request times out.)
    before = metrics()
    s = socket.create_connection(("127.0.0.1", PORT))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    payload = json.dumps({"prompt": "Another long story", "max_tokens": 8000, "ignore_eos": True, "n": 4,
                          "temperature": 0}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(payload)).encode() +
              b"\r\n\r\n" + payload)
    time.sleep(0.05)
    s.close()
    t1 = time.time()
    ok2 = False
    while time.time() - t1 < 20:
        m = metrics()
        if (m["omnic_slots_busy"] == 0 and
                m['omnic_requests_total{finish_reason="cancelled"}'] > before['omnic_requests_total{finish_reason="cancelled"}']):
            ok2 = True
            break
        time.sleep(0.02)
    gen2 = metrics()["omnic_generated_tokens_total"] - before["omnic_generated_tokens_total"]
    check(ok2 and gen2 < 4 * 8000, "non-streamed client gone: cancelled by the watchdog", gen2)
    print(f"disconnect: stream cancelled {dt * 1000:.0f} ms after the client left ({gen:.0f} of 8000 tokens); "
          f"waiting client (n=4) cancelled after {(time.time() - t1) * 1000:.0f} ms ({gen2:.0f} of 32000 tokens)",
          flush=True)
    # a half-close (shutdown(SHUT_WR) after the request) is not a disconnect: the answer comes
    for streamed in (False, True):
        s = socket.create_connection(("127.0.0.1", PORT))
        payload = json.dumps({"prompt": "Half", "max_tokens": 300, "ignore_eos": True, "temperature": 0,
                              "stream": streamed}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode() +
                  b"\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                  str(len(payload)).encode() + b"\r\n\r\n" + payload)
        time.sleep(0.1)  # libmicrohttpd 0.9.75 aborts on a FIN it reads before the request's end
        s.shutdown(socket.SHUT_WR)
        s.settimeout(60)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        head = data.split(b"\r\n", 1)[0]
        done = b"[DONE]" in data if streamed else b'"finish_reason":"length"' in data
        check(head.endswith(b"200 OK") and done, f"half-closed client (stream={streamed}) gets its whole answer",
              data[:300])


# ---- queue overflow and timeouts (server: --parallel 1 --max-queue 1 --request-timeout 1) ----

def queue():
    long = {"prompt": "Tell me everything", "max_tokens": 16000, "ignore_eos": True, "temperature": 0}
    res = {}

    def run(name):
        res[name] = post("/v1/completions", long)

    a = threading.Thread(target=run, args=("a",))
    a.start()
    t0 = time.time()
    while metrics()["omnic_slots_busy"] < 1 and time.time() - t0 < 10:
        time.sleep(0.005)
    b = threading.Thread(target=run, args=("b",))
    b.start()
    while metrics()["omnic_queue_depth"] < 1 and time.time() - t0 < 10:
        time.sleep(0.005)
    st, h, js = post("/v1/completions", long)
    check(st == 429, "queue full: 429", (st, js))
    check(h.get("retry-after") == "1", "429 has Retry-After", h)
    check(js and js["error"]["code"] == "queue_full" and js["error"]["type"] == "rate_limit_error" and
          "queue is full" in js["error"]["message"], "429 error object", js)
    a.join()
    b.join()
    # both ran past --request-timeout 2 s (b while it waited)
    for k in ("a", "b"):
        st, h, js = res[k]
        check(st == 504 and js["error"]["code"] == "request_timeout" and js["error"]["type"] == "timeout_error",
              f"timeout {k}: 504", (st, js))
    st, ev, _ = stream("/v1/completions", dict(long, stream=True))
    text, finish, err = stream_text(ev)
    check(st == 200 and err and err["code"] == "request_timeout" and ev[-1] != "[DONE]",
          "stream timeout: an SSE error event ends the stream", ev[-2:])
    t0 = time.time()
    while time.time() - t0 < 5:  # the gauges follow the DONE event
        m = metrics()
        if m["omnic_slots_busy"] == 0 and m["omnic_queue_depth"] == 0:
            break
        time.sleep(0.01)
    check(m['omnic_requests_total{finish_reason="timeout"}'] >= 3, "timeouts counted")
    check(m['omnic_rejected_total{reason="queue_full"}'] >= 1, "queue_full counted")
    check(m["omnic_slots_busy"] == 0 and m["omnic_queue_depth"] == 0, "slots and queue empty after")
    st, _, js = post("/v1/completions", {"prompt": "short", "max_tokens": 3})
    check(st == 200, "server works after overflow and timeouts", (st, js))
    print("queue: 429 with Retry-After on overflow; 504 and SSE timeout errors", flush=True)


# ---- RSS ----

def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def rss(pid, n):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    hdr = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}
    at100 = 0
    t0 = time.time()
    for i in range(n):
        # a mix: non-streamed, streamed, chat, tokenize, and a rejected request
        path, body, want = "/v1/completions", {"prompt": f"request {i}", "max_tokens": 3, "temperature": 0}, 200
        if i % 5 == 1:
            body["stream"] = True
        elif i % 5 == 2:
            path, body = "/v1/chat/completions", {"messages": [{"role": "user", "content": f"request {i}"}],
                                                  "max_tokens": 3, "stream": i % 2 == 0}
        elif i % 5 == 3:
            path, body = "/tokenize", {"content": f"request {i}"}
        elif i % 5 == 4:
            body["temperature"], want = 9, 400
        conn.request("POST", path, body=json.dumps(body), headers=hdr)
        r = conn.getresponse()
        r.read()
        if r.status != want:
            check(False, f"rss: request {i} status", r.status)
            break
        if i + 1 == 100:
            at100 = rss_kb(pid)
    conn.close()
    at_n = rss_kb(pid)
    dt = time.time() - t0
    grow = at_n - at100
    check(grow < 2048, f"RSS flat over {n} requests (growth < 2 MiB)", (at100, at_n))
    print(f"rss: {at100} KiB after 100 requests, {at_n} KiB after {n} ({grow:+d} KiB); "
          f"{n / dt:.0f} requests/s", flush=True)


# ---- SIGTERM drain ----

def drain(pid):
    res = {}

    def run():
        res["s"] = stream("/v1/completions", {"prompt": "Draining", "max_tokens": 3000, "ignore_eos": True,
                                              "stream": True, "temperature": 0})

    t = threading.Thread(target=run)
    t.start()
    t0 = time.time()
    while metrics()["omnic_slots_busy"] < 1 and time.time() - t0 < 10:
        time.sleep(0.005)
    os.kill(pid, signal.SIGTERM)
    time.sleep(0.1)
    st, h, data = request("GET", "/health")
    check(st == 503 and b"shutting_down" in data, "draining: /health 503", (st, data))
    st, h, js = post("/v1/completions", {"prompt": "new work", "max_tokens": 3})
    check(st == 503 and js["error"]["code"] == "shutting_down", "draining: new work gets 503", (st, js))
    t.join()
    st, ev, _ = res["s"]
    text, finish, err = stream_text(ev)
    check(st == 200 and ev and ev[-1] == "[DONE]" and finish == "length", "in-flight stream finished during drain",
          (st, ev[-2:] if ev else None))
    print("drain: in-flight stream completed, new work refused with 503", flush=True)


def slow():
    """(server with --max-backlog 2048) a client that stops reading: its backlog passes the
    limit, the request is cancelled and the slot freed while the connection is still open."""
    before = metrics()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", PORT))
    payload = json.dumps({"prompt": "Read me", "max_tokens": 16000, "ignore_eos": True, "stream": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(payload)).encode() +
              b"\r\n\r\n" + payload)
    first = s.recv(200)
    check(first.startswith(b"HTTP/1.1 200"), "slow client: stream started", first)
    t0 = time.time()
    ok = False
    while time.time() - t0 < 60:
        m = metrics()
        if m["omnic_http_slow_client_cancels_total"] > before["omnic_http_slow_client_cancels_total"] and \
                m["omnic_slots_busy"] == 0:
            ok = True
            break
        time.sleep(0.02)
    m = metrics()
    gen = m["omnic_generated_tokens_total"] - before["omnic_generated_tokens_total"]
    check(ok and gen < 16000, "slow client: cancelled, slot freed", (gen, m["omnic_http_slow_client_cancels_total"]))
    check(m['omnic_requests_total{finish_reason="cancelled"}'] > before['omnic_requests_total{finish_reason="cancelled"}'],
          "slow client: counted cancelled")
    s.close()
    st, _, js = post("/v1/completions", {"prompt": "next", "max_tokens": 3})
    check(st == 200, "server works after a slow client", st)
    print(f"slow: a client that stopped reading was cancelled after {gen:.0f} tokens "
          f"({time.time() - t0:.2f} s), connection still open", flush=True)


def deadline(pid):
    """SIGINT with --shutdown-timeout 0.5: a long stream is cancelled at the deadline with an
    SSE error, and the server exits."""
    res = {}

    def run():
        res["s"] = stream("/v1/completions", {"prompt": "Never ends", "max_tokens": 16000, "ignore_eos": True,
                                              "stream": True})

    t = threading.Thread(target=run)
    t.start()
    t0 = time.time()
    while metrics()["omnic_slots_busy"] < 1 and time.time() - t0 < 10:
        time.sleep(0.005)
    os.kill(pid, signal.SIGINT)
    t.join()
    st, ev, _ = res["s"]
    text, finish, err = stream_text(ev)
    check(st == 200 and err and err["code"] == "shutting_down" and ev[-1] != "[DONE]",
          "deadline: the stream ends with a shutting_down error", ev[-2:])
    print(f"deadline: stream cancelled {time.time() - t0:.2f} s after SIGINT (deadline 0.5 s)", flush=True)


def prefix_cache():
    """A long system prompt shared by two conversations: the second reports cached prompt tokens
    (usage.prompt_tokens_details.cached_tokens, also in the streamed usage chunk), gives the same
    text as when it ran first on a cold cache (checked by asking it twice around another prompt),
    and /metrics counts the reused rows."""
    system = "You are a careful assistant. " * 12
    def ask(user, streamed=False):
        body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                "max_tokens": 12, "temperature": 0}
        if streamed:
            body.update(stream=True, stream_options={"include_usage": True})
            st, events, _ = stream("/v1/chat/completions", body)
            usage = [json.loads(e)["usage"] for e in events if e != "[DONE]" and json.loads(e).get("usage")]
            return st, usage[-1] if usage else None
        st, _, js = post("/v1/chat/completions", body)
        return st, js
    before = metrics().get("omnic_prefix_cache_reused_rows_total", 0)
    st, a = ask("What is a fox?")
    check(st == 200, "first conversation", a)
    st, b = ask("What is a dog?")
    cached = b["usage"].get("prompt_tokens_details", {}).get("cached_tokens") if st == 200 else None
    check(st == 200 and cached and 0 < cached < b["usage"]["prompt_tokens"],
          "the second reports cached prompt tokens", b and b.get("usage"))
    st, a2 = ask("What is a fox?")
    check(st == 200 and a2["choices"][0]["message"]["content"] == a["choices"][0]["message"]["content"],
          "a cached prompt gives the text it gave on a cold cache", (a, a2))
    st, su = ask("What is a dog?", streamed=True)
    check(st == 200 and su and su.get("prompt_tokens_details", {}).get("cached_tokens", 0) > 0,
          "the streamed usage chunk reports cached tokens", su)
    check(metrics().get("omnic_prefix_cache_reused_rows_total", 0) > before, "/metrics counts reused rows")


def main():
    global PORT, KEY
    what, PORT, KEY = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    args = sys.argv[4:]
    if what == "matrix":
        matrix(int(args[0]), int(args[1]))
    elif what == "concurrency":
        concurrency()
    elif what == "disconnect":
        disconnect()
    elif what == "queue":
        queue()
    elif what == "rss":
        rss(int(args[0]), int(args[1]))
    elif what == "drain":
        drain(int(args[0]))
    elif what == "slow":
        slow()
    elif what == "deadline":
        deadline(int(args[0]))
    elif what == "prefix_cache":
        prefix_cache()
    else:
        sys.exit(f"unknown check {what}")
    print(f"{what}: {checks - failures}/{checks} checks passed", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
