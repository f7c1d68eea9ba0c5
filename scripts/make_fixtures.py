#!/usr/bin/env python3
"""Make the reference fixtures that the engine's parity tests check against.

Builds tiny random-weight Stable Diffusion pipelines with diffusers, saves them in the diffusers folder
layout, and records what diffusers computes with them: tokenizer ids, one text-encoder call, one UNet
call, one VAE decode and one encode, every scheduler's timesteps and sigmas, full generations for every
scheduler from fixed latents with and without a negative prompt, a batch of two, and image-to-image
generations from a committed picture.

Usage (torch and diffusers are needed only here, never by the tests):
    python3 -m venv ~/.cache/sdbench/venv
    ~/.cache/sdbench/venv/bin/pip install torch diffusers transformers safetensors numpy open-clip-torch
    ~/.cache/sdbench/venv/bin/python scripts/make_fixtures.py [NAME...]
NAME: a pipeline (tiny-sd, tiny-variant, tiny-sd2), "schedulers" or "tokenizer"; none: everything.

Output: crates/diffusion/tests/fixtures/ (committed; keep it small).
"""

import copy
import gzip
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

import diffusers
from diffusers import (
    AutoencoderKL,
    DDIMScheduler,
    DPMSolverMultistepScheduler,
    EulerAncestralDiscreteScheduler,
    EulerDiscreteScheduler,
    PNDMScheduler,
    StableDiffusionImg2ImgPipeline,
    StableDiffusionPipeline,
    StableDiffusionXLImg2ImgPipeline,
    StableDiffusionXLPipeline,
    UNet2DConditionModel,
)
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "crates" / "diffusion" / "tests" / "fixtures"

# The scheduler_config.json of stable-diffusion-v1-5/stable-diffusion-v1-5, verbatim.
SD15_SCHEDULER = {
    "_class_name": "PNDMScheduler",
    "_diffusers_version": "0.6.0",
    "beta_end": 0.012,
    "beta_schedule": "scaled_linear",
    "beta_start": 0.00085,
    "num_train_timesteps": 1000,
    "set_alpha_to_one": False,
    "skip_prk_steps": True,
    "steps_offset": 1,
    "trained_betas": None,
    "clip_sample": False,
}

# The scheduler_config.json of stabilityai/stable-diffusion-2-1 (768 px, v-prediction), verbatim.
SD21_SCHEDULER = {
    "_class_name": "DDIMScheduler",
    "_diffusers_version": "0.8.0",
    "beta_end": 0.012,
    "beta_schedule": "scaled_linear",
    "beta_start": 0.00085,
    "clip_sample": False,
    "num_train_timesteps": 1000,
    "prediction_type": "v_prediction",
    "set_alpha_to_one": False,
    "skip_prk_steps": True,
    "steps_offset": 1,
    "trained_betas": None,
}

# The scheduler_config.json of stabilityai/stable-diffusion-xl-base-1.0, verbatim.
SDXL_SCHEDULER = {
    "_class_name": "EulerDiscreteScheduler",
    "_diffusers_version": "0.19.0.dev0",
    "beta_end": 0.012,
    "beta_schedule": "scaled_linear",
    "beta_start": 0.00085,
    "clip_sample": False,
    "interpolation_type": "linear",
    "num_train_timesteps": 1000,
    "prediction_type": "epsilon",
    "sample_max_value": 1.0,
    "set_alpha_to_one": False,
    "skip_prk_steps": True,
    "steps_offset": 1,
    "timestep_spacing": "leading",
    "trained_betas": None,
    "use_karras_sigmas": False,
}

SCHEDULERS = {
    "pndm": (PNDMScheduler, {}),
    "ddim": (DDIMScheduler, {}),
    "euler": (EulerDiscreteScheduler, {}),
    "euler_a": (EulerAncestralDiscreteScheduler, {}),
    "dpmpp_2m": (DPMSolverMultistepScheduler, {"algorithm_type": "dpmsolver++", "solver_order": 2}),
    "dpmpp_2m_karras": (
        DPMSolverMultistepScheduler,
        {"algorithm_type": "dpmsolver++", "solver_order": 2, "use_karras_sigmas": True},
    ),
}


# ---------------------------------------------------------------------------------------------------
# The engine's documented noise generator (crates/diffusion/src/noise.rs), in Python, so that seeded
# latents and ancestral-sampler noise are identical on both sides.
MASK64 = (1 << 64) - 1


