#!/usr/bin/python3
"""The published config.json of microsoft/Phi-4-multimodal-instruct in its original remote-code layout
(tests/golden/phi4mm_config/config.json: as TensorRT-LLM's tests/unittest/_torch/modeling/test_modeling_phi4mm.py
reproduces it, with the two values that test shrinks put back: num_hidden_layers 32, audio num_blocks 24) converted
by transformers' own convert_phi4_multimodal_weights_to_hf.py (convert_config, taken from the transformers history
at 4303d88c09, the commit that added it; `peft`, imported only for the adapters' LoraConfig, is stubbed) into
Phi4MultimodalConfig, and the fields omnic reads written to converted.json. tests/unit/test_phi4mm_media.c checks
omnic's conversion + parse of the same file against it.

Not run in CI. Run on the oracle machine (the transformers history under /work/.mirror):
  PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_phi4mm_config_golden.py
"""
import json
import os
import subprocess
import sys
import tempfile
import types

import hfo_shim

hfo_shim.patch_transformers()
import transformers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "phi4mm_config")
REPO = "/work/.mirror/TonyRHouston+huggingface-transformers/repo"
COMMIT = "4303d88c09"
SCRIPT = "src/transformers/models/phi4_multimodal/convert_phi4_multimodal_weights_to_hf.py"


def main():
    src = subprocess.run(["git", "-C", REPO, "show", f"{COMMIT}:{SCRIPT}"], check=True, capture_output=True,
                         text=True).stdout
    peft = types.ModuleType("peft")
    peft.LoraConfig = object
    sys.modules["peft"] = peft
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "phi4mm_convert.py"), "w") as f:
            f.write(src)
        sys.path.insert(0, tmp)
        import phi4mm_convert
        c = phi4mm_convert.convert_config(json.load(open(os.path.join(OUT, "config.json"))))
    a, v = c.audio_config, c.vision_config
    out = {
        "transformers_version": transformers.__version__,
        "converter": f"{SCRIPT} at {COMMIT}",
        "command": "PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_phi4mm_config_golden.py",
        "text": {"hidden_size": c.hidden_size, "intermediate_size": c.intermediate_size,
                 "num_hidden_layers": c.num_hidden_layers, "num_attention_heads": c.num_attention_heads,
                 "num_key_value_heads": c.num_key_value_heads, "vocab_size": c.vocab_size,
                 "partial_rotary_factor": c.partial_rotary_factor, "rope_theta": c.rope_theta,
                 "original_max_position_embeddings": c.original_max_position_embeddings,
                 "max_position_embeddings": c.max_position_embeddings, "rms_norm_eps": c.rms_norm_eps,
                 "sliding_window": c.sliding_window, "tie_word_embeddings": c.tie_word_embeddings,
                 "eos_token_id": c.eos_token_id},
        "audio": {"hidden_size": a.hidden_size, "intermediate_size": a.intermediate_size, "num_blocks": a.num_blocks,
                  "num_attention_heads": a.num_attention_heads, "bias_max_distance": a.bias_max_distance,
                  "nemo_conv_channels": a.nemo_conv_channels, "time_reduction": a.time_reduction,
                  "kernel_size": a.kernel_size, "input_size": a.input_size, "audio_token_id": a.audio_token_id},
        "vision": {"hidden_size": v.hidden_size, "intermediate_size": v.intermediate_size,
                   "num_hidden_layers": v.num_hidden_layers, "num_attention_heads": v.num_attention_heads,
                   "image_size": v.image_size, "patch_size": v.patch_size, "crop_size": v.crop_size,
                   "feature_layer": v.feature_layer, "image_token_id": v.image_token_id},
    }
    with open(os.path.join(OUT, "converted.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
