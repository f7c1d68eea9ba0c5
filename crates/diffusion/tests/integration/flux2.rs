//! FLUX.2 klein against diffusers' `Flux2KleinPipeline` on the tiny random-weight pipeline that
//! scripts/make_flux2_fixtures.py writes (bf16 weights, a sharded text encoder, a byte-level BPE
//! tokenizer with Qwen's special tokens): tokenizer ids, the stacked text-encoder hidden states
//! (a prompt cut at 512 tokens and one not), one transformer call, one VAE decode, the
//! flow-matching schedules, and whole generations (2 and 4 steps, square and not), on the CPU
//! and on wgpu through Vulkan, in f32 and f16, and in bf16 on the CPU.
//!
//! Tolerances, derived from diffusers' own f32 rounding of each computation (rerun in float64 by
//! scripts/measure_f32_rounding.py): each component call to `parity::component_tolerance`
//! (5.6e-5 and 5.9e-5 on prompt embeddings of magnitude 12, 5e-4 on the transformer's outputs of
//! magnitude 9, 3e-5 on the decoded image); images to `parity::fixture_tolerance` (in f32 the
//! fixture's own bound, 1.5e-4). Observed on the CPU in f32: tokens exact, prompt embeddings 1e-5,
//! the transformer 5e-5.

use crate::common;
use crate::common::FamilyAccess;

use burn::prelude::*;
use burn::tensor::TensorData;
use common::{assert_close, Reference};
use sdbench_diffusion::device::select;
use sdbench_diffusion::families::flux2::empirical_mu;
use sdbench_diffusion::families::flux2::pipeline::Flux2Pipeline;
use sdbench_diffusion::models::qwen3::prompt::{chat_text, QwenPrompt};
use sdbench_diffusion::parity;
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::scheduler::flow_match::FlowMatchConfig;
use sdbench_diffusion::{
    BackendRequest, CancelToken, GenerateRequest, LoadOptions, ModelSource, Pipeline, Precision,
    SelectedDevice,
};

const NAME: &str = "tiny-flux2-klein";

fn load(device: SelectedDevice, precision: Precision) -> Pipeline {
    Pipeline::load_with(
        &ModelSource::Folder(common::fixtures().join(NAME)),
        device,
        Some(precision),
        LoadOptions::default(),
    )
    .unwrap()
}

/// `assert_close` against reference `key`, within that call's bound derived from diffusers' own
/// f32 rounding of it (`parity::component_tolerance`).
fn assert_component(what: &str, actual: &[f32], r: &mut Reference, key: &str) {
    let atol = parity::component_tolerance(&common::fixtures(), NAME, key).unwrap();
    assert_close(what, actual, &r.get(key), atol);
}

fn flux2(pipe: &Pipeline) -> &Flux2Pipeline {
    pipe.flux2().expect("a FLUX.2 klein pipeline")
}

fn values<const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.cast(burn::tensor::DType::F32)
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .unwrap()
}

#[test]
fn tokenizer_and_chat_template_match_transformers() {
    let r = Reference::open(NAME);
    let mut r = r;
    let prompt = QwenPrompt::load(&common::fixtures().join(NAME).join("tokenizer")).unwrap();
    let cases = r.meta["tokenizer"].as_object().unwrap().clone();
    assert!(cases.len() >= 4);
    for (key, case) in &cases {
        let text = case["prompt"].as_str().unwrap();
        assert_eq!(
            chat_text(text, false),
            case["templated"].as_str().unwrap(),
            "{key}"
        );
        let tokens = prompt.encode(text, 512).unwrap();
        let ids: Vec<f32> = tokens.ids.iter().map(|&i| i as f32).collect();
        assert_eq!(ids, r.get(&format!("tokens.{key}.input_ids")), "{key} ids");
        let mask = r.get(&format!("tokens.{key}.attention_mask"));
        let real = mask.iter().filter(|&&m| m == 1.0).count();
        assert_eq!(tokens.real, real, "{key} mask");
        assert_eq!(
            tokens.untruncated as u64,
            case["untruncated_tokens"].as_u64().unwrap(),
            "{key}"
        );
    }
    // The long prompt is cut at 512 tokens: no padding, the template's end dropped.
    let long = prompt
        .encode(cases["long"]["prompt"].as_str().unwrap(), 512)
        .unwrap();
    assert!(long.truncated() && long.real == 512);
}

