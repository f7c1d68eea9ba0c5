//! Shared helpers for the engine tests: fixture paths, reference tensors, explicit tolerances.

use std::path::{Path, PathBuf};

use sdbench_diffusion::device::select;
use sdbench_diffusion::families::flux2::pipeline::Flux2Pipeline;
use sdbench_diffusion::families::sd::pipeline::SdPipeline;
use sdbench_diffusion::parity;
use sdbench_diffusion::{BackendRequest, Pipeline, Precision, SelectedDevice};

pub mod bounds;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The Stable Diffusion fixtures.
pub fn tiny() -> &'static [&'static str] {
    sdbench_diffusion::families::sd::FAMILY.parity_fixtures
}

/// A fixture's reference (`sdbench_diffusion::parity::Reference`), its accessors panicking.
pub struct Reference {
    inner: parity::Reference,
    pub meta: serde_json::Value,
}

impl Reference {
    pub fn open(name: &str) -> Self {
        let inner = parity::Reference::open(&fixtures(), name).expect("reference file");
        let meta = inner.meta.clone();
        Reference { inner, meta }
    }

    pub fn has(&self, key: &str) -> bool {
        self.inner.has(key)
    }

    pub fn shape(&self, key: &str) -> Vec<usize> {
        self.inner.shape(key).unwrap()
    }

    pub fn get(&mut self, key: &str) -> Vec<f32> {
        self.inner.get(key).unwrap()
    }
}

/// Largest absolute difference (`parity::max_abs_diff`), and the reference's largest magnitude
/// (for scale).
pub fn max_abs_diff(actual: &[f32], expected: &[f32]) -> (f32, f32) {
    assert_eq!(actual.len(), expected.len(), "length differs");
    assert!(actual.iter().all(|a| a.is_finite()), "non-finite output");
    let scale = expected.iter().fold(0f32, |m, e| m.max(e.abs()));
    (parity::max_abs_diff(actual, expected), scale)
}

/// Asserts `actual` matches `expected` within `atol` absolute difference.
pub fn assert_close(what: &str, actual: &[f32], expected: &[f32], atol: f32) {
    let (diff, scale) = max_abs_diff(actual, expected);
    eprintln!(
        "{what}: max |diff| = {diff:.3e} (reference max |x| = {scale:.3e}, tolerance {atol:.1e})"
    );
    assert!(diff <= atol, "{what}: max |diff| {diff:e} exceeds {atol:e}");
}

/// Asserts each of fixture `name`'s generation `diffs` is within the fixture's tolerance in
/// `precision` (`parity::fixture_tolerance`).
pub fn assert_generations_within(name: &str, precision: Precision, diffs: &[parity::RunDiff]) {
    let tolerance = parity::fixture_tolerance(&fixtures(), name, precision).unwrap();
    for d in diffs {
        let what = format!("{name} {} {}", d.key, precision.name());
        eprintln!(
            "{what}: max |diff| = {:.3e} (tolerance {tolerance:.1e})",
            d.max_abs_diff
        );
        assert!(d.max_abs_diff <= tolerance, "{what}: {:e}", d.max_abs_diff);
    }
}

/// The Vulkan device (Mesa lavapipe in CI), or `None` with a message when there is none; with
/// SDBENCH_REQUIRE_VULKAN=1 (set by .ci/run) a missing device fails the test instead.
pub fn vulkan_device() -> Option<SelectedDevice> {
    match select(BackendRequest::Vulkan) {
        Ok(device) => Some(device),
        Err(e) => {
            assert!(
                std::env::var("SDBENCH_REQUIRE_VULKAN").as_deref() != Ok("1"),
                "SDBENCH_REQUIRE_VULKAN=1 but no Vulkan device: {e}"
            );
            eprintln!("SKIPPED: no Vulkan device ({e}); install mesa-vulkan-drivers");
            None
        }
    }
}

/// Asserts an error message names every one of `needles`.
pub fn assert_mentions(message: &str, needles: &[&str]) {
    for n in needles {
        assert!(
            message.contains(n),
            "error {message:?} should mention {n:?}"
        );
    }
}

/// A file's tensors as f32 values: name, shape, values.
pub type Tensors = Vec<(String, Vec<usize>, Vec<f32>)>;

/// Every tensor of a safetensors file as f32, its name after `prefix`.
pub fn read_tensors(path: &Path, prefix: &str) -> Tensors {
    let mut file = sdbench_diffusion::io::safetensors::SafeTensors::open(path).unwrap();
    let names: Vec<String> = file.names().map(String::from).collect();
    names
        .iter()
        .map(|n| {
            let shape = file.info(n).unwrap().shape.clone();
            (format!("{prefix}{n}"), shape, file.read_f32(n).unwrap())
        })
        .collect()
}

/// `tensors` as the slices the file writers take.
pub fn tensor_refs(tensors: &Tensors) -> Vec<(&str, Vec<usize>, &[f32])> {
    tensors
        .iter()
        .map(|(n, s, d)| (n.as_str(), s.clone(), d.as_slice()))
        .collect()
}

/// `tensors` as an F32 safetensors file.
pub fn write_tensors(path: &Path, tensors: &Tensors) {
    sdbench_diffusion::io::safetensors::write_f32(path, &tensor_refs(tensors)).unwrap();
}

/// Copies a folder tree (a fixture model) so a test can damage or edit its copy.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Helpers of the CPU kernel tests (cpu_conv, cpu_attention, cpu_group_norm), which compare the
/// CPU backend against definitions computed in f64.
pub mod kernels {
    use burn::prelude::*;
    use burn::tensor::{DType, TensorData};
    use sdbench_diffusion::device::cpu_device;
    use sdbench_diffusion::pipeline::B;

    /// `values` rounded to `dtype` (f16 or f32), so a reference sees what the backend sees.
    pub fn rounded(values: Vec<f32>, dtype: DType) -> Vec<f32> {
        match dtype {
            DType::F16 => values
                .into_iter()
                .map(|x| half::f16::from_f32(x).to_f32())
                .collect(),
            _ => values,
        }
    }

    /// `values` on the CPU backend as `dtype`.
    pub fn tensor<const D: usize>(values: &[f32], shape: [usize; D], dtype: DType) -> Tensor<B, D> {
        let data = TensorData::new(values.to_vec(), shape);
        Tensor::<B, D>::from_data(data, (&cpu_device(), DType::F32)).cast(dtype)
    }

    /// The tensor's values as f32.
    pub fn values<const D: usize>(tensor: Tensor<B, D>) -> Vec<f32> {
        tensor
            .cast(DType::F32)
            .into_data()
            .convert::<f32>()
            .into_vec()
            .unwrap()
    }
}

/// The family pipelines inside a `Pipeline`, for their component access.
pub trait FamilyAccess {
    fn sd(&self) -> Option<&SdPipeline>;
    fn flux2(&self) -> Option<&Flux2Pipeline>;
}

impl FamilyAccess for Pipeline {
    fn sd(&self) -> Option<&SdPipeline> {
        self.family_pipeline()
    }

    fn flux2(&self) -> Option<&Flux2Pipeline> {
        self.family_pipeline()
    }
}
