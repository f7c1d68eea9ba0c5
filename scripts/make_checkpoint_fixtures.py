#!/usr/bin/env python3
"""Make the fixtures for single-file (original LDM) checkpoints.

1. `tiny-sd.ldm.safetensors`: the tiny-sd fixture's weights (fp16) under the tensor names of an original
   Stable Diffusion checkpoint (`model.diffusion_model.*`, `first_stage_model.*`,
   `cond_stage_model.transformer.*`, plus the schedule buffers and EMA counters such files carry).
   diffusers' own single-file loader must read it back into exactly the folder's weights, which checks
   the names against the reference implementation. `tiny-sd.ldm.reference.*` records a generation
   that diffusers makes from this file.
2. `tiny-sdxl.ldm.safetensors`: the tiny-sdxl fixture's weights (fp16) as an original SDXL
   checkpoint stores them: the UNet (with `label_emb` for the size conditioning), the VAE, CLIP-L
   under `conditioner.embedders.0.transformer.` and the OpenCLIP encoder under
   `conditioner.embedders.1.model.` in OpenCLIP's own names (fused `in_proj` attention, a transposed
   `text_projection`, `logit_scale`). diffusers' single-file loader must read it back into exactly
   the folder's weights; `tiny-sdxl.ldm.reference.*` records a generation diffusers makes from it.
3. `tiny-sd2.ldm.safetensors`: the tiny-sd2 fixture's weights (fp16) as an original SD2.x checkpoint
   stores them: the text encoder under `cond_stage_model.model.` in OpenCLIP's names, with one more
   layer than the folder's encoder (SD2 takes OpenCLIP's penultimate layer, so its files hold a last
   layer that diffusers' 23-layer encoder drops) and OpenCLIP's `text_projection`, which SD2 does not
   use. diffusers' single-file loader must read it back into exactly the folder's weights;
   `tiny-sd2.ldm.reference.*` records a v-prediction generation diffusers makes from it.
4. `sd15-ldm-names.json`: every tensor name of a full-size SD1.5 checkpoint with the diffusers name that
   diffusers' converter gives it, built on the meta device (no weights), so the engine's name
   conversion is checked against the real architecture without a 2 GB file.

Usage (after scripts/make_fixtures.py; torch and diffusers are needed only here):
    ~/.cache/sdbench/venv/bin/python scripts/make_checkpoint_fixtures.py
"""

import json
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

import diffusers
from diffusers import AutoencoderKL, EulerDiscreteScheduler, StableDiffusionPipeline, UNet2DConditionModel
from diffusers.loaders import single_file_utils as sfu
from transformers import CLIPTextConfig, CLIPTextModel

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "crates" / "diffusion" / "tests" / "fixtures"

RESNET_TO_LDM = [
    ("norm1", "in_layers.0"),
    ("conv1", "in_layers.2"),
    ("time_emb_proj", "emb_layers.1"),
    ("norm2", "out_layers.0"),
    ("conv2", "out_layers.3"),
    ("conv_shortcut", "skip_connection"),
]


def unet_to_ldm(name, config):
    """A diffusers UNet tensor name -> the original checkpoint's name (without `model.diffusion_model.`)."""
    lpb = config["layers_per_block"]
    fixed = {
        "conv_in": "input_blocks.0.0",
        "time_embedding.linear_1": "time_embed.0",
        "time_embedding.linear_2": "time_embed.2",
        "conv_norm_out": "out.0",
        "conv_out": "out.2",
    }
    for new, old in fixed.items():
        if name.startswith(new + "."):
            return old + name[len(new):]
    parts = name.split(".")

    def resnet(rest):
        rest = ".".join(rest)
        for new, old in RESNET_TO_LDM:
            if rest.startswith(new + "."):
                return old + rest[len(new):]
        raise ValueError(name)

    if parts[0] == "down_blocks":
        b, kind = int(parts[1]), parts[2]
        if kind == "downsamplers":
            return f"input_blocks.{(b + 1) * (lpb + 1)}.0.op." + ".".join(parts[5:])
        j = int(parts[3])
        index = 1 + b * (lpb + 1) + j
        if kind == "resnets":
            return f"input_blocks.{index}.0." + resnet(parts[4:])
        return f"input_blocks.{index}.1." + ".".join(parts[4:])
    if parts[0] == "mid_block":
        j = int(parts[2])
        if parts[1] == "resnets":
            return f"middle_block.{2 * j}." + resnet(parts[3:])
        return "middle_block.1." + ".".join(parts[3:])
    if parts[0] == "up_blocks":
        b, kind = int(parts[1]), parts[2]
        if kind == "upsamplers":
            has_attention = config["up_block_types"][b].startswith("CrossAttn")
            return f"output_blocks.{b * (lpb + 1) + lpb}.{2 if has_attention else 1}.conv." + ".".join(parts[5:])
        index = b * (lpb + 1) + int(parts[3])
        if kind == "resnets":
            return f"output_blocks.{index}.0." + resnet(parts[4:])
        return f"output_blocks.{index}.1." + ".".join(parts[4:])
    raise ValueError(name)


