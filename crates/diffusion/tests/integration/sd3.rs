//! Stable Diffusion 3.5 against diffusers' `StableDiffusion3Pipeline` on the tiny random-weight
//! pipeline scripts/make_sd3_fixtures.py writes (two CLIPs with projection, T5, an MMDiT-X with
//! QK norms, dual attention in two of its three blocks and the last `context_pre_only`): each
//! prompt's conditioning (the CLIPs' penultimate states padded to T5's width, T5's 256 tokens,
//! the pooled outputs), one transformer call on a non-square batch of two with and without a
//! skipped block, a VAE decode, the schedules, and whole generations (unguided at 0 and 1,
//! guided with and without a negative prompt, non-square, a prompt past CLIP's 77 and T5's 256
//! tokens, skip-layer guidance, T5 absent); on the CPU and on wgpu through Vulkan, f32 and f16.
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
use sdbench_diffusion::families::sd3::pipeline::Sd3Pipeline;
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::scheduler::flow_match::FlowMatchConfig;
use sdbench_diffusion::{
    parity, BackendRequest, Family, GenerateRequest, GuidanceOptions, LoadOptions, ModelSource,
    Pipeline, Precision, SelectedDevice, SkipLayerGuidance,
};

const NAME: &str = "tiny-sd3";

fn folder() -> PathBuf {
    common::fixtures().join(NAME)
}

fn load(folder: PathBuf, device: SelectedDevice, precision: Precision) -> Pipeline {
    Pipeline::load_with(
        &ModelSource::Folder(folder),
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

/// `assert_close` against reference `key`, within that call's own bound.
fn assert_component(actual: &[f32], r: &mut Reference, key: &str) {
    let atol = parity::component_tolerance(&common::fixtures(), NAME, key).unwrap();
    assert_close(&format!("sd3 {key}"), actual, &r.get(key), atol);
}

fn prompt(r: &Reference, key: &str) -> String {
    r.meta["prompts"][key].as_str().unwrap().to_string()
}

fn check_components(device: SelectedDevice) {
    let mut r = Reference::open(NAME);
    let pipe = load(folder(), device, Precision::F32);
    assert_eq!(pipe.info.family, Family::SD35_MEDIUM);
    assert_eq!(pipe.info.preset, None, "a tiny model is no preset's");
    let sd3: &Sd3Pipeline = pipe.family_pipeline().unwrap();

    // Conditioning of each prompt: short, empty, unicode, and one past CLIP's and T5's lengths.
    for key in ["short", "empty", "unicode", "long"] {
        let (states, pooled) = sd3.encode_prompt(&prompt(&r, key)).unwrap();
        assert_eq!(states.dims(), [1, 77 + 256, 32], "{key}");
        assert_component(&values(states), &mut r, &format!("prompt_embeds.{key}"));
        assert_component(&values(pooled), &mut r, &format!("pooled.{key}"));
    }

    // One transformer call on two prompts' conditioning and two 8x12 latents, then the same
    // call skipping block 1 (as skip-layer guidance runs it).
    let device = &sd3.device.device;
    let (short, short_pooled) = sd3.encode_prompt(&prompt(&r, "short")).unwrap();
    let (unicode, unicode_pooled) = sd3.encode_prompt(&prompt(&r, "unicode")).unwrap();
    let states = Tensor::cat(vec![short, unicode], 0);
    let pooled = Tensor::cat(vec![short_pooled, unicode_pooled], 0);
    let latents = Tensor::<B, 4>::from_data(
        TensorData::new(r.get("transformer.latents"), [2, 16, 8, 12]),
        device,
    );
    let timestep = r.meta["transformer"]["timestep"].as_f64().unwrap() as f32;
    let out = |skip: &[usize]| {
        values(sd3.run_transformer(
            latents.clone(),
            states.clone(),
            pooled.clone(),
            timestep,
            skip,
        ))
    };
    assert_component(&out(&[]), &mut r, "transformer.sample");
    assert_component(&out(&[1]), &mut r, "transformer.skip1");

    // The VAE decode of latents as the pipeline hands them (unscaled and shifted in `decode`):
    // the reference decoded latents already unscaled, so scale them back first.
    let z = r.get("vae.latents");
    let (scale, shift) = (1.5305f32, 0.0609f32);
    let scaled: Vec<f32> = z.iter().map(|v| (v - shift) * scale).collect();
    let z = Tensor::<B, 4>::from_data(TensorData::new(scaled, [1, 16, 8, 12]), device);
    assert_component(&values(sd3.decode(z)), &mut r, "vae.decoded");
}

#[test]
fn components_match_diffusers_on_the_cpu() {
    check_components(select(BackendRequest::Cpu).unwrap());
}

#[test]
fn components_match_diffusers_on_vulkan() {
    if let Some(device) = common::vulkan_device() {
        check_components(device);
    }
}

/// `set_timesteps(n)` with no sigmas, as the pipeline calls it: the scheduler's own range (its
/// smallest sigma the shifted 1/1000), shifted again.
#[test]
fn schedules_are_diffusers_schedules() {
    let r = Reference::open(NAME);
    let path = folder().join("scheduler/scheduler_config.json");
    let config: FlowMatchConfig = sdbench_diffusion::models::config::read_json(&path).unwrap();
    let cases = r.meta["schedules"].as_array().unwrap();
    assert!(cases.len() >= 4);
    for case in cases {
        let steps = case["steps"].as_u64().unwrap() as usize;
        let schedule = config.schedule_over_range(steps, 0.0);
        let floats = |key: &str| -> Vec<f32> {
            case[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect()
        };
        assert_eq!(schedule.sigmas, floats("sigmas"), "{steps} steps");
        assert_eq!(schedule.timesteps, floats("timesteps"), "{steps} steps");
    }
}

/// Every generation the fixture lists with T5.
const GENERATIONS: [&str; 6] = [
    "generate.square2",
    "generate.unguided_wide2",
    "generate.cfg_square3",
    "generate.cfg_negative_tall2",
    "generate.long2",
    "generate.slg_square3",
];

fn check_generations(device: SelectedDevice, precision: Precision, only: &[&str]) {
    let pipe = load(folder(), device, precision);
    let diffs = parity::generations(&pipe, &common::fixtures(), NAME, Some(only)).unwrap();
    assert_eq!(diffs.len(), only.len());
    common::assert_generations_within(NAME, precision, &diffs);
}

#[test]
fn generations_match_diffusers_on_the_cpu() {
    check_generations(
        select(BackendRequest::Cpu).unwrap(),
        Precision::F32,
        &GENERATIONS,
    );
}

#[test]
fn generations_match_diffusers_on_the_cpu_in_f16() {
    check_generations(
        select(BackendRequest::Cpu).unwrap(),
        Precision::F16,
        &["generate.cfg_negative_tall2", "generate.slg_square3"],
    );
}

#[test]
fn generations_match_diffusers_on_vulkan() {
    if let Some(device) = common::vulkan_device() {
        check_generations(
            device,
            Precision::F32,
            &["generate.cfg_negative_tall2", "generate.slg_square3"],
        );
    }
}

#[test]
fn generations_match_diffusers_on_vulkan_in_f16() {
    if let Some(device) = common::vulkan_device() {
        if device.supports(Precision::F16) {
            check_generations(device, Precision::F16, &["generate.unguided_wide2"]);
        }
    }
}

/// A folder whose model_index.json lists no `text_encoder_3` (as diffusers loads one with
/// `text_encoder_3=None`) runs with zeros in T5's place, as diffusers does.
#[test]
fn without_t5_the_conditioning_is_zeros_as_diffusers_makes_it() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(NAME);
    common::copy_tree(&folder(), &copy);
    let index_path = copy.join("model_index.json");
    let mut index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&index_path).unwrap()).unwrap();
    for component in ["text_encoder_3", "tokenizer_3"] {
        index[component] = serde_json::json!([null, null]);
        std::fs::remove_dir_all(copy.join(component)).unwrap();
    }
    std::fs::write(&index_path, index.to_string()).unwrap();
    let cpu = select(BackendRequest::Cpu).unwrap();
    let pipe = load(copy, cpu, Precision::F32);
    let diffs = parity::listed_generations(&pipe, &common::fixtures(), NAME, "generate_without_t5")
        .unwrap();
    assert_eq!(diffs.len(), 1);
    common::assert_generations_within(NAME, Precision::F32, &diffs);
    // T5's files are not read.
    assert!(pipe
        .info
        .weight_files
        .iter()
        .all(|f| !f.to_string_lossy().contains("text_encoder_3")));
}

