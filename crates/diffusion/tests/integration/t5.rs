//! T5 v1.1's encoder and tokenizer against transformers' `T5EncoderModel` and `T5TokenizerFast`
//! on the tiny random-weight pair scripts/make_t5_fixtures.py writes in SD3.5's layout
//! (`text_encoder_3/`, `tokenizer_3/`): the ids of prompts padded and cut to the sequence length
//! (256 as SD3.5 calls T5, and shorter), and the last hidden state of each, the padding attended
//! (no attention mask, as the pipelines call it); on the CPU and on wgpu through Vulkan, f32 and
//! f16.
//!
//! Tolerances: f32, each call's bound (8 times transformers' own f32 rounding of it against
//! float64, `component_tolerance` in the reference); f16, twice the worst of transformers' own f16
//! runs of the same calls against f32 (`f16_tolerance`).

use std::path::PathBuf;

use crate::common;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use common::{assert_close, Reference};
use sdbench_diffusion::device::{cpu_device, select};
use sdbench_diffusion::io::file_weights::FileWeights;
use sdbench_diffusion::io::sharded::component_weights;
use sdbench_diffusion::models::config::read_json;
use sdbench_diffusion::models::t5::prompt::T5Prompt;
use sdbench_diffusion::models::t5::{embedding_name, T5Config, T5Encoder, TIED_EMBEDDING};
use sdbench_diffusion::nn::loader::Loader;
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::{parity, BackendRequest, Precision, SelectedDevice};

const NAME: &str = "tiny-t5";

fn folder(component: &str) -> PathBuf {
    common::fixtures().join(NAME).join(component)
}

fn cases(r: &Reference) -> Vec<serde_json::Value> {
    r.meta["sequence_cases"].as_array().unwrap().clone()
}

#[test]
fn prompts_are_padded_and_cut_as_transformers_tokenizes_them() {
    let r = Reference::open(NAME);
    let prompt = T5Prompt::load(&folder("tokenizer_3")).unwrap();
    let cases = cases(&r);
    assert!(cases.len() >= 4);
    let mut cut = false;
    for case in &cases {
        let length = case["length"].as_u64().unwrap() as usize;
        let tokens = prompt
            .encode(case["prompt"].as_str().unwrap(), length)
            .unwrap();
        let expected: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let key = case["key"].as_str().unwrap();
        assert_eq!(tokens.ids, expected, "{key}");
        assert_eq!(
            tokens.untruncated as u64,
            case["untruncated"].as_u64().unwrap(),
            "{key}"
        );
        cut |= tokens.untruncated >= length;
    }
    assert!(cut, "no case is cut at its sequence length");
    assert!(prompt.encode("x", 0).is_err());
}

fn check_hidden_states(device: SelectedDevice, precision: Precision) {
    let mut r = Reference::open(NAME);
    let config_path = folder("text_encoder_3").join("config.json");
    let config: T5Config = read_json(&config_path).unwrap();
    let file = FileWeights::open(&folder("text_encoder_3").join("model.safetensors")).unwrap();
    let embedding = embedding_name(|name| file.has(name));
    let ignored: &[&str] = if embedding == TIED_EMBEDDING {
        &[]
    } else {
        &[TIED_EMBEDDING]
    };
    let (mut source, _) =
        component_weights(&folder("text_encoder_3"), "model", precision, ignored).unwrap();
    let mut loader =
        Loader::new(source.as_mut(), &device.device, precision).with_host(&cpu_device());
    let encoder = T5Encoder::<B>::load(&config, embedding, &config_path, &mut loader).unwrap();
    loader.finish().unwrap();
    let prompt = T5Prompt::load(&folder("tokenizer_3")).unwrap();
    assert!(prompt.vocab_size() <= encoder.vocab_size());
    for case in cases(&r) {
        let key = case["key"].as_str().unwrap();
        let length = case["length"].as_u64().unwrap() as usize;
        let tokens = prompt
            .encode(case["prompt"].as_str().unwrap(), length)
            .unwrap();
        let ids: Vec<i64> = tokens.ids.iter().map(|&i| i as i64).collect();
        let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(ids, [1, length]), &device.device);
        let states = encoder.forward(ids);
        assert_eq!(states.dims(), [1, length, config.d_model]);
        assert_eq!(states.dtype(), precision.dtype());
        let actual: Vec<f32> = states
            .cast(DType::F32)
            .into_data()
            .convert::<f32>()
            .into_vec()
            .unwrap();
        let reference = format!("t5.{key}");
        let atol = match precision {
            Precision::F32 => {
                parity::component_tolerance(&common::fixtures(), NAME, &reference).unwrap()
            }
            _ => r.meta["f16_tolerance"].as_f64().unwrap() as f32,
        };
        assert_close(
            &format!("T5 hidden states ({key}, {})", precision.name()),
            &actual,
            &r.get(&reference),
            atol,
        );
    }
}

#[test]
fn hidden_states_match_transformers_on_the_cpu() {
    check_hidden_states(select(BackendRequest::Cpu).unwrap(), Precision::F32);
}

#[test]
fn hidden_states_match_transformers_on_vulkan_in_f32_and_f16() {
    if let Some(device) = common::vulkan_device() {
        check_hidden_states(device.clone(), Precision::F32);
        check_hidden_states(device, Precision::F16);
    }
}
