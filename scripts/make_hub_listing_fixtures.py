#!/usr/bin/env python3
"""Record what diffusers downloads of each pipeline repository layout the hub's tests use.

Each crates/hub/tests/fixtures/listings/*.json holds a repository's layout as its Hub listing has
it (`files`, `model_index`: hand-written after the real repositories) and the components SD Bench
does not read (`not_read`: passed to diffusers as None, as a caller that does not want them does).
This script runs diffusers' own `DiffusionPipeline.download(variant="fp16", use_safetensors=True)`
on each (`variant=None` where the repository has no fp16 files, which diffusers refuses with the
variant), with the Hub calls replaced by the listing (nothing is fetched), and writes the files that
download would fetch, as huggingface_hub filters them by diffusers' allow and ignore patterns, into
the fixture's `diffusers` field. The hub's plan is checked against that list.

Usage (torch and diffusers are needed only here, never by the tests):
    ~/.cache/sdbench/venv/bin/pip install torch diffusers==0.42.0 transformers
    ~/.cache/sdbench/venv/bin/python scripts/make_hub_listing_fixtures.py
"""

import json
import tempfile
from pathlib import Path
from types import SimpleNamespace

import diffusers
from diffusers import DiffusionPipeline
from diffusers.pipelines import pipeline_utils
from huggingface_hub.utils import filter_repo_objects

FIXTURES = Path(__file__).resolve().parent.parent / "crates/hub/tests/fixtures/listings"


def diffusers_download(fixture):
    files = fixture["files"]
    captured = {}
    with tempfile.TemporaryDirectory() as snapshot:
        index = Path(snapshot) / "model_index.json"
        index.write_text(json.dumps(fixture["model_index"]))

        def model_info(repo, token=None, revision=None):
            return SimpleNamespace(siblings=[SimpleNamespace(rfilename=f) for f in files])

        def hf_hub_download(repo, filename, **kwargs):
            assert filename == "model_index.json", filename
            return str(index)

        def snapshot_download(repo, allow_patterns=None, ignore_patterns=None, **kwargs):
            captured["files"] = sorted(
                filter_repo_objects(files, allow_patterns=allow_patterns, ignore_patterns=ignore_patterns)
            )
            return snapshot

        saved = {
            name: getattr(pipeline_utils, name)
            for name in ["model_info", "hf_hub_download", "snapshot_download", "_resolve_revision"]
        }
        pipeline_utils.model_info = model_info
        pipeline_utils.hf_hub_download = hf_hub_download
        pipeline_utils.snapshot_download = snapshot_download
        pipeline_utils._resolve_revision = lambda *args, **kwargs: "main"
        try:
            passed = {name: None for name in fixture["not_read"]}
            try:
                DiffusionPipeline.download(fixture["repo"], variant="fp16", use_safetensors=True, **passed)
                captured["variant"] = "fp16"
            except ValueError as e:
                # A repository with no fp16 files at all: diffusers refuses the variant, and SD
                # Bench takes the plain files, as diffusers does without one.
                if "variant=fp16" not in str(e):
                    raise
                DiffusionPipeline.download(fixture["repo"], use_safetensors=True, **passed)
                captured["variant"] = None
        finally:
            for name, value in saved.items():
                setattr(pipeline_utils, name, value)
    return captured["files"], captured["variant"]


def main():
    for path in sorted(FIXTURES.glob("*.json")):
        fixture = json.loads(path.read_text())
        fixture["diffusers_version"] = diffusers.__version__
        fixture["diffusers"], fixture["variant"] = diffusers_download(fixture)
        path.write_text(json.dumps(fixture, indent=1) + "\n")
        print(f"{path.name}: {len(fixture['diffusers'])} of {len(fixture['files'])} files")


if __name__ == "__main__":
    main()
