"""How far each tiny fixture's f32 reference images lie from the same computation in float64.

The parity tests compare the engine's f32 images with diffusers' f32 images. Both are f32
evaluations of the same function, in different summation orders; each lies within the f32
rounding error of that function from its exact value. This script measures that error for every
reference image: diffusers runs the committed pipeline again in float64 on the same inputs (the
same prompts, latents, schedulers, pictures and noise as the fixture scripts), and the largest
difference from the f32 reference image is written into the fixture's reference JSON as
`f32_rounding` (per image key), with the tolerance the tests derive from it (`f32_tolerance`;
crates/diffusion/src/parity.rs says how).

Usage (the venv of scripts/make_fixtures.py): python scripts/measure_f32_rounding.py [NAME...]
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


def main(only):
    torch.set_grad_enabled(False)
    for name, measure in MEASURE.items():
        if only and name not in only:
            continue
        json_path = FIXTURES / f"{name}.reference.json"
        meta = json.loads(json_path.read_text())
        refs = load_file(str(FIXTURES / f"{name}.reference.safetensors"))
        exact = measure(name, refs, meta)
        rounding = {key: float((image - refs[key]).abs().max()) for key, image in exact.items()}
        worst = max(rounding.values())
        meta["f32_rounding"] = {key: float(f"{value:.3g}") for key, value in rounding.items()}
        meta["f32_tolerance"] = float(f"{ROUNDING_MULTIPLE * worst:.2g}")
        # Written as the fixture script wrote it (make_fixtures.py: indent 2, ASCII, no final newline).
        if name.startswith(("tiny-flux2", "tiny-zimage")):
            json_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
        else:
            json_path.write_text(json.dumps(meta, indent=2))
        print(f"{name}: worst f32 rounding {worst:.3g} over {len(rounding)} images; tolerance {meta['f32_tolerance']}")


if __name__ == "__main__":
    main(sys.argv[1:])
