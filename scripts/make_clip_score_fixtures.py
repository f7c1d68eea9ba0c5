"""Makes crates/diffusion/tests/fixtures/tiny-clip: a tiny random-weight transformers CLIPModel
with the processor settings of openai/clip-vit-large-patch14 (shortest side to 224 bicubic, centre
crop 224, CLIP's mean and std; legacy eos_token_id 2, so the text is pooled at its largest token
id, as that model's config does), and tiny-clip.reference.json: what torchmetrics' CLIPScore gives
for pictures of several sizes against several prompts (one past 77 tokens), with the features and
the processor's pixel values to tell a preprocessing fault from a network one.

The pictures are not stored: each is a formula of its size that the Rust test computes too.

Run once in a venv with torch, torchmetrics and transformers 4 (torchmetrics 1.9's CLIPScore
reads get_image_features' tensor, which transformers 5 wraps in an output object):
    pip install --target /tmp/tf4 "transformers>=4.50,<5"
    PYTHONPATH=/tmp/tf4 python scripts/make_clip_score_fixtures.py
"""

import json
import os

import numpy as np
import torch
from torchmetrics.multimodal.clip_score import CLIPScore
from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

ROOT = os.path.join(os.path.dirname(__file__), "..", "crates", "diffusion", "tests", "fixtures")
OUT = os.path.join(ROOT, "tiny-clip")

# (width, height): exactly 224, larger squares, non-square both ways, one smaller than 224.
SIZES = [(224, 224), (256, 256), (512, 512), (320, 240), (200, 300), (150, 100)]
PROMPTS = [
    "a red fox standing in fresh snow",
    "a lighthouse on a rocky coast at dusk, " * 12,  # past 77 tokens: truncated
    "portrait of an old sailor",
]


def picture(width, height):
    """A picture with smooth and sharp parts: uint8 [height, width, 3]."""
    y, x = np.mgrid[0:height, 0:width].astype(np.int64)
    channels = []
    for c in range(3):
        v = (x * x // 7 + y * 3 + c * 70 + ((x // 9 + y // 13) % 2) * 90 + (x * y) // 50) % 256
        channels.append(v)
    return np.stack(channels, axis=-1).astype(np.uint8)


def main():
    torch.manual_seed(0)
    text = dict(vocab_size=1514, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                num_hidden_layers=2, max_position_embeddings=77, bos_token_id=1512,
                eos_token_id=2, pad_token_id=1513, hidden_act="quick_gelu")
    vision = dict(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_hidden_layers=2,
                  image_size=224, patch_size=32, hidden_act="quick_gelu")
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=24)
    model = CLIPModel(config).eval()
    # Larger weights than the default initialisation, so that the pictures' features differ.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.2)
    # Stored in f16 (half the bytes); the references are of the f16 weights, read as f32.
    model = model.half().float()
    model.half().save_pretrained(OUT, safe_serialization=True)
    model = model.float()
    tokenizer = CLIPTokenizer.from_pretrained(os.path.join(ROOT, "tiny-sd", "tokenizer"))
    images = CLIPImageProcessor(
        do_resize=True, size={"shortest_edge": 224}, resample=3, do_center_crop=True,
        crop_size={"height": 224, "width": 224}, do_rescale=True, rescale_factor=1 / 255,
        do_normalize=True, image_mean=[0.48145466, 0.4578275, 0.40821073],
        image_std=[0.26862954, 0.26130258, 0.27577711], do_convert_rgb=True)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(OUT)
    # As torchmetrics loads a model's processor.
    processor = CLIPProcessor.from_pretrained(OUT)
    metric = CLIPScore(model_name_or_path=lambda: (model, processor))

    cases = []
    for width, height in SIZES:
        array = picture(width, height)
        tensor = torch.from_numpy(array).permute(2, 0, 1)  # [3, H, W] uint8, as torchmetrics takes
        pixels = processor(images=[tensor], return_tensors="pt")["pixel_values"][0]
        with torch.no_grad():
            image_features = model.get_image_features(pixels[None])
        for prompt in PROMPTS:
            metric.reset()
            metric.update(tensor, prompt)
            score = float(metric.compute())
            ids = processor(text=[prompt], return_tensors="pt", padding=True)["input_ids"][..., :77]
            with torch.no_grad():
                text_features = model.get_text_features(ids)
            img = image_features / image_features.norm(dim=-1, keepdim=True)
            txt = text_features / text_features.norm(dim=-1, keepdim=True)
            cosine = float((img * txt).sum())
            cases.append({
                "width": width, "height": height, "prompt": prompt,
                "score": score, "similarity": 100 * cosine,
                "token_ids": ids[0].tolist(),
                "image_features": image_features[0].tolist(),
                "text_features": text_features[0].tolist(),
                "pixel_values_sum": float(pixels.sum()),
                "pixel_values_head": pixels[:, 100, 100:104].flatten().tolist(),
            })
    reference = {
        "made_by": "scripts/make_clip_score_fixtures.py",
        "image_processor": type(processor.image_processor).__name__,
        "picture": "(x*x//7 + y*3 + c*70 + ((x//9 + y//13)%2)*90 + (x*y)//50) % 256 for x < width, y < height, channel c",
        "cases": cases,
    }
    with open(os.path.join(ROOT, "tiny-clip.reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    print(reference["image_processor"], [round(c["score"], 3) for c in cases])


if __name__ == "__main__":
    main()
