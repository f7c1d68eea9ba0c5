//! Single-file (original LDM layout) checkpoints: tensor names convert as diffusers converts them,
//! and a converted checkpoint generates what diffusers generates from the same file.
//! Fixtures: scripts/make_checkpoint_fixtures.py.

use crate::common;

use std::path::{Path, PathBuf};

use common::{assert_close, assert_mentions, fixtures};
use sdbench_diffusion::device::select;
use sdbench_diffusion::families::sd::checkpoint::{diffusers_name, Component, Kind, Layout};
use sdbench_diffusion::io::safetensors::{write_f32, SafeTensors};
use sdbench_diffusion::{
    BackendRequest, CancelToken, GenerateRequest, InitialNoise, ModelSource, Pipeline, Precision,
    SchedulerKind,
};

fn tiny_checkpoint() -> PathBuf {
    fixtures().join("tiny-sd.ldm.safetensors")
}

fn load(file: &Path, config: Option<&Path>) -> sdbench_diffusion::Result<Pipeline> {
    let device = select(BackendRequest::Cpu).unwrap();
    Pipeline::load(
        &ModelSource::Checkpoint {
            file: file.to_path_buf(),
            config: config.map(Path::to_path_buf),
            parts: Default::default(),
        },
        device,
        Some(Precision::F32),
    )
}

fn load_err(file: &Path, config: Option<&Path>) -> String {
    match load(file, config) {
        Ok(_) => panic!("loading {} should fail", file.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_sd15_checkpoint_name_converts_as_diffusers_converts_it() {
    let text = std::fs::read_to_string(fixtures().join("sd15-ldm-names.json")).unwrap();
    let entries: Vec<(String, String, String, Vec<usize>)> = serde_json::from_str(&text).unwrap();
    assert_eq!(entries.len(), 1130, "UNet 686 + VAE 248 + text encoder 196");
    let layout = Layout {
        unet_layers_per_block: vec![2; 4],
        vae_blocks: 4,
        kind: Kind::Sd1,
        text_encoder_layers: 12,
    };
    let components = [
        ("unet", Component::UNet),
        ("vae", Component::Vae),
        ("text_encoder", Component::TextEncoder),
    ];
    for (stored, part, expected, _shape) in &entries {
        for (name, component) in components {
            let converted = diffusers_name(component, stored, &layout);
            if name == part {
                assert_eq!(converted.as_deref(), Some(expected.as_str()), "{stored}");
            } else {
                assert_eq!(converted, None, "{stored} is not the {name}'s");
            }
        }
    }
}

/// Generates from `file` (with `config`'s configs) what `<stem>.reference.*` (under the
/// fixtures) records diffusers generating from it, within the folder fixture `bound_of`'s own
/// f32 bound.
pub(crate) fn generates_what_diffusers_generates(
    file: &Path,
    config: &Path,
    stem: &str,
    bound_of: &str,
) {
    let pipe = load(file, Some(config)).unwrap();
    assert_eq!(pipe.info.weight_files, vec![file.to_path_buf()]);
    assert_eq!(pipe.info.preset, None);

    let dir = fixtures();
    let mut reference =
        SafeTensors::open(&dir.join(format!("{stem}.reference.safetensors"))).unwrap();
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("{stem}.reference.json"))).unwrap(),
    )
    .unwrap();
    let request = GenerateRequest {
        steps: meta["steps"].as_u64().unwrap() as usize,
        guidance_scale: meta["guidance"].as_f64().unwrap(),
        scheduler: Some(SchedulerKind::from_name(meta["scheduler"].as_str().unwrap()).unwrap()),
        width: meta["width"].as_u64().unwrap() as usize,
        height: meta["height"].as_u64().unwrap() as usize,
        noise: InitialNoise::Latents {
            shape: reference.info("latents").unwrap().shape.clone(),
            data: reference.read_f32("latents").unwrap(),
            step_seed: 0,
        },
        ..GenerateRequest::new(meta["prompt"].as_str().unwrap())
    };
    let out = pipe
        .generate(&request, &mut |_| {}, &CancelToken::new())
        .unwrap();
    assert_eq!(out.non_finite(), 0);
    // The same engine code and weights as the folder's, only the names differ: its f32 bound.
    let atol = sdbench_diffusion::parity::fixture_tolerance(&fixtures(), bound_of, Precision::F32)
        .unwrap();
    assert_close(
        &format!("{stem}, euler"),
        &out.images[0].float_image,
        &reference.read_f32("image").unwrap(),
        atol,
    );
}

#[test]
fn tiny_checkpoint_generates_what_diffusers_generates() {
    generates_what_diffusers_generates(
        &tiny_checkpoint(),
        &fixtures().join("tiny-sd"),
        "tiny-sd.ldm",
        "tiny-sd",
    );
}

/// SDXL's single file: two text encoders, the second in OpenCLIP's names (fused q/k/v, a
/// transposed projection), and the UNet's size conditioning.
#[test]
fn tiny_sdxl_checkpoint_generates_what_diffusers_generates() {
    generates_what_diffusers_generates(
        &fixtures().join("tiny-sdxl.ldm.safetensors"),
        &fixtures().join("tiny-sdxl"),
        "tiny-sdxl.ldm",
        "tiny-sdxl",
    );
}

/// SD2.x's single file: its OpenCLIP encoder under `cond_stage_model.model.` with one more layer
/// than the model uses (dropped, as diffusers drops it), and v-prediction.
#[test]
fn tiny_sd2_checkpoint_generates_what_diffusers_generates() {
    generates_what_diffusers_generates(
        &fixtures().join("tiny-sd2.ldm.safetensors"),
        &fixtures().join("tiny-sd2"),
        "tiny-sd2.ldm",
        "tiny-sd2",
    );
}

