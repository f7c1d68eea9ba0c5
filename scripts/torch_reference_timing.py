#!/usr/bin/env python3
"""Reference timing: diffusers/torch on the CPU with SD1.5's (or SDXL base's) UNet and VAE configs
(random weights), the same work `sdbench timing --model synthetic --backend cpu` (or
`--model synthetic-sdxl-base`) measures: one UNet call at batch 2 and one VAE decode, one warm-up
each, then the median of --repeat calls.

    ~/.cache/sdbench/venv/bin/python scripts/torch_reference_timing.py --threads 2 --repeat 3
    ~/.cache/sdbench/venv/bin/python scripts/torch_reference_timing.py --model sdxl-base --size 1024
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
    p.add_argument("--model", choices=["sd15", "sdxl-base"], default="sd15")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    if a.model == "sd15":
        unet = UNet2DConditionModel(cross_attention_dim=768).eval()  # SD1.5's unet/config.json
        width, added = 768, None
    else:  # stabilityai/stable-diffusion-xl-base-1.0's unet/config.json
        unet = UNet2DConditionModel(
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
            block_out_channels=(320, 640, 1280), attention_head_dim=[5, 10, 20],
            transformer_layers_per_block=[1, 2, 10], cross_attention_dim=2048, use_linear_projection=True,
            addition_embed_type="text_time", addition_time_embed_dim=256,
            projection_class_embeddings_input_dim=2816,
        ).eval()
        ids = torch.tensor([[a.size, a.size, 0, 0, a.size, a.size]] * 2, dtype=torch.float32)
        width, added = 2048, {"text_embeds": torch.randn(2, 1280), "time_ids": ids}
    vae = AutoencoderKL(
        block_out_channels=(128, 256, 512, 512), layers_per_block=2,
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
    ).eval()
    s = a.size // 8
    sample, context = torch.randn(2, 4, s, s), torch.randn(2, 77, width)
    latents = torch.randn(1, 4, s, s)
    for name, fn in [
        (f"unet call (batch 2, 4x{s}x{s} latents)", lambda: unet(sample, 500.0, encoder_hidden_states=context, added_cond_kwargs=added)),
        (f"vae decode (4x{s}x{s} -> 3x{a.size}x{a.size})", lambda: vae.decode(latents)),
    ]:
        samples = timed(fn, a.repeat)
        print(f"torch {torch.__version__} {name}: median {statistics.median(samples):.3f} s, samples {[round(x, 3) for x in samples]}")


if __name__ == "__main__":
    main()
