#!/usr/bin/env python3
"""Reference timing: diffusers/torch on the CPU with SD1.5's (or SDXL base's) UNet and VAE configs
(random weights), the same work `sdbench timing --model synthetic --backend cpu` (or
`--model synthetic-sdxl-base`) measures: one UNet call at batch 2 and one VAE decode, one warm-up
each, then the median of --repeat calls. With --model flux2-klein: FLUX.2-klein-4B's transformer
(one call at batch 1 on the image's tokens and 512 text tokens, as the distilled model steps) and
its 32-channel VAE's decode, the work of `sdbench timing --model synthetic-flux2-klein`. With
--model zimage: Z-Image-Turbo's transformer (one call at batch 1 on the image's tokens and the
timing prompt's caption, both padded to 32) and its 16-channel VAE's decode, the work of
`sdbench timing --model synthetic-zimage-turbo`. With --model sd35-medium and --sd3-depth
BLOCKS,T5_LAYERS: SD3.5 Medium's MMDiT-X at its widths (one call at batch 1 on the image's tokens
and 77 + 256 text tokens), its 16-channel VAE's decode, and T5-XXL's encoder at its widths over
256 tokens, the work of `sdbench timing` on the same saved model.

    ~/.cache/sdbench/venv/bin/python scripts/torch_reference_timing.py --threads 2 --repeat 3
    ~/.cache/sdbench/venv/bin/python scripts/torch_reference_timing.py --model sdxl-base --size 1024
    ~/.cache/sdbench/venv/bin/python scripts/torch_reference_timing.py --model flux2-klein --size 1024

The full klein 4B needs about 28 GB in f32 (transformer and text encoder); on a smaller machine,
--flux2-depth 1,4 keeps the widths, the tokens, the VAE and the 1:4 mix of double- and single-stream
blocks but not the depth, and saves that random-weight model once for both sides to load. Z-Image-Turbo
(40 GB in f32) likewise: --zimage-depth LAYERS,REFINERS (30,2 upstream) keeps its widths, tokens and
VAE, with a two-layer text encoder of Qwen3-4B's width (only its output's width and the caption's
length matter: the timed calls never run it).

With --sdbench BINARY it first runs `BINARY timing --backend cpu` on the same model, size, repeats and
threads, then torch, and prints each component's ratio (sdbench / torch): the two measured back to back
in one run, as docs/cpu-performance.md reports them. On a shared machine whose speed
drifts over minutes, --rounds N alternates the two N times (sdbench, torch, sdbench, torch, ...; each
side warms up in every round) and reports each round's ratio and their median: a slow stretch then
lands on both sides of a pair instead of on one side of the comparison. torch's models stay loaded
while sdbench runs, so the machine must hold both. --rounds works with --ops too.

    ~/.cache/sdbench/venv/bin/python scripts/torch_reference_timing.py --sdbench target/release/sdbench
    ~/.cache/sdbench/venv/bin/python scripts/torch_reference_timing.py --sdbench target/release/sdbench --rounds 3

With --ops (and --sdbench) it compares single layers instead: it runs `BINARY timing --ops`, which
prints SD1.5's convolutions, linears, attention and norms at the image size as `op <kind> k=v ...`
lines, runs each of those cases in torch, and prints a table of both rates and the time ratio.
With --model flux2-klein, FLUX.2 klein 4B's transformer layers (--size 1024 for its benchmark).

    ~/.cache/sdbench/venv/bin/python scripts/torch_reference_timing.py --ops --sdbench target/release/sdbench

On a GPU (what scripts/gpu-check runs): --device cuda --dtype f16; the device is synchronised
before and after each timed call. With --ops --sdbench BINARY it compares the layers on CUDA device 0
(`BINARY timing --ops --backend cuda --precision f16`).

    python3 scripts/torch_reference_timing.py --device cuda --dtype f16 --repeat 5
"""
import argparse
from pathlib import Path
import re
import statistics
import subprocess
import time

import torch
from diffusers import (
    AutoencoderKL,
    AutoencoderKLFlux2,
    Flux2Transformer2DModel,
    UNet2DConditionModel,
    ZImageTransformer2DModel,
)


FIXTURES = Path(__file__).resolve().parent.parent / "crates" / "diffusion" / "tests" / "fixtures"


