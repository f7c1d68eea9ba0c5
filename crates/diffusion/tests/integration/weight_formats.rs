//! Weight formats beyond plain float safetensors: GGUF files (ggml's block-quantized types, as
//! stable-diffusion.cpp and ComfyUI-GGUF write them) and FP8 safetensors (plain and ComfyUI's
//! "scaled"). Decoders are checked against gguf-py's and torch's, a GGUF checkpoint against
//! diffusers loading the same file, and broken files are refused by name.
//! Fixtures: scripts/make_weight_format_fixtures.py.

use crate::common;

use std::path::{Path, PathBuf};

use burn::prelude::*;
use burn::tensor::DType;

use common::{assert_mentions, fixtures};
use sdbench_diffusion::device::select;
use sdbench_diffusion::io::file_weights::FileWeights;
use sdbench_diffusion::io::ggml_blocks::GgmlType;
use sdbench_diffusion::io::gguf::Gguf;
use sdbench_diffusion::io::safetensors::{SafeTensors, StDtype};
use sdbench_diffusion::io::tensor_file::TensorFile;
use sdbench_diffusion::io::weights::{Init, Values, WeightSource};
use sdbench_diffusion::nn::blocks::{BlockMatrix, HostBlocks};
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::{BackendRequest, ModelSource, Pipeline, Precision};

fn formats() -> PathBuf {
    fixtures().join("weight-formats")
}

/// Bit-for-bit equality, NaN equal to NaN.
fn assert_same_bits(what: &str, got: &[f32], expected: &[f32]) {
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(
            g.to_bits() == e.to_bits() || (g.is_nan() && e.is_nan()),
            "{what}[{i}]: {g} but the reference has {e}"
        );
    }
}

#[test]
fn every_ggml_type_decodes_as_gguf_py_decodes_it() {
    // The decoders do the same f32 operations in the same order as ggml's and gguf-py's
    // (a scale times a small integer, minus a minimum), so the values agree bit for bit.
    let mut file = Gguf::open(&formats().join("ggml-blocks.gguf")).unwrap();
    let mut reference =
        SafeTensors::open(&formats().join("ggml-blocks.reference.safetensors")).unwrap();
    let names: Vec<String> = file.names().map(str::to_string).collect();
    let expected_types = [
        "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K",
        "Q5_K", "Q6_K",
    ];
    assert_eq!(names.len(), expected_types.len());
    for name in &names {
        let tensor = file.tensor(name).unwrap();
        assert_eq!(
            tensor.dtype.name(),
            name,
            "each tensor is named by its type"
        );
        assert_eq!(tensor.shape, vec![2, 256], "{name}: ggml's dims reversed");
        let stored = file.read(name).unwrap();
        assert_same_bits(name, &stored.to_f32(), &reference.read_f32(name).unwrap());
        // The same values through the bf16 and f16 conversions the loader uses.
        let via_bf16: Vec<f32> = stored.to_bf16().iter().map(|v| v.to_f32()).collect();
        let rounded: Vec<f32> = stored
            .to_f32()
            .iter()
            .map(|v| half::bf16::from_f32(*v).to_f32())
            .collect();
        assert_same_bits(name, &via_bf16, &rounded);
    }
    for t in expected_types {
        assert!(names.iter().any(|n| n == t), "{t} is in the fixture");
    }
}

