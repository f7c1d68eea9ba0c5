#!/usr/bin/env python3
"""Make the Z-Image reference fixtures the engine's parity tests check against.

Builds a tiny random-weight `ZImagePipeline` with diffusers (0.42's `ZImagePipeline` and
`ZImageTransformer2DModel`) and saves it in the layout of the Hub repository Tongyi-MAI/Z-Image-Turbo:
bf16 weights, the text encoder (a bare `Qwen3Model`: no `model.` prefix, no lm_head) and the
transformer in shards with their indexes, a small byte-level BPE tokenizer with Qwen's
pre-tokenizer, Qwen3's special and added tokens and chat template, a 16-channel `AutoencoderKL`
with a scaling and a shift factor, and Z-Image-Turbo's scheduler (flow matching, a static shift
of 3). The pipeline is then read back in float32 and records:

- tokenizer ids and masks at 512 tokens of the chat-templated prompt with thinking on (a prompt
  cut at 512, the empty negative prompt, unicode);
- the text encoder's `hidden_states[-2]` rows of the real tokens, per prompt;
- one transformer call on two images whose captions differ in length (the padded batch and its
  attention mask), at a timestep as the pipeline passes it, `(1000 - t) / 1000`;
- one VAE decode (of latents already unscaled and shifted);
- the schedules the pipeline sets;
- whole generations from the engine's seeded noise: guidance 0 as Turbo runs (square, wide,
  the long prompt), and guidance 2.5 with classifier-free guidance, `cfg_truncation` and
  `cfg_normalization`.

Usage (torch and diffusers are needed only here, never by the tests):
    ~/.cache/sdbench/venv/bin/pip install torch diffusers transformers safetensors numpy
    ~/.cache/sdbench/venv/bin/python scripts/make_zimage_fixtures.py

Output: crates/diffusion/tests/fixtures/tiny-zimage/ and tiny-zimage.reference.* (committed).
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

import diffusers
from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, ZImagePipeline, ZImageTransformer2DModel
from diffusers.pipelines.z_image.pipeline_z_image import calculate_shift, get_default_z_image_sigmas
from transformers import Qwen3Config, Qwen3Model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import SdBenchNormal  # noqa: E402  (the engine's documented noise)
from make_flux2_fixtures import TOKENIZER_PROMPTS, make_tokenizer, to_np, tokenizer_references  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "crates" / "diffusion" / "tests" / "fixtures"
NAME = "tiny-zimage"

# Qwen3's widths kept small; three layers, so hidden_states[-2] is a middle layer's output.
TEXT_ENCODER = dict(
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=1024,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
    attention_bias=False,
)

# Z-Image's S3-DiT at tiny widths: heads of 32 = the three RoPE axes (8 + 12 + 12), one noise and
# one context refiner block, two main blocks, 2x2 patches of 16 latent channels. The caption axis
# must reach the image's position after a 512-token caption.
TRANSFORMER = dict(
    all_patch_size=(2,),
    all_f_patch_size=(1,),
    in_channels=16,
    dim=64,
    n_layers=2,
    n_refiner_layers=1,
    n_heads=2,
    n_kv_heads=2,
    norm_eps=1e-5,
    qk_norm=True,
    cap_feat_dim=32,
    rope_theta=256.0,
    t_scale=1000.0,
    axes_dims=[8, 12, 12],
    axes_lens=[1024, 64, 64],
)

# A KL VAE of factor 4 with Z-Image's latent width and its scaling and shift factors.
VAE = dict(
    block_out_channels=(8, 16, 16),
    down_block_types=("DownEncoderBlock2D",) * 3,
    up_block_types=("UpDecoderBlock2D",) * 3,
    layers_per_block=1,
    latent_channels=16,
    norm_num_groups=8,
    sample_size=64,
    scaling_factor=0.3611,
    shift_factor=0.1159,
    use_quant_conv=False,
    use_post_quant_conv=False,
)

# Tongyi-MAI/Z-Image-Turbo's scheduler: a static shift of 3.
SCHEDULER = dict(num_train_timesteps=1000, shift=3.0, use_dynamic_shifting=False)


def build(folder):
    torch.manual_seed(0)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    tok = make_tokenizer(folder)
    text_encoder = Qwen3Model(Qwen3Config(vocab_size=len(tok), pad_token_id=tok.pad_token_id, **TEXT_ENCODER)).eval()
    transformer = ZImageTransformer2DModel(**TRANSFORMER).eval()
    vae = AutoencoderKL(**VAE).eval()
    with torch.no_grad():
        # Random weights with a spread of order one, so that errors in the modulations (1 +
        # scale, tanh gates) and the pad tokens show.
        for module in (text_encoder, transformer, vae):
            for p in module.parameters():
                p.normal_(0.0, 0.2 if p.ndim > 1 else 0.5)
    pipe = ZImagePipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(**SCHEDULER),
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tok,
        transformer=transformer,
    )
    pipe.to(torch.bfloat16)
    # The Hub repository's layout: bf16 files, text encoder and transformer sharded with indexes.
    pipe.save_pretrained(folder, safe_serialization=True)
    text_encoder.save_pretrained(folder / "text_encoder", safe_serialization=True, max_shard_size="20KB")
    transformer.save_pretrained(folder / "transformer", safe_serialization=True, max_shard_size="300KB")
    for component, stem in (("text_encoder", "model"), ("transformer", "diffusion_pytorch_model")):
        assert (folder / component / f"{stem}.safetensors.index.json").is_file(), f"{component} is not sharded"
        (folder / component / f"{stem}.safetensors").unlink(missing_ok=True)
    make_tokenizer(folder)
    return ZImagePipeline.from_pretrained(folder, torch_dtype=torch.float32)


def latent_noise(seed, height, width):
    """The engine's seeded noise as the pipeline's latents: [1, 16, H/4, W/4]."""
    return SdBenchNormal(seed).tensor((1, 16, height // 4, width // 4))


def generated(pipe, run, dtype=torch.float32):
    """One generation of `run` from the engine's seeded noise, as [H, W, 3] float32."""
    noise = latent_noise(run["seed"], run["height"], run["width"]).to(dtype)
    with torch.no_grad():
        image = pipe(
            prompt=run["prompt"],
            height=run["height"],
            width=run["width"],
            num_inference_steps=run["steps"],
            guidance_scale=run["guidance"],
            cfg_truncation=run["cfg_truncation"],
            cfg_normalization=run["cfg_normalization"],
            latents=noise,
            output_type="np",
        ).images[0]
    return torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))