def timed(fn, repeat, sync=lambda: None):
    fn()  # warm-up
    samples = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - start)
    return samples


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--model", choices=["sd15", "sdxl-base", "flux2-klein", "zimage", "sd35-medium", "flux1-schnell"],
                   default="sd15")
    p.add_argument("--sdbench", metavar="BINARY", help="also time this sdbench binary and print ratios")
    p.add_argument("--rounds", type=int, default=1,
                   help="with --sdbench: alternate sdbench and torch this many times, a ratio per round")
    p.add_argument("--ops", action="store_true", help="compare single layers (needs --sdbench)")
    p.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1, ...")
    p.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    p.add_argument("--flux2-depth", metavar="DOUBLE,SINGLE",
                   help="FLUX.2 klein with this many double- and single-stream blocks instead of 5,20 "
                        "(widths, tokens and VAE unchanged): both sides load one saved random-weight model")
    p.add_argument("--zimage-depth", metavar="LAYERS,REFINERS",
                   help="Z-Image-Turbo with this many main and refiner blocks instead of 30,2 "
                        "(widths, tokens and VAE unchanged): both sides load one saved random-weight model")
    p.add_argument("--flux1-depth", metavar="DOUBLE,SINGLE,T5_LAYERS",
                   help="FLUX.1 [schnell] with this many double- and single-stream blocks (19,38 upstream) "
                        "and T5-XXL layers (24 upstream), widths, tokens and VAE unchanged: both sides load "
                        "one saved random-weight model")
    p.add_argument("--sd3-depth", metavar="BLOCKS,T5_LAYERS",
                   help="SD3.5 Medium with this many MMDiT-X blocks (24 upstream; the first half with the "
                        "second attention, as 13 of 24 are) and T5-XXL layers (24 upstream), widths, tokens "
                        "and VAE unchanged: both sides load one saved random-weight model")
    a = p.parse_args()
    if a.sd3_depth and a.model != "sd35-medium":
        raise SystemExit("--sd3-depth needs --model sd35-medium")
    if a.model == "sd35-medium" and a.device == "cpu" and not a.sd3_depth and not a.ops:
        raise SystemExit("--model sd35-medium on the CPU needs --sd3-depth (the whole model with T5-XXL takes 29 GB "
                         "in f32)")
    if a.model == "zimage" and not a.zimage_depth:
        raise SystemExit("--model zimage needs --zimage-depth (the whole model takes 40 GB in f32)")
    if a.model == "flux1-schnell" and a.device == "cpu" and not a.flux1_depth and not a.ops:
        raise SystemExit("--model flux1-schnell on the CPU needs --flux1-depth (its 12B transformer and T5-XXL "
                         "take 67 GB in f32)")
    if a.flux1_depth and a.model != "flux1-schnell":
        raise SystemExit("--flux1-depth needs --model flux1-schnell")
    if a.zimage_depth and a.model != "zimage":
        raise SystemExit("--zimage-depth needs --model zimage")
    if a.rounds < 1 or (a.rounds > 1 and not a.sdbench):
        raise SystemExit("--rounds takes a count of at least 1, and more than one needs --sdbench")
    if a.flux2_depth and a.model != "flux2-klein":
        raise SystemExit("--flux2-depth needs --model flux2-klein")
    if a.device != "cpu" and a.sdbench and not a.ops:
        raise SystemExit("--sdbench compares the UNet and VAE on the CPU only; scripts/gpu-check compares them on a GPU")
    if a.device not in ("cpu", "cuda") and a.ops:
        raise SystemExit("--ops compares on the CPU or on CUDA device 0 (--device cuda)")
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    if a.ops:
        if not a.sdbench or a.model == "sdxl-base":
            raise SystemExit("--ops needs --sdbench BINARY, and SD1.5's (--model sd15), FLUX.2 klein's, Z-Image's or SD3.5 Medium's layers")
        return compare_ops(a)
    folder = flux2_timing_model(a.flux2_depth) if a.flux2_depth else None
    if a.zimage_depth:
        folder = zimage_timing_model(a.zimage_depth)
    if a.sd3_depth:
        folder = sd3_timing_model(a.sd3_depth)
    if a.flux1_depth:
        folder = flux1_timing_model(a.flux1_depth)
    components = {"flux2-klein": flux2_calls, "zimage": zimage_calls, "sd35-medium": sd3_calls,
                  "flux1-schnell": flux1_calls}.get(a.model, unet_calls)
    if a.rounds == 1:
        # sdbench first, before torch's models take their memory.
        ours = run_sdbench(a, folder) if a.sdbench else None
        return print_ratios(a, [(ours, time_torch(*components(a, folder), a.repeat))])
    calls, sync = components(a, folder)
    rounds = []
    for r in range(a.rounds):
        print(f"\nround {r + 1} of {a.rounds}", flush=True)
        rounds.append((run_sdbench(a, folder), time_torch(calls, sync, a.repeat)))
    print_ratios(a, rounds)


