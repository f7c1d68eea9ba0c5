//! FLUX.1 against diffusers' `FluxPipeline` on the two tiny random-weight pipelines
//! scripts/make_flux1_fixtures.py writes: one like [schnell] (no guidance embedding, a static
//! shift of 1, T5 over 256 tokens) and one like [dev] (the guidance embedding, dynamic shifting,
//! 512 tokens). Each prompt's conditioning (T5's states, CLIP's pooled output), one transformer
//! call on a non-square batch of two, a VAE decode, the schedules, and whole generations (square
//! and not, a prompt past CLIP's 77 and T5's length, [dev]'s guidance scales, true CFG with a
//! negative prompt and with the empty one); on the CPU and on wgpu through Vulkan, f32 and f16.
//!
//! Tolerances: each call's own bound, 8 times diffusers' f32 rounding of it against float64
//! (`component_tolerance`); the images', 8 times the worst image's (`f32_tolerance`), and in
//! f16 twice the worst of diffusers' own f16 images against its f32 ones (`f16_tolerance`).

use std::path::PathBuf;

use crate::common;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use common::{assert_close, Reference};
use sdbench_diffusion::device::select;
use sdbench_diffusion::families::flux1::pipeline::Flux1Pipeline;
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::scheduler::flow_match::FlowMatchConfig;
use sdbench_diffusion::{
    parity, BackendRequest, CancelToken, ComponentFiles, Family, GenerateRequest, GuidanceOptions,
    LoadOptions, ModelSource, Pipeline, Precision, SelectedDevice,
};

const SCHNELL: &str = "tiny-flux1-schnell";
const DEV: &str = "tiny-flux1-dev";

fn folder(name: &str) -> PathBuf {
    common::fixtures().join(name)
}

fn load(name: &str, device: SelectedDevice, precision: Precision) -> Pipeline {
    Pipeline::load_with(
        &ModelSource::Folder(folder(name)),
        device,
        Some(precision),
        LoadOptions::default(),
    )
    .unwrap()
}

fn values<const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.cast(DType::F32)
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .unwrap()
}

fn check_components(name: &str, device: SelectedDevice) {
    let mut r = Reference::open(name);
    let pipe = load(name, device, Precision::F32);
    let dev = name == DEV;
    let family = match dev {
        true => Family::FLUX1_DEV,
        false => Family::FLUX1_SCHNELL,
    };
    assert_eq!(pipe.info.family, family);
    assert_eq!(pipe.info.preset, None, "a tiny model is no preset's");
    let flux: &Flux1Pipeline = pipe.family_pipeline().unwrap();
    let check = |actual: &[f32], r: &mut Reference, key: &str| {
        let atol = parity::component_tolerance(&common::fixtures(), name, key).unwrap();
        assert_close(&format!("{name} {key}"), actual, &r.get(key), atol);
    };
    let prompt = |r: &Reference, key: &str| r.meta["prompts"][key].as_str().unwrap().to_string();

    // Conditioning of each prompt: short, empty, unicode, and one past CLIP's and T5's lengths.
    let tokens = r.meta["t5_tokens"].as_u64().unwrap() as usize;
    for key in ["short", "empty", "unicode", "long"] {
        let (states, pooled) = flux.encode_prompt(&prompt(&r, key)).unwrap();
        assert_eq!(states.dims(), [1, tokens, 32], "{key}");
        check(&values(states), &mut r, &format!("prompt_embeds.{key}"));
        check(&values(pooled), &mut r, &format!("pooled.{key}"));
    }

    // One transformer call on two prompts' conditioning and two 8x12 latents.
    let device = &flux.device.device;
    let (short, short_pooled) = flux.encode_prompt(&prompt(&r, "short")).unwrap();
    let (unicode, unicode_pooled) = flux.encode_prompt(&prompt(&r, "unicode")).unwrap();
    let latents = Tensor::<B, 4>::from_data(
        TensorData::new(r.get("transformer.latents"), [2, 16, 8, 12]),
        device,
    );
    let call = &r.meta["transformer"];
    let sigma = call["timestep"].as_f64().unwrap() as f32;
    let guidance = call["guidance"].as_f64().map(|g| g as f32);
    assert_eq!(guidance.is_some(), dev);
    let out = flux.run_transformer(
        latents,
        Tensor::cat(vec![short, unicode], 0),
        Tensor::cat(vec![short_pooled, unicode_pooled], 0),
        sigma,
        guidance,
    );
    check(&values(out), &mut r, "transformer.sample");

    // The VAE decode of latents as the pipeline hands them (unscaled and shifted in `decode`):
    // the reference decoded latents already unscaled, so scale them back first.
    let z = r.get("vae.latents");
    let (scale, shift) = (0.3611f32, 0.1159f32);
    let scaled: Vec<f32> = z.iter().map(|v| (v - shift) * scale).collect();
    let z = Tensor::<B, 4>::from_data(TensorData::new(scaled, [1, 16, 8, 12]), device);
    check(&values(flux.decode(z)), &mut r, "vae.decoded");
}

