//! Stable Diffusion 3 as people keep it in files: Stability AI's single file (the MMDiT under
//! `model.diffusion_model.` in its own names, which scripts/make_weight_format_fixtures.py checked
//! against diffusers' converter, with the VAE and the CLIPs inside) and ComfyUI's text encoder files
//! (`clip_l`, `clip_g`, `t5xxl`), read with a folder of configs and tokenizers alone: the same
//! weights as the tiny pipeline's folder, so diffusers' images within the same bounds. Each text
//! encoder file's role is found from its names and widths, in any order; what cannot be told
//! apart, or is missing, is refused by name.

use std::path::{Path, PathBuf};

use crate::common;
use common::{read_tensors as read, tensor_refs, write_tensors as write};

use sdbench_diffusion::device::select;
use sdbench_diffusion::io::gguf;
use sdbench_diffusion::{
    parity, BackendRequest, ComponentFiles, Family, LoadOptions, ModelSource, Pipeline, Precision,
};

const NAME: &str = "tiny-sd3";

fn folder() -> PathBuf {
    common::fixtures().join(NAME)
}

/// The committed MMDiT in Stability's names.
fn mmdit() -> PathBuf {
    common::fixtures().join("weight-formats/tiny-sd3.original-mmdit.safetensors")
}

/// The folder's configs and tokenizers without any weights (what sdbench fetches for a file).
fn configs_only(to: &Path) -> PathBuf {
    let configs = to.join("configs");
    common::copy_tree(&folder(), &configs);
    for entry in walk(&configs) {
        if entry.extension().is_some_and(|e| e == "safetensors") {
            std::fs::remove_file(entry).unwrap();
        }
    }
    configs
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true => files.extend(walk(&path)),
            false => files.push(path),
        }
    }
    files
}

/// The folder's weights of `component`, copied as a file of its own named `name`.
fn component_file(dir: &Path, component: &str, name: &str) -> PathBuf {
    let stem = match component {
        "vae" => "diffusion_pytorch_model",
        _ => "model",
    };
    let path = dir.join(name);
    std::fs::copy(
        folder().join(component).join(format!("{stem}.safetensors")),
        &path,
    )
    .unwrap();
    path
}

/// The folder's CLIP-L, CLIP-G and VAE as ComfyUI's files of their own.
fn clips_and_vae(dir: &Path) -> [PathBuf; 3] {
    [
        component_file(dir, "text_encoder", "clip_l.safetensors"),
        component_file(dir, "text_encoder_2", "clip_g.safetensors"),
        component_file(dir, "vae", "sd3_vae.safetensors"),
    ]
}

fn checkpoint(file: &Path, config: &Path, parts: ComponentFiles) -> ModelSource {
    ModelSource::Checkpoint {
        file: file.to_path_buf(),
        config: Some(config.to_path_buf()),
        parts,
    }
}

fn load(source: &ModelSource) -> sdbench_diffusion::Result<Pipeline> {
    let cpu = select(BackendRequest::Cpu).unwrap();
    Pipeline::load_with(source, cpu, Some(Precision::F32), LoadOptions::default())
}

fn assert_generates(pipe: &Pipeline, only: &[&str]) {
    let diffs = parity::generations(pipe, &common::fixtures(), NAME, Some(only)).unwrap();
    assert_eq!(diffs.len(), only.len());
    common::assert_generations_within(NAME, Precision::F32, &diffs);
}

