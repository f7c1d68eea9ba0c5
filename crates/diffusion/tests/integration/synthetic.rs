//! Full-size SD1.5 (860M-parameter UNet, real configs) on synthetic weights, end to end at a small
//! resolution on the CPU, text-to-image and image-to-image.

use sdbench_diffusion::device::select;
use sdbench_diffusion::{
    BackendRequest, CancelToken, GenerateRequest, InitImage, InitialNoise, LoadOptions,
    ModelSource, ParameterCounts, Pipeline, Precision, Preset, Progress, RequestShape,
};

#[test]
fn full_size_synthetic_sd15_generates_a_finite_varied_image() {
    let device = select(BackendRequest::Cpu).unwrap();
    let pipe = Pipeline::load_with(
        &ModelSource::Synthetic(Preset::SD15),
        device,
        Some(Precision::F32),
        LoadOptions {
            vae_encoder: true,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    assert_eq!(pipe.info.vae_scale_factor, 8);
    // diffusers' and transformers' modules built from the same configs have exactly these many
    // parameters (the VAE: decoder and post_quant_conv; encoder and quant_conv).
    assert_eq!(
        pipe.parameter_counts(),
        ParameterCounts {
            text_encoders: 123_060_480,
            denoiser: 859_520_964,
            vae: 49_490_199,
            vae_encoder: 34_163_664,
        }
    );
    let request = GenerateRequest {
        width: 64,
        height: 48,
        steps: 2,
        noise: InitialNoise::Seed(3),
        ..GenerateRequest::new("a photograph of an astronaut riding a horse")
    };
    let mut steps = 0;
    let out = pipe
        .generate(
            &request,
            &mut |e| {
                if let Progress::Step { .. } = e {
                    steps += 1
                }
            },
            &CancelToken::new(),
        )
        .unwrap();
    assert_eq!(
        steps, 3,
        "PNDM with skip_prk_steps makes steps + 1 model calls"
    );
    let image = &out.images[0];
    assert_eq!((image.image.width, image.image.height), (64, 48));
    assert!(image.float_image.iter().all(|v| v.is_finite()));
    let (lo, hi) = image
        .float_image
        .iter()
        .fold((1f32, 0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    assert!(hi - lo > 0.05, "image is flat: {lo}..{hi}");
    assert_eq!(out.timings.denoiser_steps.len(), 3);

    // Image-to-image from that picture: half of 2 steps is one step.
    let redraw = GenerateRequest {
        init_image: Some(InitImage {
            image: image.image.clone(),
            strength: 0.5,
        }),
        scheduler: Some(sdbench_diffusion::SchedulerKind::Euler),
        ..request.clone()
    };
    let again = pipe
        .generate(&redraw, &mut |_| {}, &CancelToken::new())
        .unwrap();
    assert_eq!(again.timings.denoiser_steps.len(), 1);
    assert!(again.timings.vae_encode > 0.0);
    assert_eq!(again.non_finite(), 0);
    assert_ne!(again.images[0].image, image.image);

    // A cancelled run stops with an error and produces nothing.
    let cancel = CancelToken::new();
    cancel.cancel();
    let err = pipe.generate(&request, &mut |_| {}, &cancel).err().unwrap();
    assert!(err.to_string().contains("cancelled"));
}

/// Full-size SDXL base (2.6B-parameter UNet, both text encoders, real configs) on synthetic weights:
/// one Euler step at 128x128 on the CPU (its 13 GB of f32 weights are most of the test's time).
/// The load plans that size, so the host memory check counts a 128x128 decode, not SDXL's usual
/// 1024x1024 one (3.4 GB more).
#[test]
fn full_size_synthetic_sdxl_runs_one_step() {
    let device = select(BackendRequest::Cpu).unwrap();
    let pipe = Pipeline::load_with(
        &ModelSource::Synthetic(Preset::SDXL_BASE),
        device,
        Some(Precision::F32),
        LoadOptions {
            planned: Some(RequestShape::image(128, 128)),
            ..LoadOptions::default()
        },
    )
    .unwrap();
    assert_eq!(pipe.info.family, sdbench_diffusion::Family::SDXL);
    assert_eq!(pipe.info.preset, Some(Preset::SDXL_BASE));
    assert_eq!(
        pipe.parameter_counts(),
        ParameterCounts {
            text_encoders: 123_060_480 + 694_659_840,
            denoiser: 2_567_463_684,
            vae: 49_490_199,
            vae_encoder: 0,
        }
    );
    let request = GenerateRequest {
        width: 128,
        height: 128,
        steps: 1,
        noise: InitialNoise::Seed(5),
        ..GenerateRequest::new("a photograph of an astronaut riding a horse")
    };
    let out = pipe
        .generate(&request, &mut |_| {}, &CancelToken::new())
        .unwrap();
    assert_eq!(out.scheduler.name(), "euler", "SDXL base's scheduler");
    assert_eq!(out.images[0].image.width, 128);
    assert_eq!(out.non_finite(), 0);
    assert_eq!(out.timings.denoiser_steps.len(), 1);
}
