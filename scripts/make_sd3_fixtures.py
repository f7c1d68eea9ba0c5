#!/usr/bin/env python3
"""Make the Stable Diffusion 3 / 3.5 reference fixtures the engine's parity tests check against.

Builds a tiny random-weight `StableDiffusion3Pipeline` with diffusers 0.42 and saves it in the
layout of the Hub repository stabilityai/stable-diffusion-3.5-medium: two CLIP text encoders with
projection (`text_encoder/`, `text_encoder_2/`; CLIP-L's tokenizer pads with its end token,
CLIP-G's with "!"), a T5 v1.1 encoder and its tokenizer (`text_encoder_3/`, `tokenizer_3/`, as
scripts/make_t5_fixtures.py makes them), an MMDiT-X transformer (`SD3Transformer2DModel` with
QK RMS norms, dual attention in its first two blocks, the last block `context_pre_only`, a
positional table cropped from `pos_embed_max_size`), a 16-channel `AutoencoderKL` with SD3's
scaling and shift factors and no quant convolutions, and the flow-matching scheduler with a
static shift of 3. The pipeline is then read back in float32 and records:

- each prompt's conditioning as `encode_prompt` makes it (the two CLIPs' `hidden_states[-2]` side
  by side, padded to T5's width, then T5's 256 tokens along the sequence; the pooled outputs side by
  side): a short prompt, the empty one, a unicode one, and one past CLIP's 77 and T5's 256 tokens;
- one transformer call on a batch of two non-square latents with two prompts' conditioning, and
  the same call skipping a block (`skip_layers`, as skip-layer guidance calls it);
- one VAE decode (of latents already unscaled and shifted);
- the schedules the pipeline sets (no sigmas passed: the scheduler's own shifted range, shifted);
- whole generations from the engine's seeded noise: guidance 0 and 1 (unguided), 4.5 with a
  negative prompt, non-square, the long prompt, skip-layer guidance, and T5 absent (the
  pipeline loaded with `text_encoder_3=None`: zeros in its place).

Each f32 bound is 8 times how far diffusers' f32 result lies from the same computation in float64
(as scripts/measure_f32_rounding.py derives the other fixtures'); the f16 bound is twice the worst
difference of diffusers' own f16 generations from its f32 ones.

Usage (torch and diffusers are needed only here, never by the tests):
    ~/.cache/sdbench/venv/bin/pip install torch diffusers==0.42.0 transformers safetensors numpy
    ~/.cache/sdbench/venv/bin/python scripts/make_sd3_fixtures.py

Output: crates/diffusion/tests/fixtures/tiny-sd3/ and tiny-sd3.reference.* (committed).
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

import diffusers
from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel, StableDiffusion3Pipeline
from transformers import CLIPTextConfig, CLIPTextModelWithProjection, CLIPTokenizer, T5Config, T5EncoderModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import SdBenchNormal  # noqa: E402  (the engine's documented noise)
import make_t5_fixtures  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "crates" / "diffusion" / "tests" / "fixtures"
NAME = "tiny-sd3"

# CLIP-L and CLIP-G at tiny widths: 12 + 16 = 28 side by side, padded to T5's 32.
CLIP_L = dict(hidden_size=12, intermediate_size=24, num_hidden_layers=2, num_attention_heads=3,
              max_position_embeddings=77, hidden_act="quick_gelu", projection_dim=8)
CLIP_G = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=3, num_attention_heads=4,
              max_position_embeddings=77, hidden_act="gelu", projection_dim=8)

# MMDiT-X at tiny widths: 2 heads of 8, three blocks (the first two with a second, image-only
# attention as SD3.5 Medium's first 13; the last one `context_pre_only`), a positional table of
# 24 x 24 patches cropped around its centre, the pooled width the two projections' 8 + 8.
TRANSFORMER = dict(
    sample_size=16,
    patch_size=2,
    in_channels=16,
    num_layers=3,
    attention_head_dim=8,
    num_attention_heads=2,
    joint_attention_dim=32,
    caption_projection_dim=16,
    pooled_projection_dim=16,
    out_channels=16,
    pos_embed_max_size=24,
    dual_attention_layers=(0, 1),
    qk_norm="rms_norm",
)

# SD3's VAE: 16 latent channels, its scaling and shift factors, no quant convolutions; factor 4.
VAE = dict(
    block_out_channels=(8, 16, 16),
    down_block_types=("DownEncoderBlock2D",) * 3,
    up_block_types=("UpDecoderBlock2D",) * 3,
    layers_per_block=1,
    latent_channels=16,
    norm_num_groups=8,
    sample_size=64,
    scaling_factor=1.5305,
    shift_factor=0.0609,
    use_quant_conv=False,
    use_post_quant_conv=False,
)

# stabilityai/stable-diffusion-3.5-medium's scheduler.
SCHEDULER = dict(num_train_timesteps=1000, shift=3.0)

PROMPTS = {
    "short": "a photograph of an astronaut riding a horse",
    "empty": "",
    "unicode": "Café in Tōkyō — 東京の夜, naïve ✨",
    # Past CLIP's 77 tokens and T5's 256.
    "long": make_t5_fixtures.PROMPTS["long"],
}


def to_np(t):
    return t.detach().to(torch.float32).cpu().contiguous()


def build(folder):
    torch.manual_seed(0)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    # The CLIP tokenizers of the SDXL fixture (CLIP's BPE with 700 merges; the second pads with "!").
    for sub in ("tokenizer", "tokenizer_2"):
        shutil.copytree(OUT / "tiny-sdxl" / sub, folder / sub)
    tokenizer = CLIPTokenizer.from_pretrained(folder / "tokenizer")
    tokenizer_2 = CLIPTokenizer.from_pretrained(folder / "tokenizer_2")
    vocab = len(tokenizer)
    ids = dict(vocab_size=vocab, bos_token_id=vocab - 2, eos_token_id=vocab - 1, pad_token_id=vocab - 1)
    text_encoder = CLIPTextModelWithProjection(CLIPTextConfig(**ids, **CLIP_L)).eval()
    text_encoder_2 = CLIPTextModelWithProjection(CLIPTextConfig(**ids, **CLIP_G)).eval()
    tokenizer_3 = make_t5_fixtures.make_tokenizer(folder / "tokenizer_3")
    text_encoder_3 = T5EncoderModel(T5Config(vocab_size=len(tokenizer_3) + 5, **make_t5_fixtures.CONFIG)).eval()
    transformer = SD3Transformer2DModel(**TRANSFORMER).eval()
    vae = AutoencoderKL(**VAE).eval()
    with torch.no_grad():
        # Random weights with a spread of order one, so that errors in the modulations (1 +
        # scale, gates) show; the text encoders' norms about 1.
        for module in (text_encoder, text_encoder_2, text_encoder_3, transformer, vae):
            for name, p in module.named_parameters():
                if "layer_norm" in name or "norm" in name and p.ndim == 1 and module is not transformer:
                    p.normal_(1.0, 0.2)
                else:
                    p.normal_(0.0, 0.2 if p.ndim > 1 else 0.5)
        # Decoded pictures mostly inside [-1, 1], so that few pixels are clipped where a
        # difference would hide.
        vae.decoder.conv_out.weight.mul_(0.12)
        vae.decoder.conv_out.bias.mul_(0.12)
    pipe = StableDiffusion3Pipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(**SCHEDULER),
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        text_encoder_2=text_encoder_2,
        tokenizer_2=tokenizer_2,
        text_encoder_3=text_encoder_3,
        tokenizer_3=tokenizer_3,
        transformer=transformer,
    )
    pipe.save_pretrained(folder, safe_serialization=True)
    # The Hub repository has no tokenizer.json for the CLIP tokenizers; neither does the fixture.
    for sub in ("tokenizer", "tokenizer_2"):
        (folder / sub / "tokenizer.json").unlink(missing_ok=True)
    return load(folder, torch.float32)


def load(folder, dtype, t5=True):
    extra = {} if t5 else dict(text_encoder_3=None, tokenizer_3=None)
    pipe = StableDiffusion3Pipeline.from_pretrained(folder, torch_dtype=dtype, **extra)
    # diffusers loads the transformer in float32 when asked for float64.
    return pipe.to(dtype)


def latent_noise(seed, height, width):
    """The engine's seeded noise as the pipeline's latents: [1, 16, H/4, W/4]."""
    return SdBenchNormal(seed).tensor((1, 16, height // 4, width // 4))


def generated(pipe, run, dtype=torch.float32):
    """One generation of `run` from the engine's seeded noise, as [H, W, 3] float32."""
    noise = latent_noise(run["seed"], run["height"], run["width"]).to(dtype)
    slg = run.get("skip_layer_guidance")
    extra = {}
    if slg:
        extra = dict(
            skip_guidance_layers=slg["layers"],
            skip_layer_guidance_scale=slg["scale"],
            skip_layer_guidance_start=slg["start"],
            skip_layer_guidance_stop=slg["stop"],
        )
    with torch.no_grad():
        image = pipe(
            prompt=run["prompt"],
            negative_prompt=run["negative_prompt"] or None,
            height=run["height"],
            width=run["width"],
            num_inference_steps=run["steps"],
            guidance_scale=run["guidance"],
            latents=noise,
            output_type="np",
            **extra,
        ).images[0]
    return torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))


