//! Weight-file handling: the fp16 variant files, legacy VAE key names.

use crate::common;
use crate::common::FamilyAccess;

use std::path::Path;

use common::{assert_close, Reference};
use sdbench_diffusion::device::select;
use sdbench_diffusion::io::safetensors::{write_f32, SafeTensors};
use sdbench_diffusion::io::weights::choose_weights_file;
use sdbench_diffusion::parity;
use sdbench_diffusion::{BackendRequest, LoadOptions, ModelSource, Pipeline, Precision};

fn vae_decode(folder: &Path, precision: Precision, r: &mut Reference) -> Vec<f32> {
    let pipe = Pipeline::load(
        &ModelSource::Folder(folder.to_path_buf()),
        select(BackendRequest::Cpu).unwrap(),
        Some(precision),
    )
    .unwrap();
    let z = r.shape("vae.latents");
    pipe.sd()
        .unwrap()
        .run_vae_decode(&r.get("vae.latents"), [z[0], z[1], z[2], z[3]])
        .unwrap()
}

#[test]
fn variant_choice_follows_precision() {
    let unet = common::fixtures().join("tiny-sd/unet");
    let f16 = choose_weights_file(&unet, "diffusion_pytorch_model", Precision::F16).unwrap();
    let f32 = choose_weights_file(&unet, "diffusion_pytorch_model", Precision::F32).unwrap();
    assert!(f16.ends_with("diffusion_pytorch_model.fp16.safetensors"));
    assert!(f32.ends_with("diffusion_pytorch_model.safetensors"));
    // tiny-variant ships no fp16 files: f16 falls back to the plain file.
    let plain = common::fixtures().join("tiny-variant/unet");
    assert!(
        choose_weights_file(&plain, "diffusion_pytorch_model", Precision::F16)
            .unwrap()
            .ends_with("diffusion_pytorch_model.safetensors")
    );
}

#[test]
fn fp16_files_alone_load_and_upcast_in_f32() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m");
    common::copy_tree(&common::fixtures().join("tiny-sd"), &model);
    for sub in ["unet", "vae", "text_encoder"] {
        let stem = if sub == "text_encoder" {
            "model"
        } else {
            "diffusion_pytorch_model"
        };
        std::fs::remove_file(model.join(sub).join(format!("{stem}.safetensors"))).unwrap();
    }
    let mut r = Reference::open("tiny-sd");
    let image = vae_decode(&model, Precision::F32, &mut r);
    // fp16 weights round to 11 significant bits: diffusers' decode with the fp16 file's weights,
    // rerun in float64, is 2.5e-3 from the f32 reference image; the bound is 8 times that, as for
    // the bounds derived from f32 rounding (parity::fixture_tolerance says why 8).
    assert_close(
        "vae decode from fp16 weights",
        &image,
        &r.get("vae.image"),
        2e-2,
    );
}

#[test]
fn legacy_vae_attention_names_load_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m");
    common::copy_tree(&common::fixtures().join("tiny-sd"), &model);
    let path = model.join("vae/diffusion_pytorch_model.safetensors");
    std::fs::remove_file(model.join("vae/diffusion_pytorch_model.fp16.safetensors")).unwrap();
    let mut file = SafeTensors::open(&path).unwrap();
    let names: Vec<String> = file.names().map(String::from).collect();
    let mut renamed = 0;
    let tensors: Vec<(String, Vec<usize>, Vec<f32>)> = names
        .iter()
        .map(|n| {
            let mut shape = file.info(n).unwrap().shape.clone();
            let legacy = n
                .replace(".to_q.", ".query.")
                .replace(".to_k.", ".key.")
                .replace(".to_v.", ".value.")
                .replace(".to_out.0.", ".proj_attn.");
            if legacy != *n {
                renamed += 1;
                // Some old checkpoints store these projections as 1x1 convolutions.
                if shape.len() == 2 {
                    shape.extend([1, 1]);
                }
            }
            (legacy, shape, file.read_f32(n).unwrap())
        })
        .collect();
    assert!(
        renamed >= 8,
        "the fixture VAE has attention weights to rename"
    );
    let refs: Vec<(&str, Vec<usize>, &[f32])> = tensors
        .iter()
        .map(|(n, s, d)| (n.as_str(), s.clone(), d.as_slice()))
        .collect();
    write_f32(&path, &refs).unwrap();

    let mut r = Reference::open("tiny-sd");
    let image = vae_decode(&model, Precision::F32, &mut r);
    assert_close(
        "vae decode with legacy names",
        &image,
        &r.get("vae.image"),
        parity::component_tolerance(&common::fixtures(), "tiny-sd", "vae.image").unwrap(),
    );
}

/// The memory estimate sizes a model folder from its files' headers before loading it: the
/// weights counted there are the loaded model's, component by component, for every tiny model
/// (SDXL's two text encoders, the VAE's encoder apart from its decoder).
#[test]
fn a_folder_is_sized_from_its_headers_as_it_loads() {
    for &name in common::tiny() {
        let source = ModelSource::Folder(common::fixtures().join(name));
        let (size, vae) = Pipeline::model_size(&source, Precision::F32).unwrap();
        let options = LoadOptions {
            vae_encoder: true,
            ..LoadOptions::default()
        };
        let device = select(BackendRequest::Cpu).unwrap();
        let pipe = Pipeline::load_with(&source, device, Some(Precision::F32), options).unwrap();
        let counts = pipe.parameter_counts();
        assert_eq!(
            [
                size.text_encoder_params,
                size.denoiser_params,
                size.vae_decoder_params,
                size.vae_encoder_params
            ],
            [
                counts.text_encoders,
                counts.denoiser,
                counts.vae,
                counts.vae_encoder
            ]
            .map(|c| c as u64),
            "{name}"
        );
        assert_eq!(size.family, pipe.info.family, "{name}");
        assert_eq!(size.vae_tile, vae.sample_size, "{name}");
    }
}