#[test]
fn components_match_diffusers_on_the_cpu() {
    for name in [SCHNELL, DEV] {
        check_components(name, select(BackendRequest::Cpu).unwrap());
    }
}

/// [dev]'s: its transformer has every layer schnell's has, and the guidance embedding.
#[test]
fn components_match_diffusers_on_vulkan() {
    if let Some(device) = common::vulkan_device() {
        check_components(DEV, device);
    }
}

/// The pipeline's schedules: `linspace(1, 1/n, n)` shifted statically (schnell's 1: unshifted)
/// or by `mu` from the image's tokens ([dev]).
#[test]
fn schedules_are_diffusers_schedules() {
    for name in [SCHNELL, DEV] {
        let r = Reference::open(name);
        let path = folder(name).join("scheduler/scheduler_config.json");
        let config: FlowMatchConfig = sdbench_diffusion::models::config::read_json(&path).unwrap();
        let cases = r.meta["schedules"].as_array().unwrap();
        assert!(cases.len() >= 4);
        for case in cases {
            let steps = case["steps"].as_u64().unwrap() as usize;
            let tokens = case["image_tokens"].as_u64().unwrap() as usize;
            let schedule = config.schedule(steps, config.calculate_shift(tokens));
            let floats = |key: &str| -> Vec<f32> {
                case[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap() as f32)
                    .collect()
            };
            let what = format!("{name}: {steps} steps at {tokens} tokens");
            assert_eq!(schedule.sigmas, floats("sigmas"), "{what}");
            assert_eq!(schedule.timesteps, floats("timesteps"), "{what}");
        }
    }
}

fn check_generations(name: &str, device: SelectedDevice, precision: Precision, only: &[&str]) {
    let pipe = load(name, device, precision);
    let diffs = parity::generations(&pipe, &common::fixtures(), name, Some(only)).unwrap();
    assert_eq!(diffs.len(), only.len());
    common::assert_generations_within(name, precision, &diffs);
}

#[test]
fn generations_match_diffusers_on_the_cpu() {
    let cpu = || select(BackendRequest::Cpu).unwrap();
    let schnell = [
        "generate.square2",
        "generate.wide3",
        "generate.long2",
        "generate.true_cfg_square2",
    ];
    check_generations(SCHNELL, cpu(), Precision::F32, &schnell);
    let dev = [
        "generate.square2",
        "generate.tall3",
        "generate.long2",
        "generate.true_cfg_wide2",
        "generate.true_cfg_empty_negative2",
    ];
    check_generations(DEV, cpu(), Precision::F32, &dev);
}

#[test]
fn generations_match_diffusers_on_the_cpu_in_f16() {
    let cpu = || select(BackendRequest::Cpu).unwrap();
    check_generations(SCHNELL, cpu(), Precision::F16, &["generate.wide3"]);
    check_generations(DEV, cpu(), Precision::F16, &["generate.true_cfg_wide2"]);
}

