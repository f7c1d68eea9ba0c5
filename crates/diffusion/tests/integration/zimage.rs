//! Z-Image's parts against diffusers' `ZImagePipeline` on the tiny random-weight pipeline that
//! scripts/make_zimage_fixtures.py writes (bf16 weights read in f32, the text encoder and the
//! transformer sharded): the chat template with thinking on and its tokens, the bare Qwen3
//! model's penultimate hidden states at the real tokens, one transformer call on two images whose
//! captions differ in length (each run as its own call: a padded batch's masked keys are simply
//! absent), the static-shift schedules; on the CPU and on wgpu through Vulkan.
//!
//! Tolerances: each call's own bound, derived from diffusers' f32 rounding of it
//! (`parity::component_tolerance`: 9.9e-6 on the text states of magnitude 3.7, 4.2e-4 and 5.9e-4
//! on the transformer's outputs of magnitude 67 and 63).

use std::path::{Path, PathBuf};

use crate::common;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use common::{assert_close, Reference};
use sdbench_diffusion::device::{cpu_device, select};
use sdbench_diffusion::families::zimage::transformer::{
    ZImageTransformer, ZImageTransformerConfig,
};
use sdbench_diffusion::io::sharded::{component_parameters, component_weights};
use sdbench_diffusion::models::config::read_json;
use sdbench_diffusion::models::qwen3::prompt::{chat_text, QwenPrompt};
use sdbench_diffusion::models::qwen3::{Qwen3Config, Qwen3TextEncoder, Qwen3Weights};
use sdbench_diffusion::nn::loader::Loader;
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::scheduler::flow_match::FlowMatchConfig;
use sdbench_diffusion::{
    parity, BackendRequest, Family, LoadOptions, ModelSource, Pipeline, Precision, SelectedDevice,
};

const NAME: &str = "tiny-zimage";

fn folder(component: &str) -> PathBuf {
    common::fixtures().join(NAME).join(component)
}

/// `assert_close` against reference `key`, within that call's bound derived from diffusers' own
/// f32 rounding of it (`parity::component_tolerance`).
fn assert_component(what: &str, actual: &[f32], r: &mut Reference, key: &str) {
    let atol = parity::component_tolerance(&common::fixtures(), NAME, key).unwrap();
    assert_close(what, actual, &r.get(key), atol);
}

fn values<const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.cast(DType::F32)
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .unwrap()
}

/// A component of the fixture in f32 on `device`, every stored tensor used but `ignored`.
fn load<T>(
    device: &SelectedDevice,
    component: &str,
    stem: &str,
    ignored: &[&str],
    build: impl FnOnce(&mut Loader<B>, &Path) -> T,
) -> T {
    let (mut source, _) =
        component_weights(&folder(component), stem, Precision::F32, ignored).unwrap();
    let mut loader =
        Loader::new(source.as_mut(), &device.device, Precision::F32).with_host(&cpu_device());
    let model = build(&mut loader, &folder(component).join("config.json"));
    loader.finish().unwrap();
    model
}

#[test]
fn the_chat_template_with_thinking_tokenizes_as_transformers() {
    let mut r = Reference::open(NAME);
    let prompt = QwenPrompt::load(&folder("tokenizer")).unwrap();
    let cases = r.meta["tokenizer"].as_object().unwrap().clone();
    assert!(cases.len() >= 4);
    for (key, case) in &cases {
        let text = case["prompt"].as_str().unwrap();
        assert_eq!(
            chat_text(text, true),
            case["templated"].as_str().unwrap(),
            "{key}"
        );
        let tokens = prompt.encode_chat(text, 512, true).unwrap();
        let ids: Vec<f32> = tokens.ids.iter().map(|&i| i as f32).collect();
        assert_eq!(ids, r.get(&format!("tokens.{key}.input_ids")), "{key} ids");
        let mask = r.get(&format!("tokens.{key}.attention_mask"));
        assert_eq!(
            tokens.real,
            mask.iter().filter(|&&m| m == 1.0).count(),
            "{key} mask"
        );
    }
    let long = prompt
        .encode_chat(cases["long"]["prompt"].as_str().unwrap(), 512, true)
        .unwrap();
    assert!(long.truncated() && long.real == 512);
}

