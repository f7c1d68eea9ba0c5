#!/usr/bin/env python3
"""Make the T5 encoder reference fixtures the engine's T5 tests check against.

Builds a tiny random-weight transformers `T5EncoderModel` as T5 v1.1 is (gated-GELU feed-forward
with `gelu_new`, no biases, relative position buckets, 32 buckets over a distance of 128) and a
small SentencePiece Unigram tokenizer wrapped as `T5TokenizerFast` (Metaspace, `</s>` appended,
`<pad>` = 0, `</s>` = 1, `<unk>` = 2, sentinel ids at the end), and saves them as a pipeline's
`text_encoder_3/` and `tokenizer_3/` hold them (SD3.5's layout). Then records, for prompts short
and past the sequence length (256, as SD3.5 calls T5) and unicode ones: the tokenizer's ids, padded
to the length as the pipelines ask (`padding="max_length"`, `truncation=True`), and the encoder's
last hidden state, called without an attention mask exactly as `StableDiffusion3Pipeline` calls
it, in float32. Each f32 bound is 8 times how far float32 lies from the same call in float64
(`component_tolerance`, as scripts/measure_f32_rounding.py derives the other fixtures'); the f16
tolerance is twice the worst error of the same calls in float16.

Usage (torch and transformers are needed only here, never by the tests):
    ~/.cache/sdbench/venv/bin/pip install torch transformers safetensors numpy
    ~/.cache/sdbench/venv/bin/python scripts/make_t5_fixtures.py

Output: crates/diffusion/tests/fixtures/tiny-t5/ and tiny-t5.reference.* (committed).
"""

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import T5Config, T5EncoderModel, T5TokenizerFast

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "crates" / "diffusion" / "tests" / "fixtures"
NAME = "tiny-t5"

CORPUS = [
    "a photograph of an astronaut riding a horse on the moon",
    "a watercolor painting of a lighthouse at dawn, soft light, mist over the sea",
    "a red cube on a blue sphere beside a green pyramid, studio lighting",
    "portrait of an old fisherman with a weathered face, dramatic shadows",
    "a bowl of ramen with steam rising, chopsticks, wooden table, cozy cafe",
    "a futuristic city skyline at night with neon signs and flying cars",
    "Café déjà vu in Tōkyō, naïve façade, crème brûlée",
    "the quick brown fox jumps over the lazy dog 0123456789",
]

PROMPTS = {
    "short": "a red cube on a blue sphere",
    "unicode": "Café in Tōkyō — 東京の夜, naïve ✨",
    "empty": "",
    # Past SD3.5's 256 tokens: the tail is cut and </s> is the 256th.
    "long": " ".join(CORPUS * 6),
}

# (prompt, sequence length): SD3.5 pads T5's input to 256; a short length too.
CASES = [("short", 16), ("unicode", 24), ("empty", 256), ("long", 256)]

EXTRA_IDS = 4

CONFIG = dict(
    d_model=32,
    d_kv=8,
    d_ff=48,
    num_layers=3,
    num_heads=4,
    relative_attention_num_buckets=32,
    relative_attention_max_distance=128,
    layer_norm_epsilon=1e-6,
    feed_forward_proj="gated-gelu",
    dense_act_fn="gelu_new",
    is_gated_act=True,
    dropout_rate=0.0,
    tie_word_embeddings=False,
)


def make_tokenizer(folder):
    trainer_tok = Tokenizer(models.Unigram())
    trainer_tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)]
    )
    trainer = trainers.UnigramTrainer(
        vocab_size=160,
        special_tokens=["<pad>", "</s>", "<unk>"],
        unk_token="<unk>",
        show_progress=False,
    )
    trainer_tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    vocab = [tuple(piece) for piece in json.loads(trainer_tok.to_str())["model"]["vocab"]]
    assert [p for p, _ in vocab[:3]] == ["<pad>", "</s>", "<unk>"], vocab[:3]
    vocab += [(f"<extra_id_{i}>", 0.0) for i in range(EXTRA_IDS - 1, -1, -1)]
    tok = T5TokenizerFast(vocab=vocab, extra_ids=EXTRA_IDS)
    tok.save_pretrained(folder)
    return tok


def main():
    torch.manual_seed(0)
    folder = OUT / NAME
    shutil.rmtree(folder, ignore_errors=True)
    tok = make_tokenizer(folder / "tokenizer_3")
    # The model's table is larger than the tokenizer's, as T5's (32128 rows, 32100 tokens).
    config = T5Config(vocab_size=len(tok) + 5, **CONFIG)
    model = T5EncoderModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name:
                p.normal_(1.0, 0.2)
            elif "relative_attention_bias" in name:
                # Large enough that a wrong bucket shows.
                p.normal_(0.0, 1.0)
            elif "shared" in name:
                p.normal_(0.0, 1.0)
    model.save_pretrained(folder / "text_encoder_3", safe_serialization=True)

    meta = {"sequence_cases": [], "component_rounding": {}, "component_tolerance": {}}
    refs = {}
    model16 = T5EncoderModel.from_pretrained(folder / "text_encoder_3", torch_dtype=torch.float16).eval()
    model64 = T5EncoderModel.from_pretrained(folder / "text_encoder_3", torch_dtype=torch.float64).eval()
    worst = 0.0
    for key, length in CASES:
        batch = tok(PROMPTS[key], padding="max_length", max_length=length, truncation=True, return_tensors="pt")
        ids = batch.input_ids
        untruncated = len(tok(PROMPTS[key], add_special_tokens=False).input_ids)
        with torch.no_grad():
            hidden = model(ids)[0]
            hidden16 = model16(ids)[0].float()
            hidden64 = model64(ids)[0]
        error = float((hidden16 - hidden).abs().max())
        rounding = float((hidden.double() - hidden64).abs().max())
        meta["component_rounding"][f"t5.{key}"] = rounding
        meta["component_tolerance"][f"t5.{key}"] = float(f"{8 * max(rounding, 1e-7):.2g}")
        worst = max(worst, error)
        refs[f"t5.{key}"] = hidden[0].contiguous()
        meta["sequence_cases"].append(
            {
                "key": key,
                "prompt": PROMPTS[key],
                "length": length,
                "ids": ids[0].tolist(),
                "untruncated": untruncated,
                "torch_f16_error": error,
            }
        )
    meta["f16_tolerance"] = float(f"{max(2 * worst, 1e-2):.2g}")
    meta["scale"] = float(max(refs[k].abs().max() for k in refs))
    save_file(refs, str(OUT / f"{NAME}.reference.safetensors"))
    (OUT / f"{NAME}.reference.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"{folder}: {size / 1024:.0f} KiB; f16 tolerance {meta['f16_tolerance']}, scale {meta['scale']:.3g}")
    for case in meta["sequence_cases"]:
        print(case["key"], case["length"], case["untruncated"], case["ids"][:12], case["torch_f16_error"])


if __name__ == "__main__":
    main()