/// [dev]'s true CFG run: the guidance embedding and the batched pass on the negative prompt (what
/// schnell's runs add, its static shift and no embedding, is host-side and checked on the CPU).
#[test]
fn generations_match_diffusers_on_vulkan() {
    if let Some(device) = common::vulkan_device() {
        check_generations(DEV, device, Precision::F32, &["generate.true_cfg_wide2"]);
    }
}

#[test]
fn generations_match_diffusers_on_vulkan_in_f16() {
    if let Some(device) = common::vulkan_device() {
        if device.supports(Precision::F16) {
            check_generations(DEV, device, Precision::F16, &["generate.square2"]);
        }
    }
}

/// The guidance scale is [dev]'s input and nothing of schnell's: schnell makes the same image at
/// any scale, [dev] a different one.
#[test]
fn only_dev_reads_the_guidance_scale() {
    let cpu = || select(BackendRequest::Cpu).unwrap();
    let image = |pipe: &Pipeline, scale: f64| {
        let request = GenerateRequest {
            width: 32,
            height: 32,
            steps: 1,
            guidance_scale: scale,
            ..GenerateRequest::new("a cat")
        };
        let out = pipe
            .generate(&request, &mut |_| {}, &CancelToken::new())
            .unwrap();
        out.images[0].image.pixels.clone()
    };
    let schnell = load(SCHNELL, cpu(), Precision::F32);
    assert_eq!(image(&schnell, 0.0), image(&schnell, 6.0));
    let dev = load(DEV, cpu(), Precision::F32);
    assert_ne!(image(&dev, 2.0), image(&dev, 6.0));
}

/// A negative prompt without true CFG above 1 (which diffusers would ignore) is refused before any
/// work, naming the option that reads it; with it, it is taken. Other families refuse true CFG by
/// name, and a scale that is no number above 0 is refused.
#[test]
fn a_negative_prompt_needs_true_cfg_and_only_flux1_takes_it() {
    let pipe = load(
        SCHNELL,
        select(BackendRequest::Cpu).unwrap(),
        Precision::F32,
    );
    let request = |true_cfg: Option<f64>| GenerateRequest {
        width: 32,
        height: 32,
        steps: 1,
        negative_prompt: "blurry".into(),
        guidance_options: GuidanceOptions {
            true_cfg,
            ..GuidanceOptions::default()
        },
        ..GenerateRequest::new("a cat")
    };
    for without in [None, Some(1.0)] {
        let message = pipe.validate(&request(without)).unwrap_err().to_string();
        assert!(
            message.contains("negative prompt") && message.contains("--true-cfg-scale"),
            "{message}"
        );
    }
    pipe.validate(&request(Some(3.0))).unwrap();
    assert!(
        request(Some(3.0))
            .shape(&sdbench_diffusion::families::flux1::FAMILY)
            .guided
    );
    let message = pipe
        .validate(&request(Some(f64::NAN)))
        .unwrap_err()
        .to_string();
    assert!(message.contains("true CFG scale"), "{message}");
    for family in sdbench_diffusion::FAMILIES {
        let result = family.check_request(&GenerateRequest {
            negative_prompt: String::new(),
            ..request(Some(3.0))
        });
        assert_eq!(result.is_ok(), family.true_cfg, "{family:?}");
        if let Err(e) = result {
            assert!(e.to_string().contains(family.name), "{e}");
        }
    }
}

/// Black Forest Labs' transformer file of the tiny [dev] (its names: fused q/k/v, `linear1` with
/// the MLP's input, the final modulation's halves swapped; checked against diffusers' converter
/// when it was made).
fn bfl_file() -> PathBuf {
    common::fixtures().join("weight-formats/tiny-flux1-dev.bfl-transformer.safetensors")
}