def vae_to_ldm(name, tensor, blocks):
    """A diffusers VAE tensor name -> the original name (without `first_stage_model.`) and tensor
    (attention projections become 1x1 convolutions, as in the original files)."""
    parts = name.split(".")
    side = parts[0]
    rest = parts[1:]
    if side in ("quant_conv", "post_quant_conv"):
        return name, tensor
    head = rest[0]
    if head == "conv_norm_out":
        return f"{side}.norm_out." + ".".join(rest[1:]), tensor
    if head in ("conv_in", "conv_out"):
        return name, tensor
    if head in ("down_blocks", "up_blocks"):
        i = int(rest[1])
        ldm_block = i if head == "down_blocks" else blocks - 1 - i
        group = "down" if head == "down_blocks" else "up"
        if rest[2] in ("downsamplers", "upsamplers"):
            sampler = "downsample" if rest[2] == "downsamplers" else "upsample"
            return f"{side}.{group}.{ldm_block}.{sampler}." + ".".join(rest[4:]), tensor
        tail = ".".join(rest[4:]).replace("conv_shortcut", "nin_shortcut")
        return f"{side}.{group}.{ldm_block}.block.{rest[3]}." + tail, tensor
    if head == "mid_block":
        if rest[1] == "resnets":
            return f"{side}.mid.block_{int(rest[2]) + 1}." + ".".join(rest[3:]), tensor
        tail = ".".join(rest[3:])
        for new, old in [("group_norm", "norm"), ("to_q", "q"), ("to_k", "k"), ("to_v", "v"), ("to_out.0", "proj_out")]:
            if tail.startswith(new + "."):
                tail = old + tail[len(new):]
                break
        if tensor.ndim == 2:
            tensor = tensor[:, :, None, None]
        return f"{side}.mid.attn_1." + tail, tensor
    raise ValueError(name)


def ldm_state_dict(unet, vae, text_encoder, text_encoder_prefix="cond_stage_model.transformer."):
    """The three models' weights under an original SD checkpoint's names."""
    out = {}
    for name, t in unet.state_dict().items():
        if name.startswith("add_embedding.linear_"):
            # SDXL's size conditioning: `label_emb.0.0` and `label_emb.0.2`.
            layer = {"1": "0", "2": "2"}[name[len("add_embedding.linear_")]]
            out["model.diffusion_model.label_emb.0." + layer + name[len("add_embedding.linear_1"):]] = t
            continue
        out["model.diffusion_model." + unet_to_ldm(name, unet.config)] = t
    blocks = len(vae.config.block_out_channels)
    for name, t in vae.state_dict().items():
        new, t = vae_to_ldm(name, t, blocks)
        out["first_stage_model." + new] = t
    for name, t in text_encoder.state_dict().items():
        # transformers 5 drops the `text_model.` level; SD1.5 checkpoints have it.
        name = name if name.startswith("text_model.") else "text_model." + name
        out[text_encoder_prefix + name] = t
    return out


