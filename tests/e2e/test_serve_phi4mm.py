#!/usr/bin/python3
"""Phi-4-multimodal audio and images through `omnic serve` (tiny phi4mm checkpoint with its speech and
vision LoRA adapters, tools/mktiny.py): /v1/models advertises image and audio; a chat with an
input_audio part (base64 WAV) and one with an audio_url data: URL give the greedy text `omnic run
--audio` gives for the same clip and text; curl sends the same request; an image (HD crops) and an
image with a clip in one request give what `omnic run --image [--audio]` gives, also while both run
at once. Bad audio gets a 400 that names the problem and the number, while the server keeps serving:
a truncated WAV, a format that is not the payload's, an unknown format, 0 samples, 8 channels, 1 Hz
and 1 MHz sample rates, a header declaring two hours, bytes that are no audio, bad base64, and the
bad clip of an image + audio request. /v1/audio/transcriptions
(OpenAI's multipart form, sent by curl -F and by hand) answers json, text and verbose_json with
the text a chat completion of the clip and Phi-4-multimodal's transcription instruction gives,
and refuses a missing file, a file that is no audio, srt, stream and a JSON body by name. The
same checkpoint without adapter folders advertises text only and refuses audio naming the
missing speech adapter, and images naming the vision one. Standard library only (and curl)."""
import base64
import http.client
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
WAV = os.path.join(ROOT, "tests/golden/phi4mm_audio/model/clip.wav")
PNG = os.path.join(ROOT, "tests/golden/images/e.png")  # 640x480: 2x2 HD crops, 1065 rows


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode(errors="replace")
    c.close()
    return r.status, data


def wav_header(channels, rate, data_bytes, bits=16):
    align = channels * bits // 8
    return (b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * align, align, bits) + b"data" +
            struct.pack("<I", data_bytes))


def chat(part, text="Transcribe.", *more):
    return {"model": "m", "max_tokens": 8, "temperature": 0,
            "messages": [{"role": "user", "content": [part, *more, {"type": "text", "text": text}]}]}