/// Every quantized ggml type and both FP8 formats, kept in their codes on the device
/// (`nn::blocks`: a Q4_K or FP8 model's memory) and dequantized there, give gguf-py's and torch's
/// values bit for bit, on the CPU and on lavapipe; and in f16 and bf16, those values rounded once.
#[test]
fn weights_kept_in_their_codes_dequantize_on_the_device_as_gguf_py_does() {
    let mut devices = vec![select(BackendRequest::Cpu).unwrap()];
    devices.extend(common::vulkan_device());
    let mut file = Gguf::open(&formats().join("ggml-blocks.gguf")).unwrap();
    let mut reference =
        SafeTensors::open(&formats().join("ggml-blocks.reference.safetensors")).unwrap();
    let mut fp8 = SafeTensors::open(&formats().join("fp8.safetensors")).unwrap();
    let mut fp8_reference =
        SafeTensors::open(&formats().join("fp8.reference.safetensors")).unwrap();
    let mut cases = Vec::new();
    for name in [
        "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
    ] {
        let host = HostBlocks::from_stored(&file.read(name).unwrap(), 2, 256, None);
        cases.push((name, host, reference.read_f32(name).unwrap()));
    }
    // All 256 codes of each FP8 format as a 16x16 matrix, and a scaled FP8 layer.
    for name in ["e4m3", "e5m2"] {
        let host = HostBlocks::from_stored(&fp8.read(name).unwrap(), 16, 16, None);
        cases.push((name, host, fp8_reference.read_f32(name).unwrap()));
    }
    let mut scaled = FileWeights::open(&formats().join("fp8.safetensors")).unwrap();
    let Values::Scaled { stored, scale } =
        scaled.take("layer.weight", &[4, 8], Init::Zeros).unwrap()
    else {
        panic!("the fixture's layer is scaled");
    };
    let host = HostBlocks::from_stored(&stored, 4, 8, Some(scale));
    cases.push((
        "layer.weight",
        host,
        fp8_reference.read_f32("layer.weight").unwrap(),
    ));

    for device in &devices {
        for (name, host, expected) in &cases {
            let host = host.clone().expect("kept in its codes");
            let matrix = BlockMatrix::<B>::upload(host, &device.device);
            let values = |dtype| -> Vec<f32> {
                matrix
                    .dequantize(dtype)
                    .cast(DType::F32)
                    .into_data()
                    .convert::<f32>()
                    .into_vec()
                    .unwrap()
            };
            let what = format!("{name} on {}", device.info.name);
            assert_same_bits(&what, &values(DType::F32), expected);
            let bf16: Vec<f32> = expected
                .iter()
                .map(|v| half::bf16::from_f32(*v).to_f32())
                .collect();
            if device.supports(Precision::Bf16) {
                assert_same_bits(&what, &values(DType::BF16), &bf16);
            }
            let f16: Vec<f32> = expected
                .iter()
                .map(|v| half::f16::from_f32(*v).to_f32())
                .collect();
            if device.supports(Precision::F16) {
                assert_same_bits(&what, &values(DType::F16), &f16);
            }
        }
    }
}

#[test]
fn fp8_codes_decode_as_torch_decodes_them() {
    let mut file = SafeTensors::open(&formats().join("fp8.safetensors")).unwrap();
    let mut reference = SafeTensors::open(&formats().join("fp8.reference.safetensors")).unwrap();
    for (name, dtype) in [("e4m3", StDtype::F8E4M3), ("e5m2", StDtype::F8E5M2)] {
        let stored = file.read(name).unwrap();
        assert_eq!(stored.dtype, dtype);
        let values = stored.to_f32();
        assert_same_bits(name, &values, &reference.read_f32(name).unwrap());
        // Every FP8 value is exact in bf16 and f16 (fewer mantissa bits, a narrower range).
        let bf16: Vec<f32> = stored.to_bf16().iter().map(|v| v.to_f32()).collect();
        let f16: Vec<f32> = stored.to_f16().iter().map(|v| v.to_f32()).collect();
        assert_same_bits(name, &bf16, &values);
        assert_same_bits(name, &f16, &values);
    }
}