def open_clip_state_dict(text_encoder, prefix, extra_layers=0):
    """A CLIPTextModel(WithProjection)'s weights in OpenCLIP's names, as SDXL checkpoints store the
    second text encoder and SD2.x ones their only one. `extra_layers` random layers follow the
    model's own (an SD2 file's last OpenCLIP layer, which SD2 does not use); a model without a
    projection gets a random `text_projection`, as OpenCLIP has one."""
    sd = {(k if k.startswith(("text_model.", "text_projection")) else "text_model." + k): v
          for k, v in text_encoder.state_dict().items()}
    config = text_encoder.config
    layers = config.num_hidden_layers
    generator = torch.Generator().manual_seed(23)
    for i in range(layers, layers + extra_layers):
        for name, t in list(sd.items()):
            if name.startswith("text_model.encoder.layers.0."):
                new = name.replace("layers.0.", f"layers.{i}.", 1)
                sd[new] = torch.randn(t.shape, generator=generator) * t.std().clamp(min=0.02)
    if "text_projection.weight" not in sd:
        sd["text_projection.weight"] = torch.randn(config.projection_dim, config.hidden_size, generator=generator)
    out = {
        prefix + "token_embedding.weight": sd["text_model.embeddings.token_embedding.weight"],
        prefix + "positional_embedding": sd["text_model.embeddings.position_embedding.weight"],
        prefix + "ln_final.weight": sd["text_model.final_layer_norm.weight"],
        prefix + "ln_final.bias": sd["text_model.final_layer_norm.bias"],
        prefix + "text_projection": sd["text_projection.weight"].T.contiguous(),
        prefix + "logit_scale": torch.tensor(4.6052, dtype=torch.float32),
    }
    for i in range(layers + extra_layers):
        src = f"text_model.encoder.layers.{i}."
        dst = f"{prefix}transformer.resblocks.{i}."
        attn = src + "self_attn."
        for kind in ("weight", "bias"):
            out[dst + f"attn.in_proj_{kind}"] = torch.cat(
                [sd[attn + f"{p}_proj.{kind}"] for p in ("q", "k", "v")], dim=0)
            out[dst + f"attn.out_proj.{kind}"] = sd[attn + f"out_proj.{kind}"]
            out[dst + f"ln_1.{kind}"] = sd[src + f"layer_norm1.{kind}"]
            out[dst + f"ln_2.{kind}"] = sd[src + f"layer_norm2.{kind}"]
            out[dst + f"mlp.c_fc.{kind}"] = sd[src + f"mlp.fc1.{kind}"]
            out[dst + f"mlp.c_proj.{kind}"] = sd[src + f"mlp.fc2.{kind}"]
    return out


def check_same_weights(pipe, loaded, parts, ignored=()):
    """diffusers' loader must give back the folder's weights, rounded to fp16 (names ending in one
    of `ignored` aside)."""
    for part in parts:
        want = getattr(pipe, part).state_dict()
        got = getattr(loaded, part).state_dict()
        differ = {k for k in set(want) ^ set(got) if not k.endswith(tuple(ignored))}
        assert not differ, (part, differ)
        for k in want:
            if k.endswith(tuple(ignored)):
                continue
            expected = want[k].to(torch.float16).to(torch.float32)
            assert torch.equal(got[k].to(torch.float32).reshape(expected.shape), expected), (part, k)


def record_generation(loaded, stem, height, width, guidance):
    """A generation diffusers makes from the loaded file with Euler from fixed latents, saved as
    `<stem>.reference.*`."""
    steps = 4
    prompt = "a photograph of an astronaut riding a horse"
    latents = torch.randn(1, 4, height // 2, width // 2, generator=torch.Generator().manual_seed(11))
    loaded.scheduler = EulerDiscreteScheduler.from_config(loaded.scheduler.config)
    with torch.no_grad():
        image = loaded(
            prompt, num_inference_steps=steps, guidance_scale=guidance, height=height, width=width,
            latents=latents.clone(), output_type="np",
        ).images[0]
    save_file(
        {"latents": latents.contiguous(), "image": torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))},
        str(FIXTURES / f"{stem}.reference.safetensors"),
    )
    meta = {"diffusers_version": diffusers.__version__, "prompt": prompt, "steps": steps, "guidance": guidance,
            "height": height, "width": width, "scheduler": "euler"}
    with open(FIXTURES / f"{stem}.reference.json", "w") as f:
        json.dump(meta, f, indent=2)


def tiny_sdxl_checkpoint():
    from diffusers import StableDiffusionXLPipeline
    folder = FIXTURES / "tiny-sdxl"
    pipe = StableDiffusionXLPipeline.from_pretrained(folder)
    state = ldm_state_dict(pipe.unet, pipe.vae, pipe.text_encoder, "conditioner.embedders.0.transformer.")
    state.update(open_clip_state_dict(pipe.text_encoder_2, "conditioner.embedders.1.model."))
    state = {k: (v.to(torch.float16) if v.is_floating_point() else v).contiguous() for k, v in state.items()}
    state["conditioner.embedders.0.transformer.text_model.embeddings.position_ids"] = torch.arange(77, dtype=torch.int64)[None]
    path = FIXTURES / "tiny-sdxl.ldm.safetensors"
    save_file(state, str(path))

    loaded = StableDiffusionXLPipeline.from_single_file(str(path), config=str(folder), local_files_only=True)
    check_same_weights(pipe, loaded, ("unet", "vae", "text_encoder", "text_encoder_2"), ignored=("position_ids",))
    record_generation(loaded, "tiny-sdxl.ldm", height=32, width=24, guidance=5.0)