fn check_components(device: SelectedDevice) {
    let mut r = Reference::open(NAME);
    // The text encoder: a bare Qwen3Model; hidden_states[-2] is the output of all but its last
    // layer, which (with the final norm) is never run.
    let config: Qwen3Config = read_json(&folder("text_encoder").join("config.json")).unwrap();
    let layers = config.num_hidden_layers - 1;
    let unused = Qwen3TextEncoder::<B>::unused_prefixes_named(&config, layers, Qwen3Weights::Bare);
    let unused: Vec<&str> = unused.iter().map(String::as_str).collect();
    let encoder = load(&device, "text_encoder", "model", &unused, |l, path| {
        Qwen3TextEncoder::load_named(&config, layers, Qwen3Weights::Bare, path, l).unwrap()
    });
    let prompt = QwenPrompt::load(&folder("tokenizer")).unwrap();
    let mut captions = Vec::new();
    for key in ["short", "empty", "long"] {
        let text = r.meta["tokenizer"][key]["prompt"]
            .as_str()
            .unwrap()
            .to_string();
        let tokens = prompt.encode_chat(&text, 512, true).unwrap();
        let states = encoder
            .stacked_hidden_states(&tokens.ids, tokens.real, &[layers], &device.device)
            .unwrap()
            .narrow(1, 0, tokens.real);
        let expected = r.get(&format!("prompt_embeds.{key}"));
        assert_eq!(expected.len(), tokens.real * config.hidden_size, "{key}");
        assert_component(
            &format!("zimage text states ({key})"),
            &values(states.clone()),
            &mut r,
            &format!("prompt_embeds.{key}"),
        );
        captions.push(states);
    }

    // The transformer: each image with its own caption, as one call each.
    let config: ZImageTransformerConfig =
        read_json(&folder("transformer").join("config.json")).unwrap();
    let stored = component_parameters(
        &folder("transformer"),
        "diffusion_pytorch_model",
        Precision::F32,
        |_| true,
    )
    .unwrap();
    assert_eq!(config.parameters(), stored, "the config's parameter count");
    let transformer = load(
        &device,
        "transformer",
        "diffusion_pytorch_model",
        &[],
        |l, path| ZImageTransformer::load(&config, path, l).unwrap(),
    );
    let t = r.meta["transformer"]["timestep"].as_f64().unwrap() as f32;
    let hw = r.meta["transformer"]["latent_hw"]
        .as_array()
        .unwrap()
        .clone();
    let (h, w) = (
        hw[0].as_u64().unwrap() as usize,
        hw[1].as_u64().unwrap() as usize,
    );
    let c = config.in_channels;
    for (i, caption) in captions.into_iter().take(2).enumerate() {
        let latents = r.get(&format!("transformer.latents.{i}"));
        let latents =
            Tensor::<B, 4>::from_data(TensorData::new(latents, [1, c, h, w]), &device.device);
        let out = values(transformer.forward(latents, caption, t));
        assert_component(
            &format!("zimage transformer (image {i})"),
            &out,
            &mut r,
            &format!("transformer.sample.{i}"),
        );
    }
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
fn turbos_static_shift_schedules_match_diffusers() {
    let r = Reference::open(NAME);
    let path = folder("scheduler").join("scheduler_config.json");
    let config: FlowMatchConfig = read_json(&path).unwrap();
    config.validate(&path).unwrap();
    assert!(!config.use_dynamic_shifting && config.shift == 3.0);
    for case in r.meta["schedules"].as_array().unwrap() {
        let steps = case["steps"].as_u64().unwrap() as usize;
        let tokens = case["image_tokens"].as_u64().unwrap() as usize;
        let mu = config.calculate_shift(tokens);
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
            &format!("sigmas {steps}"),
            &schedule.sigmas,
            &floats("sigmas"),
            // Sigmas in [0, 1] from a few f32 operations: 8 ulps of 1.
            8.0 * f32::EPSILON,
        );
        assert_close(
            &format!("timesteps {steps}"),
            &schedule.timesteps,
            &floats("timesteps"),
            // Sigmas times 1000: 8 ulps of 1000.
            8.0 * 1000.0 * f32::EPSILON,
        );
    }
}

/// The fixture's generations: guidance 0 (Turbo's), plain classifier-free guidance, and guidance
/// truncated after the first two steps and renormalised (`cfg_truncation` 0.3,
/// `cfg_normalization`: the request's `guidance_options`).
const GENERATIONS: [&str; 5] = [
    "generate.square2",
    "generate.wide3",
    "generate.tall2",
    "generate.cfg_square2",
    "generate.cfg_wide3",
];

fn check_generations(device: SelectedDevice, precision: Precision, only: &[&str]) {
    let pipe = Pipeline::load_with(
        &ModelSource::Folder(common::fixtures().join(NAME)),
        device,
        Some(precision),
        LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(pipe.info.family, Family::ZIMAGE);
    assert_eq!(pipe.info.preset, None, "a tiny model is no preset's");
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
        &GENERATIONS[..2],
    );
}

