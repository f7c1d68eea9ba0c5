#!/usr/bin/env python3
"""Writes a full-size SD1.5 diffusers folder with placeholder weights, for measuring model loading
(seconds, peak memory) without downloading the real 2-4 GB model. Standard library only.

    python3 scripts/full_size_sd15.py OUT [--dtype f16|f32]
    /usr/bin/time -v sdbench timing --model OUT --backend cpu --width 64 --height 64 --repeat 1

Every tensor the real model has, with its name and shape, comes from the committed
crates/diffusion/tests/fixtures/sd15-ldm-names.json; the configs are the SD1.5 files the engine's
own test copies (crates/diffusion/src/models/config.rs); the tokenizer is the committed CLIP one, the
scheduler the tiny fixture's. The values are small uniform noise: the images are meaningless, the
bytes to read and convert are the real model's.
"""

import argparse
import json
import random
import re
import shutil
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "crates/diffusion/tests/fixtures"


def configs():
    """The SD1.5 config files, as the engine's config test holds them."""
    source = (ROOT / "crates/diffusion/src/models/config.rs").read_text()
    found = {}
    for name in ("UNET", "VAE", "TEXT_ENCODER"):
        match = re.search(r'const %s: &str = r#"(.*?)"#;' % name, source, re.S)
        if not match:
            raise SystemExit(f"config.rs no longer holds the SD1.5 {name} config")
        found[name] = json.loads(match.group(1))
    return found


def noise_block(dtype, size=1 << 24):
    """`size` bytes of small finite values in `dtype`, reused for every tensor."""
    rng = random.Random(0)
    fmt, width = ("<e", 2) if dtype == "f16" else ("<f", 4)
    count = size // width
    one = b"".join(struct.pack(fmt, rng.uniform(-0.02, 0.02)) for _ in range(4096))
    return (one * (count // 4096 + 1))[: count * width]


def write_safetensors(path, tensors, dtype, block):
    """tensors: [(name, shape)] written with `block`'s bytes, repeated."""
    width = 2 if dtype == "f16" else 4
    header, offset = {}, 0
    for name, shape in tensors:
        size = width
        for d in shape:
            size *= d
        header[name] = {"dtype": "F16" if dtype == "f16" else "F32", "shape": shape,
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for name, _ in tensors:
            begin, end = header[name]["data_offsets"]
            left = end - begin
            while left > 0:
                chunk = block[: min(left, len(block))]
                out.write(chunk)
                left -= len(chunk)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--dtype", choices=["f16", "f32"], default="f16")
    args = parser.parse_args()
    names = json.loads((FIXTURES / "sd15-ldm-names.json").read_text())
    by_component = {}
    for _ldm, component, name, shape in names:
        by_component.setdefault(component, []).append((name, shape))
    files = {"text_encoder": "model", "unet": "diffusion_pytorch_model", "vae": "diffusion_pytorch_model"}
    missing = set(files) - set(by_component)
    if missing:
        raise SystemExit(f"sd15-ldm-names.json lists no tensors for {sorted(missing)}")
    out = args.out
    if out.exists():
        raise SystemExit(f"{out} exists; choose a new folder")
    suffix = ".fp16" if args.dtype == "f16" else ""
    block = noise_block(args.dtype)
    config = configs()
    for component, config_name in (("unet", "UNET"), ("vae", "VAE"), ("text_encoder", "TEXT_ENCODER")):
        folder = out / component
        write_safetensors(folder / f"{files[component]}{suffix}.safetensors",
                          by_component[component], args.dtype, block)
        (folder / "config.json").write_text(json.dumps(config[config_name], indent=2))
    shutil.copytree(FIXTURES / "clip-tokenizer", out / "tokenizer")
    shutil.copytree(FIXTURES / "tiny-sd/scheduler", out / "scheduler")
    shutil.copy(FIXTURES / "tiny-sd/model_index.json", out / "model_index.json")
    total = sum(p.stat().st_size for p in out.rglob("*.safetensors"))
    print(f"wrote {out} ({total / 1e9:.2f} GB of {args.dtype} weights)")


if __name__ == "__main__":
    main()