/// Skip-layer guidance's checks: the blocks it names exist, its bounds are fractions; other
/// families refuse it by name.
#[test]
fn skip_layer_guidance_is_checked_and_other_families_refuse_it() {
    let cpu = select(BackendRequest::Cpu).unwrap();
    let pipe = load(folder(), cpu, Precision::F32);
    let request = |skip: SkipLayerGuidance| GenerateRequest {
        width: 32,
        height: 32,
        steps: 2,
        guidance_scale: 4.5,
        guidance_options: GuidanceOptions {
            skip_layers: Some(skip),
            ..GuidanceOptions::default()
        },
        ..GenerateRequest::new("a cat")
    };
    let layers = |l: &[usize]| SkipLayerGuidance::new(l).unwrap();
    pipe.validate(&request(layers(&[1]))).unwrap();
    let past = pipe
        .validate(&request(layers(&[3])))
        .unwrap_err()
        .to_string();
    assert!(past.contains("layer 3") && past.contains("has 3"), "{past}");
    let outside = SkipLayerGuidance {
        stop: 1.5,
        ..layers(&[1])
    };
    let message = pipe.validate(&request(outside)).unwrap_err().to_string();
    assert!(message.contains("fractions of the steps"), "{message}");
    assert!(SkipLayerGuidance::new(&[64]).is_none());
    // Diffusers' bounds are strict: of 3 steps from 0.01 to 0.9, steps 1 and 2.
    let slg = SkipLayerGuidance {
        start: 0.01,
        stop: 0.9,
        ..layers(&[1])
    };
    assert_eq!(
        (0..3).map(|i| slg.applies(i, 3)).collect::<Vec<_>>(),
        [false, true, true]
    );
    for family in sdbench_diffusion::FAMILIES {
        let result = family.check_request(&request(layers(&[1])));
        assert_eq!(result.is_ok(), family.skip_layer_guidance, "{family:?}");
        if let Err(e) = result {
            assert!(e.to_string().contains(family.name), "{e}");
        }
    }
}

/// A size past the positional table (24 patches a side: 192 pixels with the fixture's VAE) is
/// refused before any work, naming the largest.
#[test]
fn a_size_past_the_positional_table_is_refused() {
    let cpu = select(BackendRequest::Cpu).unwrap();
    let pipe = load(folder(), cpu, Precision::F32);
    let request = GenerateRequest {
        width: 200,
        height: 64,
        steps: 1,
        ..GenerateRequest::new("a cat")
    };
    let message = pipe.validate(&request).unwrap_err().to_string();
    assert!(message.contains("at most 192 pixels"), "{message}");
}