#[test]
fn a_scaled_fp8_layer_is_its_weight_times_its_scale() {
    let path = formats().join("fp8.safetensors");
    let mut weights = FileWeights::open(&path).unwrap();
    let mut reference = SafeTensors::open(&formats().join("fp8.reference.safetensors")).unwrap();
    let values = weights.take("layer.weight", &[4, 8], Init::Zeros).unwrap();
    assert!(
        matches!(values, Values::Scaled { scale, .. } if scale != 1.0),
        "a scaled weight is taken with its scale"
    );
    let weight = values.into_f32();
    // torch multiplies the f32 value by the f32 scale: one rounding, as here.
    assert_same_bits(
        "layer.weight",
        &weight,
        &reference.read_f32("layer.weight").unwrap(),
    );
    for (name, shape) in [
        ("layer.bias", vec![4]),
        ("e4m3", vec![256]),
        ("e5m2", vec![256]),
    ] {
        weights.take(name, &shape, Init::Zeros).unwrap();
    }
    // The scale was used; the activation scale and the marker are not weights.
    weights.finish().unwrap();

    // A weight whose scale is not one number is refused by name.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad-scale.safetensors");
    sdbench_diffusion::io::safetensors::write_f32(
        &bad,
        &[
            ("x.weight", vec![2], &[1.0, 2.0]),
            ("x.scale_weight", vec![2], &[1.0, 2.0]),
        ],
    )
    .unwrap();
    let message = FileWeights::open(&bad)
        .unwrap()
        .take("x.weight", &[2], Init::Zeros)
        .err()
        .unwrap()
        .to_string();
    assert_mentions(&message, &["x.scale_weight", "one number"]);
}

fn load_checkpoint(file: &Path) -> sdbench_diffusion::Result<Pipeline> {
    Pipeline::load(
        &ModelSource::Checkpoint {
            file: file.to_path_buf(),
            config: Some(fixtures().join("tiny-sd")),
            parts: Default::default(),
        },
        select(BackendRequest::Cpu).unwrap(),
        Some(Precision::F32),
    )
}

#[test]
fn a_gguf_checkpoint_generates_what_diffusers_generates_from_it() {
    // The dequantized weights are exact f32 values, so the run differs from diffusers' only by
    // f32 rounding: tiny-sd's own f32 bound, derived from diffusers' rounding.
    crate::checkpoint::generates_what_diffusers_generates(
        &formats().join("tiny-sd.ldm.q8_0.gguf"),
        &fixtures().join("tiny-sd"),
        "weight-formats/tiny-sd.ldm.q8_0",
        "tiny-sd",
    );
    // That bound can tell the quantized model from the checkpoint it was made from.
    let image = |path: PathBuf| SafeTensors::open(&path).unwrap().read_f32("image").unwrap();
    let quantized = image(formats().join("tiny-sd.ldm.q8_0.reference.safetensors"));
    let unquantized = image(fixtures().join("tiny-sd.ldm.reference.safetensors"));
    let quantization_effect = unquantized
        .iter()
        .zip(&quantized)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    let atol = sdbench_diffusion::parity::fixture_tolerance(&fixtures(), "tiny-sd", Precision::F32)
        .unwrap();
    assert!(
        atol < quantization_effect / 4.0,
        "bound {atol} vs Q8_0's effect {quantization_effect}"
    );
    // The UNet's Q8_0 matrices stay in their codes on the device: a byte per weight and an f32
    // scale per 32, not the f32 checkpoint's four bytes.
    let quantized = load_checkpoint(&formats().join("tiny-sd.ldm.q8_0.gguf")).unwrap();
    let plain = load_checkpoint(&fixtures().join("tiny-sd.ldm.safetensors")).unwrap();
    let (q, f) = (
        quantized.denoiser_weight_bytes(),
        plain.denoiser_weight_bytes(),
    );
    let file = TensorFile::open(&formats().join("tiny-sd.ldm.q8_0.gguf")).unwrap();
    let q8_weights: u64 = file
        .names()
        .filter(|n| n.starts_with("model.diffusion_model."))
        .filter_map(|n| {
            let entry = file.entry(n).unwrap();
            (entry.dtype == StDtype::Ggml(GgmlType::Q8_0))
                .then(|| entry.shape.iter().product::<usize>() as u64)
        })
        .sum();
    assert!(q8_weights > 0, "the fixture has Q8_0 matrices");
    // Each Q8_0 weight: 4 bytes in f32, 1 + 4/32 kept in codes.
    assert_eq!(f - q, q8_weights * 4 - q8_weights * 9 / 8, "{f} vs {q}");

    // The memory estimate reads the same from the file's header, before loading.
    let size = |file: PathBuf| {
        let source = ModelSource::Checkpoint {
            file,
            config: Some(fixtures().join("tiny-sd")),
            parts: Default::default(),
        };
        Pipeline::model_size(&source, Precision::F32).unwrap().0
    };
    let kept = size(formats().join("tiny-sd.ldm.q8_0.gguf")).denoiser_kept;
    assert_eq!(kept.params, q8_weights);
    assert_eq!(kept.device_bytes, q8_weights * 9 / 8);
    assert_eq!(
        size(fixtures().join("tiny-sd.ldm.safetensors"))
            .denoiser_kept
            .params,
        0
    );
}