class SdBenchNormal:
    """SplitMix64 uniforms, Box-Muller pairs (cos first, then sin), float32 results."""

    def __init__(self, seed):
        self.state = seed & MASK64
        self.spare = None

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):
        # In (0, 1]: never 0, so the logarithm below is finite.
        return ((self.next_u64() >> 11) + 1) * (1.0 / (1 << 53))

    def normal(self):
        if self.spare is not None:
            value, self.spare = self.spare, None
            return value
        u1, u2 = self.uniform(), self.uniform()
        radius = math.sqrt(-2.0 * math.log(u1))
        angle = 2.0 * math.pi * u2
        self.spare = radius * math.sin(angle)
        return radius * math.cos(angle)

    def tensor(self, shape):
        count = int(np.prod(shape))
        values = np.array([self.normal() for _ in range(count)], dtype=np.float64)
        return torch.from_numpy(values.astype(np.float32).reshape(shape))


# ---------------------------------------------------------------------------------------------------
# CLIP BPE vocabulary: the original merges list ships in open_clip's wheel; vocab.json and merges.txt
# are derived from it exactly as openai/clip-vit-large-patch14 (SD1.5's tokenizer) has them.


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def clip_vocab(merge_count):
    import open_clip

    path = Path(open_clip.__file__).parent / "bpe_simple_vocab_16e6.txt.gz"
    lines = gzip.open(path).read().decode("utf-8").split("\n")
    merges = [tuple(line.split()) for line in lines[1 : 49152 - 256 - 2 + 1]][:merge_count]
    vocab = bytes_to_unicode()
    vocab = vocab + [v + "</w>" for v in vocab]
    vocab += ["".join(m) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    return {token: i for i, token in enumerate(vocab)}, merges


def write_tokenizer(folder, merge_count, pad_token="<|endoftext|>"):
    folder.mkdir(parents=True, exist_ok=True)
    vocab, merges = clip_vocab(merge_count)
    with open(folder / "vocab.json", "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, separators=(",", ":"))
    with open(folder / "merges.txt", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")
    special = {
        "bos_token": "<|startoftext|>",
        "eos_token": "<|endoftext|>",
        "pad_token": pad_token,
        "unk_token": "<|endoftext|>",
    }
    with open(folder / "special_tokens_map.json", "w") as f:
        json.dump(special, f, indent=2)
    with open(folder / "tokenizer_config.json", "w") as f:
        json.dump({**special, "model_max_length": 77, "do_lower_case": True, "tokenizer_class": "CLIPTokenizer"}, f, indent=2)
    return len(vocab)


TOKENIZER_CASES = [
    "a photograph of an astronaut riding a horse",
    "A Photograph Of An ASTRONAUT, riding a horse!!",
    "  lots   of\twhitespace\n\nand newlines  ",
    "punctuation: commas, periods. (parentheses) [brackets] {braces} 'quotes' \"double\" ...?!",
    "don't can't we're they've I'm you'll he'd",
    "numbers 1234 and 3.14159 and 2nd 10x",
    "café naïve résumé Zürich",
    "emoji 🚀 and symbols © ™ → ∞",
    "日本語のテキスト and 中文",
    "",
    "a very long prompt " + " ".join(f"word{i} with more detail" for i in range(40)),
    "<|startoftext|> special tokens in the text <|endoftext|>",
    "hyphen-ated and under_scored and slash/separated and email@example.com",
]


def tokenizer_cases(folder):
    tokenizer = CLIPTokenizer.from_pretrained(folder)
    cases = []
    for text in TOKENIZER_CASES:
        ids = tokenizer(text, padding="max_length", max_length=77, truncation=True).input_ids
        cases.append({"text": text, "ids": ids})
    return cases


# ---------------------------------------------------------------------------------------------------
# Tiny pipelines. "tiny-sd" mirrors SD1.5's shape of config at toy sizes; "tiny-variant" changes every
# option that a config can change (block order, head counts as a list, linear projections, flipped
# sinusoids, a three-level VAE with its own scaling factor, gelu in CLIP); "tiny-sd2" mirrors SD2.1's
# (OpenCLIP-style gelu text encoder, per-block head counts, linear projections, upcast attention, and
# SD2.1's v-prediction DDIM scheduler config).

TINY = {
    "tiny-sd": {
        "unet": dict(
            sample_size=8,
            in_channels=4,
            out_channels=4,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            block_out_channels=(24, 48),
            layers_per_block=2,
            cross_attention_dim=32,
            attention_head_dim=4,
            norm_num_groups=8,
        ),
        "vae": dict(
            in_channels=3,
            out_channels=3,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
            block_out_channels=(16, 32),
            layers_per_block=1,
            latent_channels=4,
            norm_num_groups=8,
            sample_size=16,
        ),
        "clip": dict(
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=77,
            hidden_act="quick_gelu",
        ),
        "merges": 1000,
        "fp16_variant": True,
        "size": (16, 24),  # height, width: not square, to catch transposes
    },
    "tiny-variant": {
        "unet": dict(
            sample_size=8,
            in_channels=4,
            out_channels=4,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
            block_out_channels=(16, 32, 32),
            layers_per_block=1,
            cross_attention_dim=24,
            attention_head_dim=[2, 4, 2],
            norm_num_groups=4,
            norm_eps=1e-6,
            flip_sin_to_cos=False,
            freq_shift=1,
            downsample_padding=0,
            use_linear_projection=True,
        ),
        "vae": dict(
            in_channels=3,
            out_channels=3,
            down_block_types=("DownEncoderBlock2D",) * 3,
            up_block_types=("UpDecoderBlock2D",) * 3,
            block_out_channels=(8, 16, 16),
            layers_per_block=2,
            latent_channels=4,
            norm_num_groups=4,
            sample_size=32,
            scaling_factor=0.5,
        ),
        "clip": dict(
            hidden_size=24,
            intermediate_size=40,
            num_hidden_layers=3,
            num_attention_heads=3,
            max_position_embeddings=77,
            hidden_act="gelu",
        ),
        "merges": 600,
        "fp16_variant": False,
        "size": (32, 24),
    },
    "tiny-sd2": {
        "unet": dict(
            sample_size=8,
            in_channels=4,
            out_channels=4,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            block_out_channels=(16, 32),
            layers_per_block=2,
            cross_attention_dim=24,
            attention_head_dim=[2, 4],
            norm_num_groups=8,
            use_linear_projection=True,
            upcast_attention=True,
        ),
        "vae": dict(
            in_channels=3,
            out_channels=3,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
            block_out_channels=(8, 16),
            layers_per_block=1,
            latent_channels=4,
            norm_num_groups=8,
            sample_size=16,
        ),
        "clip": dict(
            hidden_size=24,
            intermediate_size=48,
            num_hidden_layers=3,
            num_attention_heads=4,
            max_position_embeddings=77,
            hidden_act="gelu",
            projection_dim=16,
        ),
        "merges": 800,
        "fp16_variant": False,
        "size": (24, 16),
        "scheduler": SD21_SCHEDULER,
        "pad_token": "!",
    },
    # SDXL base's structure: two text encoders (the second with a projection, its tokenizer padding
    # with "!"), penultimate hidden states side by side, text_time added conditions, per-block
    # transformer depths, and SDXL's Euler "leading" scheduler config.
    "tiny-sdxl": {
        "unet": dict(
            sample_size=8,
            in_channels=4,
            out_channels=4,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
            block_out_channels=(16, 32),
            layers_per_block=1,
            cross_attention_dim=24 + 32,
            attention_head_dim=[2, 4],
            transformer_layers_per_block=[1, 2],
            norm_num_groups=8,
            use_linear_projection=True,
            addition_embed_type="text_time",
            addition_time_embed_dim=8,
            projection_class_embeddings_input_dim=6 * 8 + 16,
        ),
        "vae": dict(
            in_channels=3,
            out_channels=3,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
            block_out_channels=(8, 16),
            layers_per_block=1,
            latent_channels=4,
            norm_num_groups=8,
            sample_size=16,
            scaling_factor=0.13025,
            force_upcast=True,
        ),
        "clip": dict(
            hidden_size=24,
            intermediate_size=48,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=77,
            hidden_act="quick_gelu",
        ),
        "clip_2": dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=3,
            num_attention_heads=4,
            max_position_embeddings=77,
            hidden_act="gelu",
            projection_dim=16,
        ),
        "merges": 700,
        "fp16_variant": False,
        "size": (24, 16),
        "scheduler": SDXL_SCHEDULER,
    },
}


def build_pipeline(name, spec, folder):
    torch.manual_seed(sum(map(ord, name)))
    vocab_size = write_tokenizer(folder / "tokenizer", spec["merges"], spec.get("pad_token", "<|endoftext|>"))
    tokenizer = CLIPTokenizer.from_pretrained(folder / "tokenizer")
    ids = dict(vocab_size=vocab_size, bos_token_id=vocab_size - 2, eos_token_id=vocab_size - 1, pad_token_id=vocab_size - 1)
    text_encoder = CLIPTextModel(CLIPTextConfig(**ids, **spec["clip"]))
    unet = UNet2DConditionModel(**spec["unet"])
    vae = AutoencoderKL(**spec["vae"])
    models = [unet, vae, text_encoder]
    if "clip_2" in spec:
        write_tokenizer(folder / "tokenizer_2", spec["merges"], "!")
        tokenizer_2 = CLIPTokenizer.from_pretrained(folder / "tokenizer_2")
        text_encoder_2 = CLIPTextModelWithProjection(CLIPTextConfig(**ids, **spec["clip_2"]))
        models.append(text_encoder_2)
    # Random init leaves some weights at zero (e.g. conv_out); give every tensor a little signal so
    # a wrong wiring cannot hide behind a zero.
    with torch.no_grad():
        for model in models:
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.02)
    base = spec.get("scheduler", SD15_SCHEDULER)
    scheduler = SCHEDULER_CLASSES[base["_class_name"]].from_config(base)
    if "clip_2" in spec:
        pipe = StableDiffusionXLPipeline(
            vae=vae, text_encoder=text_encoder, text_encoder_2=text_encoder_2, tokenizer=tokenizer,
            tokenizer_2=tokenizer_2, unet=unet, scheduler=scheduler, force_zeros_for_empty_prompt=True,
            add_watermarker=False,
        )
    else:
        pipe = StableDiffusionPipeline(
            vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet, scheduler=scheduler,
            safety_checker=None, feature_extractor=None, requires_safety_checker=False,
        )
    pipe.save_pretrained(folder, safe_serialization=True)
    if spec["fp16_variant"]:
        # A real fp16 variant next to the fp32 files, as the Hub repository has. Made from a copy:
        # the references below must come from the exact fp32 weights.
        copy.deepcopy(pipe).to(torch.float16).save_pretrained(folder, safe_serialization=True, variant="fp16")
    # Keep the folder exactly as the Hub has it: the scheduler config verbatim from SD1.5 (SD2.1).
    with open(folder / "scheduler" / "scheduler_config.json", "w") as f:
        json.dump(base, f, indent=2)
    for extra in ("safety_checker", "feature_extractor"):
        shutil.rmtree(folder / extra, ignore_errors=True)
    # The Hub repository has no tokenizer.json; neither does the fixture.
    for sub in ("tokenizer", "tokenizer_2"):
        (folder / sub / "tokenizer.json").unlink(missing_ok=True)
    return pipe


def to_np(t):
    return t.detach().to(torch.float32).cpu().contiguous()


def make_references(name, spec, pipe, folder):
    refs = {}
    meta = {"diffusers_version": diffusers.__version__, "torch_version": torch.__version__}
    height, width = spec["size"]
    vae_factor = 2 ** (len(pipe.vae.config.block_out_channels) - 1)
    lh, lw = height // vae_factor, width // vae_factor
    gen = torch.Generator().manual_seed(7)

    # Text encoder: one call on real token ids.
    prompt = "a photograph of an astronaut riding a horse"
    ids = pipe.tokenizer(prompt, padding="max_length", max_length=77, truncation=True, return_tensors="pt").input_ids
    with torch.no_grad():
        hidden = pipe.text_encoder(ids)[0]
    refs["text_encoder.input_ids"] = ids.to(torch.float32)  # exact below 2^24
    refs["text_encoder.last_hidden_state"] = to_np(hidden)

    # The prompt's conditioning as the UNet gets it (unguided): text embeddings, and SDXL's pooled one.
    xl = isinstance(pipe, StableDiffusionXLPipeline)
    if xl:
        context, _, pooled, _ = pipe.encode_prompt(prompt, device="cpu", num_images_per_prompt=1, do_classifier_free_guidance=False)
        refs["prompt.pooled"] = to_np(pooled)
    else:
        context, _ = pipe.encode_prompt(prompt, "cpu", 1, False)
    refs["prompt.context"] = to_np(context)

    # UNet: one call at batch 2, a fractional timestep (Euler passes those); SDXL's added conditions
    # with two different sizes and crops.
    cross = pipe.unet.config.cross_attention_dim
    sample = torch.randn(2, 4, lh, lw, generator=gen)
    context = torch.randn(2, 77, cross, generator=gen)
    added = None
    if xl:
        text_embeds = torch.randn(2, pipe.text_encoder_2.config.projection_dim, generator=gen)
        time_ids = torch.tensor([[height, width, 0, 0, height, width], [1024, 768, 16, 32, 512, 640]], dtype=torch.float32)
        added = {"text_embeds": text_embeds, "time_ids": time_ids}
        refs["unet.text_embeds"], refs["unet.time_ids"] = text_embeds, time_ids
    with torch.no_grad():
        out = pipe.unet(sample, torch.tensor(421.5), encoder_hidden_states=context, added_cond_kwargs=added).sample
    refs["unet.sample"], refs["unet.context"], refs["unet.out"] = sample, context, to_np(out)
    meta["unet_timestep"] = 421.5

    # VAE decoder: latents straight into decode (no scaling), as vae.decode does.
    latents = torch.randn(1, 4, lh, lw, generator=gen)
    with torch.no_grad():
        image = pipe.vae.decode(latents).sample
    refs["vae.latents"], refs["vae.image"] = latents, to_np(image)

    # Full generations from fixed latents.
    fixed = torch.randn(1, 4, lh, lw, generator=gen)
    refs["generate.latents"] = fixed
    steps = 4
    runs = []
    for sched_name, (cls, extra) in SCHEDULERS.items():
        for negative in (None, "blurry, low quality"):
            pipe.scheduler = cls.from_config(spec.get("scheduler", SD15_SCHEDULER), **extra)
            restore = patch_ancestral_noise(seed=0)
            with torch.no_grad():
                image = pipe(
                    prompt, negative_prompt=negative, num_inference_steps=steps, guidance_scale=7.5,
                    height=height, width=width, latents=fixed.clone(), output_type="np",
                ).images[0]
            restore()
            key = f"generate.{sched_name}.{'neg' if negative else 'noneg'}"
            refs[key] = torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))
            runs.append({"key": key, "scheduler": sched_name, "negative": negative})
    meta["generate"] = {"prompt": prompt, "steps": steps, "guidance": 7.5, "height": height, "width": width, "runs": runs}

    # A batch of two in one call (num_images_per_prompt=2): latents [2, ...], one prompt.
    batch_latents = SdBenchNormal(5).tensor((2, 4, lh, lw))
    pipe.scheduler = EulerDiscreteScheduler.from_config(spec.get("scheduler", SD15_SCHEDULER))
    with torch.no_grad():
        images = pipe(
            prompt, num_images_per_prompt=2, num_inference_steps=steps, guidance_scale=7.5,
            height=height, width=width, latents=batch_latents.clone(), output_type="np",
        ).images
    refs["batch.latents"] = batch_latents
    refs["batch.images"] = torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))
    meta["batch"] = {"scheduler": "euler", "size": 2}

    # VAE encoder and image-to-image from a committed picture (a PNG holds exactly these bytes).
    init = init_picture(height, width)
    from PIL import Image

    Image.fromarray(init).save(folder.parent / f"{name}.init.png")
    pixels = torch.from_numpy(init.astype(np.float32) / 255.0 * 2.0 - 1.0).permute(2, 0, 1)[None]
    with torch.no_grad():
        refs["vae_encode.mean"] = to_np(pipe.vae.encode(pixels).latent_dist.mode())
    img2img_class = StableDiffusionXLImg2ImgPipeline if xl else StableDiffusionImg2ImgPipeline
    options = {"add_watermarker": False} if xl else {"requires_safety_checker": False}
    img2img = img2img_class(**pipe.components, **options)
    img_steps, strength, seed = 5, 0.6, 42
    img_runs = []
    for sched_name in ("pndm", "ddim", "euler", "euler_a", "dpmpp_2m"):
        cls, extra = SCHEDULERS[sched_name]
        img2img.scheduler = cls.from_config(spec.get("scheduler", SD15_SCHEDULER), **extra)
        restore = patch_img2img_noise(seed)
        with torch.no_grad():
            image = img2img(
                prompt, image=Image.fromarray(init), strength=strength, num_inference_steps=img_steps,
                guidance_scale=7.5, output_type="np",
            ).images[0]
        restore()
        key = f"img2img.{sched_name}"
        refs[key] = torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))
        img_runs.append({"key": key, "scheduler": sched_name})
    meta["img2img"] = {"prompt": prompt, "steps": img_steps, "strength": strength, "seed": seed, "guidance": 7.5, "runs": img_runs}

    # Seeded latents: the engine's generator must give the same numbers.
    refs["noise.seed42"] = SdBenchNormal(42).tensor((1, 4, lh, lw))

    save_file({k: v.contiguous() for k, v in refs.items()}, str(folder.parent / f"{name}.reference.safetensors"))
    with open(folder.parent / f"{name}.reference.json", "w") as f:
        json.dump(meta, f, indent=2)


