#!/usr/bin/env python3
"""Make the fixtures for weight formats other than plain float safetensors (issue 49).

1. `ggml-blocks.gguf`: one tensor per ggml type SD Bench decodes (2 rows of 512 values), each of
   random blocks whose f16 scale fields hold finite values, written by gguf-py;
   `ggml-blocks.reference.safetensors` holds what gguf-py's own decoders (`gguf.quants.dequantize`,
   ggml's formulas in NumPy) give for each, as f32.
2. `fp8.safetensors`: every FP8 code in both formats (`e4m3`, `e5m2`, 256 values each) and a scaled
   layer as ComfyUI stores one (`layer.weight` F8_E4M3, `layer.scale_weight` F32, `layer.scale_input`,
   the `scaled_fp8` marker); `fp8.reference.safetensors` holds torch's f32 values of each (the
   layer's multiplied by its scale, as ComfyUI and diffusers dequantize it).
3. `tiny-sd.ldm.q8_0.gguf`: the tiny SD1.x checkpoint (`tiny-sd.ldm.safetensors`) as
   stable-diffusion.cpp stores one in GGUF: the same tensor names, the UNet's matrices whose rows
   are whole 32-value blocks in Q8_0, the rest as stored. `tiny-sd.ldm.q8_0.reference.*` records
   diffusers generating from it: its UNet loaded from the GGUF file by diffusers' GGUF quantizer
   (`from_single_file` with `GGUFQuantizationConfig`), its VAE and text encoder from the checkpoint.
   One change to diffusers: its Q8_0 decoder leaves `scale * q` in float16 (its `dtype=None`
   default), a rounding ggml, gguf-py and stable-diffusion.cpp do not make (they compute in f32);
   the reference decodes in float32, as ggml defines the format.

4. `tiny-flux2-klein.bfl-transformer.safetensors`: the tiny FLUX.2 klein's transformer as Black
   Forest Labs' code and ComfyUI's `diffusion_models/` store it (`double_blocks.N.img_attn.qkv`,
   `single_blocks.N.linear1`, `final_layer.adaLN_modulation.1` with shift and scale in the other
   order, norms as `.scale`), made by reversing diffusers' conversion; diffusers' own
   `convert_flux2_transformer_checkpoint_to_diffusers` must give back exactly the folder's weights.
   `tiny-flux2-klein.bfl-transformer.fp8.safetensors` is the same in ComfyUI's scaled FP8, with
   diffusers' conversion of its dequantized values as `...fp8.reference.safetensors`.

5. `tiny-zimage.original-transformer.safetensors`: the tiny Z-Image's transformer in Tongyi-MAI's
   names, as ComfyUI's `diffusion_models/z_image_turbo_*.safetensors` keep it (fused
   `attention.qkv`, `attention.out`, `q_norm`/`k_norm`, `x_embedder.`/`final_layer.`, plus a
   `norm_final` diffusers drops), under ComfyUI's `model.diffusion_model.`; diffusers'
   `convert_z_image_transformer_checkpoint_to_diffusers` must give back exactly the folder's weights.

6. `vae-names.json`: each tensor of the tiny FLUX.2 klein's and Z-Image's VAEs under the name Black
   Forest Labs' `ae.safetensors` files (ComfyUI's `vae/flux2-vae.safetensors`, `vae/ae.safetensors`)
   give it, with its stored shape (attention projections as 1x1 convolutions): the original LDM
   names, and for FLUX.2 the latent convolutions inside the encoder and decoder as diffusers'
   `scripts/convert_flux2_to_diffusers.py` maps them (`encoder.quant_conv`,
   `decoder.post_quant_conv`, `bn.running_mean`/`bn.running_var` as they are). diffusers'
   `convert_ldm_vae_checkpoint` must turn the LDM names back into exactly the folder's VAE. The
   tests write the VAE files from the folders' weights under these names (no second copy of the
   weights is committed).

7. `qwen3-llama-cpp-names.json`: each tensor of the tiny FLUX.2 klein's Qwen3 text encoder under
   the name llama.cpp gives it in a GGUF file (`token_embd.weight`, `blk.N.attn_q.weight`), from
   gguf-py's tensor map, as llama.cpp's converter renames a Qwen3 model (no q/k permutation). An
   F32 GGUF written under these names must load in transformers as exactly the folder's weights.
   The tests write the GGUF from the folder's weights under these names.

8. `tiny-sd3.original-mmdit.safetensors`: the tiny SD3.5's MMDiT in Stability AI's names, as its
   single files (`sd3.5_medium.safetensors`) keep it under `model.diffusion_model.`: fused
   `attn.qkv` and `attn2.qkv` (weights and biases), `ln_q`/`ln_k`, `adaLN_modulation.1`, `mlp.fc1`,
   `x_embedder.`/`t_embedder.`/`y_embedder.`/`final_layer.`, the final modulation's and the last
   block's context modulation's halves in the other order; diffusers'
   `convert_sd3_transformer_checkpoint_to_diffusers` must give back exactly the folder's weights.
   The tests add the VAE and text encoders a whole single file holds from the folder's weights.
   `tiny-sd3.t5xxl_fp8_e4m3fn_scaled.safetensors` is its T5 in ComfyUI's scaled FP8 (the linear
   layers' matrices; the embeddings and norms as they are), with its dequantized values as
   `...reference.safetensors`.

9. `t5-llama-cpp-names.json`: each tensor of the tiny SD3's T5 encoder under the name llama.cpp
   gives it in a GGUF file (`token_embd.weight`, `enc.blk.N.attn_q.weight`, `enc.output_norm`),
   from gguf-py's tensor map for `T5ENCODER`, as city96's t5-v1_1-xxl-encoder-gguf files name
   them. An F32 GGUF under these names must load in transformers as exactly the folder's weights.

Usage (after scripts/make_checkpoint_fixtures.py; torch, diffusers and gguf are needed only here):
    ~/.cache/sdbench/venv/bin/python scripts/make_weight_format_fixtures.py [vae-names | qwen3-llama-cpp-names | sd3-mmdit | t5-llama-cpp-names]
(with an argument, only the 6th, the 7th, the 8th or the 9th.)
"""

