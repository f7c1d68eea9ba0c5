#!/usr/bin/env python3
"""Make the FLUX.2 [klein] reference fixtures the engine's parity tests check against.

Builds a tiny random-weight `Flux2KleinPipeline` with diffusers and saves it in the Hub repository's
layout (black-forest-labs/FLUX.2-klein-4B): bf16 weights as that repository has them, the text
encoder in shards with their index, a small byte-level BPE tokenizer with Qwen's pre-tokenizer,
special tokens and Qwen3's chat template. The pipeline is then read back in float32 and records:
tokenizer ids and masks (a prompt cut at 512 tokens and some that are not), the stacked text-encoder
hidden states, one transformer call, one VAE decode, the flow-matching schedules, and whole
generations (2 and 4 steps, square and not) from the engine's seeded noise.

`--reference-images` reads the saved pipeline back instead of building it and writes only
tiny-flux2-klein-references.reference.* (and oriented-6.jpg, a JPEG with EXIF orientation 6): reference-image conditioning (pictures cropped to the token
grid, encoded, normalised and appended as tokens with T = 10, 20, ...) as one encoded reference's
tokens and whole generations with one and two references, and PIL's Lanczos resampling (which the
pipeline applies to pictures over 1024x1024 pixels) on small sizes, with the area rule's sizes.

Usage (torch and diffusers are needed only here, never by the tests):
    ~/.cache/sdbench/venv/bin/pip install torch diffusers transformers safetensors numpy
    ~/.cache/sdbench/venv/bin/python scripts/make_flux2_fixtures.py

Output: crates/diffusion/tests/fixtures/tiny-flux2-klein/ and tiny-flux2-klein.reference.* (committed).
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

import diffusers
from diffusers import (
    AutoencoderKLFlux2,
    FlowMatchEulerDiscreteScheduler,
    Flux2KleinPipeline,
    Flux2Transformer2DModel,
)
from diffusers.pipelines.flux2.pipeline_flux2_klein import compute_empirical_mu
from transformers import Qwen2Tokenizer, Qwen3Config, Qwen3ForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import SdBenchNormal  # noqa: E402  (the engine's documented noise)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "crates" / "diffusion" / "tests" / "fixtures"
NAME = "tiny-flux2-klein"

# Qwen2/Qwen3's pre-tokenizer pattern (transformers' PRETOKENIZE_REGEX for Qwen2Tokenizer).
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# Qwen3's chat template, the one FLUX.2 klein's tokenizer folder carries (copied from huggingface/trl,
# trl/chat_templates/qwen3.jinja, which TRL compares byte for byte with Qwen3 models' templates).
# `apply_chat_template` renders it below; the engine renders its one case (a single user message,
# generation prompt, thinking off) itself, and the tokenizer references check that the texts agree.
QWEN3_CHAT_TEMPLATE = (Path(__file__).resolve().parent / "qwen3_chat_template.jinja").read_text()

CORPUS = [
    "a photograph of an astronaut riding a horse on the moon",
    "A cat holding a sign that says hello world, studio lighting, 35mm",
    "an oil painting of a lighthouse in a storm, waves crashing, dramatic sky",
    "Ein Hund läuft über die Wiese; 日本の桜 — café crème, naïve résumé",
    "user assistant system think the of and a in with on at for is are",
    "1024x1024 photo, 4 steps, seed 42: red, green, blue! (ok?) [yes] {no} <tag> #1 @you",
]


def make_tokenizer(folder):
    """A byte-level BPE trained on a small corpus, wrapped as Qwen2Tokenizer (Qwen's pre-tokenizer,
    NFC, byte-level decoder), with Qwen3's special and added tokens and chat template."""
    trainer_tok = Tokenizer(models.BPE())
    trainer_tok.normalizer = normalizers.NFC()
    trainer_tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=420,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,
    )
    trainer_tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    spec = json.loads(trainer_tok.to_str())
    vocab = spec["model"]["vocab"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in spec["model"]["merges"]]
    vocab["<|endoftext|>"] = len(vocab)
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    # Qwen3's reasoning markers are added tokens, not special ones.
    tok.add_tokens(["<think>", "</think>"])
    tok.chat_template = QWEN3_CHAT_TEMPLATE
    tok.model_max_length = 131072
    tok.save_pretrained(folder / "tokenizer")
    return tok