/// A whole single file (the MMDiT, the VAE under `first_stage_model.`, CLIP-L and CLIP-G under
/// `text_encoders.*.transformer.`) with T5 as a file of its own, read with configs alone.
#[test]
fn a_single_file_generates_what_diffusers_generates() {
    let dir = tempfile::tempdir().unwrap();
    let configs = configs_only(dir.path());
    let mut whole = read(&mmdit(), "");
    let weights = |component: &str, stem: &str| folder().join(component).join(stem);
    whole.extend(read(
        &weights("text_encoder", "model.safetensors"),
        "text_encoders.clip_l.transformer.",
    ));
    whole.extend(read(
        &weights("text_encoder_2", "model.safetensors"),
        "text_encoders.clip_g.transformer.",
    ));
    whole.extend(read(
        &weights("vae", "diffusion_pytorch_model.safetensors"),
        "first_stage_model.",
    ));
    let file = dir.path().join("sd3.5_tiny.safetensors");
    write(&file, &whole);
    let t5 = component_file(dir.path(), "text_encoder_3", "t5xxl_fp16.safetensors");
    let parts = ComponentFiles {
        text_encoders: vec![t5.clone()],
        vae: None,
    };
    let pipe = load(&checkpoint(&file, &configs, parts)).unwrap();
    assert_eq!(pipe.info.family.descriptor().name, "Stable Diffusion 3");
    assert_eq!(pipe.info.weight_files, [file.clone(), t5]);
    assert_generates(&pipe, &["generate.cfg_square3", "generate.long2"]);

    // Without T5's file, the configs' T5 has no weights: named, and how to give them.
    let err = load(&checkpoint(&file, &configs, ComponentFiles::default()))
        .err()
        .expect("refused")
        .to_string();
    common::assert_mentions(
        &err,
        &["no weights for the T5-XXL encoder", "--text-encoder"],
    );
}

/// The MMDiT alone with ComfyUI's text encoder files in every order and the VAE as a file: each
/// file's role is found from its names and widths.
#[test]
fn text_encoder_files_are_matched_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let configs = configs_only(dir.path());
    let [l, g, vae] = clips_and_vae(dir.path());
    let t5 = component_file(dir.path(), "text_encoder_3", "t5xxl_fp16.safetensors");
    let with = |text_encoders: &[&PathBuf]| ComponentFiles {
        text_encoders: text_encoders.iter().map(|p| p.to_path_buf()).collect(),
        vae: Some(vae.clone()),
    };
    for (i, order) in [[&t5, &g, &l], [&g, &l, &t5]].into_iter().enumerate() {
        let pipe = load(&checkpoint(&mmdit(), &configs, with(&order))).unwrap();
        assert_eq!(pipe.info.family, Family::SD35_MEDIUM);
        let only: &[&str] = match i {
            0 => &["generate.cfg_negative_tall2"],
            _ => &["generate.square2"],
        };
        assert_generates(&pipe, only);
    }

    let refused = |text_encoders: &[&PathBuf]| {
        load(&checkpoint(&mmdit(), &configs, with(text_encoders)))
            .err()
            .expect("refused")
            .to_string()
    };
    // Two files of one role, a file of none, a component left without weights.
    let g_again = dir.path().join("clip_g_copy.safetensors");
    std::fs::copy(&g, &g_again).unwrap();
    let err = refused(&[&l, &g, &g_again, &t5]);
    common::assert_mentions(&err, &["clip_g_copy.safetensors", "both hold the CLIP-G"]);
    let err = refused(&[&l, &vae]);
    common::assert_mentions(&err, &["sd3_vae.safetensors", "none of the components"]);
    let err = refused(&[&l, &t5]);
    common::assert_mentions(&err, &["no weights for the CLIP-G", "--text-encoder"]);
}

/// A single file without its configs is claimed by its family, which says its sizes are no
/// built-in model's and what to add; the fixture's own sizes are read from its tensors.
#[test]
fn a_single_file_without_configs_asks_for_them() {
    let source = ModelSource::Checkpoint {
        file: mmdit(),
        config: None,
        parts: ComponentFiles::default(),
    };
    let err = load(&source).err().expect("refused").to_string();
    common::assert_mentions(
        &err,
        &[
            "Stable Diffusion 3 MMDiT of 3 joint blocks of width 16",
            "--model-config",
        ],
    );
}

/// The tiny T5 under llama.cpp's GGUF names (`weight-formats/t5-llama-cpp-names.json`: gguf-py's
/// tensor map, checked by scripts/make_weight_format_fixtures.py through transformers' GGUF
/// reader), written as a GGUF of architecture `arch`.
fn t5_gguf(path: &Path, arch: &str) {
    let table = common::fixtures().join("weight-formats/t5-llama-cpp-names.json");
    let table: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(table).unwrap()).unwrap();
    assert_eq!(table["architecture"], "t5encoder");
    let t5 = read(&folder().join("text_encoder_3/model.safetensors"), "");
    let rows = table["names"].as_array().unwrap();
    assert_eq!(rows.len(), t5.len());
    let tensors: common::Tensors = rows
        .iter()
        .map(|row| {
            let (llama_cpp, transformers) = (row[0].as_str().unwrap(), row[1].as_str().unwrap());
            let (_, shape, values) = t5.iter().find(|t| t.0 == transformers).unwrap();
            (llama_cpp.to_string(), shape.clone(), values.clone())
        })
        .collect();
    gguf::write_f32(
        path,
        &[("general.architecture", arch)],
        &tensor_refs(&tensors),
    )
    .unwrap();
}