import importlib.metadata
import json
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import load_file, save_file

import diffusers
import gguf
from gguf import GGMLQuantizationType as Q

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "crates" / "diffusion" / "tests" / "fixtures"
OUT = FIXTURES / "weight-formats"

# Byte offsets of each type's f16 scale fields inside a block (ggml-common.h).
HALF_FIELDS = {
    Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
}


def ggml_blocks():
    rng = np.random.default_rng(49)
    rows, width = 2, 256
    writer = gguf.GGUFWriter(str(OUT / "ggml-blocks.gguf"), "sdbench-test")
    reference = {}
    for kind, fields in HALF_FIELDS.items():
        block_values, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        blocks = rows * width // block_values
        data = rng.integers(0, 256, size=(blocks, block_bytes), dtype=np.uint8)
        for at in fields:
            scale = rng.uniform(-0.05, 0.05, size=blocks).astype(np.float16)
            data[:, at:at + 2] = scale.view(np.uint8).reshape(blocks, 2)
        data = data.reshape(rows, width // block_values * block_bytes)
        writer.add_tensor(kind.name, data, raw_dtype=kind)
        reference[kind.name] = gguf.quants.dequantize(data, kind).astype(np.float32)
    plain = rng.standard_normal((rows, width)).astype(np.float32)
    writer.add_tensor("F32", plain)
    writer.add_tensor("F16", plain.astype(np.float16))
    reference["F32"] = plain
    reference["F16"] = plain.astype(np.float16).astype(np.float32)
    bf16 = gguf.quants.quantize(plain, Q.BF16)
    writer.add_tensor("BF16", bf16, raw_dtype=Q.BF16)
    reference["BF16"] = gguf.quants.dequantize(bf16, Q.BF16).astype(np.float32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    save_numpy({k: np.ascontiguousarray(v) for k, v in reference.items()},
               str(OUT / "ggml-blocks.reference.safetensors"))


def fp8():
    codes = torch.arange(256, dtype=torch.uint8)
    e4m3 = codes.view(torch.float8_e4m3fn)
    e5m2 = codes.clone().view(torch.float8_e5m2)
    rng = torch.Generator().manual_seed(49)
    weight = (torch.randn(4, 8, generator=rng) * 3).to(torch.float8_e4m3fn)
    scale = torch.tensor(0.0123, dtype=torch.float32)
    save_file({
        "e4m3": e4m3, "e5m2": e5m2,
        "layer.weight": weight, "layer.scale_weight": scale,
        "layer.scale_input": torch.tensor(1.0, dtype=torch.float32),
        "layer.bias": torch.randn(4, generator=rng),
        "scaled_fp8": torch.zeros(0, dtype=torch.float8_e4m3fn),
    }, str(OUT / "fp8.safetensors"))
    save_file({
        "e4m3": e4m3.to(torch.float32), "e5m2": e5m2.to(torch.float32),
        "layer.weight": weight.to(torch.float32) * scale,
    }, str(OUT / "fp8.reference.safetensors"))


def quantizable(name, tensor):
    return (name.startswith("model.diffusion_model.") and tensor.ndim == 2
            and tensor.shape[-1] % 32 == 0)


def tiny_sd_gguf():
    state = load_file(str(FIXTURES / "tiny-sd.ldm.safetensors"))
    path = OUT / "tiny-sd.ldm.q8_0.gguf"
    writer = gguf.GGUFWriter(str(path), "sdbench-test")
    quantized = 0
    for name, tensor in state.items():
        if not tensor.is_floating_point():
            continue
        if quantizable(name, tensor):
            data = gguf.quants.quantize(tensor.to(torch.float32).numpy(), Q.Q8_0)
            writer.add_tensor(name, data, raw_dtype=Q.Q8_0)
            quantized += 1
        elif tensor.dtype == torch.float16:
            writer.add_tensor(name, tensor.numpy())
        else:
            writer.add_tensor(name, tensor.to(torch.float32).numpy())
    assert quantized > 10, quantized
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    from diffusers import (EulerDiscreteScheduler, GGUFQuantizationConfig, StableDiffusionPipeline,
                           UNet2DConditionModel)
    from diffusers.quantizers.gguf import utils as gguf_utils
    decode_q8_0 = gguf_utils.dequantize_functions[Q.Q8_0]
    gguf_utils.dequantize_functions[Q.Q8_0] = (
        lambda blocks, block_size, type_size, dtype=None: decode_q8_0(blocks, block_size, type_size, torch.float32))
    folder = FIXTURES / "tiny-sd"
    unet = UNet2DConditionModel.from_single_file(
        str(path), config=str(folder), subfolder="unet", local_files_only=True,
        quantization_config=GGUFQuantizationConfig(compute_dtype=torch.float32), torch_dtype=torch.float32,
    )
    pipe = StableDiffusionPipeline.from_single_file(
        str(FIXTURES / "tiny-sd.ldm.safetensors"), config=str(folder), local_files_only=True, unet=unet,
        safety_checker=None, requires_safety_checker=False, torch_dtype=torch.float32,
    )
    height, width, steps = 16, 24, 4
    prompt = "a photograph of an astronaut riding a horse"
    latents = torch.randn(1, 4, height // 2, width // 2, generator=torch.Generator().manual_seed(11))
    pipe.scheduler = EulerDiscreteScheduler.from_config(pipe.scheduler.config)
    with torch.no_grad():
        image = pipe(
            prompt, num_inference_steps=steps, guidance_scale=7.5, height=height, width=width,
            latents=latents.clone(), output_type="np",
        ).images[0]
    save_file(
        {"latents": latents.contiguous(), "image": torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))},
        str(OUT / "tiny-sd.ldm.q8_0.reference.safetensors"),
    )
    meta = {"diffusers_version": diffusers.__version__, "gguf_version": importlib.metadata.version("gguf"),
            "prompt": prompt, "steps": steps, "guidance": 7.5, "height": height, "width": width,
            "scheduler": "euler", "quantized_tensors": quantized,
            "q8_0_decoded_in": "float32, as ggml (diffusers' default rounds scale * q to float16)"}
    with open(OUT / "tiny-sd.ldm.q8_0.reference.json", "w") as f:
        json.dump(meta, f, indent=2)


def scaled_fp8(tensors, quantized):
    """`tensors` in ComfyUI's scaled FP8: each `X.weight` that `quantized(name, tensor)` picks as
    F8_E4M3 with its `X.scale_weight` (largest magnitude over FP8's 448), plus `X.scale_input` and
    the `scaled_fp8` marker; and the dequantized values (fp8 as f32 times the scale), as ComfyUI
    and diffusers dequantize them."""
    fp8, dequantized = {"scaled_fp8": torch.zeros(2, dtype=torch.float8_e4m3fn)}, {}
    for name, tensor in tensors.items():
        if not quantized(name, tensor):
            fp8[name] = tensor
            dequantized[name] = tensor.to(torch.float32)
            continue
        base = name[: -len(".weight")]
        scale = (tensor.float().abs().max() / 448.0).reshape(())
        stored = (tensor.float() / scale).to(torch.float8_e4m3fn)
        fp8[name] = stored
        fp8[base + ".scale_weight"] = scale
        fp8[base + ".scale_input"] = torch.ones((), dtype=torch.float32)
        dequantized[name] = stored.to(torch.float32) * scale
    return fp8, dequantized


def flux2_bfl_transformer():
    from diffusers.loaders.single_file_utils import convert_flux2_transformer_checkpoint_to_diffusers
    folder = FIXTURES / "tiny-flux2-klein" / "transformer"
    original = load_file(str(folder / "diffusion_pytorch_model.safetensors"))
    config = json.loads((folder / "config.json").read_text())
    renames = {
        "x_embedder.": "img_in.",
        "context_embedder.": "txt_in.",
        "time_guidance_embed.timestep_embedder.linear_1.": "time_in.in_layer.",
        "time_guidance_embed.timestep_embedder.linear_2.": "time_in.out_layer.",
        "double_stream_modulation_img.linear.": "double_stream_modulation_img.lin.",
        "double_stream_modulation_txt.linear.": "double_stream_modulation_txt.lin.",
        "single_stream_modulation.linear.": "single_stream_modulation.lin.",
        "proj_out.": "final_layer.linear.",
    }
    double = {
        "attn.norm_q.weight": "img_attn.norm.query_norm.scale",
        "attn.norm_k.weight": "img_attn.norm.key_norm.scale",
        "attn.to_out.0.weight": "img_attn.proj.weight",
        "ff.linear_in.weight": "img_mlp.0.weight",
        "ff.linear_out.weight": "img_mlp.2.weight",
        "attn.norm_added_q.weight": "txt_attn.norm.query_norm.scale",
        "attn.norm_added_k.weight": "txt_attn.norm.key_norm.scale",
        "attn.to_add_out.weight": "txt_attn.proj.weight",
        "ff_context.linear_in.weight": "txt_mlp.0.weight",
        "ff_context.linear_out.weight": "txt_mlp.2.weight",
    }
    single = {
        "attn.to_qkv_mlp_proj.weight": "linear1.weight",
        "attn.to_out.weight": "linear2.weight",
        "attn.norm_q.weight": "norm.query_norm.scale",
        "attn.norm_k.weight": "norm.key_norm.scale",
    }
    bfl = {}
    for i in range(config["num_layers"]):
        p = f"transformer_blocks.{i}."
        bfl[f"double_blocks.{i}.img_attn.qkv.weight"] = torch.cat(
            [original[p + f"attn.to_{x}.weight"] for x in "qkv"], dim=0)
        bfl[f"double_blocks.{i}.txt_attn.qkv.weight"] = torch.cat(
            [original[p + f"attn.add_{x}_proj.weight"] for x in "qkv"], dim=0)
        for new, old in double.items():
            bfl[f"double_blocks.{i}.{old}"] = original[p + new]
    for i in range(config["num_single_layers"]):
        for new, old in single.items():
            bfl[f"single_blocks.{i}.{old}"] = original[f"single_transformer_blocks.{i}.{new}"]
    scale, shift = original["norm_out.linear.weight"].chunk(2, dim=0)
    bfl["final_layer.adaLN_modulation.1.weight"] = torch.cat([shift, scale], dim=0)
    for name, tensor in original.items():
        for new, old in renames.items():
            if name.startswith(new):
                bfl[old + name[len(new):]] = tensor
    bfl = {k: v.contiguous() for k, v in bfl.items()}
    save_file(bfl, str(OUT / "tiny-flux2-klein.bfl-transformer.safetensors"))

    converted = convert_flux2_transformer_checkpoint_to_diffusers(dict(bfl))
    assert set(converted) == set(original), set(converted) ^ set(original)
    for k in original:
        assert torch.equal(converted[k], original[k]), k

    # The same file in ComfyUI's scaled FP8: each matrix as F8_E4M3 with its `scale_weight`
    # (largest magnitude over FP8's 448), plus `scale_input` and the `scaled_fp8` marker. The
    # reference is diffusers' conversion of the dequantized file (fp8 as f32 times the scale).
    fp8, dequantized = scaled_fp8(bfl, lambda name, tensor: tensor.ndim == 2)
    save_file(fp8, str(OUT / "tiny-flux2-klein.bfl-transformer.fp8.safetensors"))
    converted = convert_flux2_transformer_checkpoint_to_diffusers(dequantized)
    save_file({k: v.contiguous() for k, v in converted.items()},
              str(OUT / "tiny-flux2-klein.bfl-transformer.fp8.reference.safetensors"))


def zimage_original_transformer():
    from diffusers.loaders.single_file_utils import convert_z_image_transformer_checkpoint_to_diffusers
    folder = FIXTURES / "tiny-zimage" / "transformer"
    original = {}
    for shard in sorted(folder.glob("*.safetensors")):
        original.update(load_file(str(shard)))
    renames = [
        ("all_final_layer.2-1.", "final_layer."),
        ("all_x_embedder.2-1.", "x_embedder."),
        (".attention.to_out.0.", ".attention.out."),
        (".attention.norm_k.", ".attention.k_norm."),
        (".attention.norm_q.", ".attention.q_norm."),
    ]
    out = {}
    for name, tensor in original.items():
        if ".attention.to_k." in name or ".attention.to_v." in name:
            continue
        if ".attention.to_q.weight" in name:
            base = name[: -len(".attention.to_q.weight")]
            out[base + ".attention.qkv.weight"] = torch.cat(
                [original[f"{base}.attention.to_{x}.weight"] for x in "qkv"], dim=0)
            continue
        for new, old in renames:
            name = name.replace(new, old)
        out[name] = tensor
    width = original["all_x_embedder.2-1.weight"].shape[0]
    out["norm_final.weight"] = torch.ones(width, dtype=original["all_x_embedder.2-1.weight"].dtype)
    out = {"model.diffusion_model." + k: v.contiguous() for k, v in out.items()}
    save_file(out, str(OUT / "tiny-zimage.original-transformer.safetensors"))

    converted = convert_z_image_transformer_checkpoint_to_diffusers(dict(out))
    assert set(converted) == set(original), set(converted) ^ set(original)
    for k in original:
        assert torch.equal(converted[k], original[k]), k


# FLUX.2's latent convolutions and batch norm: diffusers name -> Black Forest Labs' name.
FLUX2_VAE_EXTRA = {
    "quant_conv.weight": "encoder.quant_conv.weight",
    "quant_conv.bias": "encoder.quant_conv.bias",
    "post_quant_conv.weight": "decoder.post_quant_conv.weight",
    "post_quant_conv.bias": "decoder.post_quant_conv.bias",
}


def vae_names():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_checkpoint_fixtures import vae_to_ldm
    from diffusers.loaders.single_file_utils import convert_ldm_vae_checkpoint

    out = {}
    for name, flux2 in [("tiny-flux2-klein", True), ("tiny-zimage", False)]:
        folder = FIXTURES / name / "vae"
        config = json.loads((folder / "config.json").read_text())
        state = load_file(folder / "diffusion_pytorch_model.safetensors")
        blocks = len(config["block_out_channels"])
        ldm, rows = {}, []
        for key, tensor in sorted(state.items()):
            if key.startswith("bn."):
                # The batch norm keeps its name (its step counter is not a weight).
                if key != "bn.num_batches_tracked":
                    rows.append([key, key, list(tensor.shape)])
                continue
            original, stored = vae_to_ldm(key, tensor, blocks)
            ldm[original] = stored
            if flux2 and key in FLUX2_VAE_EXTRA:
                original = FLUX2_VAE_EXTRA[key]
            rows.append([original, key, list(stored.shape)])
        back = convert_ldm_vae_checkpoint(ldm, config)
        expected = {k: v for k, v in state.items() if not k.startswith("bn.")}
        assert back.keys() == expected.keys(), set(back) ^ set(expected)
        for key, tensor in expected.items():
            assert torch.equal(back[key].reshape(tensor.shape), tensor), key
        out[name] = rows
        print(f"vae-names.json: {name}: {len(rows)} tensors")
    with open(OUT / "vae-names.json", "w") as f:
        f.write("{\n")
        for i, (name, rows) in enumerate(out.items()):
            f.write(f'"{name}": [\n')
            f.write(",\n".join(json.dumps(row) for row in rows))
            f.write("\n]" + (",\n" if i + 1 < len(out) else "\n"))
        f.write("}\n")


def qwen3_llama_cpp_names():
    """The tiny FLUX.2 klein's Qwen3 text encoder under llama.cpp's GGUF names: gguf-py's tensor
    map for `MODEL_ARCH.QWEN3`, the rename llama.cpp's `convert_hf_to_gguf.py` applies to a Qwen3
    model (its `Qwen3Model` class, as llama-cpp-python 0.3.36 vendors it, passes Qwen3's tensors to
    the base class's rename without the q/k permutation it gives a Llama). An F32 GGUF written
    under these names must load in transformers (`from_pretrained(gguf_file=...)`, the reader
    ComfyUI-GGUF-style files are checked against there) as exactly the folder's weights."""
    import tempfile

    import transformers
    from transformers import Qwen3ForCausalLM

    folder = FIXTURES / "tiny-flux2-klein" / "text_encoder"
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    stored = sorted(index["weight_map"])
    model = Qwen3ForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
    config = model.config
    state = model.state_dict()
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN3, config.num_hidden_layers)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "text-encoder.gguf"
        writer = gguf.GGUFWriter(str(path), "qwen3")
        writer.add_block_count(config.num_hidden_layers)
        writer.add_context_length(config.max_position_embeddings)
        writer.add_embedding_length(config.hidden_size)
        writer.add_feed_forward_length(config.intermediate_size)
        writer.add_head_count(config.num_attention_heads)
        writer.add_head_count_kv(config.num_key_value_heads)
        writer.add_key_length(config.head_dim)
        writer.add_value_length(config.head_dim)
        writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
        writer.add_layer_norm_rms_eps(config.rms_norm_eps)
        writer.add_vocab_size(config.vocab_size)
        for name in stored:
            llama_cpp = names.get_name(name, try_suffixes=(".weight", ".bias"))
            assert llama_cpp is not None, name
            rows.append([llama_cpp, name])
            writer.add_tensor(llama_cpp, state[name].numpy())
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        back = Qwen3ForCausalLM.from_pretrained(tmp, gguf_file=path.name, config=config,
                                                torch_dtype=torch.float32).state_dict()
        for name in stored:
            assert torch.equal(back[name], state[name]), name
    meta = {"architecture": "qwen3", "gguf_version": importlib.metadata.version("gguf"),
            "transformers_version": transformers.__version__,
            "checked": "an F32 GGUF under these names loads in transformers as the folder's weights"}
    with open(OUT / "qwen3-llama-cpp-names.json", "w") as f:
        f.write(json.dumps(meta)[:-1] + ', "names": [\n')
        f.write(",\n".join(json.dumps(row) for row in rows))
        f.write("\n]}\n")
    print(f"qwen3-llama-cpp-names.json: {len(rows)} tensors")