TEXT_ENCODER = dict(
    hidden_size=32,
    intermediate_size=48,
    # The pipeline stacks hidden states 9, 18 and 27: at least 28 layers.
    num_hidden_layers=28,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=1024,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
    attention_bias=False,
)

TRANSFORMER = dict(
    patch_size=1,
    in_channels=128,
    num_layers=2,
    num_single_layers=2,
    attention_head_dim=16,
    num_attention_heads=2,
    joint_attention_dim=3 * 32,
    timestep_guidance_channels=256,
    mlp_ratio=3.0,
    axes_dims_rope=(4, 4, 4, 4),
    rope_theta=2000,
    eps=1e-6,
    guidance_embeds=False,
)

VAE = dict(
    block_out_channels=(16, 32, 32),
    down_block_types=("DownEncoderBlock2D",) * 3,
    up_block_types=("UpDecoderBlock2D",) * 3,
    layers_per_block=1,
    latent_channels=32,
    norm_num_groups=8,
    sample_size=64,
)

# black-forest-labs/FLUX.2-klein-4B's scheduler settings (FLUX.1's flow-matching configuration).
SCHEDULER = dict(
    num_train_timesteps=1000,
    shift=3.0,
    use_dynamic_shifting=True,
    base_shift=0.5,
    max_shift=1.15,
    base_image_seq_len=256,
    max_image_seq_len=4096,
    time_shift_type="exponential",
)


def build(folder):
    torch.manual_seed(0)
    tok = make_tokenizer(folder)
    text_encoder = Qwen3ForCausalLM(
        Qwen3Config(vocab_size=len(tok), pad_token_id=tok.pad_token_id, **TEXT_ENCODER)
    ).eval()
    transformer = Flux2Transformer2DModel(**TRANSFORMER).eval()
    vae = AutoencoderKLFlux2(**VAE).eval()
    with torch.no_grad():
        # Random weights are not enough where the model multiplies by (1 + scale) and adds a gated
        # update: give every parameter a spread of order one so that errors show.
        for module in (text_encoder, transformer, vae):
            for p in module.parameters():
                p.normal_(0.0, 0.2 if p.ndim > 1 else 0.5)
        channels = vae.bn.running_mean.shape[0]
        vae.bn.running_mean.copy_(torch.randn(channels) * 0.5)
        vae.bn.running_var.copy_(torch.rand(channels) * 1.5 + 0.5)
    scheduler = FlowMatchEulerDiscreteScheduler(**SCHEDULER)
    pipe = Flux2KleinPipeline(
        scheduler=scheduler,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tok,
        transformer=transformer,
        is_distilled=True,
    )
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    pipe.to(torch.bfloat16)
    # The Hub repository's layout: bf16 files, the text encoder sharded with an index.
    pipe.save_pretrained(folder, safe_serialization=True)
    text_encoder.save_pretrained(folder / "text_encoder", safe_serialization=True, max_shard_size="100KB")
    for stale in (folder / "text_encoder").glob("model.safetensors"):
        stale.unlink()
    make_tokenizer(folder)
    return Flux2KleinPipeline.from_pretrained(folder, torch_dtype=torch.float32)


LONG_PROMPT = " ".join(
    f"a {c} {n} with {m} details," for c in ("red", "green", "blue", "golden", "silver") for n in ("house", "tree", "river", "mountain", "bird", "ship", "city", "garden") for m in ("fine", "bold", "soft", "sharp")
)

TOKENIZER_PROMPTS = {
    "short": "a photograph of an astronaut riding a horse",
    "empty": "",
    "unicode": "Ein Hund läuft über die Wiese — 日本の桜, café",
    "long": LONG_PROMPT,
}


def to_np(t):
    return t.detach().to(torch.float32).cpu().contiguous()


