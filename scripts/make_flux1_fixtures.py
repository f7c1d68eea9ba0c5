#!/usr/bin/env python3
"""Make the FLUX.1 reference fixtures the engine's parity tests check against.

Builds two tiny random-weight `FluxPipeline`s with diffusers 0.42, each saved in the layout of the
Hub repositories black-forest-labs/FLUX.1-schnell and FLUX.1-dev: a CLIP text encoder without
projection (`text_encoder/`, `CLIPTextModel`, whose pooled output is all the transformer reads of
it), a T5 v1.1 encoder and its tokenizer (`text_encoder_2/`, `tokenizer_2/`, as
scripts/make_t5_fixtures.py makes them), a `FluxTransformer2DModel` (double-stream, then
single-stream blocks, RoPE over (t, y, x) ids), a 16-channel `AutoencoderKL` with FLUX.1's
scaling and shift factors and no quant convolutions, and the flow-matching scheduler:

- `tiny-flux1-schnell`: no guidance embedding, a static shift of 1 (schnell's scheduler), T5 over
  256 tokens (the length schnell is run with);
- `tiny-flux1-dev`: a guidance embedding fed with the guidance scale, dynamic shifting (dev's
  scheduler), T5 over 512 tokens (the pipeline's default).

Each pipeline is then read back in float32 and records:

- each prompt's conditioning as `encode_prompt` makes it (T5's sequence; CLIP's pooled output): a
  short prompt, the empty one, a unicode one, and one past CLIP's 77 and T5's length;
- one transformer call on a batch of two non-square latents with two prompts' conditioning (and
  a guidance scale for dev), in the unpacked [N, 16, h, w] form;
- one VAE decode (of latents already unscaled and shifted);
- the schedules the pipeline sets (sigmas linspace(1, 1/n, n) shifted by mu from the image tokens);
- whole generations from the engine's seeded noise (diffusers' latents given packed): square and
  non-square, the long prompt, for dev several guidance scales, and true CFG (`true_cfg_scale`)
  with a negative prompt and with the empty one.

Each f32 bound is 8 times how far diffusers' f32 result lies from the same computation in float64
(as scripts/make_sd3_fixtures.py derives its); the f16 bound is twice the worst difference of
diffusers' own f16 generations from its f32 ones.

Usage (torch and diffusers are needed only here, never by the tests):
    ~/.cache/sdbench/venv/bin/pip install torch diffusers==0.42.0 transformers safetensors numpy
    ~/.cache/sdbench/venv/bin/python scripts/make_flux1_fixtures.py

The dev-like transformer is also written as Black Forest Labs' single file names it
(`weight-formats/tiny-flux1-dev.bfl-transformer.safetensors`: `double_blocks.N.img_attn.qkv` fused,
`single_blocks.N.linear1` with q, k, v and the MLP's input fused, the final modulation's halves
swapped, norms as `.scale`), checked by converting it back with diffusers' own
`convert_flux_transformer_checkpoint_to_diffusers`; and the same in ComfyUI's scaled FP8
(`...bfl-transformer.fp8.safetensors`, as `flux1-dev-fp8` is kept) and as a GGUF as city96's FLUX.1
GGUFs are written (`...bfl-transformer.q8_0.gguf`: Black Forest Labs' names, `general.architecture`
`flux`, each matrix whose rows are whole 32-value blocks in Q8_0, the rest in F32), each with
diffusers' conversion of its dequantized values (`...fp8.reference.safetensors`; for the GGUF only
the tensors Q8_0 changed, `...q8_0.reference.safetensors`).

Output: crates/diffusion/tests/fixtures/tiny-flux1-{schnell,dev}/ and their .reference.* files.
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

import diffusers
from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel
from diffusers.pipelines.flux.pipeline_flux import calculate_shift
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer, T5Config, T5EncoderModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import SdBenchNormal  # noqa: E402  (the engine's documented noise)
import make_t5_fixtures  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "crates" / "diffusion" / "tests" / "fixtures"

# CLIP-L at a tiny width: its pooled output (12) is the transformer's pooled projection input.
CLIP = dict(hidden_size=12, intermediate_size=24, num_hidden_layers=2, num_attention_heads=3,
            max_position_embeddings=77, hidden_act="quick_gelu", projection_dim=12)


def transformer_config(guidance_embeds):
    # 2 heads of 12 (RoPE axes 2 + 4 + 6: each axis its own size, as FLUX.1's 16 + 56 + 56 of
    # 128 are not all one), two double-stream and two single-stream blocks, T5's width as the
    # text width.
    return dict(
        patch_size=1,
        in_channels=64,
        num_layers=2,
        num_single_layers=2,
        attention_head_dim=12,
        num_attention_heads=2,
        joint_attention_dim=make_t5_fixtures.CONFIG["d_model"],
        pooled_projection_dim=CLIP["hidden_size"],
        guidance_embeds=guidance_embeds,
        axes_dims_rope=(2, 4, 6),
    )


# FLUX.1's VAE: 16 latent channels, its scaling and shift factors, no quant convolutions; factor 4.
VAE = dict(
    block_out_channels=(8, 8, 16),
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

# black-forest-labs/FLUX.1-schnell's and FLUX.1-dev's scheduler configs.
SCHEDULERS = {
    "schnell": dict(num_train_timesteps=1000, shift=1.0, use_dynamic_shifting=False, base_shift=0.5,
                    max_shift=1.15, base_image_seq_len=256, max_image_seq_len=4096),
    "dev": dict(num_train_timesteps=1000, shift=3.0, use_dynamic_shifting=True, base_shift=0.5,
                max_shift=1.15, base_image_seq_len=256, max_image_seq_len=4096),
}

# T5's length: 256 for schnell, 512 (the pipeline's default) for dev.
T5_TOKENS = {"schnell": 256, "dev": 512}

PROMPTS = {
    "short": "a photograph of an astronaut riding a horse",
    "empty": "",
    "unicode": "Café in Tōkyō — 東京の夜, naïve ✨",
    # Past CLIP's 77 tokens and T5's 256 (and 512).
    "long": " ".join([make_t5_fixtures.PROMPTS["long"]] * 2),
}


def to_np(t):
    return t.detach().to(torch.float32).cpu().contiguous()


def build(folder, variant):
    torch.manual_seed(0 if variant == "schnell" else 1)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    # The CLIP tokenizer of the SD fixtures (CLIP's BPE with 700 merges).
    shutil.copytree(OUT / "tiny-sdxl" / "tokenizer", folder / "tokenizer")
    tokenizer = CLIPTokenizer.from_pretrained(folder / "tokenizer")
    vocab = len(tokenizer)
    ids = dict(vocab_size=vocab, bos_token_id=vocab - 2, eos_token_id=vocab - 1, pad_token_id=vocab - 1)
    text_encoder = CLIPTextModel(CLIPTextConfig(**ids, **CLIP)).eval()
    tokenizer_2 = make_t5_fixtures.make_tokenizer(folder / "tokenizer_2")
    text_encoder_2 = T5EncoderModel(T5Config(vocab_size=len(tokenizer_2) + 5, **make_t5_fixtures.CONFIG)).eval()
    transformer = FluxTransformer2DModel(**transformer_config(variant == "dev")).eval()
    vae = AutoencoderKL(**VAE).eval()
    with torch.no_grad():
        # Random weights with a spread of order one, so that errors in the modulations (1 +
        # scale, gates) show; the text encoders' norms about 1.
        for module in (text_encoder, text_encoder_2, transformer, vae):
            for name, p in module.named_parameters():
                if "norm" in name and p.ndim == 1 and module is not transformer:
                    p.normal_(1.0, 0.2)
                else:
                    p.normal_(0.0, 0.2 if p.ndim > 1 else 0.5)
        # Decoded pictures mostly inside [-1, 1], so that few pixels are clipped where a
        # difference would hide.
        vae.decoder.conv_out.weight.mul_(0.12)
        vae.decoder.conv_out.bias.mul_(0.12)
    pipe = FluxPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(**SCHEDULERS[variant]),
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        text_encoder_2=text_encoder_2,
        tokenizer_2=tokenizer_2,
        transformer=transformer,
    )
    pipe.save_pretrained(folder, safe_serialization=True)
    # The Hub repositories have no tokenizer.json for the CLIP tokenizer; neither does the fixture.
    (folder / "tokenizer" / "tokenizer.json").unlink(missing_ok=True)
    return load(folder, torch.float32)


def load(folder, dtype):
    pipe = FluxPipeline.from_pretrained(folder, torch_dtype=dtype)
    # diffusers loads some parts in float32 when asked for float64.
    return pipe.to(dtype)


def latent_noise(seed, height, width):
    """The engine's seeded noise as unpacked latents: [1, 16, H/4, W/4]."""
    return SdBenchNormal(seed).tensor((1, 16, height // 4, width // 4))


def pack(latents):
    n, c, h, w = latents.shape
    return FluxPipeline._pack_latents(latents, n, c, h, w)


def unpack(tokens, h, w):
    """[N, (h/2)(w/2), 64] -> [N, 16, h, w] (latent pixels)."""
    n = tokens.shape[0]
    return tokens.view(n, h // 2, w // 2, 16, 2, 2).permute(0, 3, 1, 4, 2, 5).reshape(n, 16, h, w)


def generated(pipe, run, tokens, dtype=torch.float32):
    """One generation of `run` from the engine's seeded noise, as [H, W, 3] float32."""
    noise = pack(latent_noise(run["seed"], run["height"], run["width"]).to(dtype))
    # True CFG runs with `true_cfg_scale` above 1 and a negative prompt that is not None (the
    # empty one included).
    true_cfg = run.get("true_cfg_scale")
    extra = dict(negative_prompt=run["negative_prompt"], true_cfg_scale=true_cfg) if true_cfg else {}
    with torch.no_grad():
        image = pipe(
            prompt=run["prompt"],
            height=run["height"],
            width=run["width"],
            num_inference_steps=run["steps"],
            guidance_scale=run["guidance"],
            latents=noise,
            max_sequence_length=tokens,
            output_type="np",
            **extra,
        ).images[0]
    return torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))


def bound(rounding):
    return float(f"{8 * max(rounding, 1e-7):.2g}")


def component_calls(pipe, tokens, guidance):
    """Each component call's output, keyed as the references name them."""
    out = {}
    with torch.no_grad():
        for key, prompt in PROMPTS.items():
            embeds, pooled, _ = pipe.encode_prompt(prompt, None, max_sequence_length=tokens)
            out[f"prompt_embeds.{key}"] = embeds[0]
            out[f"pooled.{key}"] = pooled[0]
        embeds, pooled = [], []
        for key in ("short", "unicode"):
            e, p, text_ids = pipe.encode_prompt(PROMPTS[key], None, max_sequence_length=tokens)
            embeds.append(e)
            pooled.append(p)
        dtype = pipe.transformer.dtype
        h, w = 8, 12
        latents = torch.cat([latent_noise(21, 4 * h, 4 * w), latent_noise(22, 4 * h, 4 * w)]).to(dtype)
        image_ids = FluxPipeline._prepare_latent_image_ids(2, h // 2, w // 2, latents.device, dtype)
        sample = pipe.transformer(
            hidden_states=pack(latents),
            timestep=torch.tensor([0.7, 0.7], dtype=dtype),
            guidance=torch.tensor([guidance, guidance], dtype=torch.float32) if guidance else None,
            pooled_projections=torch.cat(pooled),
            encoder_hidden_states=torch.cat(embeds),
            txt_ids=text_ids,
            img_ids=image_ids,
            return_dict=False,
        )[0]
        out["transformer.latents"] = latents
        out["transformer.sample"] = unpack(sample, h, w)
        z = SdBenchNormal(12).tensor((1, 16, 8, 12)).to(dtype)
        out["vae.latents"] = z[0]
        out["vae.decoded"] = pipe.vae.decode(z, return_dict=False)[0][0]
    return out


def make(variant):
    name = f"tiny-flux1-{variant}"
    folder = OUT / name
    tokens = T5_TOKENS[variant]
    guidance = 4.0 if variant == "dev" else None
    pipe = build(folder, variant)
    refs = {}
    meta = {
        "diffusers_version": diffusers.__version__,
        "torch_version": torch.__version__,
        "prompts": PROMPTS,
        "t5_tokens": tokens,
    }

    # Component calls, each with its float64 rounding.
    calls = component_calls(pipe, tokens, guidance)
    calls64 = component_calls(load(folder, torch.float64), tokens, guidance)
    meta["component_rounding"], meta["component_tolerance"] = {}, {}
    for key, value in calls.items():
        refs[key] = to_np(value)
        if key.endswith(".latents"):
            continue
        rounding = float((value.double() - calls64[key]).abs().max())
        meta["component_rounding"][key] = rounding
        meta["component_tolerance"][key] = bound(rounding)
    meta["transformer"] = {"timestep": 0.7, "prompts": ["short", "unicode"], "latent_hw": [8, 12], "guidance": guidance}

    # Schedules as the pipeline sets them: sigmas linspace(1, 1/n, n), mu from the image tokens.
    meta["schedules"] = []
    for steps, image_tokens in ((1, 16), (2, 24), (4, 4096), (28, 1024), (50, 4096)):
        sched = FlowMatchEulerDiscreteScheduler.from_config(pipe.scheduler.config)
        mu = calculate_shift(image_tokens, 256, 4096, 0.5, 1.15)
        sched.set_timesteps(sigmas=np.linspace(1.0, 1 / steps, steps), mu=mu)
        meta["schedules"].append(
            {
                "steps": steps,
                "image_tokens": image_tokens,
                "sigmas": [float(s) for s in sched.sigmas],
                "timesteps": [float(t) for t in sched.timesteps],
            }
        )

    if variant == "schnell":
        runs = [
            # (key, prompt, negative, steps, height, width, seed, guidance: ignored without an
            # embedding, true CFG scale)
            ("square2", "short", None, 2, 32, 32, 42, 0.0, None),
            ("wide3", "unicode", None, 3, 32, 48, 43, 3.5, None),
            ("long2", "long", None, 2, 32, 32, 44, 0.0, None),
            ("true_cfg_square2", "short", "unicode", 2, 32, 32, 45, 0.0, 3.0),
        ]
    else:
        runs = [
            ("square2", "short", None, 2, 32, 32, 52, 3.5, None),
            ("tall3", "unicode", None, 3, 48, 32, 53, 1.0, None),
            ("long2", "long", None, 2, 32, 32, 54, 7.0, None),
            ("true_cfg_wide2", "unicode", "short", 2, 32, 48, 55, 3.5, 4.0),
            # The empty negative prompt: diffusers runs true CFG on it (it is not None).
            ("true_cfg_empty_negative2", "short", "empty", 2, 32, 32, 56, 2.0, 1.5),
        ]
    meta["generate"] = []
    for key, prompt, negative, steps, height, width, seed, scale, true_cfg in runs:
        run = {
            "key": f"generate.{key}",
            "prompt": PROMPTS[prompt],
            "negative_prompt": PROMPTS[negative] if negative else "",
            "steps": steps,
            "height": height,
            "width": width,
            "seed": seed,
            "guidance": scale,
        }
        if true_cfg:
            run["true_cfg_scale"] = true_cfg
        refs[run["key"]] = generated(pipe, run, tokens)
        meta["generate"].append(run)

    # f32 rounding of each generation against float64; f16 against f32.
    pipe64 = load(folder, torch.float64)
    pipe16 = load(folder, torch.float16)
    meta["f32_rounding"] = {}
    worst16 = 0.0
    for run in meta["generate"]:
        image64 = generated(pipe64, run, tokens, torch.float64)
        meta["f32_rounding"][run["key"]] = float((refs[run["key"]].double() - image64.double()).abs().max())
        image16 = generated(pipe16, run, tokens, torch.float16)
        run["diffusers_f16_error"] = float((image16 - refs[run["key"]]).abs().max())
        worst16 = max(worst16, run["diffusers_f16_error"])
    meta["f32_tolerance"] = bound(max(meta["f32_rounding"].values()))
    meta["f16_tolerance"] = float(f"{max(2 * worst16, 3e-2):.2g}")

    save_file({k: v.contiguous() for k, v in refs.items()}, str(OUT / f"{name}.reference.safetensors"))
    (OUT / f"{name}.reference.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"{folder}: {size / 1024:.0f} KiB; references: {(OUT / f'{name}.reference.safetensors').stat().st_size / 1024:.0f} KiB")
    print("f32", meta["f32_tolerance"], "f16", meta["f16_tolerance"], meta["component_tolerance"])


def bfl_transformer(folder):
    """The transformer of `folder` in Black Forest Labs' names, checked against diffusers' converter."""
    ours = load_file(str(folder / "transformer" / "diffusion_pytorch_model.safetensors"))
    config = json.loads((folder / "transformer" / "config.json").read_text())
    inner = config["num_attention_heads"] * config["attention_head_dim"]
    renames = {
        "x_embedder": "img_in", "context_embedder": "txt_in", "proj_out": "final_layer.linear",
        "time_text_embed.timestep_embedder.linear_1": "time_in.in_layer",
        "time_text_embed.timestep_embedder.linear_2": "time_in.out_layer",
        "time_text_embed.text_embedder.linear_1": "vector_in.in_layer",
        "time_text_embed.text_embedder.linear_2": "vector_in.out_layer",
        "time_text_embed.guidance_embedder.linear_1": "guidance_in.in_layer",
        "time_text_embed.guidance_embedder.linear_2": "guidance_in.out_layer",
    }
    double = {
        "norm1.linear": "img_mod.lin", "norm1_context.linear": "txt_mod.lin",
        "attn.norm_q": "img_attn.norm.query_norm", "attn.norm_k": "img_attn.norm.key_norm",
        "attn.to_out.0": "img_attn.proj", "ff.net.0.proj": "img_mlp.0", "ff.net.2": "img_mlp.2",
        "attn.norm_added_q": "txt_attn.norm.query_norm", "attn.norm_added_k": "txt_attn.norm.key_norm",
        "attn.to_add_out": "txt_attn.proj", "ff_context.net.0.proj": "txt_mlp.0", "ff_context.net.2": "txt_mlp.2",
    }
    single = {"norm.linear": "modulation.lin", "proj_out": "linear2", "attn.norm_q": "norm.query_norm",
              "attn.norm_k": "norm.key_norm"}
    bfl = {}
    for param in ("weight", "bias"):
        for new, old in renames.items():
            if f"{new}.{param}" in ours:
                bfl[f"{old}.{param}"] = ours[f"{new}.{param}"]
        shift_scale = ours[f"norm_out.linear.{param}"].chunk(2, dim=0)
        bfl[f"final_layer.adaLN_modulation.1.{param}"] = torch.cat([shift_scale[1], shift_scale[0]])
        for i in range(config["num_layers"]):
            p = f"transformer_blocks.{i}."
            for new, old in double.items():
                suffix = "scale" if "norm." in old else param
                if f"{p}{new}.{param}" in ours:
                    bfl[f"double_blocks.{i}.{old}.{suffix}"] = ours[f"{p}{new}.{param}"]
            for qkv, parts in (("img_attn.qkv", ("to_q", "to_k", "to_v")),
                               ("txt_attn.qkv", ("add_q_proj", "add_k_proj", "add_v_proj"))):
                bfl[f"double_blocks.{i}.{qkv}.{param}"] = torch.cat([ours[f"{p}attn.{x}.{param}"] for x in parts])
        for i in range(config["num_single_layers"]):
            p = f"single_transformer_blocks.{i}."
            for new, old in single.items():
                suffix = "scale" if "norm." in old else param
                if f"{p}{new}.{param}" in ours:
                    bfl[f"single_blocks.{i}.{old}.{suffix}"] = ours[f"{p}{new}.{param}"]
            bfl[f"single_blocks.{i}.linear1.{param}"] = torch.cat(
                [ours[f"{p}attn.to_q.{param}"], ours[f"{p}attn.to_k.{param}"], ours[f"{p}attn.to_v.{param}"],
                 ours[f"{p}proj_mlp.{param}"]])
    back = bfl_to_diffusers(bfl, inner)
    assert set(back) == set(ours), set(back) ^ set(ours)
    assert all(torch.equal(back[k], ours[k]) for k in ours)
    return bfl, inner


def bfl_to_diffusers(bfl, inner):
    """diffusers' `convert_flux_transformer_checkpoint_to_diffusers`, at a width of `inner` (it is
    written for FLUX.1's 3072)."""
    from diffusers.loaders import single_file_utils
    import inspect

    source = inspect.getsource(single_file_utils.convert_flux_transformer_checkpoint_to_diffusers)
    source = source.replace("inner_dim = 3072", f"inner_dim = {inner}")
    namespace = dict(vars(single_file_utils))
    exec(source, namespace)
    return namespace["convert_flux_transformer_checkpoint_to_diffusers"](dict(bfl))


def main():
    for variant in ("schnell", "dev"):
        make(variant)
    from make_weight_format_fixtures import scaled_fp8

    bfl, inner = bfl_transformer(OUT / "tiny-flux1-dev")
    formats = OUT / "weight-formats"
    path = formats / "tiny-flux1-dev.bfl-transformer.safetensors"
    save_file({k: v.contiguous() for k, v in bfl.items()}, str(path))
    print(f"{path}: {path.stat().st_size / 1024:.0f} KiB, {len(bfl)} tensors")
    # ComfyUI's scaled FP8: each matrix F8_E4M3 with its `scale_weight`; the reference is diffusers'
    # conversion of the dequantized file (fp8 as f32 times the scale).
    fp8, dequantized = scaled_fp8(bfl, lambda name, tensor: tensor.ndim == 2)
    save_file(fp8, str(formats / "tiny-flux1-dev.bfl-transformer.fp8.safetensors"))
    converted = bfl_to_diffusers(dequantized, inner)
    save_file({k: v.contiguous() for k, v in converted.items()},
              str(formats / "tiny-flux1-dev.bfl-transformer.fp8.reference.safetensors"))
    # The GGUF's reference holds only the tensors Q8_0 changed (the rest are the folder's).
    dequantized = q8_0_gguf(bfl, formats / "tiny-flux1-dev.bfl-transformer.q8_0.gguf")
    converted = bfl_to_diffusers(dequantized, inner)
    folder = load_file(str(OUT / "tiny-flux1-dev" / "transformer" / "diffusion_pytorch_model.safetensors"))
    changed = {k: v.contiguous() for k, v in converted.items() if not torch.equal(v, folder[k])}
    assert len(changed) >= 8, len(changed)
    save_file(changed, str(formats / "tiny-flux1-dev.bfl-transformer.q8_0.reference.safetensors"))


def q8_0_gguf(bfl, path):
    """`bfl` written as a GGUF the way city96's FLUX.1 GGUFs are (each matrix whose rows are whole
    32-value blocks in Q8_0, the rest in F32); returns the values it holds, dequantized."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "flux")
    dequantized, quantized = {}, 0
    for name, tensor in bfl.items():
        values = tensor.to(torch.float32).numpy()
        if tensor.ndim == 2 and tensor.shape[-1] % 32 == 0:
            data = gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(name, data, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            back = gguf.quants.dequantize(data, gguf.GGMLQuantizationType.Q8_0)
            dequantized[name] = torch.from_numpy(np.ascontiguousarray(back, dtype=np.float32))
            quantized += 1
        else:
            writer.add_tensor(name, values)
            dequantized[name] = tensor.to(torch.float32)
    assert quantized >= 8, quantized
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return dequantized


if __name__ == "__main__":
    main()
