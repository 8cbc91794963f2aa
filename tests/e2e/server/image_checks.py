"""Image input checks of a running `omnic serve` on a tiny LLaVA checkpoint, driven by
tests/e2e/test_server_images.sh.

usage: image_checks.py PORT KEY MEDIA_DIR
  - /v1/models advertises image input;
  - the same image as a data: URL and as a file under --media-dir gives the same greedy text;
  - a matrix of bad media (truncated / corrupt JPEG, PNG, WebP, a 1x1 image, a 30000x30000
    header, a decompression-bomb PNG, wrong MIME, base64 garbage, GIF, BMP, remote URLs,
    paths outside --media-dir, more placeholders than images, too many images): each a 400
    naming the problem, and the server keeps serving;
  - text-only and image requests interleaved (8 concurrent on 4 slots) == each alone;
  - afterwards no slot is busy and nothing is queued.
Only the Python standard library (the images were written by the shell script with Pillow)."""
import base64
import json
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import check, metrics, post, stream, stream_text  # noqa: E402

C = "/v1/chat/completions"


def data_url(path, mime):
    with open(path, "rb") as f:
        return f"data:{mime};base64," + base64.b64encode(f.read()).decode()


def image_msg(urls, text="Describe the image."):
    parts = [{"type": "image_url", "image_url": {"url": u}} for u in urls]
    return [{"role": "user", "content": parts + [{"type": "text", "text": text}]}]


def chat(messages, **kw):
    body = {"messages": messages, "max_tokens": kw.pop("max_tokens", 12), "temperature": 0}
    body.update(kw)
    return post(C, body)


