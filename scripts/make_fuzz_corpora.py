#!/usr/bin/env python3
"""Make the seed corpora of the coverage-guided fuzz targets (fuzz/corpus/<target>/): small valid
inputs of each parser, from the committed fixtures and made here. Inputs a fuzz run found are kept
beside them as `found-<what>` (the test suite runs every file there). Needs numpy and gguf (gguf-py)
only; run from anywhere: python3 scripts/make_fuzz_corpora.py
"""

import json
import shutil
import struct
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "crates" / "diffusion" / "tests" / "fixtures"
CORPUS = ROOT / "fuzz" / "corpus"


def safetensors_bytes(tensors):
    """A safetensors file of f32 tensors {name: array}, with one metadata entry."""
    header, data, offset = {"__metadata__": {"format": "pt"}}, b"", 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    # The seeds are made anew; inputs a fuzz run found (`found-*`, regression tests) are kept.
    for old in CORPUS.glob("*/*"):
        if not old.name.startswith("found-"):
            old.unlink()
    out = {t: CORPUS / t for t in
           ["safetensors_header", "gguf_file", "npy_latents", "picture", "config_json", "checkpoint_names",
            "tokenizer_files"]}
    for d in out.values():
        d.mkdir(parents=True, exist_ok=True)

    (out["safetensors_header"] / "two").write_bytes(
        safetensors_bytes({"a.weight": np.arange(6).reshape(2, 3), "b": np.ones(4)}))
    (out["safetensors_header"] / "empty-dims").write_bytes(
        safetensors_bytes({"scalar": np.float32(2.0).reshape(()), "none": np.zeros((0, 3))}))

    shutil.copy(FIXTURES / "weight-formats" / "ggml-blocks.gguf", out["gguf_file"] / "every-type")
    import gguf
    small = out["gguf_file"] / "small"
    writer = gguf.GGUFWriter(str(small), "sd1")
    writer.add_tensor("a.weight", np.ones((2, 3), dtype=np.float32))
    writer.add_tensor("b", np.arange(4, dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    for name, shape in [("latents", (1, 4, 2, 2)), ("vector", (3,)), ("scalar", ())]:
        with open(out["npy_latents"] / name, "wb") as f:
            np.save(f, np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))

    shutil.copy(FIXTURES / "tiny-sd.init.png", out["picture"] / "png")
    shutil.copy(FIXTURES / "oriented-6.jpg", out["picture"] / "jpeg-exif")

    # Every config of the tiny models: text encoders, UNets, VAEs, transformers, schedulers.
    for path in sorted(FIXTURES.glob("tiny-*/*/*config.json")):
        if path.parent.name in ("tokenizer",):
            continue
        name = f"{path.parent.parent.name}-{path.parent.name}"
        (out["config_json"] / name).write_bytes(path.read_bytes())

    # Tensor names of single files: SD1.5's (every one, from the names fixture), tiny SDXL's and SD2's.
    sd15 = [pair[0] for pair in json.loads((FIXTURES / "sd15-ldm-names.json").read_text())]
    (out["checkpoint_names"] / "sd15").write_text("\n".join(sd15) + "\n")
    for stem in ["tiny-sdxl.ldm", "tiny-sd2.ldm"]:
        raw = (FIXTURES / f"{stem}.safetensors").read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        names = sorted(k for k in json.loads(raw[8:8 + n]) if k != "__metadata__")
        (out["checkpoint_names"] / stem).write_text("\n".join(names) + "\n")

    # Tokenizer folders as one input each, their files split at 0xFF (vocab.json, merges.txt,
    # tokenizer_config.json, tokenizer.json): CLIP's, and Qwen's (its three CLIP parts empty).
    clip = FIXTURES / "tiny-sd" / "tokenizer"
    (out["tokenizer_files"] / "clip").write_bytes(b"\xff".join(
        (clip / f).read_bytes() for f in ["vocab.json", "merges.txt", "tokenizer_config.json"]))
    qwen = FIXTURES / "tiny-zimage" / "tokenizer"
    (out["tokenizer_files"] / "qwen").write_bytes(
        b"\xff\xff" + (qwen / "tokenizer_config.json").read_bytes() + b"\xff" + (qwen / "tokenizer.json").read_bytes())

    for t, d in out.items():
        files = sorted(d.iterdir())
        print(f"{t}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