def unet_calls(a, folder=None):
    """SD1.5's (or SDXL base's) UNet call at batch 2 and VAE decode in torch, random weights:
    [(name, call)] and the device's synchronisation (`folder`, FLUX.2's, is not used)."""
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
    device, dtype, sync = torch_target(a)
    unet = unet.to(device, dtype)
    if added is not None:
        added = {k: v.to(device, dtype) for k, v in added.items()}
    vae = AutoencoderKL(
        block_out_channels=(128, 256, 512, 512), layers_per_block=2,
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
    ).eval().to(device, dtype)
    s = a.size // 8
    sample = torch.randn(2, 4, s, s).to(device, dtype)
    context = torch.randn(2, 77, width).to(device, dtype)
    latents = torch.randn(1, 4, s, s).to(device, dtype)
    return [
        (f"unet call (batch 2, 4x{s}x{s} latents)", lambda: unet(sample, 500.0, encoder_hidden_states=context, added_cond_kwargs=added)),
        (f"vae decode (4x{s}x{s} -> 3x{a.size}x{a.size})", lambda: vae.decode(latents)),
    ], sync


def time_torch(calls, sync, repeat):
    """{component: [samples]} for each (name, call), a warm-up call first."""
    theirs = {}
    for name, fn in calls:
        samples = timed(fn, repeat, sync)
        theirs[name.split(" (")[0]] = samples
        print(f"torch {torch.__version__} {name}: median {statistics.median(samples):.3f} s, samples {[round(x, 3) for x in samples]}", flush=True)
    return theirs


def print_ratios(a, rounds):
    """The table of sdbench's and torch's medians and their ratio; over several rounds, each
    round's medians of both sides, each round's ratio and the median of those ratios."""
    if rounds[0][0] is None:
        return
    print(f"\n| {a.model} {a.size}x{a.size}, {a.threads} threads | sdbench s | torch s | ratio |")
    print("| --- | --- | --- | --- |")
    for what in rounds[0][1]:
        if len(rounds) == 1:
            ours, theirs = rounds[0][0][what], statistics.median(rounds[0][1][what])
            print(f"| {what} | {ours:.3f} | {theirs:.3f} | {ours / theirs:.2f} |")
            continue
        ours = [r[0][what] for r in rounds]
        theirs = [statistics.median(r[1][what]) for r in rounds]
        ratios = [o / t for o, t in zip(ours, theirs)]
        print(f"| {what} ({len(rounds)} rounds; round ratios {', '.join(f'{x:.2f}' for x in ratios)}) "
              f"| {', '.join(f'{x:.3f}' for x in ours)} | {', '.join(f'{x:.3f}' for x in theirs)} "
              f"| {statistics.median(ratios):.2f} |")


def flux2_transformer(double=5, single=20):
    """black-forest-labs/FLUX.2-klein-4B's transformer/config.json (depth changeable)."""
    return Flux2Transformer2DModel(
        num_layers=double, num_single_layers=single, num_attention_heads=24, joint_attention_dim=7680,
        guidance_embeds=False,
    ).eval()