fn load_file(
    config: Option<PathBuf>,
    parts: ComponentFiles,
) -> sdbench_diffusion::Result<Pipeline> {
    Pipeline::load_with(
        &ModelSource::Checkpoint {
            file: bfl_file(),
            config,
            parts,
        },
        select(BackendRequest::Cpu).unwrap(),
        Some(Precision::F32),
        LoadOptions::default(),
    )
}

/// The transformer as a file in Black Forest Labs' names, run with the folder its configs, text
/// encoders and VAE come from: the same weights, so diffusers' images within the same bounds.
/// Alone, its family claims it and asks for its configs (its tiny sizes are no preset's).
#[test]
fn a_bfl_transformer_file_generates_what_diffusers_generates() {
    let pipe = load_file(Some(folder(DEV)), ComponentFiles::default()).unwrap();
    assert_eq!(pipe.info.family, Family::FLUX1_DEV);
    assert!(pipe.info.weight_files.contains(&bfl_file()));
    let diffs =
        parity::generations(&pipe, &common::fixtures(), DEV, Some(&["generate.tall3"])).unwrap();
    assert_eq!(diffs.len(), 1);
    common::assert_generations_within(DEV, Precision::F32, &diffs);

    let message = load_file(None, ComponentFiles::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        message.contains("FLUX.1 transformer of 2 double- and 2 single-stream blocks")
            && message.contains("--model-config"),
        "{message}"
    );
}

/// ComfyUI's layout: the transformer file, `--text-encoder` files for CLIP-L and T5 in either
/// order (each told by its names and width) and `--vae`, with a folder of configs alone. The same
/// images; two files for one encoder, or a file that is no text encoder, are refused by name.
#[test]
fn comfyui_style_files_run_in_any_order_and_wrong_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let configs = dir.path().join("configs");
    common::copy_tree(&folder(DEV), &configs);
    let moved = |sub: &str, name: &str| {
        let from = std::fs::read_dir(configs.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".safetensors"))
            .unwrap();
        let to = dir.path().join(name);
        std::fs::rename(from, &to).unwrap();
        to
    };
    let clip = moved("text_encoder", "clip_l.safetensors");
    let t5 = moved("text_encoder_2", "t5xxl_fp16.safetensors");
    let vae = moved("vae", "ae.safetensors");
    std::fs::remove_file(configs.join("transformer/diffusion_pytorch_model.safetensors")).unwrap();
    let parts = |text_encoders: Vec<PathBuf>| ComponentFiles {
        text_encoders,
        vae: Some(vae.clone()),
    };
    let pipe = load_file(Some(configs.clone()), parts(vec![t5.clone(), clip.clone()])).unwrap();
    for file in [&clip, &t5, &vae] {
        assert!(pipe.info.weight_files.contains(file), "{file:?}");
    }
    let diffs =
        parity::generations(&pipe, &common::fixtures(), DEV, Some(&["generate.square2"])).unwrap();
    common::assert_generations_within(DEV, Precision::F32, &diffs);

    let twice = load_file(
        Some(configs.clone()),
        parts(vec![clip.clone(), clip.clone()]),
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(
        twice.contains("clip_l.safetensors") && twice.contains("CLIP-L"),
        "{twice}"
    );
    let vae_as_text = load_file(Some(configs.clone()), parts(vec![vae.clone()]))
        .err()
        .expect("refused")
        .to_string();
    assert!(
        vae_as_text.contains("ae.safetensors") && vae_as_text.contains("T5-XXL encoder"),
        "{vae_as_text}"
    );
}

/// The transformer file in ComfyUI's scaled FP8 (as `flux1-dev-fp8` is kept: each matrix F8_E4M3
/// with its `scale_weight`, `linear1`'s fused q, k, v and MLP among them) runs with its weights in
/// their codes and makes the images of its dequantized values (diffusers' conversion of the file)
/// in a folder, holding a byte per weight where the f32 folder holds four.
#[test]
fn an_fp8_transformer_file_generates_what_its_dequantized_values_generate() {
    let (coded, plain) = kept_codes_against_their_values("fp8.safetensors");
    assert!(
        coded * 2 < plain,
        "{coded} bytes kept in codes, {plain} in f32"
    );
}

