#!/usr/bin/python3
"""Gemma 3n media through `omnic serve` (tiny gemma3n checkpoint from tools/mktiny.py, with its USM
audio tower and MobileNetV5 vision tower): /v1/models says text, image and audio; a chat completion
with an input_audio part (base64 WAV), one with an audio_url data: URL, one with two clips, one with
an image_url and one with an image and a clip give the greedy text `omnic run --audio / --image`
gives; an audio request, a text request and a two-clip request at once each equal their
answer alone; a 35 s clip is refused naming the 30 s limit (Gemma3nAudioFeatureExtractor keeps 30 s:
omnic says so instead of dropping the rest); /v1/audio/transcriptions (multipart, also through curl) equals the chat completion it stands
for; a clip under one feature frame, a truncated WAV and a broken image each get a 400 naming the
problem, and the server keeps serving. Standard library (and curl) only."""
import base64
import http.client
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
CLIPS = os.path.join(ROOT, "tests/golden/gemma3n_audio/model")
PNG = os.path.join(ROOT, "tests/golden/images/a.png")


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode(errors="replace")
    c.close()
    return r.status, data


def audio_part(data, fmt="wav"):
    return {"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode(), "format": fmt}}


def chat(*parts, text="Transcribe.", n=8):
    return {"messages": [{"role": "user", "content": list(parts) + [{"type": "text", "text": text}]}],
            "max_tokens": n, "temperature": 0}


def wav(samples):
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(samples)
    return buf.getvalue()


def form(port, fields, files):
    b = "omnicboundary7"
    body = b""
    for k, v in fields.items():
        body += f"--{b}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n".encode()
    for k, (fname, data) in files.items():
        body += (f"--{b}\r\nContent-Disposition: form-data; name=\"{k}\"; filename=\"{fname}\"\r\n"
                 f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"
    body += f"--{b}--\r\n".encode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/audio/transcriptions", body, {"Content-Type": f"multipart/form-data; boundary={b}"})
    r = c.getresponse()
    out = r.read().decode(errors="replace")
    c.close()
    return r.status, out


def content(body):
    return json.loads(body)["choices"][0]["message"]["content"]


def main():
    a_path, b_path = os.path.join(CLIPS, "clip_a.wav"), os.path.join(CLIPS, "clip_b.wav")
    a, b = open(a_path, "rb").read(), open(b_path, "rb").read()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "g3n")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools/mktiny.py"), "--family", "gemma3n", "--out",
                        model], check=True, stdout=subprocess.DEVNULL)

        def run(*clips, image=None):
            args = [OMNIC, "run", "-m", model, "-p", "Transcribe.", "-n", "8", "--temp", "0"]
            for c in clips:
                args += ["--audio", c]
            if image:
                args += ["--image", image]
            return subprocess.run(args, check=True, capture_output=True).stdout.decode(errors="replace").rstrip("\n")
        want_a, want_ab = run(a_path), run(a_path, b_path)
        want_img, want_img_a = run(image=PNG), run(a_path, image=PNG)
        with wave.open(a_path) as w:
            pcm = w.readframes(w.getnframes())
        long_clip = wav(pcm * 27)  # 27 x 1.3 s = 35.2 s
        p, port = serve_util.start([OMNIC, "serve", "-m", model, "--parallel", "3"], os.path.join(tmp, "log"))
        try:
            st, body = request(port, "GET", "/v1/models")
            assert st == 200 and json.loads(body)["data"][0]["input_modalities"] == ["text", "image", "audio"], body
            img_part = {"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                            base64.b64encode(open(PNG, "rb").read()).decode()}}
            st, body = request(port, "POST", "/v1/chat/completions", chat(img_part))
            assert st == 200 and content(body) == want_img, (body, want_img)
            st, body = request(port, "POST", "/v1/chat/completions", chat(img_part, audio_part(a)))
            assert st == 200 and content(body) == want_img_a, (body, want_img_a)
            print("image_url, and an image with a clip: as omnic run")
            st, body = request(port, "POST", "/v1/chat/completions", chat(audio_part(a)))
            assert st == 200 and content(body) == want_a, (body, want_a)
            print(f"input_audio: {json.loads(body)['usage']['prompt_tokens']} prompt tokens, as omnic run")
            url = "data:audio/wav;base64," + base64.b64encode(a).decode()
            st, body = request(port, "POST", "/v1/chat/completions", chat({"type": "audio_url", "audio_url": {"url": url}}))
            assert st == 200 and content(body) == want_a, body
            st, body = request(port, "POST", "/v1/chat/completions", chat(audio_part(a), audio_part(b)))
            assert st == 200 and content(body) == want_ab, (body, want_ab)
            print("audio_url and two clips: as omnic run")
            text = {"messages": [{"role": "user", "content": "Tell me about the fox."}], "max_tokens": 8,
                    "temperature": 0}
            st, want_text = request(port, "POST", "/v1/chat/completions", text)
            assert st == 200, want_text
            res = {}

            def one(k, body):
                res[k] = request(port, "POST", "/v1/chat/completions", body)
            ts = [threading.Thread(target=one, args=(k, q)) for k, q in
                  enumerate((chat(audio_part(a)), text, chat(audio_part(a), audio_part(b)), chat(img_part),
                             chat(img_part, audio_part(a))))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            for k, w in enumerate((want_a, content(want_text), want_ab, want_img, want_img_a)):
                assert res[k][0] == 200 and content(res[k][1]) == w, (k, res[k], w)
            print("audio, text, two clips, an image and an image with a clip at once: each as alone")
            st, body = request(port, "POST", "/v1/chat/completions", chat(audio_part(long_clip)))
            assert st == 400 and "the limit is 30 s per clip" in body, body  # (HF would drop the rest silently)
            print(f"35 s clip: 400 {json.loads(body)['error']['message'][:120]}")
            bad = [("under one frame", audio_part(wav(pcm[:600])), "shorter than one 513-sample frame"),
                   ("truncated WAV", audio_part(a[:1000]), "truncated"),
                   ("broken image", {"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                                        base64.b64encode(b"\x89PNG\r\n\x1a\nxx").decode()}},
                    "image")]
            for name, part, msg in bad:
                st, out = request(port, "POST", "/v1/chat/completions", chat(part))
                assert st == 400 and msg in out, (name, st, out)
                print(f"{name}: 400 {json.loads(out)['error']['message'][:120]}")
            st, body = request(port, "POST", "/v1/chat/completions", chat(audio_part(a)))
            assert st == 200 and content(body) == want_a, body
            # transcriptions: the chat completion with the transcription instruction, default length
            same = chat(audio_part(a), text="Transcribe the audio clip into text.")
            del same["max_tokens"]
            st, body = request(port, "POST", "/v1/chat/completions", same)
            assert st == 200, body
            said = content(body)
            st, body = form(port, {"model": "g3n"}, {"file": ("a.wav", a)})
            assert st == 200 and json.loads(body)["text"] == said, (st, body, said)
            r = subprocess.run(["curl", "-s", "-F", "file=@" + a_path, "-F", "model=g3n",
                                f"http://127.0.0.1:{port}/v1/audio/transcriptions"], capture_output=True, check=True)
            assert json.loads(r.stdout.decode(errors="replace"))["text"] == said, r.stdout
            print("transcriptions (form and curl): as the chat completion")
        finally:
            p.terminate()
            p.wait(timeout=30)
    print("test_serve_gemma3n_media: input_audio, audio_url, two clips, image_url, image + audio, mixed requests and "
          "transcriptions served as omnic run; clips past 30 s and other bad media refused with 400s naming the problem")
    return 0


if __name__ == "__main__":
    sys.exit(main())