/// A GGUF file built by hand: one tensor `w` with ggml type `type_id`, dims `dims` (ggml order),
/// data offset `offset` and `data` bytes after the aligned header.
fn gguf_bytes(type_id: u32, dims: &[u64], offset: u64, data: &[u8]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&1u64.to_le_bytes()); // tensors
    out.extend_from_slice(&0u64.to_le_bytes()); // metadata
    out.extend_from_slice(&1u64.to_le_bytes());
    out.push(b'w');
    out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
    for d in dims {
        out.extend_from_slice(&d.to_le_bytes());
    }
    out.extend_from_slice(&type_id.to_le_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
    out.resize(out.len().div_ceil(32) * 32, 0);
    out.extend_from_slice(data);
    out
}

fn open_err(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    match TensorFile::open(&path) {
        Ok(_) => panic!("{name} should be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broken_gguf_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // The valid base: 32 Q8_0 values.
    let block = [0u8; 34];
    let good = dir.join("good.gguf");
    std::fs::write(&good, gguf_bytes(8, &[32], 0, &block)).unwrap();
    let mut file = TensorFile::open(&good).unwrap();
    assert_eq!(file.read("w").unwrap().to_f32(), vec![0.0; 32]);

    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        (
            "unknown-type.gguf",
            gguf_bytes(99, &[32], 0, &block),
            vec!["unknown ggml type 99"],
        ),
        (
            "iq-type.gguf",
            gguf_bytes(16, &[256], 0, &[0; 256]),
            vec!["IQ type", "does not decode"],
        ),
        (
            "past-the-end.gguf",
            gguf_bytes(8, &[32], 64, &block),
            vec!["`w`", "past the end", "truncated"],
        ),
        (
            "partial-block.gguf",
            gguf_bytes(8, &[48], 0, &[0; 68]),
            vec!["`w`", "whole number of Q8_0 blocks"],
        ),
        (
            // Found by the fuzzer: an empty dimension hid a size that overflows.
            "empty-but-huge.gguf",
            gguf_bytes(0, &[0, 1 << 40, 1 << 40], 0, &[]),
            vec!["`w`", "overflows 64 bits"],
        ),
        (
            "misaligned.gguf",
            gguf_bytes(0, &[4], 4, &[0; 32]),
            vec!["`w`", "not aligned"],
        ),
        (
            "too-many-dims.gguf",
            gguf_bytes(0, &[1, 1, 1, 1, 1], 0, &[0; 4]),
            vec!["`w`", "5 dimensions"],
        ),
        (
            "truncated.gguf",
            gguf_bytes(8, &[32], 0, &block)[..30].to_vec(),
            vec!["truncated"],
        ),
        (
            "not-gguf.gguf",
            b"GGML this is not it".to_vec(),
            vec!["not a GGUF file"],
        ),
        (
            "version-1.gguf",
            [b"GGUF".as_slice(), &1u32.to_le_bytes(), &[0; 16]].concat(),
            vec!["version 1", "versions 2 and 3"],
        ),
    ];
    for (name, bytes, words) in cases {
        let message = open_err(dir, name, &bytes);
        assert_mentions(&message, &[&[name][..], &words[..]].concat());
    }

    // An integer tensor is listed but not read as a weight.
    let ints = dir.join("ints.gguf");
    std::fs::write(&ints, gguf_bytes(26, &[8], 0, &[0; 32])).unwrap();
    let message = TensorFile::open(&ints)
        .unwrap()
        .read("w")
        .err()
        .unwrap()
        .to_string();
    assert_mentions(&message, &["`w`", "I32", "not a weight type"]);
}

#[test]
fn a_truncated_gguf_checkpoint_is_refused_before_loading() {
    let bytes = std::fs::read(formats().join("tiny-sd.ldm.q8_0.gguf")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let message = load_checkpoint(&cut).err().unwrap().to_string();
    assert_mentions(&message, &["cut.gguf", "truncated", "download it again"]);
}

/// ComfyUI's scaled FP8 in Black Forest Labs' names: the fused q/k/v projections and the swapped
/// modulation are taken in parts of a tensor that is scaled as a whole. Every tensor equals
/// diffusers' conversion of the dequantized file bit for bit (an FP8 value times an f32 scale,
/// one rounding, then rows picked).
#[test]
fn a_scaled_fp8_transformer_file_is_scaled_before_it_is_split() {
    use sdbench_diffusion::families::flux2::bfl_names::NAMES;
    use sdbench_diffusion::io::component_file::denoiser_file;
    let mut weights = denoiser_file(
        &formats().join("tiny-flux2-klein.bfl-transformer.fp8.safetensors"),
        &NAMES,
    )
    .unwrap();
    let mut reference = SafeTensors::open(
        &formats().join("tiny-flux2-klein.bfl-transformer.fp8.reference.safetensors"),
    )
    .unwrap();
    let names: Vec<String> = reference.names().map(str::to_string).collect();
    assert!(names.iter().any(|n| n.ends_with("attn.to_k.weight")));
    for name in &names {
        let shape = reference.info(name).unwrap().shape.clone();
        let got = weights.take(name, &shape, Init::Zeros).unwrap().into_f32();
        assert_same_bits(name, &got, &reference.read_f32(name).unwrap());
    }
    // Every scale was used; the activation scales and the marker are not weights.
    weights.finish().unwrap();
}

/// A scaled-FP8 transformer file runs with its weights kept in their codes on the device and
/// dequantized per layer: its images are those of the same values dequantized into an f32 file
/// (diffusers' conversion of the file), on the CPU and on lavapipe, and it holds a byte per
/// weight where the f32 file holds four.
#[test]
fn a_transformer_kept_in_fp8_codes_generates_what_its_dequantized_values_generate() {
    use sdbench_diffusion::{CancelToken, GenerateRequest, LoadOptions};
    let klein = fixtures().join("tiny-flux2-klein");
    // The folder with its transformer replaced by the dequantized file.
    let dir = tempfile::tempdir().unwrap();
    let dequantized = dir.path().join("klein");
    for entry in walk(&klein) {
        let to = dequantized.join(entry.strip_prefix(&klein).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    let mut reference = SafeTensors::open(
        &formats().join("tiny-flux2-klein.bfl-transformer.fp8.reference.safetensors"),
    )
    .unwrap();
    let names: Vec<String> = reference.names().map(str::to_string).collect();
    let tensors: Vec<(String, Vec<usize>, Vec<f32>)> = names
        .iter()
        .map(|n| {
            let shape = reference.info(n).unwrap().shape.clone();
            (n.clone(), shape, reference.read_f32(n).unwrap())
        })
        .collect();
    let refs: Vec<(&str, Vec<usize>, &[f32])> = tensors
        .iter()
        .map(|(n, s, d)| (n.as_str(), s.clone(), d.as_slice()))
        .collect();
    let weights = dequantized.join("transformer/diffusion_pytorch_model.safetensors");
    sdbench_diffusion::io::safetensors::write_f32(&weights, &refs).unwrap();

    let file =
        TensorFile::open(&formats().join("tiny-flux2-klein.bfl-transformer.fp8.safetensors"))
            .unwrap();
    let fp8_weights: u64 = file
        .names()
        .filter_map(|n| file.entry(n))
        .filter(|e| e.dtype == StDtype::F8E4M3 && e.shape.len() == 2)
        .map(|e| e.shape.iter().product::<usize>() as u64)
        .sum();
    assert!(fp8_weights > 10_000, "{fp8_weights}");
    let request = GenerateRequest {
        width: 32,
        height: 48,
        steps: 2,
        ..GenerateRequest::new("a photograph of an astronaut riding a horse")
    };
    let mut devices = vec![select(BackendRequest::Cpu).unwrap()];
    devices.extend(common::vulkan_device());
    for device in devices {
        let name = device.info.name.clone();
        let generate = |source: ModelSource| {
            let pipe = Pipeline::load_with(
                &source,
                device.clone(),
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
            file: formats().join("tiny-flux2-klein.bfl-transformer.fp8.safetensors"),
            config: Some(klein.clone()),
            parts: Default::default(),
        });
        let (plain, plain_bytes) = generate(ModelSource::Folder(dequantized.clone()));
        let atol = sdbench_diffusion::parity::fixture_tolerance(
            &fixtures(),
            "tiny-flux2-klein",
            Precision::F32,
        )
        .unwrap();
        common::assert_close(
            &format!("kept in FP8 codes on {name}"),
            &coded,
            &plain,
            atol,
        );
        // Each FP8 weight saves 3 of its f32 bytes, less its matrix's 257-value table.
        assert!(
            plain_bytes - coded_bytes > 2 * fp8_weights,
            "{name}: {coded_bytes} bytes kept in codes, {plain_bytes} in f32, {fp8_weights} FP8 weights"
        );
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A matrix kept in codes whose working copies (its codes as i32, its values in f32) are larger
/// than one GPU buffer (lavapipe's hold 128 MiB; a FLUX.2 feed-forward matrix's are 151 MB) is
/// dequantized in chunks of rows on the device, to what the CPU gives. Before, a Q4_K klein
/// transformer failed on lavapipe ("cannot hold a 216 MiB tensor in one buffer").
#[test]
fn a_matrix_larger_than_a_gpu_buffer_dequantizes_on_vulkan() {
    let Some(device) = common::vulkan_device() else {
        return;
    };
    let (rows, cols) = (8448, 4096);
    let largest = device.max_buffer_bytes().unwrap_or(128 << 20);
    assert!((rows * cols * 4) as u64 > largest, "{largest}");
    let host = HostBlocks::synthetic(StDtype::Ggml(GgmlType::Q4K), rows, cols).unwrap();
    let cpu = sdbench_diffusion::device::cpu_device();
    let on_gpu = BlockMatrix::<B>::upload(host.clone(), &device.device).dequantize(DType::F16);
    let on_cpu = BlockMatrix::<B>::upload(host, &cpu).dequantize(DType::F16);
    assert_eq!(on_gpu.dims(), [rows, cols]);
    let row = |t: &Tensor<B, 2>, r: usize| -> Vec<f32> {
        t.clone()
            .narrow(0, r, 1)
            .into_data()
            .convert::<f32>()
            .into_vec()
            .unwrap()
    };
    for r in [0, rows / 2, rows - 1] {
        assert_same_bits(&format!("row {r}"), &row(&on_gpu, r), &row(&on_cpu, r));
    }
}