def sd3_original_mmdit():
    from diffusers.loaders.single_file_utils import convert_sd3_transformer_checkpoint_to_diffusers
    folder = FIXTURES / "tiny-sd3" / "transformer"
    original = load_file(str(folder / "diffusion_pytorch_model.safetensors"))
    config = json.loads((folder / "config.json").read_text())
    last = config["num_layers"] - 1

    def swap(t):
        shift, scale = t.chunk(2, dim=0)
        return torch.cat([scale, shift], dim=0)

    renames = {
        "pos_embed.proj.": "x_embedder.proj.",
        "time_text_embed.timestep_embedder.linear_1.": "t_embedder.mlp.0.",
        "time_text_embed.timestep_embedder.linear_2.": "t_embedder.mlp.2.",
        "time_text_embed.text_embedder.linear_1.": "y_embedder.mlp.0.",
        "time_text_embed.text_embedder.linear_2.": "y_embedder.mlp.2.",
        "context_embedder.": "context_embedder.",
        "proj_out.": "final_layer.linear.",
    }
    block = {
        "attn.norm_q": "x_block.attn.ln_q", "attn.norm_k": "x_block.attn.ln_k",
        "attn.to_out.0": "x_block.attn.proj",
        "attn2.norm_q": "x_block.attn2.ln_q", "attn2.norm_k": "x_block.attn2.ln_k",
        "attn2.to_out.0": "x_block.attn2.proj",
        "norm1.linear": "x_block.adaLN_modulation.1",
        "ff.net.0.proj": "x_block.mlp.fc1", "ff.net.2": "x_block.mlp.fc2",
        "attn.norm_added_q": "context_block.attn.ln_q",
        "attn.norm_added_k": "context_block.attn.ln_k",
        "attn.to_add_out": "context_block.attn.proj",
        "norm1_context.linear": "context_block.adaLN_modulation.1",
        "ff_context.net.0.proj": "context_block.mlp.fc1",
        "ff_context.net.2": "context_block.mlp.fc2",
    }
    fused = {
        "attn.to_": ("x_block.attn.qkv", ["attn.to_q", "attn.to_k", "attn.to_v"]),
        "attn2.to_": ("x_block.attn2.qkv", ["attn2.to_q", "attn2.to_k", "attn2.to_v"]),
        "attn.add_": ("context_block.attn.qkv",
                      ["attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"]),
    }
    out = {"pos_embed": original["pos_embed.pos_embed"]}
    for name, tensor in original.items():
        for new, old in renames.items():
            if name.startswith(new):
                out[old + name[len(new):]] = tensor
    out["final_layer.adaLN_modulation.1.weight"] = swap(original["norm_out.linear.weight"])
    out["final_layer.adaLN_modulation.1.bias"] = swap(original["norm_out.linear.bias"])
    for i in range(config["num_layers"]):
        p = f"transformer_blocks.{i}."
        for stored, parts in fused.values():
            for param in ["weight", "bias"]:
                if p + f"{parts[0]}.{param}" in original:
                    out[f"joint_blocks.{i}.{stored}.{param}"] = torch.cat(
                        [original[p + f"{x}.{param}"] for x in parts], dim=0)
        for new, old in block.items():
            for param in ["weight", "bias"]:
                key = p + f"{new}.{param}"
                if key not in original:
                    continue
                tensor = original[key]
                if i == last and new == "norm1_context.linear":
                    tensor = swap(tensor)
                out[f"joint_blocks.{i}.{old}.{param}"] = tensor
    out = {"model.diffusion_model." + k: v.contiguous() for k, v in out.items()}
    save_file(out, str(OUT / "tiny-sd3.original-mmdit.safetensors"))

    converted = convert_sd3_transformer_checkpoint_to_diffusers(dict(out))
    assert set(converted) == set(original), set(converted) ^ set(original)
    for k in original:
        assert torch.equal(converted[k], original[k]), k
    print(f"tiny-sd3.original-mmdit.safetensors: {len(out)} tensors")


