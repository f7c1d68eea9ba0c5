//! Components kept as files of their own beside a model file (`--text-encoder`, `--vae`), as
//! ComfyUI keeps them: FLUX.2 klein's and Z-Image's text encoder and VAE beside their transformer
//! files, an SD checkpoint's VAE. Each file holds the same values as the fixture folder's
//! component, under the names such files use (the VAEs' original names from
//! `weight-formats/vae-names.json`, which scripts/make_weight_format_fixtures.py checked against
//! diffusers' converter), so a generation must match the folder's bit for bit.

use crate::common;

use std::path::{Path, PathBuf};

use common::{assert_mentions, fixtures};
use sdbench_diffusion::device::select;
use sdbench_diffusion::io::gguf;
use sdbench_diffusion::io::safetensors::{write_f32, SafeTensors, StDtype};
use sdbench_diffusion::{
    BackendRequest, CancelToken, ComponentFiles, GenerateRequest, LoadOptions, ModelSource,
    Pipeline, Precision,
};

use common::Tensors;

/// A file's floating-point tensors, as f32 (integer buffers such as position ids left out).
fn read(path: &Path) -> Tensors {
    let mut file = SafeTensors::open(path).unwrap();
    let names: Vec<String> = file
        .names()
        .filter(|n| !matches!(file.info(n).unwrap().dtype, StDtype::Other(_)))
        .map(String::from)
        .collect();
    names
        .into_iter()
        .map(|n| {
            let shape = file.info(&n).unwrap().shape.clone();
            let values = file.read_f32(&n).unwrap();
            (n, shape, values)
        })
        .collect()
}

/// `tensors` as an F32 file: GGUF (with `general.architecture` `qwen3`, as llama.cpp writes a
/// Qwen3 model) for a `.gguf` path, safetensors otherwise.
fn write(path: &Path, tensors: &Tensors) {
    let refs = common::tensor_refs(tensors);
    match path.extension().is_some_and(|e| e == "gguf") {
        true => gguf::write_f32(path, &[("general.architecture", "qwen3")], &refs).unwrap(),
        false => write_f32(path, &refs).unwrap(),
    }
}

/// Every tensor of a folder component (all its shards).
fn component(folder: &Path) -> Tensors {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    files.sort();
    files.iter().flat_map(|f| read(f)).collect()
}

/// A copy of a fixture folder with no weights in `text_encoder/`, `vae/` and `transformer/`:
/// configs, tokenizer and scheduler only.
fn configs_only(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join(name);
    common::copy_tree(&fixtures().join(name), &folder);
    for sub in ["text_encoder", "vae", "transformer"] {
        for entry in std::fs::read_dir(folder.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.to_string_lossy().contains(".safetensors") {
                std::fs::remove_file(path).unwrap();
            }
        }
    }
    (dir, folder)
}

/// A fixture's VAE under Black Forest Labs' original names and stored shapes.
fn vae_in_original_names(name: &str) -> Tensors {
    let text = std::fs::read_to_string(fixtures().join("weight-formats/vae-names.json")).unwrap();
    let table: serde_json::Value = serde_json::from_str(&text).unwrap();
    let folder = component(&fixtures().join(name).join("vae"));
    let rows = table[name].as_array().unwrap();
    assert!(rows.len() > 100, "{name}: {} names", rows.len());
    rows.iter()
        .map(|row| {
            let original = row[0].as_str().unwrap();
            let diffusers = row[1].as_str().unwrap();
            let shape: Vec<usize> = serde_json::from_value(row[2].clone()).unwrap();
            let (_, _, values) = folder
                .iter()
                .find(|(n, _, _)| n == diffusers)
                .unwrap_or_else(|| panic!("{name}'s VAE has no {diffusers}"));
            (original.to_string(), shape, values.clone())
        })
        .collect()
}

fn load(source: &ModelSource) -> sdbench_diffusion::Result<Pipeline> {
    Pipeline::load_with(
        source,
        select(BackendRequest::Cpu).unwrap(),
        Some(Precision::F32),
        LoadOptions::default(),
    )
}

