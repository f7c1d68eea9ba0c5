//! Full-size SD1.5 (860M-parameter UNet, real configs) on synthetic weights, end to end at a small
//! resolution on the CPU.

use sdbench_diffusion::device::select;
use sdbench_diffusion::{
    BackendRequest, CancelToken, GenerateRequest, InitialNoise, ModelSource, Pipeline, Precision,
    Progress,
};

#[test]
fn full_size_synthetic_sd15_generates_a_finite_varied_image() {
    let device = select(BackendRequest::Cpu).unwrap();
    let pipe = Pipeline::load(&ModelSource::Synthetic, device, Some(Precision::F32)).unwrap();
    assert_eq!(pipe.info.vae_scale_factor, 8);
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
    assert_eq!((out.image.width, out.image.height), (64, 48));
    assert!(out.float_image.iter().all(|v| v.is_finite()));
    let (lo, hi) = out
        .float_image
        .iter()
        .fold((1f32, 0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    assert!(hi - lo > 0.05, "image is flat: {lo}..{hi}");
    assert_eq!(out.timings.unet_steps.len(), 3);

    // A cancelled run stops with an error and produces nothing.
    let cancel = CancelToken::new();
    cancel.cancel();
    let err = pipe.generate(&request, &mut |_| {}, &cancel).err().unwrap();
    assert!(err.to_string().contains("cancelled"));
}