def patch_ancestral_noise(seed):
    """Make Euler-ancestral draw its per-step noise from the engine's generator."""
    import diffusers.schedulers.scheduling_euler_ancestral_discrete as module

    original = module.randn_tensor
    normal = SdBenchNormal(seed)

    def randn_tensor(shape, generator=None, device=None, dtype=None, **_):
        return normal.tensor(tuple(shape)).to(dtype=dtype or torch.float32)

    module.randn_tensor = randn_tensor

    def restore():
        module.randn_tensor = original

    return restore


def init_picture(height, width):
    """A deterministic RGB picture: smooth gradients plus a little texture, 8-bit."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    r = 128 + 100 * np.sin(x / width * 3.1 + 0.3)
    g = 128 + 90 * np.cos(y / height * 2.7)
    b = 60 + 150 * ((x + 2 * y) % 7) / 7
    return np.clip(np.stack([r, g, b], axis=-1), 0, 255).astype(np.uint8)


def patch_img2img_noise(seed):
    """Image-to-image as the engine runs it: the picture's latent distribution's mean (not a
    sample), and one of the engine's generators for the noise added to it, then for Euler-ancestral's
    step noise."""
    import diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion_img2img as sd
    import diffusers.pipelines.stable_diffusion_xl.pipeline_stable_diffusion_xl_img2img as xl
    import diffusers.schedulers.scheduling_euler_ancestral_discrete as ancestral

    normal = SdBenchNormal(seed)

    def randn_tensor(shape, generator=None, device=None, dtype=None, **_):
        return normal.tensor(tuple(shape)).to(dtype=dtype or torch.float32)

    def retrieve_latents(encoder_output, generator=None, sample_mode="sample"):
        return encoder_output.latent_dist.mode()

    saved = [(m, n, getattr(m, n)) for m in (sd, xl) for n in ("randn_tensor", "retrieve_latents")]
    saved.append((ancestral, "randn_tensor", ancestral.randn_tensor))
    for m in (sd, xl, ancestral):
        m.randn_tensor = randn_tensor
    for m in (sd, xl):
        m.retrieve_latents = retrieve_latents

    def restore():
        for m, n, v in saved:
            setattr(m, n, v)

    return restore


SCHEDULER_CLASSES = {cls.__name__: cls for cls, _ in SCHEDULERS.values()}


def add_noise_references():
    """Each scheduler's add_noise (the start of an img2img run) at steps 0 and 2 of a 4-step schedule,
    on SD1.5's and SD2.1's configs, from the engine's generator's numbers."""
    original = SdBenchNormal(11).tensor((1, 4, 2, 3))
    noise = SdBenchNormal(12).tensor((1, 4, 2, 3))
    cases = []
    for config_name, config in (("sd15", SD15_SCHEDULER), ("sd21", SD21_SCHEDULER)):
        for sched_name, (cls, extra) in SCHEDULERS.items():
            for index in (0, 2):
                s = cls.from_config(config, **extra)
                s.set_timesteps(4)
                if hasattr(s, "set_begin_index"):
                    s.set_begin_index(index)
                t = s.timesteps[index : index + 1]
                out = s.add_noise(original.clone(), noise.clone(), t)
                cases.append({
                    "config": config_name, "scheduler": sched_name, "steps": 4, "index": index,
                    "original": original.flatten().tolist(), "noise": noise.flatten().tolist(),
                    "shape": list(original.shape), "noisy": out.flatten().tolist(),
                })
    return cases


def scheduler_references():
    cases = []
    for sched_name, (cls, extra) in SCHEDULERS.items():
        for steps in (1, 4, 30, 50):
            s = cls.from_config(SD15_SCHEDULER, **extra)
            s.set_timesteps(steps)
            case = {
                "scheduler": sched_name,
                "steps": steps,
                "timesteps": [float(t) for t in s.timesteps],
                "init_noise_sigma": float(s.init_noise_sigma),
            }
            if hasattr(s, "sigmas"):
                case["sigmas"] = [float(x) for x in s.sigmas]
            cases.append(case)
    return cases


def vae_tiling_references():
    """tiny-sd's VAE with diffusers' tiling (enable_tiling: 16-pixel tiles, 8-latent tiles, a quarter
    overlap, linear blends) on inputs large enough for several tiles each way, with tiles of half
    that side (the minimal profile's), and without tiling, so a test can tell that tiling ran.
    Uses the committed tiny-sd VAE."""
    vae = AutoencoderKL.from_pretrained(OUT / "tiny-sd" / "vae").eval()
    latents = SdBenchNormal(21).tensor((1, 4, 20, 14))
    # An 8-bit picture (height 40, width 28, RGB), as the engine reads one, normalised as diffusers'
    # image processor does.
    rgb = ((torch.tanh(SdBenchNormal(22).tensor((40, 28, 3))) + 1) * 127.5).round().clamp(0, 255)
    pixels = (rgb / 255.0 * 2.0 - 1.0).permute(2, 0, 1).unsqueeze(0)
    refs = {"latents": latents, "rgb": rgb}
    for tiled in (False, True):
        if tiled:
            vae.enable_tiling()
        else:
            vae.disable_tiling()
        suffix = "tiled" if tiled else "plain"
        refs[f"image.{suffix}"] = vae.decode(latents).sample
        refs[f"mean.{suffix}"] = vae.encode(pixels).latent_dist.mode()
    # The minimal memory profile's tiles: half the VAE's own side (8 pixels, 4 latents), the
    # same algorithm.
    vae.enable_tiling()
    full_sample, full_latent = vae.tile_sample_min_size, vae.tile_latent_min_size
    vae.tile_sample_min_size, vae.tile_latent_min_size = full_sample // 2, full_latent // 2
    refs["image.half"] = vae.decode(latents).sample
    refs["mean.half"] = vae.encode(pixels).latent_dist.mode()
    vae.tile_sample_min_size, vae.tile_latent_min_size = full_sample, full_latent
    name = "tiny-sd-vae-tiling.reference"
    save_file({k: v.contiguous() for k, v in refs.items()}, OUT / f"{name}.safetensors")
    meta = {
        "vae": "tiny-sd/vae", "sample_size": vae.config.sample_size,
        "tile_latent_min_size": vae.tile_latent_min_size, "tile_overlap_factor": vae.tile_overlap_factor,
        "shapes": {k: list(v.shape) for k, v in refs.items()},
    }
    with open(OUT / f"{name}.json", "w") as f:
        json.dump(meta, f, indent=1)


def main(only):
    """Makes every fixture, or only the named ones (pipelines by name, "schedulers", "tokenizer",
    "vae-tiling"),
    leaving the others as they are."""
    torch.set_grad_enabled(False)
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = lambda name: not only or name in only
    if wanted("tokenizer"):
        # The full SD1.5 tokenizer (49408 tokens), for tokenizer parity.
        shutil.rmtree(OUT / "clip-tokenizer", ignore_errors=True)
        write_tokenizer(OUT / "clip-tokenizer", 49152 - 256 - 2)
        with open(OUT / "tokenizer_cases.json", "w", encoding="utf-8") as f:
            json.dump(tokenizer_cases(OUT / "clip-tokenizer"), f, ensure_ascii=False, indent=1)
    if wanted("schedulers"):
        with open(OUT / "scheduler_cases.json", "w") as f:
            json.dump(scheduler_references(), f)
        with open(OUT / "scheduler_add_noise.json", "w") as f:
            json.dump(add_noise_references(), f)
    for name, spec in TINY.items():
        if not wanted(name):
            continue
        folder = OUT / name
        shutil.rmtree(folder, ignore_errors=True)
        pipe = build_pipeline(name, spec, folder)
        make_references(name, spec, pipe, folder)
    if wanted("vae-tiling"):
        vae_tiling_references()
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"fixtures: {total / 1e6:.2f} MB in {OUT}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
