#!/usr/bin/python3
"""Phi-4-multimodal's original remote-code layout (model_type phi4mm, Phi4MMForCausalLM) loads as
transformers' convert_phi4_multimodal_weights_to_hf.py converts it: tools/mktiny.py writes the same
weights in both layouts (--layout original: the original tensor names, config.json with embd_layer
/ audio_processor / speech_lora / vision_lora, the adapters inside the base weights as
<module>.lora_{A,B}.{speech,vision}.weight, the remote-code preprocessor config; the HF layout with
the published tower and vocabulary the remote code fixes), and `omnic run --dump` gives the same
prefill logits and greedy tokens, bit for bit, for a text prompt, an audio prompt (speech adapter)
and an image + audio prompt (vision adapter, vision-speech rows). Original configs that the
conversion would not carry over are load errors naming the key. The HF layout itself is checked
against the real transformers code by test_hf_golden.py. Standard library + numpy."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
WAV = os.path.join(ROOT, "tests/golden/phi4mm_audio/model/clip.wav")
PNG = os.path.join(ROOT, "tests/golden/images/a.png")  # 40x30: one HD crop + the global one


def mktiny(out, *flags):
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools/mktiny.py"), "--family", "phi4mm", "--out", out,
                    *flags], check=True, stdout=subprocess.DEVNULL)


def run(model, dump, *args):
    r = subprocess.run([OMNIC, "run", "-m", model, "-n", "8", "--ignore-eos", "--kv", "f32", "--chunk", "1024", "--dump", dump,
                        *args],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-800:]
    return r.stdout


def main():
    with tempfile.TemporaryDirectory() as tmp:
        orig, hf = os.path.join(tmp, "orig"), os.path.join(tmp, "hf")
        mktiny(orig, "--layout", "original")
        mktiny(hf, "--vision-dims", "real", "--real-vocab")
        cfg = json.load(open(os.path.join(orig, "config.json")))
        assert cfg["model_type"] == "phi4mm" and "embd_layer" in cfg and not os.path.isdir(os.path.join(orig, "speech-lora"))
        r = subprocess.run([OMNIC, "inspect", "-m", orig], capture_output=True, text=True, check=True)
        assert "inputs:     text image audio" in r.stdout, r.stdout
        cases = {"text": ["-p", "Hello there"],
                 "audio": ["-p", "Transcribe.", "--audio", WAV],
                 "image + audio": ["-p", "Describe.", "--image", PNG, "--audio", WAV]}
        for name, args in cases.items():
            out = {}
            for layout, model in (("original", orig), ("hf", hf)):
                d = os.path.join(tmp, f"{layout}-{name.replace(' ', '')}")
                out[layout] = (run(model, d, *args), d)
            assert out["original"][0] == out["hf"][0], (name, out)
            for stage in ("prefill_logits", "generated"):
                a = np.load(os.path.join(out["original"][1], stage + ".npy"))
                b = np.load(os.path.join(out["hf"][1], stage + ".npy"))
                assert a.shape == b.shape and np.array_equal(a, b), (name, stage)
            print(f"{name}: prefill logits and 8 greedy tokens of the original layout == the HF layout")
        # what the conversion would not carry over: a load error naming it
        bad = [("hd_transform_order", lambda c: c["embd_layer"]["image_embd_layer"].update(hd_transform_order="glb_sub"),
                "hd_transform_order"),
               ("qformer", lambda c: c["embd_layer"]["audio_embd_layer"].update(use_qformer=True), "use_qformer"),
               ("non-causal conv", lambda c: c["audio_processor"]["config"].update(causal=False), "causal"),
               ("unknown audio key", lambda c: c["audio_processor"]["config"].update(macaron_style=True),
                "macaron_style"),
               ("wrong rank", lambda c: c["speech_lora"].update(r=16), "do not fit r 16"),
               ("lora scale", lambda c: c["vision_lora"].update(lora_alpha=12), "not a power of 2"),
               ("img_processor", lambda c: c.update(img_processor={"name": "clip"}), "img_processor"),
               # without speech_lora / vision_lora the adapters take the conversion script's r (320 / 256)
               ("no lora settings", lambda c: (c.pop("speech_lora"), c.pop("vision_lora")), "do not fit r 320")]
        b = os.path.join(tmp, "bad")
        os.makedirs(b)
        for f in os.listdir(orig):  # weights by link, configs copied
            (os.symlink if f.endswith(".safetensors") else shutil.copy)(os.path.join(orig, f), os.path.join(b, f))
        for name, edit, msg in bad:
            c = json.loads(json.dumps(cfg))
            edit(c)
            json.dump(c, open(os.path.join(b, "config.json"), "w"))
            r = subprocess.run([OMNIC, "inspect", "-m", b], capture_output=True, text=True)
            assert r.returncode != 0 and msg in r.stderr, (name, r.returncode, r.stderr[-400:])
            print(f"{name}: refused: {r.stderr.strip().splitlines()[-1][:150]}")
    print("test_phi4mm_original: the remote-code layout runs as its conversion")


if __name__ == "__main__":
    sys.exit(main())