def generated(pipe, prompt, steps, height, width, seed, **kwargs):
    """One unguided generation from the engine's seeded noise, as [H, W, 3] float32."""
    # Patched latent grid: the size over 8 (the tiny VAE's factor 4, then 2x2 patches).
    noise = SdBenchNormal(seed).tensor((1, 128, height // 8, width // 8))
    with torch.no_grad():
        result = pipe(
            prompt=prompt,
            height=height,
            width=width,
            num_inference_steps=steps,
            guidance_scale=1.0,
            latents=noise,
            output_type="np",
            **kwargs,
        ).images[0]
    return torch.from_numpy(np.ascontiguousarray(result, dtype=np.float32))


def pattern_image(width, height):
    """A picture with detail at every scale, made the same way by the engine's parity code
    (`parity::pattern_picture`)."""
    y, x = np.mgrid[0:height, 0:width]
    channels = [((x * 37 + y * 91 + c * 53) ^ (x * y)) % 256 for c in range(3)]
    return np.stack(channels, axis=-1).astype(np.uint8)


def reference_images():
    """Reference-image conditioning and the resampling its preparation uses."""
    from PIL import Image

    pipe = Flux2KleinPipeline.from_pretrained(OUT / NAME, torch_dtype=torch.float32)
    refs = {}
    meta = {"diffusers_version": diffusers.__version__, "torch_version": torch.__version__}

    # PIL's Lanczos on small sizes, down and up (the pipeline resizes only pictures over 1024x1024
    # pixels, too large to commit; the resampler is the same at every size).
    meta["resample"] = []
    for key, (w, h), (ow, oh) in (("down", (70, 50), (45, 33)), ("up", (20, 15), (37, 29)), ("wide", (64, 40), (31, 40))):
        out = np.asarray(Image.fromarray(pattern_image(w, h)).resize((ow, oh), Image.Resampling.LANCZOS))
        refs[f"resample.{key}"] = torch.from_numpy(out.astype(np.float32))
        meta["resample"].append({"key": f"resample.{key}", "input": [w, h], "output": [ow, oh]})
    # The area rule: the size a picture over 1024x1024 pixels is resized to.
    from diffusers.pipelines.flux2.image_processor import Flux2ImageProcessor
    meta["target_area"] = []
    for w, h in ((1100, 1000), (2000, 600), (1025, 1024), (4000, 3000), (1030, 1030)):
        resized = Flux2ImageProcessor._resize_to_target_area(Image.new("RGB", (w, h)), 1024 * 1024)
        meta["target_area"].append({"input": [w, h], "output": list(resized.size)})

    # One reference's tokens: 75x66 is cropped to 72x64 (multiples of 8 for the tiny VAE's factor 4
    # and 2x2 patches), encoded, patched, normalised and packed; positions (10, row, column, 0).
    picture = Image.fromarray(pattern_image(75, 66))
    processed = pipe.image_processor.preprocess(picture, height=64, width=72, resize_mode="crop")
    with torch.no_grad():
        tokens, ids = pipe.prepare_image_latents([processed], 1, None, "cpu", torch.float32)
    refs["reference.tokens"] = to_np(tokens[0])
    refs["reference.ids"] = to_np(ids[0].to(torch.float32))
    meta["reference"] = {"picture": [75, 66], "prepared": [72, 64]}

    # Whole generations conditioned on one and on two pictures.
    meta["generate"] = []
    for key, prompt_key, pictures, steps, height, width, seed in (
        ("one2", "short", [(75, 66)], 2, 32, 48, 51),
        ("two2", "unicode", [(64, 64), (66, 81)], 2, 40, 32, 52),
    ):
        images = [Image.fromarray(pattern_image(w, h)) for w, h in pictures]
        prompt = TOKENIZER_PROMPTS[prompt_key]
        refs[f"generate.{key}"] = generated(pipe, prompt, steps, height, width, seed, image=images)
        meta["generate"].append(
            {
                "key": f"generate.{key}",
                "prompt": TOKENIZER_PROMPTS[prompt_key],
                "pictures": [list(p) for p in pictures],
                "steps": steps,
                "height": height,
                "width": width,
                "seed": seed,
                "guidance": 1.0,
            }
        )

    # f16: a bound of the fixture's own, as for the pipeline's text-to-image references.
    pipe16 = Flux2KleinPipeline.from_pretrained(OUT / NAME, torch_dtype=torch.float16)
    worst = 0.0
    for run in meta["generate"]:
        images = [Image.fromarray(pattern_image(w, h)) for w, h in run["pictures"]]
        noise = SdBenchNormal(run["seed"]).tensor((1, 128, run["height"] // 8, run["width"] // 8))
        with torch.no_grad():
            image = pipe16(image=images, prompt=run["prompt"], height=run["height"], width=run["width"],
                           num_inference_steps=run["steps"], guidance_scale=1.0, latents=noise.to(torch.float16),
                           output_type="np").images[0]
        error = float(np.abs(image.astype(np.float32) - refs[run["key"]].numpy()).max())
        run["diffusers_f16_error"] = error
        worst = max(worst, error)
    meta["f16_tolerance"] = float(f"{max(2 * worst, 3e-2):.2g}")

    # A JPEG phone photos are like: stored sideways with EXIF orientation 6 (turn 90 degrees
    # clockwise). Stored 16x8, red on the left half and blue on the right; upright it is 8x16, red
    # on top. The engine's picture reader turns it as `ImageOps.exif_transpose` does.
    stored = np.zeros((8, 16, 3), np.uint8)
    stored[:, :8, 0] = 255
    stored[:, 8:, 2] = 255
    photo = Image.fromarray(stored)
    exif = photo.getexif()
    exif[0x0112] = 6
    photo.save(OUT / "oriented-6.jpg", quality=95, exif=exif.tobytes())

    name = f"{NAME}-references"
    save_file({k: v.contiguous() for k, v in refs.items()}, str(OUT / f"{name}.reference.safetensors"))
    (OUT / f"{name}.reference.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    print(f"references: {(OUT / f'{name}.reference.safetensors').stat().st_size / 1024:.0f} KiB")


def tokenizer_references(tokenizer, thinking, meta, refs):
    """Each of TOKENIZER_PROMPTS in Qwen3's chat template (`enable_thinking=thinking`): the text in
    `meta["tokenizer"]`, its ids and mask at 512 tokens in `refs`."""
    meta["tokenizer"] = {}
    for key, prompt in TOKENIZER_PROMPTS.items():
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True, enable_thinking=thinking
        )
        inputs = tokenizer(text, padding="max_length", truncation=True, max_length=512, return_tensors="pt")
        full = len(tokenizer(text)["input_ids"])
        meta["tokenizer"][key] = {"prompt": prompt, "templated": text, "untruncated_tokens": full}
        refs[f"tokens.{key}.input_ids"] = inputs["input_ids"][0].to(torch.float32)
        refs[f"tokens.{key}.attention_mask"] = inputs["attention_mask"][0].to(torch.float32)
    assert meta["tokenizer"]["long"]["untruncated_tokens"] > 512, "the long prompt must be cut"


def main():
    if "--reference-images" in sys.argv[1:]:
        return reference_images()
    folder = OUT / NAME
    pipe = build(folder)
    refs = {}
    meta = {"diffusers_version": diffusers.__version__, "torch_version": torch.__version__}

    # Tokenizer: the chat-templated text, its ids and mask at 512 tokens.
    tokenizer_references(pipe.tokenizer, False, meta, refs)

    # Text encoder: the stacked hidden states (9, 18, 27) the transformer is conditioned on.
    with torch.no_grad():
        for key in ("short", "long"):
            embeds, _ = pipe.encode_prompt(TOKENIZER_PROMPTS[key], device="cpu")
            refs[f"prompt_embeds.{key}"] = to_np(embeds[0])

    # One transformer call on packed latents of a 32x48 (h x w) image.
    lh, lw = 4, 6  # the patched latent grid of a 32x48 image (the tiny VAE's factor 4, then 2x2 patches)
    noise = SdBenchNormal(11).tensor((1, 128, lh, lw))
    latents, latent_ids = pipe.prepare_latents(1, 32, 32, 48, torch.float32, "cpu", None, latents=noise)
    embeds, text_ids = pipe.encode_prompt(TOKENIZER_PROMPTS["short"], device="cpu")
    timestep = 0.7
    with torch.no_grad():
        out = pipe.transformer(
            hidden_states=latents,
            timestep=torch.tensor([timestep]),
            guidance=None,
            encoder_hidden_states=embeds,
            txt_ids=text_ids,
            img_ids=latent_ids,
            return_dict=False,
        )[0]
    refs["transformer.hidden_states"] = to_np(latents[0])
    refs["transformer.sample"] = to_np(out[0])
    meta["transformer"] = {"timestep": timestep, "prompt": "short", "grid": [lh, lw]}

    # VAE decode of unpatched latents: [1, 32, 2*lh, 2*lw] -> [1, 3, 32, 48].
    z = SdBenchNormal(12).tensor((1, 32, 2 * lh, 2 * lw))
    with torch.no_grad():
        image = pipe.vae.decode(z, return_dict=False)[0]
    refs["vae.latents"] = to_np(z[0])
    refs["vae.decoded"] = to_np(image[0])
    refs["vae.bn_mean"] = to_np(pipe.vae.bn.running_mean)
    refs["vae.bn_var"] = to_np(pipe.vae.bn.running_var)

    # Schedules: sigmas and timesteps the pipeline sets for these step counts and token counts.
    meta["schedules"] = []
    for steps, tokens in ((2, 4), (4, 6), (4, 4096), (30, 1024), (4, 5000)):
        sched = FlowMatchEulerDiscreteScheduler.from_config(pipe.scheduler.config)
        mu = compute_empirical_mu(tokens, steps)
        sched.set_timesteps(steps, sigmas=np.linspace(1.0, 1 / steps, steps), mu=mu)
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
    meta["generate"] = []
    for key, prompt_key, steps, height, width, seed in (
        ("square2", "short", 2, 32, 32, 42),
        ("wide4", "long", 4, 32, 48, 43),
        ("tall4", "unicode", 4, 48, 32, 44),
    ):
        refs[f"generate.{key}"] = generated(pipe, TOKENIZER_PROMPTS[prompt_key], steps, height, width, seed)
        meta["generate"].append(
            {
                "key": f"generate.{key}",
                "prompt": TOKENIZER_PROMPTS[prompt_key],
                "steps": steps,
                "height": height,
                "width": width,
                "seed": seed,
                "guidance": 1.0,
            }
        )

    # A model that is not step-distilled (FLUX.2 klein base) guides each step with the empty
    # prompt: the same weights with `is_distilled` false, guidance 4.
    pipe.register_to_config(is_distilled=False)
    run = {"key": "generate_cfg.square2", "prompt": TOKENIZER_PROMPTS["short"], "steps": 2, "height": 32,
           "width": 32, "seed": 46, "guidance": 4.0}
    noise = SdBenchNormal(run["seed"]).tensor((1, 128, 4, 4))
    with torch.no_grad():
        image = pipe(prompt=run["prompt"], height=32, width=32, num_inference_steps=2, guidance_scale=4.0,
                     latents=noise, output_type="np").images[0]
    refs[run["key"]] = torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))
    meta["generate_cfg"] = [run]
    pipe.register_to_config(is_distilled=True)

    # f16: diffusers' own f16 run of each generation differs from its f32 one (28 text-encoder
    # layers and the transformer in half precision). The engine's f16 images may differ from the
    # f32 references by twice the most diffusers' own f16 images do.
    pipe16 = Flux2KleinPipeline.from_pretrained(folder, torch_dtype=torch.float16)
    worst = 0.0
    for run in meta["generate"]:
        noise = SdBenchNormal(run["seed"]).tensor((1, 128, run["height"] // 8, run["width"] // 8))
        with torch.no_grad():
            image = pipe16(
                prompt=run["prompt"],
                height=run["height"],
                width=run["width"],
                num_inference_steps=run["steps"],
                guidance_scale=1.0,
                latents=noise.to(torch.float16),
                output_type="np",
            ).images[0]
        error = float(np.abs(image.astype(np.float32) - refs[run["key"]].numpy()).max())
        run["diffusers_f16_error"] = error
        worst = max(worst, error)
    meta["f16_tolerance"] = float(f"{max(2 * worst, 3e-2):.2g}")

    save_file({k: v.contiguous() for k, v in refs.items()}, str(OUT / f"{NAME}.reference.safetensors"))
    (OUT / f"{NAME}.reference.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"{folder}: {size / 1024:.0f} KiB; references: {(OUT / f'{NAME}.reference.safetensors').stat().st_size / 1024:.0f} KiB")
    reference_images()


if __name__ == "__main__":
    main()