def flux2_timing_model(depth):
    """A FLUX.2 klein folder at the 4B model's widths with `depth` ("DOUBLE,SINGLE") blocks, its real
    VAE, and a text encoder of Qwen3-4B's hidden size but a narrow MLP and two heads (only its output
    width matters here; the timed calls never run it). Saved once under ~/.cache/sdbench and reused:
    it fits a machine that cannot hold the 28 GB of the full model in f32."""
    from pathlib import Path
    import shutil
    from transformers import Qwen3Config, Qwen3ForCausalLM

    double, single = (int(n) for n in depth.split(","))
    folder = Path.home() / ".cache" / "sdbench" / f"flux2-klein-timing-{double}-{single}"
    if (folder / "model_index.json").exists():
        return folder
    fixture = Path(__file__).resolve().parent.parent / "crates/diffusion/tests/fixtures/tiny-flux2-klein"
    work = folder.with_name(folder.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    for part in ("scheduler", "tokenizer"):
        shutil.copytree(fixture / part, work / part)
    config = Qwen3Config.from_pretrained(fixture / "text_encoder")  # vocabulary and special tokens
    config.update(dict(hidden_size=2560, intermediate_size=64, num_attention_heads=2, num_key_value_heads=1,
                       head_dim=128))
    torch.manual_seed(0)
    text_encoder = Qwen3ForCausalLM(config).eval()
    text_encoder.save_pretrained(work / "text_encoder", safe_serialization=True)
    flux2_transformer(double, single).save_pretrained(work / "transformer", safe_serialization=True)
    AutoencoderKLFlux2().eval().save_pretrained(work / "vae", safe_serialization=True)
    shutil.copy(fixture / "model_index.json", work / "model_index.json")
    shutil.rmtree(folder, ignore_errors=True)
    work.rename(folder)
    return folder


def flux2_calls(a, folder=None):
    """black-forest-labs/FLUX.2-klein-4B's transformer call (batch 1) and VAE decode in torch, or
    those of the model saved in `folder`: [(name, call)] and the device's synchronisation."""
    if a.size % 16:
        raise SystemExit("--size must be a multiple of 16 for FLUX.2 (the VAE's 8 times 2x2 patches)")
    device, dtype, sync = torch_target(a)
    if folder is None:
        transformer, vae = flux2_transformer(), AutoencoderKLFlux2().eval()
    else:
        transformer = Flux2Transformer2DModel.from_pretrained(folder / "transformer").eval()
        vae = AutoencoderKLFlux2.from_pretrained(folder / "vae").eval()
        print(f"transformer: {transformer.config.num_layers} double- and "
              f"{transformer.config.num_single_layers} single-stream blocks ({folder})")
    transformer, vae = transformer.to(device, dtype), vae.to(device, dtype)
    g = a.size // 16
    latents = torch.randn(1, g * g, 128).to(device, dtype)
    context = torch.randn(1, 512, 7680).to(device, dtype)
    img_ids = torch.cartesian_prod(torch.arange(1), torch.arange(g), torch.arange(g), torch.arange(1)).to(device)
    txt_ids = torch.cartesian_prod(torch.arange(1), torch.arange(1), torch.arange(1), torch.arange(512)).to(device)
    z = torch.randn(1, 32, 2 * g, 2 * g).to(device, dtype)
    return [
        (f"transformer call (batch 1, {g * g} image + 512 text tokens)",
         lambda: transformer(hidden_states=latents, encoder_hidden_states=context,
                             timestep=torch.tensor([0.5], device=device, dtype=dtype),
                             img_ids=img_ids, txt_ids=txt_ids, guidance=None)),
        (f"vae decode (32x{2 * g}x{2 * g} -> 3x{a.size}x{a.size})", lambda: vae.decode(z)),
    ], sync


def compare_ops(a):
    """`sdbench timing --ops` against the same layers in torch, one row per case: on the CPU
    (threads), or on CUDA in the given precision (both sides synchronise around each call). With
    --rounds N the two sides alternate N times (all of sdbench's layers, then torch's) and each
    row gives every round's times, its ratio and the median of the ratios."""
    on_gpu = a.device == "cuda"
    backend = ["--backend", "cuda", "--precision", a.dtype] if on_gpu else ["--backend", "cpu", "--threads", str(a.threads)]
    cmd = [a.sdbench, "timing", "--ops", "--ops-of", {"zimage": "zimage-turbo"}.get(a.model, a.model), *backend,
           "--width", str(a.size), "--height", str(a.size), "--repeat", str(a.repeat)]
    device, dtype, sync = torch_target(a)
    calls = {}  # case -> torch's call, made once
    rounds = []  # per round: case -> (sdbench ms, sdbench rate, unit, torch ms)
    for r in range(a.rounds):
        if a.rounds > 1:
            print(f"\nround {r + 1} of {a.rounds}", flush=True)
        out = run_echoed(cmd)
        measured = {}
        for line in out.splitlines():
            m = re.match(r"op (\w+) ([^:]+): median ([0-9.]+) ms, ([0-9.]+) (GFLOP/s|GB/s)", line)
            if not m:
                continue
            case = f"{m.group(1)} {m.group(2)}"
            if case not in calls:
                params = {k: int(v) for k, v in (kv.split("=") for kv in m.group(2).split())}
                calls[case] = torch_op(m.group(1), params, device, dtype)
            theirs_ms = statistics.median(timed(calls[case], a.repeat, sync)) * 1e3
            measured[case] = (float(m.group(3)), float(m.group(4)), m.group(5), theirs_ms)
        if not measured:
            raise SystemExit(f"no op lines in sdbench's output:\n{out}")
        rounds.append(measured)
    where = f"{torch.cuda.get_device_name(0)}, {a.dtype}" if on_gpu else f"{a.threads} threads"
    if a.rounds == 1:
        print(f"\n| layer ({where}, torch {torch.__version__}) | sdbench ms | torch ms | sdbench rate | torch rate | ratio |")
        print("| --- | --- | --- | --- | --- | --- |")
        for case, (ours_ms, ours_rate, unit, theirs_ms) in rounds[0].items():
            # The same work in both, so the rates scale with the times.
            theirs_rate = ours_rate * ours_ms / theirs_ms
            print(f"| {case} | {ours_ms:.1f} | {theirs_ms:.1f} | {ours_rate:.1f} {unit} | {theirs_rate:.1f} {unit} | {ours_ms / theirs_ms:.2f} |")
        return
    print(f"\n| layer ({where}, torch {torch.__version__}, {a.rounds} rounds) | sdbench ms | torch ms | round ratios | median ratio |")
    print("| --- | --- | --- | --- | --- |")
    for case in rounds[0]:
        pairs = [(r[case][0], r[case][3]) for r in rounds if case in r]
        ratios = [o / t for o, t in pairs]
        print(f"| {case} | {', '.join(f'{o:.1f}' for o, _ in pairs)} | {', '.join(f'{t:.1f}' for _, t in pairs)} "
              f"| {', '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(ratios):.2f} |")


def torch_op(kind, p, device=torch.device("cpu"), dtype=torch.float32):
    """The torch call for one `sdbench timing --ops` case, on random inputs of its shape."""
    F = torch.nn.functional
    randn = lambda *shape: torch.randn(*shape).to(device, dtype)
    if kind == "conv3x3":
        c = p["c"]
        x, w, b = randn(p["n"], c, p["h"], p["w"]), randn(c, c, 3, 3) / (9 * c) ** 0.5, randn(c)
        return lambda: F.conv2d(x, w, b, padding=1)
    if kind == "linear":
        x, w, b = randn(1, p["rows"], p["in"]), randn(p["out"], p["in"]) / p["in"] ** 0.5, randn(p["out"])
        return lambda: F.linear(x, w, b)
    if kind == "attention":
        n, heads, dim = p["n"], p["heads"], p["dim"]
        q, k, v = (randn(n, s, heads * dim) for s in (p["q"], p["k"], p["k"]))
        split = lambda t: t.view(n, -1, heads, dim).transpose(1, 2)  # as diffusers' AttnProcessor2_0
        return lambda: F.scaled_dot_product_attention(split(q), split(k), split(v)).transpose(1, 2).reshape(n, -1, heads * dim)
    if kind in ("groupnorm", "groupnorm_silu"):
        x, g, b = randn(p["n"], p["c"], p["h"], p["w"]), randn(p["c"]), randn(p["c"])
        norm = lambda: F.group_norm(x, 32, g, b, eps=1e-6)
        return (lambda: F.silu(norm())) if kind == "groupnorm_silu" else norm
    raise SystemExit(f"unknown op kind in sdbench's output: {kind}")


def zimage_timing_model(depth):
    """A Z-Image folder at Turbo's widths with `depth` ("LAYERS,REFINERS") blocks, Turbo's VAE and
    scheduler, the tiny fixture's tokenizer, and a two-layer text encoder of Qwen3-4B's width.
    Saved once under ~/.cache/sdbench and reused."""
    from pathlib import Path
    import json
    import shutil
    from transformers import Qwen3Config, Qwen3Model

    layers, refiners = (int(n) for n in depth.split(","))
    folder = Path.home() / ".cache" / "sdbench" / f"zimage-timing-{layers}-{refiners}"
    if (folder / "model_index.json").exists():
        return folder
    fixture = Path(__file__).resolve().parent.parent / "crates/diffusion/tests/fixtures/tiny-zimage"
    work = folder.with_name(folder.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    for part in ("scheduler", "tokenizer"):
        shutil.copytree(fixture / part, work / part)
    config = Qwen3Config.from_pretrained(fixture / "text_encoder")  # vocabulary and special tokens
    config.update(dict(hidden_size=2560, intermediate_size=64, num_attention_heads=2, num_key_value_heads=1,
                       head_dim=128, num_hidden_layers=2, layer_types=["full_attention"] * 2))
    torch.manual_seed(0)
    Qwen3Model(config).eval().save_pretrained(work / "text_encoder", safe_serialization=True)
    ZImageTransformer2DModel(n_layers=layers, n_refiner_layers=refiners).eval().save_pretrained(
        work / "transformer", safe_serialization=True)
    zimage_vae().save_pretrained(work / "vae", safe_serialization=True)
    shutil.copy(fixture / "model_index.json", work / "model_index.json")
    shutil.rmtree(folder, ignore_errors=True)
    work.rename(folder)
    return folder


def zimage_vae():
    """Tongyi-MAI/Z-Image-Turbo's vae/config.json (FLUX.1's VAE)."""
    return AutoencoderKL(
        block_out_channels=(128, 256, 512, 512), down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4, layers_per_block=2, latent_channels=16, norm_num_groups=32,
        sample_size=1024, scaling_factor=0.3611, shift_factor=0.1159, use_quant_conv=False,
        use_post_quant_conv=False,
    ).eval()


def zimage_calls(a, folder):
    """The Z-Image transformer's call (batch 1) on the timing prompt's caption and the VAE's
    decode, of the model saved in `folder`: [(name, call)] and the device's synchronisation."""
    from transformers import AutoTokenizer

    if a.size % 16:
        raise SystemExit("--size must be a multiple of 16 for Z-Image (the VAE's 8 times 2x2 patches)")
    device, dtype, sync = torch_target(a)
    transformer = ZImageTransformer2DModel.from_pretrained(folder / "transformer").eval().to(device, dtype)
    vae = AutoencoderKL.from_pretrained(folder / "vae").eval().to(device, dtype)
    print(f"transformer: {transformer.config.n_layers} main and {transformer.config.n_refiner_layers} "
          f"refiner blocks ({folder})")
    # The caption `sdbench timing` encodes: its prompt in the chat template with thinking on.
    tokenizer = AutoTokenizer.from_pretrained(folder / "tokenizer")
    text = tokenizer.apply_chat_template([{"role": "user", "content": "a photograph of an astronaut riding a horse"}],
                                         tokenize=False, add_generation_prompt=True, enable_thinking=True)
    tokens = len(tokenizer(text)["input_ids"])
    g = a.size // 8
    latents = [torch.randn(16, 1, g, g).to(device, dtype)]
    caption = [torch.randn(tokens, 2560).to(device, dtype)]
    z = torch.randn(1, 16, g, g).to(device, dtype)
    t = torch.tensor([0.5], device=device, dtype=dtype)
    return [
        (f"transformer call (batch 1, {(g // 2) ** 2} image + {tokens} text tokens)",
         lambda: transformer(latents, t, caption, return_dict=False)),
        (f"vae decode (16x{g}x{g} -> 3x{a.size}x{a.size})", lambda: vae.decode(z)),
    ], sync


def sd3_timing_model(depth):
    """An SD3.5 folder at Medium's widths with `depth` ("BLOCKS,T5_LAYERS"): MMDiT-X blocks (the
    first half dual-attention), T5-XXL layers at its widths, CLIP-L and CLIP-G at their output
    widths but two narrow layers each (the timed calls never run them), SD3's VAE, the tiny
    fixture's tokenizers and scheduler. Saved once under ~/.cache/sdbench and reused."""
    import shutil
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection

    blocks, t5_layers = (int(n) for n in depth.split(","))
    folder = Path.home() / ".cache" / "sdbench" / f"sd35-medium-timing-{blocks}-{t5_layers}"
    if (folder / "model_index.json").exists():
        return folder
    fixture = FIXTURES / "tiny-sd3"
    work = folder.with_name(folder.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    for part in ("scheduler", "tokenizer", "tokenizer_2", "tokenizer_3"):
        shutil.copytree(fixture / part, work / part)
    torch.manual_seed(0)
    for part, width in (("text_encoder", 768), ("text_encoder_2", 1280)):
        config = CLIPTextConfig.from_pretrained(fixture / part)  # vocabulary and special tokens
        config.update(dict(hidden_size=width, projection_dim=width, intermediate_size=64,
                           num_attention_heads=2, num_hidden_layers=2))
        CLIPTextModelWithProjection(config).eval().save_pretrained(work / part, safe_serialization=True)
    sd3_t5(t5_layers).save_pretrained(work / "text_encoder_3", safe_serialization=True)
    sd3_transformer(blocks, tuple(range((blocks + 1) // 2))).save_pretrained(work / "transformer",
                                                                              safe_serialization=True)
    sd3_vae().save_pretrained(work / "vae", safe_serialization=True)
    shutil.copy(fixture / "model_index.json", work / "model_index.json")
    shutil.rmtree(folder, ignore_errors=True)
    work.rename(folder)
    return folder


def sd3_transformer(blocks=24, dual=tuple(range(13))):
    """stabilityai/stable-diffusion-3.5-medium's transformer/config.json (depth changeable)."""
    from diffusers import SD3Transformer2DModel

    return SD3Transformer2DModel(
        sample_size=128, patch_size=2, in_channels=16, num_layers=blocks, attention_head_dim=64,
        num_attention_heads=24, joint_attention_dim=4096, caption_projection_dim=1536,
        pooled_projection_dim=2048, out_channels=16, pos_embed_max_size=384, dual_attention_layers=dual,
        qk_norm="rms_norm",
    ).eval()


def sd3_t5(layers=24):
    """T5-XXL's encoder (SD3.5's text_encoder_3) with the tiny fixture's vocabulary (the timed call
    never meets another token) and `layers` layers."""
    from transformers import T5Config, T5EncoderModel

    config = T5Config.from_pretrained(FIXTURES / "tiny-sd3" / "text_encoder_3")
    config.update(dict(d_model=4096, d_ff=10240, d_kv=64, num_heads=64, num_layers=layers))
    return T5EncoderModel(config).eval()


def sd3_vae():
    """SD3's VAE: FLUX.1's, with SD3's scaling and shift."""
    vae = zimage_vae()
    vae.register_to_config(scaling_factor=1.5305, shift_factor=0.0609)
    return vae


def sd3_calls(a, folder=None):
    """The SD3.5 transformer's call (batch 1, 77 + 256 text tokens), the VAE's decode and T5's
    encoder over 256 tokens, of SD3.5 Medium in full (built on the device, random weights) or the
    model saved in `folder`: [(name, call)] and the device's synchronisation."""
    from diffusers import SD3Transformer2DModel
    from transformers import T5EncoderModel

    if a.size % 16:
        raise SystemExit("--size must be a multiple of 16 for SD3 (the VAE's 8 times 2x2 patches)")
    device, dtype, sync = torch_target(a)
    if folder is None:
        with torch.device(device):
            transformer, vae, t5 = (m.to(dtype) for m in (sd3_transformer(), sd3_vae(), sd3_t5()))
    else:
        transformer = SD3Transformer2DModel.from_pretrained(folder / "transformer").eval().to(device, dtype)
        vae = AutoencoderKL.from_pretrained(folder / "vae").eval().to(device, dtype)
        t5 = T5EncoderModel.from_pretrained(folder / "text_encoder_3").eval().to(device, dtype)
    print(f"transformer: {transformer.config.num_layers} blocks, dual attention in "
          f"{list(transformer.config.dual_attention_layers)}; T5: {t5.config.num_layers} layers ({folder})")
    g = a.size // 8
    latents = torch.randn(1, 16, g, g).to(device, dtype)
    context = torch.randn(1, 77 + 256, 4096).to(device, dtype)
    pooled = torch.randn(1, 2048).to(device, dtype)
    t = torch.tensor([500.0], device=device, dtype=dtype)
    z = torch.randn(1, 16, g, g).to(device, dtype)
    ids = torch.randint(0, t5.config.vocab_size, (1, 256), device=device)
    return [
        (f"transformer call (batch 1, {(g // 2) ** 2} image + 333 text tokens)",
         lambda: transformer(hidden_states=latents, encoder_hidden_states=context, pooled_projections=pooled,
                             timestep=t, return_dict=False)),
        (f"vae decode (16x{g}x{g} -> 3x{a.size}x{a.size})", lambda: vae.decode(z)),
        ("t5 call (256 tokens)", lambda: t5(input_ids=ids)),
    ], sync


def flux1_timing_model(depth):
    """A FLUX.1 [schnell] folder at its widths with `depth` ("DOUBLE,SINGLE,T5_LAYERS"): transformer
    blocks and T5-XXL layers at their widths, CLIP-L at its output width but two narrow layers (the
    timed calls never run it), FLUX.1's VAE, the tiny schnell fixture's tokenizers and scheduler.
    Saved once under ~/.cache/sdbench and reused."""
    import shutil
    from diffusers import FluxTransformer2DModel
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    double, single, t5_layers = (int(n) for n in depth.split(","))
    folder = Path.home() / ".cache" / "sdbench" / f"flux1-schnell-timing-{double}-{single}-{t5_layers}"
    if (folder / "model_index.json").exists():
        return folder
    fixture = FIXTURES / "tiny-flux1-schnell"
    work = folder.with_name(folder.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    for part in ("scheduler", "tokenizer", "tokenizer_2"):
        shutil.copytree(fixture / part, work / part)
    torch.manual_seed(0)
    config = CLIPTextConfig.from_pretrained(fixture / "text_encoder")  # vocabulary and special tokens
    config.update(dict(hidden_size=768, projection_dim=768, intermediate_size=64, num_attention_heads=2,
                       num_hidden_layers=2))
    CLIPTextModel(config).eval().save_pretrained(work / "text_encoder", safe_serialization=True)
    config = T5Config.from_pretrained(fixture / "text_encoder_2")
    config.update(dict(d_model=4096, d_ff=10240, d_kv=64, num_heads=64, num_layers=t5_layers))
    T5EncoderModel(config).eval().save_pretrained(work / "text_encoder_2", safe_serialization=True)
    FluxTransformer2DModel(num_layers=double, num_single_layers=single).eval().save_pretrained(
        work / "transformer", safe_serialization=True)
    flux1_vae().save_pretrained(work / "vae", safe_serialization=True)
    shutil.copy(fixture / "model_index.json", work / "model_index.json")
    shutil.rmtree(folder, ignore_errors=True)
    work.rename(folder)
    return folder


def flux1_vae():
    """FLUX.1's VAE: SD3's, with FLUX.1's scaling and shift."""
    vae = zimage_vae()
    vae.register_to_config(scaling_factor=0.3611, shift_factor=0.1159)
    return vae


def flux1_calls(a, folder=None):
    """FLUX.1 [schnell]'s transformer call (batch 1, its 2x2-patch tokens + T5's 256), the VAE's decode
    and T5-XXL's encoder over 256 tokens, of the whole model (built on the device, random weights) or
    the one saved in `folder`: [(name, call)] and the device's synchronisation."""
    from diffusers import FluxTransformer2DModel
    from transformers import T5EncoderModel

    if a.size % 16:
        raise SystemExit("--size must be a multiple of 16 for FLUX.1 (the VAE's 8 times 2x2 patches)")
    device, dtype, sync = torch_target(a)
    if folder is None:
        with torch.device(device):
            transformer, vae, t5 = (m.to(dtype) for m in (FluxTransformer2DModel(), flux1_vae(), sd3_t5()))
    else:
        transformer = FluxTransformer2DModel.from_pretrained(folder / "transformer").eval().to(device, dtype)
        vae = AutoencoderKL.from_pretrained(folder / "vae").eval().to(device, dtype)
        t5 = T5EncoderModel.from_pretrained(folder / "text_encoder_2").eval().to(device, dtype)
        print(f"transformer: {transformer.config.num_layers}+{transformer.config.num_single_layers} blocks; "
              f"T5: {t5.config.num_layers} layers ({folder})")
    g = a.size // 8
    tokens = (g // 2) ** 2
    latents = torch.randn(1, tokens, 64).to(device, dtype)
    context = torch.randn(1, 256, 4096).to(device, dtype)
    pooled = torch.randn(1, 768).to(device, dtype)
    t = torch.tensor([0.5], device=device, dtype=dtype)
    image_ids = torch.zeros(g // 2, g // 2, 3)
    image_ids[..., 1] += torch.arange(g // 2)[:, None]
    image_ids[..., 2] += torch.arange(g // 2)[None, :]
    image_ids = image_ids.reshape(tokens, 3).to(device, dtype)
    text_ids = torch.zeros(256, 3).to(device, dtype)
    z = torch.randn(1, 16, g, g).to(device, dtype)
    ids = torch.randint(0, t5.config.vocab_size, (1, 256), device=device)
    return [
        (f"transformer call (batch 1, {tokens} image + 256 text tokens)",
         lambda: transformer(hidden_states=latents, encoder_hidden_states=context, pooled_projections=pooled,
                             timestep=t, img_ids=image_ids, txt_ids=text_ids, return_dict=False)),
        (f"vae decode (16x{g}x{g} -> 3x{a.size}x{a.size})", lambda: vae.decode(z)),
        ("t5 call (256 tokens)", lambda: t5(input_ids=ids)),
    ], sync


def torch_target(a):
    """The torch device and dtype the arguments name, and a call that waits for that device."""
    device = torch.device(a.device)
    dtype = {"f32": torch.float32, "f16": torch.float16}[a.dtype]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    return device, dtype, sync


def run_echoed(cmd):
    """Runs sdbench (exiting on failure), printing the command and then its output; returns the output."""
    print("$", " ".join(cmd), flush=True)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    print(out, end="", flush=True)
    return out


def run_sdbench(a, folder=None):
    """Medians of `sdbench timing` on the CPU, by component ("unet call" or "transformer call",
    "vae decode"), on the synthetic model or the one saved in `folder`."""
    model = str(folder) if folder else {"sd15": "synthetic", "sdxl-base": "synthetic-sdxl-base", "flux2-klein": "synthetic-flux2-klein",
                                          "sd35-medium": "synthetic-sd35-medium",
                                          "flux1-schnell": "synthetic-flux1-schnell"}[a.model]
    cmd = [a.sdbench, "timing", "--model", model, "--backend", "cpu", "--threads", str(a.threads),
           "--width", str(a.size), "--height", str(a.size), "--repeat", str(a.repeat)]
    out = run_echoed(cmd)
    medians = {}
    for line in out.splitlines():
        m = re.match(r"(unet call|transformer call|vae decode|t5 call) .*: median ([0-9.]+) s", line)
        if m:
            medians[m.group(1)] = float(m.group(2))
    if len(medians) != (3 if a.model in ("sd35-medium", "flux1-schnell") else 2):
        raise SystemExit(f"could not read the denoiser's and VAE's (and T5's) medians from sdbench's output:\n{out}")
    return medians


if __name__ == "__main__":
    main()