fn image(pipe: &Pipeline, request: &GenerateRequest) -> Vec<f32> {
    pipe.generate(request, &mut |_| {}, &CancelToken::new())
        .unwrap()
        .images
        .remove(0)
        .float_image
}

fn request(width: usize, height: usize) -> GenerateRequest {
    GenerateRequest {
        width,
        height,
        steps: 2,
        ..GenerateRequest::new("a photograph of an astronaut riding a horse")
    }
}

fn load_error(source: &ModelSource) -> String {
    load(source).err().expect("refused").to_string()
}

/// A transformer file, its text encoder file and its VAE file, with a folder of configs only,
/// generate what the whole folder generates, and the memory estimate counts the same parameters.
fn three_files_match_the_folder(
    name: &str,
    transformer: &str,
    (text_file, text_encoder): (&str, Tensors),
    size: (usize, usize),
) {
    let (dir, configs) = configs_only(name);
    let text_file = dir.path().join(text_file);
    write(&text_file, &text_encoder);
    let vae_file = dir.path().join("vae.safetensors");
    write(&vae_file, &vae_in_original_names(name));
    let transformer = fixtures().join("weight-formats").join(transformer);
    let files = ModelSource::Checkpoint {
        file: transformer.clone(),
        config: Some(configs.clone()),
        parts: ComponentFiles {
            text_encoders: vec![text_file.clone()],
            vae: Some(vae_file.clone()),
        },
    };
    let folder = ModelSource::Folder(fixtures().join(name));

    let (from_files, _) = Pipeline::model_size(&files, Precision::F32).unwrap();
    let (from_folder, _) = Pipeline::model_size(&folder, Precision::F32).unwrap();
    assert_eq!(
        (
            from_files.text_encoder_params,
            from_files.denoiser_params,
            from_files.vae_decoder_params,
            from_files.vae_encoder_params
        ),
        (
            from_folder.text_encoder_params,
            from_folder.denoiser_params,
            from_folder.vae_decoder_params,
            from_folder.vae_encoder_params
        ),
        "{name}: parameters counted from the files and from the folder"
    );

    let pipe = load(&files).unwrap();
    for file in [&transformer, &text_file, &vae_file] {
        assert!(
            pipe.info.weight_files.contains(file),
            "{name}: {} not among {:?}",
            file.display(),
            pipe.info.weight_files
        );
    }
    let request = request(size.0, size.1);
    let expected = image(&load(&folder).unwrap(), &request);
    assert_eq!(
        image(&pipe, &request),
        expected,
        "{name}: the files' image differs from the folder's"
    );

    // The files' components are their own: the configs folder has no weights of them.
    let without_text = ModelSource::Checkpoint {
        file: transformer,
        config: Some(configs),
        parts: ComponentFiles {
            text_encoders: Vec::new(),
            vae: Some(vae_file),
        },
    };
    assert_mentions(
        &load_error(&without_text),
        &["text_encoder", "no weights file"],
    );
}

#[test]
fn flux2_klein_runs_from_comfyui_style_files() {
    // ComfyUI's text encoder files drop the causal LM's `model.` prefix and may keep its head.
    let mut text: Tensors = component(&fixtures().join("tiny-flux2-klein/text_encoder"))
        .into_iter()
        .map(|(n, s, v)| (n.strip_prefix("model.").unwrap_or(&n).to_string(), s, v))
        .collect();
    let embed = text
        .iter()
        .find(|t| t.0 == "embed_tokens.weight")
        .unwrap()
        .clone();
    text.push(("lm_head.weight".into(), embed.1, embed.2));
    three_files_match_the_folder(
        "tiny-flux2-klein",
        "tiny-flux2-klein.bfl-transformer.safetensors",
        ("text_encoder.safetensors", text),
        (32, 48),
    );
}

