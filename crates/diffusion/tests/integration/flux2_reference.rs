//! FLUX.2 klein's reference pictures against diffusers' `Flux2KleinPipeline(image=...)`, from
//! `scripts/make_flux2_fixtures.py --reference-images`: PIL's Lanczos resampling (which the
//! pipeline applies to pictures over 1024x1024 pixels) and its area rule, one picture's encoded
//! tokens and positions, and whole generations conditioned on one and on two pictures (as
//! `sdbench parity` runs them), on the CPU in f32 and f16 and on wgpu through Vulkan; and the
//! refusals around them.
//!
//! Tolerances: exact bytes for the resampling; for the tokens, the bound derived from diffusers'
//! own f32 rounding of them (`parity::component_tolerance`, 4.4e-5 on values of magnitude 7.4); and `parity::fixture_tolerance` for images, as in flux2.rs (in f16 the fixture's own,
//! twice the most diffusers' own f16 images of it differ from its f32 ones).

use crate::common;
use crate::common::FamilyAccess;

use common::{assert_close, Reference};
use sdbench_diffusion::device::select;
use sdbench_diffusion::families::flux2::latents::reference_positions;
use sdbench_diffusion::io::image::RgbImage;
use sdbench_diffusion::io::resample::resize_lanczos;
use sdbench_diffusion::parity::{self, pattern_picture};
use sdbench_diffusion::reference_pictures::area_limited_size;
use sdbench_diffusion::{
    BackendRequest, CancelToken, GenerateRequest, InitImage, InitialNoise, LoadOptions,
    ModelSource, Pipeline, Precision, SelectedDevice,
};

const NAME: &str = "tiny-flux2-klein";
const REFERENCES: &str = "tiny-flux2-klein-references";

fn pair(value: &serde_json::Value) -> (usize, usize) {
    let v = value.as_array().unwrap();
    (
        v[0].as_u64().unwrap() as usize,
        v[1].as_u64().unwrap() as usize,
    )
}