def main():
    checks.PORT, checks.KEY, media = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    M = lambda name: os.path.join(media, name)  # noqa: E731
    st, _, data = checks.request("GET", "/v1/models")
    mods = json.loads(data)["data"][0]["input_modalities"]
    check(st == 200 and mods == ["text", "image"], "/v1/models lists image input", mods)

    # the same image as a data: URL and as a file path (relative and file://)
    texts = []
    for url in (data_url(M("photo.jpg"), "image/jpeg"), "photo.jpg", "file://" + M("photo.jpg")):
        st, _, js = chat(image_msg([url]))
        check(st == 200, f"image request ({url[:24]}...)", js)
        texts.append(js["choices"][0]["message"]["content"] if st == 200 else None)
        if st == 200:
            check(js["usage"]["prompt_tokens"] < 40, "usage counts logical prompt tokens", js["usage"])
    check(len(set(texts)) == 1, "data: URL and file paths give the same output", texts)
    # the three carried the same image: it was encoded once, then came from the encoder cache
    m = checks.metrics()
    check(m.get("omnic_encoder_cache_hits_total", 0) >= 2 and m.get("omnic_encoder_cache_entries", 0) >= 1,
          "the repeated image came from the encoder cache",
          {k: v for k, v in m.items() if k.startswith("omnic_encoder_cache")})
    # ... and, the same bytes each time, was decoded and preprocessed once (the media memo)
    check(m.get("omnic_media_memo_hits_total", 0) >= 2 and m.get("omnic_media_memo_misses_total", 0) >= 1
          and m.get("omnic_media_memo_bytes", 0) > 0, "the repeated image skipped decode and preprocessing",
          {k: v for k, v in m.items() if k.startswith("omnic_media_memo")})
    # per-stage histograms, per modality: three items fetched and merged; decoded, processed and
    # encoded once
    want = {'omnic_media_fetch_seconds_count{modality="image"}': 3,
            'omnic_media_decode_seconds_count{modality="image"}': 1,
            'omnic_media_processor_seconds_count{modality="image"}': 1,
            'omnic_media_encode_seconds_count{modality="image"}': 1,
            'omnic_media_merge_seconds_count{modality="image"}': 3,
            'omnic_media_encode_seconds_count{modality="audio"}': 0,
            "omnic_prefill_chunk_seconds_count": 3, "omnic_decode_step_seconds_count": 3}
    got = {k: m.get(k) for k in want}
    check(all(got[k] is not None and got[k] >= v for k, v in want.items()), "per-stage media histograms count "
          "every stage", got)
    # PNG with alpha and WebP work too; two images in one request
    for url in (data_url(M("alpha.png"), "image/png"), data_url(M("lossless.webp"), "image/webp")):
        st, _, js = chat(image_msg([url]))
        check(st == 200, f"image request {url[:22]}", js)
    st, _, js = chat(image_msg(["photo.jpg", "alpha.png"]))
    check(st == 200, "two images in one request", js)
    # streaming gives the non-streamed text
    st, events, _ = stream(C, {"messages": image_msg(["photo.jpg"]), "max_tokens": 12, "temperature": 0,
                               "stream": True})
    check(st == 200 and stream_text(events)[0] == texts[0], "streamed image request == non-streamed")

    # bad media: each a 400 naming the problem; the server keeps serving
    garbage = "data:image/png;base64,@@@not*base64@@@"
    bad = [
        ("truncated JPEG", data_url(M("truncated.jpg"), "image/jpeg"), r"(?i)jpeg"),
        ("truncated PNG", data_url(M("truncated.png"), "image/png"), r"(?i)png"),
        ("corrupt WebP", data_url(M("corrupt.webp"), "image/webp"), r"(?i)webp"),
        ("30000x30000 header", data_url(M("huge.png"), "image/png"), r"30000"),
        ("decompression bomb", data_url(M("bomb.png"), "image/png"), r"20000"),
        ("wrong MIME", data_url(M("photo.jpg"), "image/png"), r"(?i)jpeg"),
        ("base64 garbage", garbage, r"(?i)base64"),
        ("GIF", data_url(M("anim.gif"), "image/gif"), r"(?i)gif|image/gif"),
        ("BMP file", "pic.bmp", r"(?i)bmp"),
        ("remote URL", "http://127.0.0.1:1/x.png", r"(?i)remote"),
        ("outside --media-dir", "../outside.png", r"(?i)outside"),
        ("missing file", "nope.png", r"(?i)does not exist"),
    ]
    for what, url, pattern in bad:
        st, _, js = chat(image_msg([url]))
        err = (js or {}).get("error", {})
        check(st == 400 and err.get("param") == "messages[0].content[0]" and re.search(pattern, err.get("message", "")),
              f"bad media: {what}", (st, err))
    st, _, js = chat(image_msg([M("tiny1x1.png")]))
    check(st == 200, "a 1x1 image is resized like any other", js)
    st, _, js = chat([{"role": "user", "content": [{"type": "text", "text": "no image here <image>"}]}])
    check(st == 400 and "placeholder" in js["error"]["message"], "a placeholder without an image", js)
    st, _, js = chat(image_msg(["photo.jpg"] * 17))
    check(st == 400 and "more than 16 images" in js["error"]["message"], "too many images", js)
    st, _, js = chat(image_msg(["photo.jpg"]))
    check(st == 200 and js["choices"][0]["message"]["content"] == texts[0], "still serving, same output")

    # text-only and image requests together: each equals its run alone
    reqs = []
    for i in range(8):
        if i % 2:
            reqs.append({"messages": [{"role": "user", "content": f"Tell me about {i} foxes."}]})
        else:
            reqs.append({"messages": image_msg(["photo.jpg" if i % 4 else "alpha.png"], f"What is in picture {i}?")})
    for r in reqs:
        r.update({"max_tokens": 16, "temperature": 0})
    alone = []
    for r in reqs:
        st, _, js = post(C, r)
        alone.append(js["choices"][0]["message"]["content"] if st == 200 else None)
    together = [None] * len(reqs)

    def run(i):
        st, _, js = post(C, reqs[i])
        together[i] = js["choices"][0]["message"]["content"] if st == 200 else None

    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(reqs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(None not in alone and together == alone, "8 concurrent text and image requests == alone", (alone, together))
    # a client that hangs up while its (large) image is prepared: nothing is left behind
    before = metrics()
    import socket
    body = json.dumps({"messages": image_msg(["big.jpg"]), "max_tokens": 64, "temperature": 0}).encode()
    sk = socket.create_connection(("127.0.0.1", checks.PORT))
    sk.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Authorization: Bearer " + checks.KEY.encode() + b"\r\nContent-Length: " +
               str(len(body)).encode() + b"\r\n\r\n" + body)
    time.sleep(0.01)
    sk.close()
    for _ in range(100):
        m = metrics()
        if m.get("omnic_media_preprocess_seconds_count", 0) > before.get("omnic_media_preprocess_seconds_count", 0):
            break
        time.sleep(0.05)
    time.sleep(0.5)
    st, _, js = chat(image_msg(["photo.jpg"]))
    check(st == 200 and js["choices"][0]["message"]["content"] == texts[0], "serving after a hang-up mid-preparation")
    m = metrics()
    check(m.get("omnic_slots_busy") == 0 and m.get("omnic_queue_depth") == 0, "no busy slot or queued request after",
          {k: v for k, v in m.items() if "slots" in k or "queue" in k})
    print(f"image checks: {checks.checks - checks.failures}/{checks.checks} passed", flush=True)
    sys.exit(1 if checks.failures else 0)


if __name__ == "__main__":
    main()