/// The tiny klein's text encoder under llama.cpp's GGUF names, from
/// `weight-formats/qwen3-llama-cpp-names.json` (gguf-py's tensor map, checked by
/// scripts/make_weight_format_fixtures.py through transformers' GGUF reader).
fn klein_text_encoder_in_llama_cpp_names() -> Tensors {
    let path = fixtures().join("weight-formats/qwen3-llama-cpp-names.json");
    let table: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(table["architecture"], "qwen3");
    let folder = component(&fixtures().join("tiny-flux2-klein/text_encoder"));
    let rows = table["names"].as_array().unwrap();
    assert_eq!(rows.len(), folder.len());
    rows.iter()
        .map(|row| {
            let (llama_cpp, transformers) = (row[0].as_str().unwrap(), row[1].as_str().unwrap());
            let (_, shape, values) = folder.iter().find(|t| t.0 == transformers).unwrap();
            (llama_cpp.to_string(), shape.clone(), values.clone())
        })
        .collect()
}

#[test]
fn flux2_klein_runs_from_a_text_encoder_gguf_in_llama_cpp_names() {
    three_files_match_the_folder(
        "tiny-flux2-klein",
        "tiny-flux2-klein.bfl-transformer.safetensors",
        ("text_encoder.gguf", klein_text_encoder_in_llama_cpp_names()),
        (32, 48),
    );
}

/// A llama.cpp GGUF of another architecture, or with a tensor a Qwen3 model does not have, is
/// refused by name before anything loads.
#[test]
fn a_llama_cpp_gguf_of_another_model_is_refused_by_name() {
    let (dir, configs) = configs_only("tiny-flux2-klein");
    let text = klein_text_encoder_in_llama_cpp_names();
    let source = |text_file: &Path| ModelSource::Checkpoint {
        file: fixtures().join("weight-formats/tiny-flux2-klein.bfl-transformer.safetensors"),
        config: Some(configs.clone()),
        parts: ComponentFiles {
            text_encoders: vec![text_file.to_path_buf()],
            vae: None,
        },
    };
    let llama = dir.path().join("llama.gguf");
    let slices = common::tensor_refs(&text);
    gguf::write_f32(&llama, &[("general.architecture", "llama")], &slices).unwrap();
    assert_mentions(
        &load_error(&source(&llama)),
        &[
            "llama.gguf",
            "`llama`",
            "not a Qwen3 text encoder",
            "`qwen3`",
        ],
    );

    let mut extra = text;
    extra.push(("blk.0.attn_qkv.weight".into(), vec![2, 2], vec![0.0; 4]));
    let fused = dir.path().join("fused.gguf");
    write(&fused, &extra);
    assert_mentions(
        &load_error(&source(&fused)),
        &["fused.gguf", "blk.0.attn_qkv.weight", "llama.cpp's names"],
    );
}

#[test]
fn zimage_runs_from_comfyui_style_files() {
    // The bare Qwen3 model's tensors, stored under `model.` as a causal LM's would be.
    let text: Tensors = component(&fixtures().join("tiny-zimage/text_encoder"))
        .into_iter()
        .map(|(n, s, v)| (format!("model.{n}"), s, v))
        .collect();
    three_files_match_the_folder(
        "tiny-zimage",
        "tiny-zimage.original-transformer.safetensors",
        ("text_encoder.safetensors", text),
        (32, 32),
    );
}