def image_part():
    return {"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                               base64.b64encode(open(PNG, "rb").read()).decode()}}


def form(port, fields, files):
    """POSTs a multipart/form-data body to /v1/audio/transcriptions (fields: name -> str, files:
    name -> (filename, bytes))."""
    b = "omnicTestBoundary42"
    body = b""
    for k, v in fields.items():
        body += f'--{b}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
    for k, (fn, data) in files.items():
        body += (f'--{b}\r\nContent-Disposition: form-data; name="{k}"; filename="{fn}"\r\n'
                 f'Content-Type: application/octet-stream\r\n\r\n').encode() + data + b"\r\n"
    body += f"--{b}--\r\n".encode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/audio/transcriptions", body, {"Content-Type": f"multipart/form-data; boundary={b}"})
    r = c.getresponse()
    data = r.read().decode(errors="replace")
    c.close()
    return r.status, data


def audio_part(data, fmt="wav"):
    return {"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode(), "format": fmt}}


def main():
    clip = open(WAV, "rb").read()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        bare = os.path.join(tmp, "m0")
        for out, extra in ((model, []), (bare, ["--no-adapters"])):
            subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools/mktiny.py"), "--family", "phi4mm",
                            "--out", out] + extra, check=True, stdout=subprocess.DEVNULL)
        want = subprocess.run([OMNIC, "run", "-m", model, "--audio", WAV, "-p", "Transcribe.", "-n", "8",
                               "--temp", "0"], check=True, capture_output=True).stdout.decode(errors="replace")
        want = want.rstrip("\n")
        run = [OMNIC, "run", "-m", model, "--image", PNG, "-p", "Describe.", "-n", "8", "--temp", "0"]
        want_img = subprocess.run(run, check=True, capture_output=True).stdout.decode(errors="replace").rstrip("\n")
        want_both = subprocess.run(run + ["--audio", WAV], check=True,
                                   capture_output=True).stdout.decode(errors="replace").rstrip("\n")
        p, port = serve_util.start([OMNIC, "serve", "-m", model, "--parallel", "2"], os.path.join(tmp, "log"))
        try:
            st, body = request(port, "GET", "/v1/models")
            assert st == 200, body
            assert json.loads(body)["data"][0]["input_modalities"] == ["text", "image", "audio"], body
            # an image, and an image with a clip (vision adapter, vision-speech rows), each as omnic run
            for name, body, w in (("image", chat(image_part(), "Describe."), want_img),
                                  ("image + audio", chat(image_part(), "Describe.", audio_part(clip)), want_both)):
                st, out = request(port, "POST", "/v1/chat/completions", body)
                assert st == 200 and json.loads(out)["choices"][0]["message"]["content"] == w, (name, out, w)
                print(f"{name}: {json.loads(out)['usage']['prompt_tokens']} prompt tokens, as omnic run")
            import threading
            res = {}
            def one(k, body):
                res[k] = request(port, "POST", "/v1/chat/completions", body)
            ts = [threading.Thread(target=one, args=(k, b)) for k, b in
                  enumerate((chat(image_part(), "Describe."), chat(image_part(), "Describe.", audio_part(clip)),
                             chat(audio_part(clip))))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            for k, w in enumerate((want_img, want_both, want)):
                assert res[k][0] == 200 and json.loads(res[k][1])["choices"][0]["message"]["content"] == w, res[k]
            print("image, image + audio and audio at once: each as alone")
            # a 44.1 kHz clip is resampled (soxr HQ) and the server's log says so
            import wave
            with wave.open(WAV) as w:
                pcm = w.readframes(w.getnframes())
            n16 = len(pcm) // 2
            n44 = n16 * 44100 // 16000
            up = b"".join(pcm[2 * (k * 16000 // 44100):2 * (k * 16000 // 44100) + 2] for k in range(n44))
            clip44 = wav_header(1, 44100, len(up)) + up
            st, out = request(port, "POST", "/v1/chat/completions", chat(audio_part(clip44)))
            assert st == 200, out
            log = open(os.path.join(tmp, "log")).read()
            assert "resampled from 44100 Hz to 16000 Hz" in log, log[-2000:]
            assert "resampled from 44100 Hz to 16000 Hz" in out, out  # the response's warning
            print("44.1 kHz clip: served; the response and the log name the resampling")
            st, body = request(port, "POST", "/v1/chat/completions", chat(audio_part(clip)))
            assert st == 200, body
            got = json.loads(body)["choices"][0]["message"]["content"]
            assert got == want, (got, want)
            url = "data:audio/wav;base64," + base64.b64encode(clip).decode()
            st, body = request(port, "POST", "/v1/chat/completions",
                               chat({"type": "audio_url", "audio_url": {"url": url}}))
            assert st == 200 and json.loads(body)["choices"][0]["message"]["content"] == want, body
            req_file = os.path.join(tmp, "req.json")
            with open(req_file, "w") as f:
                json.dump(chat(audio_part(clip)), f)
            r = subprocess.run(["curl", "-s", "-H", "Content-Type: application/json", "--data-binary", "@" + req_file,
                                f"http://127.0.0.1:{port}/v1/chat/completions"], capture_output=True, check=True)
            assert json.loads(r.stdout.decode(errors="replace"))["choices"][0]["message"]["content"] == want
            silence = b"\0" * 3200
            bad = [
                ("truncated", audio_part(clip[:1000]), "truncated"),
                ("format mismatch", audio_part(clip, "mp3"), "declared audio/mpeg but the payload is WAV"),
                ("unknown format", audio_part(clip, "aac"), "'aac' is not a supported audio format"),
                ("no samples", audio_part(wav_header(1, 16000, 0)), "no samples"),
                ("8 channels", audio_part(wav_header(8, 16000, 16 * 200) + b"\0" * 3200), "8 channels; the limit is 6"),
                ("1 Hz", audio_part(wav_header(1, 1, 3200) + silence), "sample rate 1 Hz"),
                ("1 MHz", audio_part(wav_header(1, 1000000, 3200) + silence), "sample rate 1000000 Hz"),
                ("two hours", audio_part(wav_header(1, 16000, 2 * 16000 * 7200) + silence), "lasts 7200.000 s"),
                ("not audio", audio_part(b"hello, this is no audio file at all"), "not a recognised audio file"),
                ("bad base64", {"type": "input_audio", "input_audio": {"data": "@@@@", "format": "wav"}}, "base64"),
                ("image + bad audio", image_part(), "Invalid audio in 'messages[0].content[1]'"),
            ]
            for name, part, msg in bad:
                body = chat(part)
                if name == "image + bad audio":
                    body["messages"][0]["content"].insert(1, audio_part(clip[:1000]))
                st, out = request(port, "POST", "/v1/chat/completions", body)
                assert st == 400 and msg in out, (name, st, out)
                print(f"{name}: 400 {json.loads(out)['error']['message'][:110]}")
            st, body = request(port, "POST", "/v1/chat/completions", chat(audio_part(clip)))
            assert st == 200 and json.loads(body)["choices"][0]["message"]["content"] == want, body
            # transcriptions: a 1 s clip (the tiny model's LongRoPE switch sits at 64 rows)
            import io
            import wave
            with wave.open(WAV) as w:
                frames = w.readframes(16000)
            buf = io.BytesIO()
            with wave.open(buf, "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(16000)
                w.writeframes(frames)
            short = buf.getvalue()
            same = chat(audio_part(short), "Transcribe the audio clip into text.")
            del same["max_tokens"]  # as the form: the default length
            st, body = request(port, "POST", "/v1/chat/completions", same)
            assert st == 200, body
            said = json.loads(body)["choices"][0]["message"]["content"]
            st, body = form(port, {"model": "m"}, {"file": ("short.wav", short)})
            assert st == 200 and json.loads(body)["text"] == said, (st, body, said)
            st, body = form(port, {"model": "m", "response_format": "text"}, {"file": ("short.wav", short)})
            assert st == 200 and body == said, (st, body)
            st, body = form(port, {"response_format": "verbose_json"}, {"file": ("s.wav", short)})
            v = json.loads(body)
            assert st == 200 and v["text"] == said and v["duration"] == 1.0 and v["task"] == "transcribe", body
            st, body = form(port, {"response_format": "verbose_json", "language": "en"}, {"file": ("s.wav", short)})
            v = json.loads(body)  # the language goes into the instruction: another prompt
            assert st == 200 and v["language"] == "en" and isinstance(v["text"], str), body
            short_file = os.path.join(tmp, "short.wav")
            with open(short_file, "wb") as f:
                f.write(short)
            r = subprocess.run(["curl", "-s", "-F", "file=@" + short_file, "-F", "model=m",
                                f"http://127.0.0.1:{port}/v1/audio/transcriptions"], capture_output=True, check=True)
            assert json.loads(r.stdout.decode(errors="replace"))["text"] == said, r.stdout
            for name, fields, files, code, msg in [
                    ("no file", {"model": "m"}, {}, 400, "Missing required parameter: 'file'"),
                    ("not audio", {}, {"file": ("a.png", open(PNG, "rb").read())}, 400, "audio format unknown"),
                    ("srt", {"response_format": "srt"}, {"file": ("s.wav", short)}, 400, "'srt'"),
                    ("stream", {"stream": "true"}, {"file": ("s.wav", short)}, 400, "Streamed transcriptions"),
                    ("truncated", {}, {"file": ("s.wav", short[:500])}, 400, "truncated")]:
                st, out = form(port, fields, files)
                assert st == code and msg in out, (name, st, out)
                print(f"transcription {name}: {st} {json.loads(out)['error']['message'][:100]}")
            st, out = request(port, "POST", "/v1/audio/transcriptions", {"file": "x"})
            assert st == 415 and "multipart/form-data" in out, (st, out)
        finally:
            p.terminate()
            p.wait(timeout=30)
        p, port = serve_util.start([OMNIC, "serve", "-m", bare], os.path.join(tmp, "log0"))
        try:
            st, body = request(port, "GET", "/v1/models")
            assert json.loads(body)["data"][0]["input_modalities"] == ["text"], body
            body = chat(audio_part(clip))
            body["model"] = "m0"
            st, body = request(port, "POST", "/v1/chat/completions", body)
            assert st == 400 and "speech LoRA adapter" in body, (st, body)
            print(f"no adapters: 400 {json.loads(body)['error']['message'][:140]}")
            body = chat(image_part(), "Describe.")
            body["model"] = "m0"
            st, body = request(port, "POST", "/v1/chat/completions", body)
            assert st == 400 and "vision LoRA adapter" in body, (st, body)
            print(f"no adapters, image: 400 {json.loads(body)['error']['message'][:140]}")
        finally:
            p.terminate()
            p.wait(timeout=30)
    print("test_serve_phi4mm: input_audio, audio_url, image_url and image + audio served as omnic run; bad audio "
          "refused with 400s naming the problem; no adapters: text only")


if __name__ == "__main__":
    main()