fn load(device: SelectedDevice, precision: Precision, vae_encoder: bool) -> Pipeline {
    Pipeline::load_with(
        &ModelSource::Folder(common::fixtures().join(NAME)),
        device,
        Some(precision),
        LoadOptions {
            vae_encoder,
            ..LoadOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn lanczos_resampling_matches_pil_byte_for_byte() {
    let mut r = Reference::open(REFERENCES);
    let cases = r.meta["resample"].as_array().unwrap().clone();
    assert!(cases.len() >= 3);
    for case in &cases {
        let (w, h) = pair(&case["input"]);
        let (ow, oh) = pair(&case["output"]);
        let out = resize_lanczos(&pattern_picture(w, h), ow, oh);
        assert_eq!((out.width, out.height), (ow, oh));
        let got: Vec<f32> = out.pixels.iter().map(|&b| f32::from(b)).collect();
        let key = case["key"].as_str().unwrap();
        assert_eq!(got, r.get(key), "{key}: {w}x{h} -> {ow}x{oh}");
    }
}

#[test]
fn pictures_over_the_area_are_sized_as_diffusers_sizes_them() {
    let r = Reference::open(REFERENCES);
    for case in r.meta["target_area"].as_array().unwrap() {
        let (w, h) = pair(&case["input"]);
        assert_eq!(area_limited_size(w, h), pair(&case["output"]), "{w}x{h}");
    }
    assert_eq!(area_limited_size(1024, 1024), (1024, 1024));
}

fn check_tokens(device: SelectedDevice) {
    let pipe = load(device, Precision::F32, true);
    let f = pipe.flux2().unwrap();
    let mut r = Reference::open(REFERENCES);
    let (w, h) = pair(&r.meta["reference"]["picture"]);
    let (tokens, (gh, gw)) = f.run_reference_tokens(&pattern_picture(w, h)).unwrap();
    // 75x66 is cropped to 72x64: 18x16 latents at the tiny VAE's factor 4, 9x8 patches.
    assert_eq!((gh, gw), (8, 9));
    let expected = r.get("reference.tokens");
    // The bound derived from diffusers' own f32 rounding of the tokens (rerun in float64).
    let atol = parity::component_tolerance(&common::fixtures(), REFERENCES, "reference.tokens");
    assert_close("reference tokens", &tokens, &expected, atol.unwrap());
    let positions: Vec<f32> = reference_positions(0, gh, gw).concat();
    assert_eq!(positions, r.get("reference.ids"));
}

#[test]
fn reference_tokens_match_diffusers_on_the_cpu() {
    check_tokens(select(BackendRequest::Cpu).unwrap());
}

#[test]
fn reference_tokens_match_diffusers_on_vulkan() {
    if let Some(device) = common::vulkan_device() {
        check_tokens(device);
    }
}

/// The fixture's generations as `sdbench parity` runs them (`parity::fixture_model`).
fn check_generations(device: SelectedDevice, precision: Precision, only: Option<&[&str]>) {
    let (model, options) = parity::fixture_model(REFERENCES);
    assert_eq!((model, options.vae_encoder), (NAME, true));
    let pipe = Pipeline::load_with(
        &ModelSource::Folder(common::fixtures().join(model)),
        device,
        Some(precision),
        options,
    )
    .unwrap();
    let diffs = parity::generations(&pipe, &common::fixtures(), REFERENCES, only).unwrap();
    assert_eq!(diffs.len(), only.map_or(2, <[_]>::len));
    common::assert_generations_within(REFERENCES, precision, &diffs);
}

#[test]
fn generations_with_reference_pictures_match_diffusers_on_the_cpu() {
    check_generations(select(BackendRequest::Cpu).unwrap(), Precision::F32, None);
    let only: &[&str] = &["generate.one2"];
    check_generations(
        select(BackendRequest::Cpu).unwrap(),
        Precision::F16,
        Some(only),
    );
}

#[test]
fn generations_with_reference_pictures_match_diffusers_on_vulkan() {
    if let Some(device) = common::vulkan_device() {
        check_generations(device, Precision::F32, Some(&["generate.one2"]));
    }
}

/// The pictures are encoded before the steps, timed as the run's `vae_encode` stage.
#[test]
fn reference_pictures_are_encoded_and_timed_apart() {
    let pipe = load(select(BackendRequest::Cpu).unwrap(), Precision::F32, true);
    let request = GenerateRequest {
        width: 32,
        height: 32,
        steps: 2,
        noise: InitialNoise::Seed(3),
        reference_images: vec![pattern_picture(64, 64)],
        ..GenerateRequest::new("a cat")
    };
    let generated = pipe
        .generate(&request, &mut |_| {}, &CancelToken::new())
        .unwrap();
    let t = &generated.timings;
    assert!(t.vae_encode > 0.0 && t.vae_encode < t.total, "{t:?}");
}

#[test]
fn reference_pictures_are_refused_where_they_cannot_be_used() {
    let cpu = || select(BackendRequest::Cpu).unwrap();
    let base = GenerateRequest {
        width: 32,
        height: 32,
        steps: 1,
        ..GenerateRequest::new("a cat")
    };
    let with = |pictures: Vec<RgbImage>| GenerateRequest {
        reference_images: pictures,
        ..base.clone()
    };
    let pipe = load(cpu(), Precision::F32, true);
    let err = |request: &GenerateRequest| pipe.validate(request).unwrap_err().to_string();
    common::assert_mentions(
        &err(&with(vec![pattern_picture(64, 64); 5])),
        &["5 reference pictures", "at most 4"],
    );
    common::assert_mentions(
        &err(&with(vec![pattern_picture(40, 200)])),
        &["40x200", "at least 64"],
    );
    common::assert_mentions(
        &err(&with(vec![pattern_picture(600, 64)])),
        &["600x64", "8 times"],
    );
    let init = GenerateRequest {
        init_image: Some(InitImage {
            image: pattern_picture(32, 32),
            strength: 0.5,
        }),
        ..base.clone()
    };
    common::assert_mentions(&err(&init), &["--init-image", "--reference-image"]);

    // Without the VAE encoder there is nothing to encode the pictures with.
    let plain = load(cpu(), Precision::F32, false);
    let e = plain
        .validate(&with(vec![pattern_picture(64, 64)]))
        .unwrap_err()
        .to_string();
    common::assert_mentions(&e, &["VAE encoder", "vae_encoder: true"]);

    // Stable Diffusion takes a picture to start from, not references.
    let sd = Pipeline::load(
        &ModelSource::Folder(common::fixtures().join("tiny-sd")),
        cpu(),
        Some(Precision::F32),
    )
    .unwrap();
    let e = sd
        .validate(&with(vec![pattern_picture(64, 64)]))
        .unwrap_err()
        .to_string();
    common::assert_mentions(
        &e,
        &["Stable Diffusion", "--reference-image", "--init-image"],
    );
}
