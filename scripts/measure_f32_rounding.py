"""How far each tiny fixture's f32 reference images lie from the same computation in float64.

The parity tests compare the engine's f32 images with diffusers' f32 images. Both are f32
evaluations of the same function, in different summation orders; each lies within the f32
rounding error of that function from its exact value. This script measures that error for every
reference image: diffusers runs the committed pipeline again in float64 on the same inputs (the
same prompts, latents, schedulers, pictures and noise as the fixture scripts), and the largest
difference from the f32 reference image is written into the fixture's reference JSON as
`f32_rounding` (per image key), with the tolerance the tests derive from it (`f32_tolerance`;
crates/diffusion/src/parity.rs says how).

With --components it does the same for each component call a fixture script recorded (one text
encoder, denoiser or VAE call on stored inputs): `component_rounding` and `component_tolerance`,
per reference key. Run both after remaking a fixture.

Usage (the venv of scripts/make_fixtures.py):
  python scripts/measure_f32_rounding.py [--components] [NAME...]
"""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "crates" / "diffusion" / "tests" / "fixtures"

# The tolerance is this many times the worst measured rounding: the engine's image and diffusers'
# each lie within about one rounding error of the exact image (2), and the engine's kernels
# (Winograd convolutions, blocked attention, other summation orders) may round up to 4 times as
# far as diffusers' do (x4).
ROUNDING_MULTIPLE = 8


def script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def image_of(output):
    return torch.from_numpy(np.ascontiguousarray(output, dtype=np.float32))


def stable_diffusion(name, refs, meta):
    """Every generation, the batch and image-to-image, as make_fixtures.py made them."""
    from diffusers import (StableDiffusionImg2ImgPipeline, StableDiffusionPipeline,
                           StableDiffusionXLImg2ImgPipeline, StableDiffusionXLPipeline)

    fixtures = script("make_fixtures")
    folder = FIXTURES / name
    xl = (folder / "text_encoder_2").is_dir()
    cls = StableDiffusionXLPipeline if xl else StableDiffusionPipeline
    pipe = cls.from_pretrained(folder, torch_dtype=torch.float64, safety_checker=None, requires_safety_checker=False) \
        if not xl else cls.from_pretrained(folder, torch_dtype=torch.float64, add_watermarker=False)
    base = dict(pipe.scheduler.config)
    g = meta["generate"]
    images = {}
    for run in g["runs"]:
        cls_, extra = fixtures.SCHEDULERS[run["scheduler"]]
        pipe.scheduler = cls_.from_config(base, **extra)
        restore = fixtures.patch_ancestral_noise(seed=0)
        image = pipe(g["prompt"], negative_prompt=run["negative"], num_inference_steps=g["steps"],
                     guidance_scale=g["guidance"], height=g["height"], width=g["width"],
                     latents=refs["generate.latents"].double(), output_type="np").images[0]
        restore()
        images[run["key"]] = image_of(image)
    pipe.scheduler = fixtures.EulerDiscreteScheduler.from_config(base)
    batch = pipe(g["prompt"], num_images_per_prompt=2, num_inference_steps=g["steps"], guidance_scale=g["guidance"],
                 height=g["height"], width=g["width"], latents=refs["batch.latents"].double(), output_type="np").images
    images["batch.images"] = image_of(batch)
    i2i = meta["img2img"]
    img_cls = StableDiffusionXLImg2ImgPipeline if xl else StableDiffusionImg2ImgPipeline
    options = {"add_watermarker": False} if xl else {"requires_safety_checker": False}
    img2img = img_cls(**pipe.components, **options)
    init = Image.open(FIXTURES / f"{name}.init.png").convert("RGB")
    for run in i2i["runs"]:
        cls_, extra = fixtures.SCHEDULERS[run["scheduler"]]
        img2img.scheduler = cls_.from_config(base, **extra)
        restore = fixtures.patch_img2img_noise(i2i["seed"])
        image = img2img(i2i["prompt"], image=init, strength=i2i["strength"], num_inference_steps=i2i["steps"],
                        guidance_scale=i2i["guidance"], output_type="np").images[0]
        restore()
        images[run["key"]] = image_of(image)
    return images


