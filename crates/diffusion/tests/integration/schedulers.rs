//! Scheduler parity: timesteps, sigmas and init noise sigma from diffusers' `from_config` of
//! SD1.5's scheduler_config.json, for 1, 4, 30 and 50 steps.

use crate::common;

use burn::Dispatch;
use sdbench_diffusion::scheduler::{build, SchedulerKind};

#[test]
fn timesteps_and_sigmas_match_diffusers() {
    let config: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(
            common::fixtures().join("tiny-sd/scheduler/scheduler_config.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let cases: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(common::fixtures().join("scheduler_cases.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cases.len(), 24);
    for case in cases {
        let name = case["scheduler"].as_str().unwrap();
        let steps = case["steps"].as_u64().unwrap() as usize;
        let kind = SchedulerKind::from_name(name).unwrap();
        let s = build::<Dispatch>(kind, &config, steps, std::path::Path::new("test")).unwrap();
        let expected: Vec<f64> = case["timesteps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let actual: Vec<f64> = s.timesteps().iter().map(|&t| t as f64).collect();
        assert_eq!(
            actual.len(),
            expected.len(),
            "{name} {steps}: timestep count"
        );
        for (a, e) in actual.iter().zip(&expected) {
            assert!(
                (a - e).abs() <= 1e-3,
                "{name} {steps}: timesteps {actual:?} vs {expected:?}"
            );
        }
        if let Some(sigmas) = case.get("sigmas") {
            let expected: Vec<f64> = sigmas
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            let actual = s.sigmas();
            assert_eq!(actual.len(), expected.len(), "{name} {steps}: sigma count");
            for (a, e) in actual.iter().zip(&expected) {
                let a = *a as f64;
                assert!(
                    (a - e).abs() <= 1e-4 * e.abs().max(1.0),
                    "{name} {steps}: sigma {a} vs {e}"
                );
            }
        }
        let init = case["init_noise_sigma"].as_f64().unwrap();
        assert!(
            (s.init_noise_sigma() - init).abs() <= 1e-4 * init.max(1.0),
            "{name} {steps}: init noise sigma"
        );
    }
}

#[test]
fn unsupported_options_are_refused_by_name() {
    let config: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"prediction_type": "sample"}"#).unwrap();
    let err = build::<Dispatch>(
        SchedulerKind::Euler,
        &config,
        10,
        std::path::Path::new("s.json"),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("prediction_type"), "{err}");
    let err = build::<Dispatch>(
        SchedulerKind::Ddim,
        &Default::default(),
        0,
        std::path::Path::new("s.json"),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("steps"), "{err}");
}

/// `add_noise` (where an img2img run starts) against diffusers' for every scheduler, at steps 0 and
/// 2 of four, on SD1.5's and SD2.1's configs; and SD2.1's config reads as v-prediction.
#[test]
fn add_noise_matches_diffusers() {
    use burn::tensor::{Tensor, TensorData};
    use sdbench_diffusion::PredictionType;

    let configs: std::collections::HashMap<&str, serde_json::Map<String, serde_json::Value>> =
        [("sd15", "tiny-sd"), ("sd21", "tiny-sd2")]
            .into_iter()
            .map(|(name, folder)| {
                let path = common::fixtures()
                    .join(folder)
                    .join("scheduler/scheduler_config.json");
                (
                    name,
                    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap(),
                )
            })
            .collect();
    let cases: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(common::fixtures().join("scheduler_add_noise.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cases.len(), 24, "six schedulers, two configs, two steps");
    let floats = |v: &serde_json::Value| -> Vec<f32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    };
    let device = Default::default();
    for case in cases {
        let config = &configs[case["config"].as_str().unwrap()];
        let name = case["scheduler"].as_str().unwrap();
        let kind = SchedulerKind::from_name(name).unwrap();
        let steps = case["steps"].as_u64().unwrap() as usize;
        let index = case["index"].as_u64().unwrap() as usize;
        let s = build::<Dispatch>(kind, config, steps, std::path::Path::new("test")).unwrap();
        let expected_prediction = if case["config"] == "sd21" {
            PredictionType::VPrediction
        } else {
            PredictionType::Epsilon
        };
        assert_eq!(s.prediction_type(), expected_prediction, "{name}");
        let shape: [usize; 4] = floats(&case["shape"])
            .iter()
            .map(|&d| d as usize)
            .collect::<Vec<_>>()
            .try_into()
            .unwrap();
        let tensor = |key: &str| {
            Tensor::<Dispatch, 4>::from_data(TensorData::new(floats(&case[key]), shape), &device)
        };
        let noisy = s.add_noise(tensor("original"), tensor("noise"), index);
        let actual = noisy
            .into_data()
            .convert::<f32>()
            .into_vec::<f32>()
            .unwrap();
        common::assert_close(
            &format!("{} {name} add_noise at step {index}", case["config"]),
            &actual,
            &floats(&case["noisy"]),
            // Values under 16 from two products and a sum in f32, each within half an ulp of 16
            // (9.5e-7): 1e-5 leaves the reference's own rounding room.
            1e-5,
        );
    }
}