/// T5 as a GGUF in llama.cpp's names (city96's t5-v1_1-xxl-encoder-gguf kind) is found as SD3's
/// T5 and gives diffusers' images; a llama.cpp GGUF of another architecture is refused by name.
#[test]
fn a_t5_gguf_in_llama_cpp_names_generates_what_diffusers_generates() {
    let dir = tempfile::tempdir().unwrap();
    let configs = configs_only(dir.path());
    let [l, g, vae] = clips_and_vae(dir.path());
    let t5 = dir.path().join("t5-v1_1-xxl-encoder-Q8_0.gguf");
    t5_gguf(&t5, "t5encoder");
    let parts = |t5: &Path| ComponentFiles {
        text_encoders: vec![t5.to_path_buf(), g.clone(), l.clone()],
        vae: Some(vae.clone()),
    };
    let pipe = load(&checkpoint(&mmdit(), &configs, parts(&t5))).unwrap();
    assert!(
        pipe.info.weight_files.contains(&t5),
        "{:?}",
        pipe.info.weight_files
    );
    assert_generates(&pipe, &["generate.long2"]);

    let other = dir.path().join("t5-as-llama.gguf");
    t5_gguf(&other, "llama");
    let err = load(&checkpoint(&mmdit(), &configs, parts(&other)))
        .err()
        .expect("refused")
        .to_string();
    // The refusal names what the file holds: its architecture and its tensors.
    common::assert_mentions(
        &err,
        &[
            "t5-as-llama.gguf",
            "none of the components",
            "general.architecture is \"llama\"",
            "under enc.blk",
        ],
    );
}

/// T5 in ComfyUI's scaled FP8 (`t5xxl_fp8_e4m3fn_scaled.safetensors`), found as SD3's T5 by its
/// names and widths whatever its element types, gives the images of its values dequantized into
/// an f32 file (an FP8 value times its f32 scale), within the fixture's bounds.
#[test]
fn a_scaled_fp8_t5_file_generates_what_its_dequantized_values_generate() {
    use sdbench_diffusion::{CancelToken, GenerateRequest};
    let dir = tempfile::tempdir().unwrap();
    let configs = configs_only(dir.path());
    let formats = common::fixtures().join("weight-formats");
    let fp8 = formats.join("tiny-sd3.t5xxl_fp8_e4m3fn_scaled.safetensors");
    let dequantized = formats.join("tiny-sd3.t5xxl_fp8_e4m3fn_scaled.reference.safetensors");
    let [l, g, vae] = clips_and_vae(dir.path());
    let request = GenerateRequest {
        width: 32,
        height: 48,
        steps: 2,
        guidance_scale: 4.5,
        ..GenerateRequest::new("a photograph of an astronaut riding a horse")
    };
    let generate = |t5: &Path| {
        let parts = ComponentFiles {
            text_encoders: vec![l.clone(), t5.to_path_buf(), g.clone()],
            vae: Some(vae.clone()),
        };
        load(&checkpoint(&mmdit(), &configs, parts))
            .unwrap()
            .generate(&request, &mut |_| {}, &CancelToken::new())
            .unwrap()
            .images
            .remove(0)
            .float_image
    };
    let (coded, plain) = (generate(&fp8), generate(&dequantized));
    let atol = parity::fixture_tolerance(&common::fixtures(), NAME, Precision::F32).unwrap();
    common::assert_close("T5 in scaled FP8", &coded, &plain, atol);
    // The FP8 values differ from the folder's: the comparison is not of equal weights.
    let original = generate(&folder().join("text_encoder_3/model.safetensors"));
    let (worst, _) = common::max_abs_diff(&coded, &original);
    assert!(
        worst > atol,
        "FP8's rounding left the image unchanged ({worst})"
    );
}