fn check_components(device: SelectedDevice) {
    let pipe = load(device, Precision::F32);
    let f = flux2(&pipe);
    let mut r = Reference::open(NAME);
    // The short prompt's embeddings are the transformer's context below (encoded once: each
    // encoding runs 512 tokens through the text encoder, slow on the emulated CPUs).
    let mut short_context = None;
    for key in ["short", "long"] {
        let prompt = r.meta["tokenizer"][key]["prompt"]
            .as_str()
            .unwrap()
            .to_string();
        let context = f.encode_prompt(&prompt).unwrap();
        if key == "short" {
            short_context = Some(context.clone());
        }
        let embeds = values(context);
        assert_component(
            &format!("flux2 prompt embeds ({key})"),
            &embeds,
            &mut r,
            &format!("prompt_embeds.{key}"),
        );
    }

    let grid = r.meta["transformer"]["grid"].as_array().unwrap().clone();
    let (gh, gw) = (
        grid[0].as_u64().unwrap() as usize,
        grid[1].as_u64().unwrap() as usize,
    );
    let t = r.meta["transformer"]["timestep"].as_f64().unwrap() as f32;
    let dev = pipe.device.device.clone();
    let hidden = r.get("transformer.hidden_states");
    let c = hidden.len() / (gh * gw);
    let latents = Tensor::<B, 3>::from_data(TensorData::new(hidden, [1, gh * gw, c]), &dev);
    let context = short_context.unwrap();
    let out = values(f.run_transformer(latents, context, t, (gh, gw)));
    assert_component("flux2 transformer", &out, &mut r, "transformer.sample");

    let z = r.get("vae.latents");
    let shape = r.shape("vae.latents");
    let z = Tensor::<B, 4>::from_data(TensorData::new(z, [1, shape[0], shape[1], shape[2]]), &dev);
    let image = values(f.decode(z));
    assert_component("flux2 VAE decode", &image, &mut r, "vae.decoded");
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

#[test]
fn flow_matching_schedules_match_diffusers() {
    let r = Reference::open(NAME);
    let path = common::fixtures()
        .join(NAME)
        .join("scheduler/scheduler_config.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let config: FlowMatchConfig = serde_json::from_str(&text).unwrap();
    config.validate(&path).unwrap();
    for case in r.meta["schedules"].as_array().unwrap() {
        let steps = case["steps"].as_u64().unwrap() as usize;
        let tokens = case["image_tokens"].as_u64().unwrap() as usize;
        let mu = empirical_mu(tokens, steps);
        assert!(
            (mu - case["mu"].as_f64().unwrap()).abs() < 1e-12,
            "mu {steps}/{tokens}"
        );
        let schedule = config.schedule(steps, mu);
        let floats = |k: &str| -> Vec<f32> {
            case[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect()
        };
        assert_close(
            &format!("sigmas {steps}/{tokens}"),
            &schedule.sigmas,
            &floats("sigmas"),
            // Sigmas in [0, 1] from a few f32 operations: 8 ulps of 1.
            8.0 * f32::EPSILON,
        );
        assert_close(
            &format!("timesteps {steps}/{tokens}"),
            &schedule.timesteps,
            &floats("timesteps"),
            // Sigmas times 1000: 8 ulps of 1000.
            8.0 * 1000.0 * f32::EPSILON,
        );
    }
}

fn check_generations(device: SelectedDevice, precision: Precision, only: Option<&[&str]>) {
    let pipe = load(device, precision);
    let diffs = parity::generations(&pipe, &common::fixtures(), NAME, only).unwrap();
    assert!(!diffs.is_empty());
    common::assert_generations_within(NAME, precision, &diffs);
}

#[test]
fn generations_match_diffusers_on_the_cpu() {
    check_generations(select(BackendRequest::Cpu).unwrap(), Precision::F32, None);
}

#[test]
fn generations_match_diffusers_on_the_cpu_in_f16() {
    let only: &[&str] = &["generate.square2"];
    check_generations(
        select(BackendRequest::Cpu).unwrap(),
        Precision::F16,
        Some(only),
    );
}

/// The fixture's bf16 weights reach a bf16 run unconverted.
#[test]
fn generations_match_diffusers_on_the_cpu_in_bf16() {
    check_generations(select(BackendRequest::Cpu).unwrap(), Precision::Bf16, None);
}

/// A device without bf16 (wgpu has no bf16 shaders) refuses a bf16 run by name, before loading.
#[test]
fn bf16_runs_where_the_device_has_it_and_is_refused_by_name_elsewhere() {
    let Some(device) = common::vulkan_device() else {
        return;
    };
    if device.supports(Precision::Bf16) {
        check_generations(device, Precision::Bf16, Some(&["generate.square2"]));
        return;
    }
    let name = device.info.name.clone();
    let instead = if device.supports(Precision::F16) {
        "--precision f16 or f32"
    } else {
        "--precision f32"
    };
    let error = Pipeline::load_with(
        &ModelSource::Folder(common::fixtures().join(NAME)),
        device,
        Some(Precision::Bf16),
        LoadOptions::default(),
    )
    .err()
    .expect("bf16 on a device without it");
    common::assert_mentions(
        &error.to_string(),
        &[&name, "does not support bf16", instead],
    );
}

#[test]
fn generations_match_diffusers_on_vulkan() {
    if let Some(device) = common::vulkan_device() {
        check_generations(device, Precision::F32, Some(&["generate.wide4"]));
    }
}

#[test]
fn generations_match_diffusers_on_vulkan_in_f16() {
    if let Some(device) = common::vulkan_device() {
        if device.supports(Precision::F16) {
            check_generations(device, Precision::F16, Some(&["generate.square2"]));
        }
    }
}

/// A model that is not step-distilled (FLUX.2 klein base: `is_distilled` false) guides every step
/// with the empty prompt, as diffusers does: the fixture's weights under such a model_index.json.
#[test]
fn a_model_that_is_not_distilled_runs_classifier_free_guidance() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join(NAME);
    crate::common::copy_tree(&common::fixtures().join(NAME), &base);
    let index = base.join("model_index.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&index).unwrap()).unwrap();
    value["is_distilled"] = false.into();
    std::fs::write(&index, value.to_string()).unwrap();
    for name in ["reference.json", "reference.safetensors"] {
        let file = format!("{NAME}.{name}");
        std::fs::copy(common::fixtures().join(&file), dir.path().join(&file)).unwrap();
    }
    let pipe = Pipeline::load(
        &ModelSource::Folder(base),
        select(BackendRequest::Cpu).unwrap(),
        Some(Precision::F32),
    )
    .unwrap();
    assert!(!pipe.ignores_guidance());
    let diffs = parity::listed_generations(&pipe, dir.path(), NAME, "generate_cfg").unwrap();
    assert_eq!(diffs.len(), 1);
    let tolerance = parity::fixture_tolerance(&common::fixtures(), NAME, Precision::F32).unwrap();
    eprintln!("{NAME} guided: max |diff| = {:.3e}", diffs[0].max_abs_diff);
    assert!(
        diffs[0].max_abs_diff <= tolerance,
        "{}",
        diffs[0].max_abs_diff
    );
}

#[test]
fn the_distilled_model_ignores_guidance_and_refuses_what_it_cannot_do() {
    let pipe = load(select(BackendRequest::Cpu).unwrap(), Precision::F32);
    assert!(pipe.ignores_guidance());
    assert_eq!(pipe.info.family, sdbench_diffusion::Family::FLUX2_KLEIN);
    let base = GenerateRequest {
        width: 32,
        height: 32,
        steps: 1,
        ..GenerateRequest::new("a cat")
    };
    // Sides must be multiples of the VAE's scale times the 2x2 patches (4 x 2 for the tiny VAE,
    // 8 x 2 for FLUX.2's).
    let odd = GenerateRequest {
        width: 36,
        ..base.clone()
    };
    let err = pipe.validate(&odd).unwrap_err().to_string();
    common::assert_mentions(&err, &["width", "multiple of 8"]);
    let scheduler = GenerateRequest {
        scheduler: Some(sdbench_diffusion::SchedulerKind::Euler),
        ..base.clone()
    };
    let err = pipe.validate(&scheduler).unwrap_err().to_string();
    common::assert_mentions(&err, &["--scheduler euler", "FLUX.2 klein", "flow_euler"]);
    // Guidance changes nothing for a step-distilled model.
    let cancel = CancelToken::new();
    let plain = pipe.generate(&base, &mut |_| {}, &cancel).unwrap();
    let guided = GenerateRequest {
        guidance_scale: 4.0,
        ..base
    };
    let guided = pipe.generate(&guided, &mut |_| {}, &cancel).unwrap();
    assert_eq!(plain.images[0].float_image, guided.images[0].float_image);
}

/// A transformer file as ComfyUI keeps it (Black Forest Labs' names: fused q/k/v, the final
/// modulation's shift and scale swapped), run with the folder its text encoder, VAE and configs
/// come from: the same weights, so diffusers' images within the same bounds. The fixture's BFL
/// names were checked against diffusers' own converter when it was made.
#[test]
fn a_bfl_transformer_file_generates_what_diffusers_generates() {
    let file =
        common::fixtures().join("weight-formats/tiny-flux2-klein.bfl-transformer.safetensors");
    let pipe = Pipeline::load_with(
        &ModelSource::Checkpoint {
            file: file.clone(),
            config: Some(common::fixtures().join(NAME)),
            parts: Default::default(),
        },
        select(BackendRequest::Cpu).unwrap(),
        Some(Precision::F32),
        LoadOptions::default(),
    )
    .unwrap();
    assert!(
        pipe.info.weight_files.contains(&file),
        "{:?}",
        pipe.info.weight_files
    );
    let only: &[&str] = &["generate.square2"];
    let diffs = parity::generations(&pipe, &common::fixtures(), NAME, Some(only)).unwrap();
    assert_eq!(diffs.len(), 1);
    common::assert_generations_within(NAME, Precision::F32, &diffs);

    // Without its folder, the file is refused with what to add.
    let alone = Pipeline::load_with(
        &ModelSource::Checkpoint {
            file: file.clone(),
            config: None,
            parts: Default::default(),
        },
        select(BackendRequest::Cpu).unwrap(),
        Some(Precision::F32),
        LoadOptions::default(),
    );
    let message = alone.err().expect("refused").to_string();
    // Its family claims it, and says its sizes are no built-in config's and what to add.
    assert!(
        message.contains("the only FLUX.2 configs built in") && message.contains("--model-config"),
        "{message}"
    );
}