#[test]
fn an_sd2_checkpoint_is_read_as_sd2() {
    let sd2 = fixtures().join("tiny-sd2.ldm.safetensors");
    // Without configs, SD2.1's: its first tensor read is far larger than the tiny model's.
    assert_mentions(
        &load_err(&sd2, None),
        &[
            "tiny-sd2.ldm.safetensors",
            "has shape",
            "config needs",
            "SD2.1 (768 px, v-prediction)'s configs",
            "--model-config",
        ],
    );
    assert_mentions(
        &load_err(&sd2, Some(&fixtures().join("tiny-sd"))),
        &["is an SD2.x checkpoint", "describe an SD1.x model"],
    );
    assert_mentions(
        &load_err(&tiny_checkpoint(), Some(&fixtures().join("tiny-sd2"))),
        &["is an SD1.x checkpoint", "describe an SD2.x model"],
    );
    // What the memory estimate and `sdbench models` read: SD2.1's upstream size and 768 tile.
    let (size, vae) = Pipeline::model_size(
        &ModelSource::Checkpoint {
            file: sd2,
            config: None,
            parts: Default::default(),
        },
        Precision::F32,
    )
    .unwrap();
    assert_eq!(size.family.name(), "sd2");
    assert_eq!(vae.sample_size, 768);
}

#[test]
fn an_sdxl_checkpoint_is_read_as_sdxl_and_a_family_mismatch_is_named() {
    let sdxl = fixtures().join("tiny-sdxl.ldm.safetensors");
    // Without configs, SDXL base's: the tiny model's UNet has fewer blocks.
    assert_mentions(
        &load_err(&sdxl, None),
        &[
            "tiny-sdxl.ldm.safetensors",
            "SDXL UNet",
            "different architecture",
        ],
    );
    assert_mentions(
        &load_err(&sdxl, Some(&fixtures().join("tiny-sd"))),
        &["is an SDXL checkpoint", "describe an SD1.x model"],
    );
    assert_mentions(
        &load_err(&tiny_checkpoint(), Some(&fixtures().join("tiny-sdxl"))),
        &["is an SD1.x checkpoint", "describe an SDXL model"],
    );
}

#[test]
fn without_a_config_the_checkpoint_is_read_as_sd15_and_a_mismatch_is_named() {
    // The tiny model's tensors are far smaller than SD1.5's: the first one read says so.
    let message = load_err(&tiny_checkpoint(), None);
    assert_mentions(
        &message,
        &[
            "tiny-sd.ldm.safetensors",
            "has shape",
            "config needs",
            "read with SD1.5's configs",
            "--model-config",
        ],
    );
}

#[test]
fn bad_checkpoint_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.safetensors");
    assert_mentions(
        &load_err(&missing, None),
        &["missing.safetensors", "does not exist"],
    );

    let pickle = dir.path().join("model.ckpt");
    std::fs::write(&pickle, b"PK\x03\x04 not really").unwrap();
    assert_mentions(
        &load_err(&pickle, None),
        &["model.ckpt", "pickle", ".safetensors"],
    );

    let truncated = dir.path().join("truncated.safetensors");
    let bytes = std::fs::read(tiny_checkpoint()).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    assert_mentions(&load_err(&truncated, None), &["truncated.safetensors"]);

    let one = [0f32];
    let sd2 = dir.path().join("sd2.safetensors");
    write_f32(
        &sd2,
        &[
            (
                "cond_stage_model.model.token_embedding.weight",
                vec![1],
                &one,
            ),
            (
                "model.diffusion_model.input_blocks.0.0.weight",
                vec![1],
                &one,
            ),
        ],
    )
    .unwrap();
    // An SD2.x file (OpenCLIP under `cond_stage_model.model.`) read as one, missing its VAE.
    assert_mentions(
        &load_err(&sd2, None),
        &[
            "sd2.safetensors",
            "no VAE tensors",
            "single-file SD2.x checkpoint",
        ],
    );

    let refiner = dir.path().join("refiner.safetensors");
    write_f32(
        &refiner,
        &[
            (
                "conditioner.embedders.0.model.token_embedding.weight",
                vec![1],
                &one,
            ),
            (
                "model.diffusion_model.input_blocks.0.0.weight",
                vec![1],
                &one,
            ),
        ],
    )
    .unwrap();
    assert_mentions(&load_err(&refiner, None), &["Stable Diffusion XL refiner"]);

    let no_vae = dir.path().join("no-vae.safetensors");
    write_f32(
        &no_vae,
        &[
            ("cond_stage_model.transformer.text_model.x", vec![1], &one),
            (
                "model.diffusion_model.input_blocks.0.0.weight",
                vec![1],
                &one,
            ),
        ],
    )
    .unwrap();
    assert_mentions(
        &load_err(&no_vae, Some(&fixtures().join("tiny-sd"))),
        &["no VAE tensors", "first_stage_model."],
    );

    let foreign = dir.path().join("foreign.safetensors");
    write_f32(
        &foreign,
        &[
            ("cond_stage_model.transformer.text_model.x", vec![1], &one),
            (
                "model.diffusion_model.input_blocks.99.0.in_layers.0.weight",
                vec![1],
                &one,
            ),
        ],
    )
    .unwrap();
    assert_mentions(
        &load_err(&foreign, None),
        &[
            "input_blocks.99.0.in_layers.0.weight",
            "different architecture",
        ],
    );
}
