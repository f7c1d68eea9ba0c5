#!/usr/bin/env python3
"""Write a diffusers transformer folder's weights as a Q4_K GGUF, for measuring what a Q4_K file
costs in memory (docs/memory.md, issue 49).

Every matrix whose rows are whole 256-value Q4_K blocks is stored as Q4_K, the rest (biases, norms,
the few matrices of other widths) as F16, under diffusers' names, as SD Bench reads a transformer
file. gguf-py decodes Q4_K but has no Q4_K encoder, so the blocks hold random codes with small
finite scales: the file has the size, layout and types of a real Q4_K file, and memory does not
depend on the codes, but its images are noise (as the random-weight timing models' are anyway).

With `--blocks D,S` the file has D double- and S single-stream blocks, each a copy of the folder's
first of its kind (random codes, the first block's norms and biases): the whole klein 4B (5,20)
from the 1+4-block timing model, whose 4B-parameter folder would not be worth writing.

Usage (torch, safetensors and gguf: e.g. the venv of scripts/torch_reference_timing.py):
    python scripts/q4k_transformer.py ~/.cache/sdbench/flux2-klein-timing-1-4/transformer out.gguf
    python scripts/q4k_transformer.py --blocks 5,20 ~/.cache/sdbench/flux2-klein-timing-1-4/transformer klein-4b.gguf
"""

import argparse
import json
import re
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from safetensors import safe_open

BLOCK_VALUES, BLOCK_BYTES = gguf.GGML_QUANT_SIZES[Q.Q4_K]
# Q4_K's two f16 fields (ggml-common.h): the super-block's scale d and min scale dmin.
HALF_FIELDS = (0, 2)


def random_q4k(rows, width, rng):
    blocks = rows * width // BLOCK_VALUES
    data = rng.integers(0, 256, size=(blocks, BLOCK_BYTES), dtype=np.uint8)
    for at in HALF_FIELDS:
        scale = rng.uniform(0.0005, 0.002, size=blocks).astype(np.float16)
        data[:, at:at + 2] = scale.view(np.uint8).reshape(blocks, 2)
    return data.reshape(rows, width // BLOCK_VALUES * BLOCK_BYTES)


def weight_files(folder):
    index = folder / "diffusion_pytorch_model.safetensors.index.json"
    if index.exists():
        return sorted({folder / f for f in json.loads(index.read_text())["weight_map"].values()})
    return [folder / "diffusion_pytorch_model.safetensors"]


# diffusers' FLUX.2 block names: double-stream, then single-stream.
BLOCK_NAME = re.compile(r"^(transformer_blocks|single_transformer_blocks)\.(\d+)\.(.*)$")


def tensor_names(f, blocks):
    """(name written, name read) for every tensor: the folder's, or with `blocks` (double, single)
    that many blocks of each kind, block N read from the folder's first block of its kind."""
    names = list(f.keys())
    if blocks is None:
        return [(n, n) for n in names]
    out = []
    for name in names:
        m = BLOCK_NAME.match(name)
        if m is None:
            out.append((name, name))
        elif m.group(2) == "0":
            count = blocks[0] if m.group(1) == "transformer_blocks" else blocks[1]
            out += [(f"{m.group(1)}.{n}.{m.group(3)}", name) for n in range(count)]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", type=Path, help="a diffusers transformer folder")
    p.add_argument("out", type=Path, help="the GGUF file to write")
    p.add_argument("--blocks", help="D,S: double- and single-stream blocks, copies of the folder's first ones")
    a = p.parse_args()
    blocks = tuple(int(n) for n in a.blocks.split(",")) if a.blocks else None
    if blocks is not None and len(blocks) != 2:
        p.error("--blocks takes two numbers: D,S")
    rng = np.random.default_rng(49)
    writer = gguf.GGUFWriter(str(a.out), "sdbench-memory")
    counts = {"Q4_K": 0, "F16": 0}
    for path in weight_files(a.folder):
        with safe_open(str(path), "np") as f:
            for name, source in tensor_names(f, blocks):
                shape = f.get_slice(source).get_shape()
                if len(shape) == 2 and shape[1] % BLOCK_VALUES == 0:
                    writer.add_tensor(name, random_q4k(shape[0], shape[1], rng), raw_dtype=Q.Q4_K)
                    counts["Q4_K"] += shape[0] * shape[1]
                else:
                    tensor = f.get_tensor(source).astype(np.float16)
                    writer.add_tensor(name, tensor)
                    counts["F16"] += tensor.size
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{a.out}: {counts['Q4_K']:,} Q4_K and {counts['F16']:,} F16 parameters, "
          f"{a.out.stat().st_size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
