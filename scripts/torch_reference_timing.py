#!/usr/bin/env python3
"""Reference timing: diffusers/torch on the CPU with SD1.5's UNet and VAE configs (random weights),
the same work `sdbench timing --model synthetic --backend cpu` measures: one UNet call at batch 2 and
one VAE decode, one warm-up each, then the median of --repeat calls.

    ~/.cache/sdbench/venv/bin/python scripts/torch_reference_timing.py --threads 2 --repeat 3
"""
import argparse
import statistics
import time

import torch
from diffusers import AutoencoderKL, UNet2DConditionModel


def timed(fn, repeat):
    fn()  # warm-up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--size", type=int, default=512)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    unet = UNet2DConditionModel(cross_attention_dim=768).eval()  # SD1.5's unet/config.json
    vae = AutoencoderKL(
        block_out_channels=(128, 256, 512, 512), layers_per_block=2,
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
    ).eval()
    s = a.size // 8
    sample, context = torch.randn(2, 4, s, s), torch.randn(2, 77, 768)
    latents = torch.randn(1, 4, s, s)
    for name, fn in [
        (f"unet call (batch 2, 4x{s}x{s} latents)", lambda: unet(sample, 500.0, encoder_hidden_states=context)),
        (f"vae decode (4x{s}x{s} -> 3x{a.size}x{a.size})", lambda: vae.decode(latents)),
    ]:
        samples = timed(fn, a.repeat)
        print(f"torch {torch.__version__} {name}: median {statistics.median(samples):.3f} s, samples {[round(x, 3) for x in samples]}")


if __name__ == "__main__":
    main()