def main():
    folder = OUT / NAME
    pipe = build(folder)
    refs = {}
    meta = {"diffusers_version": diffusers.__version__, "torch_version": torch.__version__}

    # Tokenizer: Qwen3's chat template with thinking on, ids and mask at 512 tokens.
    tokenizer_references(pipe.tokenizer, True, meta, refs)

    # Text encoder: hidden_states[-2] at the real tokens only.
    with torch.no_grad():
        for key in TOKENIZER_PROMPTS:
            embeds = pipe._encode_prompt(TOKENIZER_PROMPTS[key], device="cpu")
            refs[f"prompt_embeds.{key}"] = to_np(embeds[0])

    # One transformer call on two 32x48 images (latent 8x12, 4x6 tokens) whose captions differ
    # in length (the short prompt and the empty one): the batch is padded and masked.
    timestep = 0.3  # as the pipeline passes it: (1000 - t) / 1000
    with torch.no_grad():
        captions = [
            pipe._encode_prompt(TOKENIZER_PROMPTS["short"], device="cpu")[0],
            pipe._encode_prompt(TOKENIZER_PROMPTS["empty"], device="cpu")[0],
        ]
        latents = [latent_noise(21, 32, 48)[0].unsqueeze(1), latent_noise(22, 32, 48)[0].unsqueeze(1)]
        out = pipe.transformer(latents, torch.tensor([timestep, timestep]), captions, return_dict=False)[0]
    for i in range(2):
        refs[f"transformer.latents.{i}"] = to_np(latents[i][:, 0])
        refs[f"transformer.caption.{i}"] = to_np(captions[i])
        refs[f"transformer.sample.{i}"] = to_np(out[i][:, 0])
    meta["transformer"] = {"timestep": timestep, "captions": ["short", "empty"], "latent_hw": [8, 12]}

    # VAE decode of latents as the decoder takes them (the pipeline's latents / scaling + shift).
    z = SdBenchNormal(12).tensor((1, 16, 8, 12))
    with torch.no_grad():
        image = pipe.vae.decode(z, return_dict=False)[0]
    refs["vae.latents"] = to_np(z[0])
    refs["vae.decoded"] = to_np(image[0])

    # Schedules: the sigmas and timesteps the pipeline sets (its mu only moves them where the
    # scheduler shifts dynamically, which Turbo's does not).
    meta["schedules"] = []
    for steps, tokens in ((1, 16), (2, 24), (9, 4096), (4, 1024)):
        sched = FlowMatchEulerDiscreteScheduler.from_config(pipe.scheduler.config)
        mu = calculate_shift(tokens, 256, 4096, 0.5, 1.15)
        sched.set_timesteps(sigmas=get_default_z_image_sigmas(steps), mu=mu)
        meta["schedules"].append(
            {
                "steps": steps,
                "image_tokens": tokens,
                "mu": mu,
                "sigmas": [float(s) for s in sched.sigmas],
                "timesteps": [float(t) for t in sched.timesteps],
            }
        )

    # Whole generations from the engine's seeded noise.
    runs = [
        ("square2", "short", 2, 32, 32, 42, 0.0, 1.0, False),
        ("wide3", "long", 3, 32, 48, 43, 0.0, 1.0, False),
        ("tall2", "unicode", 2, 48, 32, 44, 0.0, 1.0, False),
        # Guided: CFG as pos + g (pos - neg) against the empty prompt, every step.
        ("cfg_square2", "short", 2, 32, 32, 45, 2.5, 1.0, False),
        # cfg_truncation 0.3: steps whose (1000 - t) / 1000 is above it run unguided (the last
        # of these three: 0, 0.14, 0.4); cfg_normalization caps the guided prediction's norm at
        # the positive one's.
        ("cfg_wide3", "unicode", 3, 32, 48, 46, 2.5, 0.3, True),
    ]
    meta["generate"] = []
    for key, prompt_key, steps, height, width, seed, guidance, truncation, normalization in runs:
        run = {
            "key": f"generate.{key}",
            "prompt": TOKENIZER_PROMPTS[prompt_key],
            "steps": steps,
            "height": height,
            "width": width,
            "seed": seed,
            "guidance": guidance,
            "cfg_truncation": truncation,
            "cfg_normalization": normalization,
        }
        refs[run["key"]] = generated(pipe, run)
        meta["generate"].append(run)

    # f16: diffusers' own f16 run of each generation differs from its f32 one; the engine's f16
    # images may differ from the f32 references by twice the most diffusers' own f16 images do.
    pipe16 = ZImagePipeline.from_pretrained(folder, torch_dtype=torch.float16)
    worst = 0.0
    for run in meta["generate"]:
        image = generated(pipe16, run, torch.float16)
        error = float((image - refs[run["key"]]).abs().max())
        run["diffusers_f16_error"] = error
        worst = max(worst, error)
    meta["f16_tolerance"] = float(f"{max(2 * worst, 3e-2):.2g}")

    save_file({k: v.contiguous() for k, v in refs.items()}, str(OUT / f"{NAME}.reference.safetensors"))
    (OUT / f"{NAME}.reference.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"{folder}: {size / 1024:.0f} KiB; references: {(OUT / f'{NAME}.reference.safetensors').stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