def t5_llama_cpp_names():
    """The tiny SD3's T5 encoder under llama.cpp's GGUF names (`token_embd`, `enc.blk.N.attn_q`,
    `enc.output_norm`), from gguf-py's tensor map for `MODEL_ARCH.T5ENCODER`, as city96's
    t5-v1_1-xxl-encoder-gguf files name it. A GGUF of F32 tensors under these names must load in
    transformers' GGUF reader as exactly the folder's weights."""
    import tempfile

    import transformers
    from transformers import T5EncoderModel

    folder = FIXTURES / "tiny-sd3" / "text_encoder_3"
    model = T5EncoderModel.from_pretrained(folder, torch_dtype=torch.float32)
    config = model.config
    state = load_file(str(folder / "model.safetensors"))
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.T5ENCODER, config.num_layers)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t5.gguf"
        # transformers reads the `t5` architecture's keys; the tensor names are T5ENCODER's.
        writer = gguf.GGUFWriter(str(path), "t5")
        writer.add_context_length(512)
        writer.add_embedding_length(config.d_model)
        writer.add_feed_forward_length(config.d_ff)
        writer.add_block_count(config.num_layers)
        writer.add_head_count(config.num_heads)
        writer.add_key_length(config.d_kv)
        writer.add_value_length(config.d_kv)
        writer.add_layer_norm_rms_eps(config.layer_norm_epsilon)
        writer.add_relative_attn_buckets_count(config.relative_attention_num_buckets)
        writer.add_vocab_size(config.vocab_size)
        for name in sorted(state):
            llama_cpp = names.get_name(name, try_suffixes=(".weight", ".bias"))
            assert llama_cpp is not None, name
            rows.append([llama_cpp, name])
            writer.add_tensor(llama_cpp, state[name].numpy())
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        back = T5EncoderModel.from_pretrained(tmp, gguf_file=path.name, config=config,
                                              torch_dtype=torch.float32).state_dict()
        for name, tensor in state.items():
            assert torch.equal(back[name], tensor), name
    meta = {"architecture": "t5encoder", "gguf_version": importlib.metadata.version("gguf"),
            "transformers_version": transformers.__version__,
            "checked": "an F32 GGUF under these names loads in transformers as the folder's weights"}
    with open(OUT / "t5-llama-cpp-names.json", "w") as f:
        f.write(json.dumps(meta)[:-1] + ', "names": [\n')
        f.write(",\n".join(json.dumps(row) for row in rows))
        f.write("\n]}\n")
    print(f"t5-llama-cpp-names.json: {len(rows)} tensors")