def bound(rounding):
    return float(f"{8 * max(rounding, 1e-7):.2g}")


def component_calls(pipe):
    """Each component call's output, keyed as the references name them."""
    out = {}
    with torch.no_grad():
        for key, prompt in PROMPTS.items():
            embeds, _, pooled, _ = pipe.encode_prompt(prompt, None, None, do_classifier_free_guidance=False)
            out[f"prompt_embeds.{key}"] = embeds[0]
            out[f"pooled.{key}"] = pooled[0]
        embeds, pooled = [], []
        for key in ("short", "unicode"):
            e, _, p, _ = pipe.encode_prompt(PROMPTS[key], None, None, do_classifier_free_guidance=False)
            embeds.append(e)
            pooled.append(p)
        dtype = pipe.transformer.dtype
        latents = torch.cat([latent_noise(21, 32, 48), latent_noise(22, 32, 48)]).to(dtype)
        args = dict(
            hidden_states=latents,
            timestep=torch.tensor([700.0, 700.0], dtype=dtype),
            encoder_hidden_states=torch.cat(embeds),
            pooled_projections=torch.cat(pooled),
            return_dict=False,
        )
        out["transformer.latents"] = latents
        out["transformer.sample"] = pipe.transformer(**args)[0]
        out["transformer.skip1"] = pipe.transformer(**args, skip_layers=[1])[0]
        z = SdBenchNormal(12).tensor((1, 16, 8, 12)).to(dtype)
        out["vae.latents"] = z[0]
        out["vae.decoded"] = pipe.vae.decode(z, return_dict=False)[0][0]
    return out