def flux2_klein(name, refs, meta):
    from diffusers import Flux2KleinPipeline

    fixtures = script("make_flux2_fixtures")
    pipe = Flux2KleinPipeline.from_pretrained(FIXTURES / name, torch_dtype=torch.float64)
    images = {}
    for run in meta["generate"] + meta.get("generate_cfg", []):
        # The guided run is of the same weights as a model that is not step-distilled.
        pipe.register_to_config(is_distilled=not run["key"].startswith("generate_cfg."))
        noise = fixtures.SdBenchNormal(run["seed"]).tensor((1, 128, run["height"] // 8, run["width"] // 8))
        kwargs = {}
        if "pictures" in run:
            kwargs["image"] = [Image.fromarray(fixtures.pattern_image(w, h)) for w, h in run["pictures"]]
        image = pipe(prompt=run["prompt"], height=run["height"], width=run["width"],
                     num_inference_steps=run["steps"], guidance_scale=run["guidance"],
                     latents=noise.double(), output_type="np", **kwargs).images[0]
        images[run["key"]] = image_of(image)
    return images


def zimage(name, refs, meta):
    from diffusers import ZImagePipeline

    fixtures = script("make_zimage_fixtures")
    pipe = ZImagePipeline.from_pretrained(FIXTURES / name, torch_dtype=torch.float64)
    return {run["key"]: fixtures.generated(pipe, run, torch.float64) for run in meta["generate"]}


def sd_components(name, refs, meta):
    """Each component call make_fixtures.py records, on its stored inputs, in float64."""
    from diffusers import StableDiffusionPipeline, StableDiffusionXLPipeline

    fixtures = script("make_fixtures")
    folder = FIXTURES / name
    xl = (folder / "text_encoder_2").is_dir()
    if xl:
        pipe = StableDiffusionXLPipeline.from_pretrained(folder, torch_dtype=torch.float64, add_watermarker=False)
    else:
        pipe = StableDiffusionPipeline.from_pretrained(folder, torch_dtype=torch.float64, safety_checker=None,
                                                       requires_safety_checker=False)
    prompt = meta["generate"]["prompt"]
    out = {"text_encoder.last_hidden_state": pipe.text_encoder(refs["text_encoder.input_ids"].long())[0]}
    if xl:
        context, _, pooled, _ = pipe.encode_prompt(prompt, device="cpu", num_images_per_prompt=1,
                                                   do_classifier_free_guidance=False)
        out["prompt.pooled"] = pooled
    else:
        context, _ = pipe.encode_prompt(prompt, "cpu", 1, False)
    out["prompt.context"] = context
    added = None
    if xl:
        added = {"text_embeds": refs["unet.text_embeds"].double(), "time_ids": refs["unet.time_ids"].double()}
    out["unet.out"] = pipe.unet(refs["unet.sample"].double(), torch.tensor(meta["unet_timestep"], dtype=torch.float64),
                                encoder_hidden_states=refs["unet.context"].double(), added_cond_kwargs=added).sample
    out["vae.image"] = pipe.vae.decode(refs["vae.latents"].double()).sample
    init = np.asarray(Image.open(FIXTURES / f"{name}.init.png").convert("RGB"))
    pixels = torch.from_numpy(init.astype(np.float64) / 255.0 * 2.0 - 1.0).permute(2, 0, 1)[None]
    out["vae_encode.mean"] = pipe.vae.encode(pixels).latent_dist.mode()
    del fixtures
    return out


def vae_tiling_components(name, refs, meta):
    """make_fixtures.py's tiled decodes and encodes of tiny-sd's VAE, in float64."""
    from diffusers import AutoencoderKL

    vae = AutoencoderKL.from_pretrained(FIXTURES / "tiny-sd" / "vae", torch_dtype=torch.float64).eval()
    latents = refs["latents"].double()
    pixels = (refs["rgb"].double() / 255.0 * 2.0 - 1.0).permute(2, 0, 1).unsqueeze(0)
    out = {}
    vae.enable_tiling()
    out["image.tiled"] = vae.decode(latents).sample
    out["mean.tiled"] = vae.encode(pixels).latent_dist.mode()
    full_sample, full_latent = vae.tile_sample_min_size, vae.tile_latent_min_size
    vae.tile_sample_min_size, vae.tile_latent_min_size = full_sample // 2, full_latent // 2
    out["image.half"] = vae.decode(latents).sample
    out["mean.half"] = vae.encode(pixels).latent_dist.mode()
    return out


def flux2_components(name, refs, meta):
    """make_flux2_fixtures.py's prompt embeddings, transformer call and VAE decode, in float64."""
    from diffusers import Flux2KleinPipeline

    fixtures = script("make_flux2_fixtures")
    pipe = Flux2KleinPipeline.from_pretrained(FIXTURES / name, torch_dtype=torch.float64)
    out = {}
    for key in ("short", "long"):
        out[f"prompt_embeds.{key}"] = pipe.encode_prompt(fixtures.TOKENIZER_PROMPTS[key], device="cpu")[0][0]
    lh, lw = meta["transformer"]["grid"]
    noise = fixtures.SdBenchNormal(11).tensor((1, 128, lh, lw)).double()
    latents, latent_ids = pipe.prepare_latents(1, 32, 8 * lh, 8 * lw, torch.float64, "cpu", None, latents=noise)
    embeds, text_ids = pipe.encode_prompt(fixtures.TOKENIZER_PROMPTS[meta["transformer"]["prompt"]], device="cpu")
    timestep = torch.tensor([meta["transformer"]["timestep"]], dtype=torch.float64)
    out["transformer.sample"] = pipe.transformer(hidden_states=latents, timestep=timestep, guidance=None,
                                                 encoder_hidden_states=embeds, txt_ids=text_ids, img_ids=latent_ids,
                                                 return_dict=False)[0][0]
    out["vae.decoded"] = pipe.vae.decode(refs["vae.latents"].double()[None], return_dict=False)[0][0]
    return out


def flux2_reference_components(name, refs, meta):
    """make_flux2_fixtures.py's reference-picture tokens (encoded, patched, normalised), in float64."""
    from diffusers import Flux2KleinPipeline

    fixtures = script("make_flux2_fixtures")
    pipe = Flux2KleinPipeline.from_pretrained(FIXTURES / "tiny-flux2-klein", torch_dtype=torch.float64)
    (w, h), (pw, ph) = meta["reference"]["picture"], meta["reference"]["prepared"]
    picture = Image.fromarray(fixtures.pattern_image(w, h))
    processed = pipe.image_processor.preprocess(picture, height=ph, width=pw, resize_mode="crop").double()
    tokens, _ = pipe.prepare_image_latents([processed], 1, None, "cpu", torch.float64)
    return {"reference.tokens": tokens[0]}


def zimage_components(name, refs, meta):
    """make_zimage_fixtures.py's text states and two-image transformer call, in float64."""
    from diffusers import ZImagePipeline

    fixtures = script("make_zimage_fixtures")
    pipe = ZImagePipeline.from_pretrained(FIXTURES / name, torch_dtype=torch.float64)
    out = {}
    for key in fixtures.TOKENIZER_PROMPTS:
        out[f"prompt_embeds.{key}"] = pipe._encode_prompt(fixtures.TOKENIZER_PROMPTS[key], device="cpu")[0]
    captions = [out[f"prompt_embeds.{key}"] for key in meta["transformer"]["captions"]]
    latents = [refs[f"transformer.latents.{i}"].double().unsqueeze(1) for i in range(2)]
    t = meta["transformer"]["timestep"]
    samples = pipe.transformer(latents, torch.tensor([t, t], dtype=torch.float64), captions, return_dict=False)[0]
    for i in range(2):
        out[f"transformer.sample.{i}"] = samples[i][:, 0]
    return out


# Each fixture's components (one call of a text encoder, denoiser or VAE on the fixture's stored
# inputs), rerun in float64 with `--components`.
COMPONENTS = {
    "tiny-sd": sd_components,
    "tiny-variant": sd_components,
    "tiny-sd2": sd_components,
    "tiny-sdxl": sd_components,
    "tiny-sd-vae-tiling": vae_tiling_components,
    "tiny-flux2-klein": flux2_components,
    "tiny-flux2-klein-references": flux2_reference_components,
    "tiny-zimage": zimage_components,
}


MEASURE = {
    "tiny-sd": stable_diffusion,
    "tiny-variant": stable_diffusion,
    "tiny-sd2": stable_diffusion,
    "tiny-sdxl": stable_diffusion,
    "tiny-flux2-klein": flux2_klein,
    # The same pipeline, conditioned on reference pictures.
    "tiny-flux2-klein-references": lambda name, refs, meta: flux2_klein("tiny-flux2-klein", refs, meta),
    "tiny-zimage": zimage,
}


def write_meta(name, json_path, meta):
    """Written as its fixture script wrote it (make_fixtures.py: indent 2, ASCII, no final newline)."""
    if name.startswith(("tiny-flux2", "tiny-zimage")):
        json_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    elif name == "tiny-sd-vae-tiling":
        json_path.write_text(json.dumps(meta, indent=1))
    else:
        json_path.write_text(json.dumps(meta, indent=2))


def measure_images(name, measure, meta, refs):
    exact = measure(name, refs, meta)
    rounding = {key: float((image - refs[key]).abs().max()) for key, image in exact.items()}
    worst = max(rounding.values())
    meta["f32_rounding"] = {key: float(f"{value:.3g}") for key, value in rounding.items()}
    meta["f32_tolerance"] = float(f"{ROUNDING_MULTIPLE * worst:.2g}")
    print(f"{name}: worst f32 rounding {worst:.3g} over {len(rounding)} images; tolerance {meta['f32_tolerance']}")


def measure_components(name, measure, meta, refs):
    exact = measure(name, refs, meta)
    meta["component_rounding"], meta["component_tolerance"] = {}, {}
    for key, value in exact.items():
        expected = refs[key].double()
        assert value.shape == expected.shape, f"{name} {key}: {tuple(value.shape)} against {tuple(expected.shape)}"
        rounding = float((value.double() - expected).abs().max())
        meta["component_rounding"][key] = float(f"{rounding:.3g}")
        meta["component_tolerance"][key] = float(f"{ROUNDING_MULTIPLE * rounding:.2g}")
        print(f"{name} {key}: f32 rounding {rounding:.3g} (largest value {float(expected.abs().max()):.3g}); "
              f"tolerance {meta['component_tolerance'][key]}")


def main(args):
    torch.set_grad_enabled(False)
    components = "--components" in args
    only = [a for a in args if a != "--components"]
    for name, measure in (COMPONENTS if components else MEASURE).items():
        if only and name not in only:
            continue
        json_path = FIXTURES / f"{name}.reference.json"
        meta = json.loads(json_path.read_text())
        refs = load_file(str(FIXTURES / f"{name}.reference.safetensors"))
        (measure_components if components else measure_images)(name, measure, meta, refs)
        write_meta(name, json_path, meta)


if __name__ == "__main__":
    main(sys.argv[1:])