/// An SD checkpoint kept without its VAE runs with `--vae` naming one (original names, as cut
/// from a checkpoint): the same image as the whole checkpoint. Without it, the refusal says so.
#[test]
fn an_sd_checkpoint_takes_its_vae_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let whole = fixtures().join("tiny-sd.ldm.safetensors");
    let config = Some(fixtures().join("tiny-sd"));
    let (vae, rest): (Tensors, Tensors) = read(&whole)
        .into_iter()
        .partition(|t| t.0.starts_with("first_stage_model."));
    let bare = dir.path().join("no-vae.safetensors");
    write(&bare, &rest);
    let vae_file = dir.path().join("vae.safetensors");
    let vae: Tensors = vae
        .into_iter()
        .map(|(n, s, v)| (n["first_stage_model.".len()..].to_string(), s, v))
        .collect();
    write(&vae_file, &vae);
    let checkpoint = |file: &Path, parts: ComponentFiles| ModelSource::Checkpoint {
        file: file.to_path_buf(),
        config: config.clone(),
        parts,
    };
    let with_vae = ComponentFiles {
        text_encoders: Vec::new(),
        vae: Some(vae_file.clone()),
    };

    let request = request(32, 32);
    let expected = image(
        &load(&checkpoint(&whole, Default::default())).unwrap(),
        &request,
    );
    let pipe = load(&checkpoint(&bare, with_vae.clone())).unwrap();
    assert!(pipe.info.weight_files.contains(&vae_file));
    assert_eq!(image(&pipe, &request), expected);
    // It also replaces a checkpoint's own VAE.
    let replaced = load(&checkpoint(&whole, with_vae)).unwrap();
    assert_eq!(image(&replaced, &request), expected);

    assert_mentions(
        &load_error(&checkpoint(&bare, Default::default())),
        &["no VAE tensors", "--vae"],
    );
    // A VAE file in diffusers' names reads too.
    let diffusers_vae = ComponentFiles {
        text_encoders: Vec::new(),
        vae: Some(fixtures().join("tiny-sd/vae/diffusion_pytorch_model.safetensors")),
    };
    load(&checkpoint(&bare, diffusers_vae)).unwrap();
    // SD checkpoints hold their text encoders.
    let text = ComponentFiles {
        text_encoders: vec![vae_file],
        vae: None,
    };
    assert_mentions(
        &load_error(&checkpoint(&whole, text)),
        &["--text-encoder", "holds its own text encoders"],
    );
}

/// A component file of the wrong kind, of another VAE's layout, or in llama.cpp's names is
/// refused by name before anything loads.
#[test]
fn a_wrong_component_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let klein = fixtures().join("tiny-flux2-klein");
    let transformer =
        fixtures().join("weight-formats/tiny-flux2-klein.bfl-transformer.safetensors");
    let vae_file = dir.path().join("vae.safetensors");
    write(&vae_file, &vae_in_original_names("tiny-flux2-klein"));
    let text_file = dir.path().join("text.safetensors");
    write(
        &text_file,
        &component(&klein.join("text_encoder"))
            .into_iter()
            .take(3)
            .collect(),
    );
    let with = |text_encoder: Option<&Path>, vae: Option<&Path>| ModelSource::Checkpoint {
        file: transformer.clone(),
        config: Some(klein.clone()),
        parts: ComponentFiles {
            text_encoders: text_encoder.map(Path::to_path_buf).into_iter().collect(),
            vae: vae.map(Path::to_path_buf),
        },
    };
    assert_mentions(
        &load_error(&with(None, Some(&text_file))),
        &["text.safetensors", "is not a VAE"],
    );
    assert_mentions(
        &load_error(&with(Some(&vae_file), None)),
        &[
            "vae.safetensors",
            "is not a Qwen3 text encoder",
            "embed_tokens.weight",
        ],
    );

    // llama.cpp's names are read, and a tensor of the wrong shape is named with the one needed.
    let llama_cpp = dir.path().join("qwen3.safetensors");
    write(
        &llama_cpp,
        &vec![("token_embd.weight".into(), vec![2, 2], vec![0.0; 4])],
    );
    assert_mentions(
        &load_error(&with(Some(&llama_cpp), None)),
        &[
            "qwen3.safetensors",
            "token_embd.weight",
            "[2, 2]",
            "[425, 32]",
        ],
    );

    // A block the configs' VAE does not have.
    let mut deeper = vae_in_original_names("tiny-flux2-klein");
    deeper.push((
        "decoder.up.7.block.0.conv1.bias".into(),
        vec![2],
        vec![0.0; 2],
    ));
    write(&vae_file, &deeper);
    assert_mentions(
        &load_error(&with(None, Some(&vae_file))),
        &[
            "decoder.up.7.block.0.conv1.bias",
            "no counterpart in a VAE of 3 blocks",
        ],
    );
    // A tensor the VAE does not know.
    let mut extra = vae_in_original_names("tiny-flux2-klein");
    extra.push(("decoder.surprise.weight".into(), vec![2], vec![0.0; 2]));
    write(&vae_file, &extra);
    assert_mentions(
        &load_error(&with(None, Some(&vae_file))),
        &["decoder.surprise.weight"],
    );
}