def tiny_sd2_checkpoint():
    folder = FIXTURES / "tiny-sd2"
    pipe = StableDiffusionPipeline.from_pretrained(folder, safety_checker=None, requires_safety_checker=False)
    state = ldm_state_dict(pipe.unet, pipe.vae, pipe.text_encoder)
    state = {k: v for k, v in state.items() if not k.startswith("cond_stage_model.")}
    state.update(open_clip_state_dict(pipe.text_encoder, "cond_stage_model.model.", extra_layers=1))
    state = {k: (v.to(torch.float16) if v.is_floating_point() else v).contiguous() for k, v in state.items()}
    path = FIXTURES / "tiny-sd2.ldm.safetensors"
    save_file(state, str(path))

    loaded = StableDiffusionPipeline.from_single_file(
        str(path), config=str(folder), local_files_only=True, safety_checker=None, requires_safety_checker=False
    )
    assert loaded.scheduler.config.prediction_type == "v_prediction"
    check_same_weights(pipe, loaded, ("unet", "vae", "text_encoder"))
    record_generation(loaded, "tiny-sd2.ldm", height=24, width=16, guidance=7.5)


def tiny_checkpoint():
    folder = FIXTURES / "tiny-sd"
    pipe = StableDiffusionPipeline.from_pretrained(folder, safety_checker=None, requires_safety_checker=False)
    state = {k: v.to(torch.float16).contiguous() for k, v in ldm_state_dict(pipe.unet, pipe.vae, pipe.text_encoder).items()}
    # What original checkpoints carry besides the three models.
    state["cond_stage_model.transformer.text_model.embeddings.position_ids"] = torch.arange(77, dtype=torch.int64)[None]
    state["alphas_cumprod"] = torch.from_numpy(np.asarray(pipe.scheduler.alphas_cumprod, dtype=np.float32))
    state["model_ema.decay"] = torch.tensor(0.9999, dtype=torch.float32)
    state["model_ema.num_updates"] = torch.tensor(1000, dtype=torch.int32)
    path = FIXTURES / "tiny-sd.ldm.safetensors"
    save_file(state, str(path))

    loaded = StableDiffusionPipeline.from_single_file(
        str(path), config=str(folder), local_files_only=True, safety_checker=None, requires_safety_checker=False
    )
    check_same_weights(pipe, loaded, ("unet", "vae", "text_encoder"))
    record_generation(loaded, "tiny-sd.ldm", height=16, width=24, guidance=7.5)


SD15_UNET = dict(cross_attention_dim=768, attention_head_dim=8, sample_size=64)
SD15_VAE = dict(
    down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
    block_out_channels=(128, 256, 512, 512), layers_per_block=2, latent_channels=4, sample_size=512,
)
SD15_CLIP = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                 max_position_embeddings=77, hidden_act="quick_gelu", vocab_size=49408)


def sd15_names():
    with torch.device("meta"):
        unet = UNet2DConditionModel(**SD15_UNET)
        vae = AutoencoderKL(**SD15_VAE)
        text_encoder = CLIPTextModel(CLIPTextConfig(**SD15_CLIP))
    ldm = ldm_state_dict(unet, vae, text_encoder)
    names = list(ldm)
    # Stand-ins numbered by position (one element, same rank) follow each tensor through the converters.
    stand_ins = {k: torch.full([1] * ldm[k].ndim, float(i)) for i, k in enumerate(names)}
    pairs = []
    # diffusers' converters name each original tensor; together they must give back every tensor.
    for part, model, converted in [
        ("unet", unet, sfu.convert_ldm_unet_checkpoint(stand_ins, dict(unet.config))),
        ("vae", vae, sfu.convert_ldm_vae_checkpoint(stand_ins, dict(vae.config))),
        ("text_encoder", text_encoder, sfu.convert_ldm_clip_checkpoint(stand_ins)),
    ]:
        expected = {k if part != "text_encoder" or k.startswith("text_model.") else "text_model." + k
                    for k in model.state_dict()}
        assert set(converted) == expected, (part, sorted(set(converted) ^ expected)[:10])
        for new, t in converted.items():
            old = names[int(t.flatten()[0])]
            pairs.append([old, part, new, list(ldm[old].shape)])
    assert len({p[0] for p in pairs}) == len(pairs) == len(ldm)
    pairs.sort()
    with open(FIXTURES / "sd15-ldm-names.json", "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(p) for p in pairs) + "\n]\n")
    print(f"sd15-ldm-names.json: {len(pairs)} tensors")


def main():
    torch.set_grad_enabled(False)
    tiny_checkpoint()
    tiny_sdxl_checkpoint()
    tiny_sd2_checkpoint()
    sd15_names()


if __name__ == "__main__":
    main()