def sd3_t5_fp8():
    folder = FIXTURES / "tiny-sd3" / "text_encoder_3"
    state = load_file(str(folder / "model.safetensors"))
    # The linear layers' matrices; the embeddings and norms stay as they are.
    linear = lambda name, tensor: (tensor.ndim == 2 and "shared" not in name
                                   and "relative_attention_bias" not in name)
    fp8, dequantized = scaled_fp8(state, linear)
    save_file(fp8, str(OUT / "tiny-sd3.t5xxl_fp8_e4m3fn_scaled.safetensors"))
    save_file({k: v.contiguous() for k, v in dequantized.items()},
              str(OUT / "tiny-sd3.t5xxl_fp8_e4m3fn_scaled.reference.safetensors"))
    print(f"tiny-sd3.t5xxl_fp8_e4m3fn_scaled.safetensors: {len(fp8)} tensors")


def main():
    import sys

    if sys.argv[1:] == ["vae-names"]:
        vae_names()
        return
    if sys.argv[1:] == ["t5-llama-cpp-names"]:
        t5_llama_cpp_names()
        return
    if sys.argv[1:] == ["sd3-mmdit"]:
        sd3_original_mmdit()
        sd3_t5_fp8()
        return
    if sys.argv[1:] == ["qwen3-llama-cpp-names"]:
        qwen3_llama_cpp_names()
        return
    OUT.mkdir(exist_ok=True)
    flux2_bfl_transformer()
    zimage_original_transformer()
    sd3_original_mmdit()
    sd3_t5_fp8()
    ggml_blocks()
    fp8()
    tiny_sd_gguf()
    vae_names()
    qwen3_llama_cpp_names()
    t5_llama_cpp_names()


if __name__ == "__main__":
    main()