/// The fixture's bf16 weights reach a bf16 run unconverted (wgpu has no bf16: the CPU runs it).
#[test]
fn generations_match_diffusers_on_the_cpu_in_bf16() {
    check_generations(
        select(BackendRequest::Cpu).unwrap(),
        Precision::Bf16,
        &["generate.square2", "generate.cfg_wide3"],
    );
}

#[test]
fn generations_match_diffusers_on_vulkan_in_f16() {
    if let Some(device) = common::vulkan_device() {
        if device.supports(Precision::F16) {
            check_generations(
                device,
                Precision::F16,
                &["generate.tall2", "generate.cfg_square2"],
            );
        }
    }
}

#[test]
fn generations_match_diffusers_on_vulkan() {
    if let Some(device) = common::vulkan_device() {
        check_generations(
            device,
            Precision::F32,
            &["generate.wide3", "generate.cfg_wide3"],
        );
    }
}

/// Guidance options are Z-Image's: another family refuses them by name before any work.
#[test]
fn other_families_refuse_guidance_options() {
    let request = sdbench_diffusion::GenerateRequest {
        guidance_options: sdbench_diffusion::GuidanceOptions {
            truncation: Some(0.5),
            ..Default::default()
        },
        ..sdbench_diffusion::GenerateRequest::new("a cat")
    };
    for family in sdbench_diffusion::FAMILIES {
        let result = family.check_request(&request);
        assert_eq!(result.is_ok(), family.guidance_options, "{family:?}");
        if let Err(e) = result {
            assert!(e.to_string().contains(family.name), "{e}");
        }
    }
    // Out of range, Z-Image refuses them too, naming the option.
    for (truncation, normalization, needle) in [
        (
            Some(1.5),
            None,
            "truncation must be a fraction from 0 to 1 (got 1.5)",
        ),
        (
            Some(-0.1),
            None,
            "truncation must be a fraction from 0 to 1",
        ),
        (
            None,
            Some(0.0),
            "normalization must be a factor above 0 (got 0",
        ),
        (
            None,
            Some(f64::NAN),
            "normalization must be a factor above 0",
        ),
    ] {
        let request = sdbench_diffusion::GenerateRequest {
            guidance_options: sdbench_diffusion::GuidanceOptions {
                truncation,
                normalization,
                ..Default::default()
            },
            ..sdbench_diffusion::GenerateRequest::new("a cat")
        };
        let e = sdbench_diffusion::families::zimage::FAMILY
            .check_request(&request)
            .unwrap_err();
        assert!(e.to_string().contains(needle), "{e}");
    }
}

/// A transformer file as ComfyUI keeps it (Tongyi-MAI's names under `model.diffusion_model.`:
/// fused q/k/v, `attention.out`, a `norm_final` diffusers drops), run with the folder its text
/// encoder, VAE and configs come from: the same weights, so diffusers' images within the same
/// bounds. The fixture's names were checked against diffusers' own converter when it was made.
#[test]
fn an_original_transformer_file_generates_what_diffusers_generates() {
    let file =
        common::fixtures().join("weight-formats/tiny-zimage.original-transformer.safetensors");
    let source = ModelSource::Checkpoint {
        file: file.clone(),
        config: Some(common::fixtures().join(NAME)),
        parts: Default::default(),
    };
    let cpu = || select(BackendRequest::Cpu).unwrap();
    let pipe =
        Pipeline::load_with(&source, cpu(), Some(Precision::F32), LoadOptions::default()).unwrap();
    assert_eq!(pipe.info.family, Family::ZIMAGE);
    assert!(
        pipe.info.weight_files.contains(&file),
        "{:?}",
        pipe.info.weight_files
    );
    let only: &[&str] = &["generate.square2"];
    let diffs = parity::generations(&pipe, &common::fixtures(), NAME, Some(only)).unwrap();
    assert_eq!(diffs.len(), 1);
    common::assert_generations_within(NAME, Precision::F32, &diffs);

    // Without its folder, the file is named and the missing folder asked for.
    let alone = ModelSource::Checkpoint {
        file,
        config: None,
        parts: Default::default(),
    };
    let message = Pipeline::load_with(&alone, cpu(), Some(Precision::F32), LoadOptions::default())
        .err()
        .expect("refused")
        .to_string();
    // Its family claims it, and says its sizes are no built-in config's and what to add.
    assert!(
        message.contains("the only Z-Image configs built in") && message.contains("--model-config"),
        "{message}"
    );
}