def main():
    folder = OUT / NAME
    pipe = build(folder)
    refs = {}
    meta = {"diffusers_version": diffusers.__version__, "torch_version": torch.__version__, "prompts": PROMPTS}

    # Component calls, each with its float64 rounding.
    calls = component_calls(pipe)
    calls64 = component_calls(load(folder, torch.float64))
    meta["component_rounding"], meta["component_tolerance"] = {}, {}
    for key, value in calls.items():
        refs[key] = to_np(value)
        if key.endswith(".latents"):
            continue
        rounding = float((value.double() - calls64[key]).abs().max())
        meta["component_rounding"][key] = rounding
        meta["component_tolerance"][key] = bound(rounding)
    meta["transformer"] = {"timestep": 700.0, "prompts": ["short", "unicode"], "latent_hw": [8, 12], "skip": [1]}

    # Schedules: set_timesteps(n) with no sigmas, as the pipeline calls it.
    meta["schedules"] = []
    for steps in (1, 2, 4, 28, 40):
        sched = FlowMatchEulerDiscreteScheduler.from_config(pipe.scheduler.config)
        sched.set_timesteps(steps)
        meta["schedules"].append(
            {"steps": steps, "sigmas": [float(s) for s in sched.sigmas], "timesteps": [float(t) for t in sched.timesteps]}
        )

    slg = {"layers": [1], "scale": 2.8, "start": 0.01, "stop": 0.9}
    runs = [
        # (key, prompt, negative, steps, height, width, seed, guidance, skip-layer guidance, T5)
        ("square2", "short", "", 2, 32, 32, 42, 0.0, None, True),
        ("unguided_wide2", "unicode", "", 2, 32, 48, 43, 1.0, None, True),
        ("cfg_square3", "short", "", 3, 32, 32, 44, 4.5, None, True),
        ("cfg_negative_tall2", "unicode", "short", 2, 48, 32, 45, 3.0, None, True),
        ("long2", "long", "", 2, 32, 32, 46, 2.0, None, True),
        # Steps 1 and 2 of 3 add the skip-layer term (i > 3 x 0.01 and i < 3 x 0.9).
        ("slg_square3", "short", "", 3, 32, 32, 47, 4.5, slg, True),
        ("no_t5_wide2", "short", "", 2, 32, 48, 48, 4.5, None, False),
    ]
    # The run without T5 is listed apart (`generate_without_t5`): it needs the folder loaded
    # without text_encoder_3, which the engine's test makes.
    meta["generate"], meta["generate_without_t5"] = [], []
    pipe_no_t5 = load(folder, torch.float32, t5=False)
    for key, prompt, negative, steps, height, width, seed, guidance, skip, t5 in runs:
        run = {
            "key": f"generate.{key}",
            "prompt": PROMPTS[prompt],
            "negative_prompt": PROMPTS[negative] if negative else "",
            "steps": steps,
            "height": height,
            "width": width,
            "seed": seed,
            "guidance": guidance,
            "t5": t5,
        }
        if skip:
            run["skip_layer_guidance"] = skip
        refs[run["key"]] = generated(pipe if t5 else pipe_no_t5, run)
        meta["generate" if t5 else "generate_without_t5"].append(run)

    # f32 rounding of each generation against float64; f16 against f32.
    pipes64 = {True: load(folder, torch.float64), False: load(folder, torch.float64, t5=False)}
    pipes16 = {True: load(folder, torch.float16), False: load(folder, torch.float16, t5=False)}
    meta["f32_rounding"] = {}
    worst16 = 0.0
    for run in meta["generate"] + meta["generate_without_t5"]:
        image64 = generated(pipes64[run["t5"]], run, torch.float64)
        meta["f32_rounding"][run["key"]] = float((refs[run["key"]].double() - image64.double()).abs().max())
        image16 = generated(pipes16[run["t5"]], run, torch.float16)
        run["diffusers_f16_error"] = float((image16 - refs[run["key"]]).abs().max())
        worst16 = max(worst16, run["diffusers_f16_error"])
    meta["f32_tolerance"] = bound(max(meta["f32_rounding"].values()))
    meta["f16_tolerance"] = float(f"{max(2 * worst16, 3e-2):.2g}")

    save_file({k: v.contiguous() for k, v in refs.items()}, str(OUT / f"{NAME}.reference.safetensors"))
    (OUT / f"{NAME}.reference.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"{folder}: {size / 1024:.0f} KiB; references: {(OUT / f'{NAME}.reference.safetensors').stat().st_size / 1024:.0f} KiB")
    print("f32", meta["f32_tolerance"], "f16", meta["f16_tolerance"], meta["component_tolerance"])


if __name__ == "__main__":
    main()