/// The same as a GGUF as city96's FLUX.1 GGUFs are written (Black Forest Labs' names, the
/// matrices whose rows are whole 32-value blocks in Q8_0, the rest in F32).
#[test]
fn a_q8_0_gguf_transformer_file_generates_what_its_dequantized_values_generate() {
    let (coded, plain) = kept_codes_against_their_values("q8_0.gguf");
    assert!(coded < plain, "{coded} bytes kept in codes, {plain} in f32");
}

/// Generates from `tiny-flux1-dev.bfl-transformer.{ending}` (its weights kept in codes) and from
/// the folder with the file's dequantized values (`....reference.safetensors`: diffusers'
/// conversion of them, or of those the format changed) in place of its transformer's: the
/// images within the fixture's f32 bound. Returns the transformer's device bytes, coded and f32.
fn kept_codes_against_their_values(ending: &str) -> (u64, u64) {
    use sdbench_diffusion::io::safetensors::SafeTensors;
    let formats = common::fixtures().join("weight-formats");
    let file = formats.join(format!("tiny-flux1-dev.bfl-transformer.{ending}"));
    let stem = ending.split('.').next().unwrap();
    let reference = formats.join(format!(
        "tiny-flux1-dev.bfl-transformer.{stem}.reference.safetensors"
    ));
    let dir = tempfile::tempdir().unwrap();
    let dequantized = dir.path().join("dev");
    common::copy_tree(&folder(DEV), &dequantized);
    let weights = dequantized.join("transformer/diffusion_pytorch_model.safetensors");
    let read_all = |path: &std::path::Path| {
        let mut file = SafeTensors::open(path).unwrap();
        let names: Vec<String> = file.names().map(str::to_string).collect();
        names
            .into_iter()
            .map(|n| {
                let shape = file.info(&n).unwrap().shape.clone();
                let values = file.read_f32(&n).unwrap();
                (n, (shape, values))
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let mut tensors = read_all(&weights);
    let changed = read_all(&reference);
    assert!(changed.len() >= 8, "{}", changed.len());
    for (name, tensor) in changed {
        assert!(tensors.contains_key(&name), "{name}");
        tensors.insert(name, tensor);
    }
    let refs: Vec<(&str, Vec<usize>, &[f32])> = tensors
        .iter()
        .map(|(n, (s, d))| (n.as_str(), s.clone(), d.as_slice()))
        .collect();
    sdbench_diffusion::io::safetensors::write_f32(&weights, &refs).unwrap();

    let request = GenerateRequest {
        width: 32,
        height: 48,
        steps: 2,
        guidance_scale: 3.5,
        ..GenerateRequest::new("a photograph of an astronaut riding a horse")
    };
    let generate = |source: ModelSource| {
        let pipe = Pipeline::load_with(
            &source,
            select(BackendRequest::Cpu).unwrap(),
            Some(Precision::F32),
            LoadOptions::default(),
        )
        .unwrap();
        let image = pipe
            .generate(&request, &mut |_| {}, &CancelToken::new())
            .unwrap()
            .images
            .remove(0)
            .float_image;
        (image, pipe.denoiser_weight_bytes())
    };
    let (coded, coded_bytes) = generate(ModelSource::Checkpoint {
        file,
        config: Some(folder(DEV)),
        parts: ComponentFiles::default(),
    });
    let (plain, plain_bytes) = generate(ModelSource::Folder(dequantized));
    let atol = parity::fixture_tolerance(&common::fixtures(), DEV, Precision::F32).unwrap();
    assert_close(&format!("kept in {stem} codes"), &coded, &plain, atol);
    (coded_bytes, plain_bytes)
}
