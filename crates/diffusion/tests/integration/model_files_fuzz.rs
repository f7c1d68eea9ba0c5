//! Model folders and files from strangers, beyond the containers `parsers_fuzz` covers: the JSON
//! files of a model folder (configs, `model_index.json`, scheduler configs, shard indexes,
//! tokenizer files), CLIP's merges and Qwen's chat template, and the tensor names of single-file
//! checkpoints and transformer files (the key maps). Each fixture folder and file is the seed;
//! a JSON file is mutated by its structure (a value set to an edge value such as 0, -1, 2^64 or
//! 1e300, a key or element dropped, an array grown), text by bytes, a name by its dot-separated
//! segments. Every input goes through what SD Bench does with such a folder or file before it
//! reads weights (`Pipeline::model_size`: the family registry, every config, the shard indexes
//! and tensor headers), the tokenizers and a prompt's encoding, and, for the first few inputs
//! that pass that, the whole load on the CPU. The answer must be a value or an error: never a
//! panic, an overflow or an allocation the input's sizes do not justify.
//!
//! Bounded like `parsers_fuzz` (`FUZZ_SECONDS`, `FUZZ_INPUTS`, `FUZZ_SEED`), plus `FUZZ_LOADS`
//! (whole loads per test, default 4).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use crate::common::{copy_tree, fixtures};
use crate::fuzz_checks;
use crate::parsers_fuzz::{budget, Mutator};
use sdbench_diffusion::device::select;
use sdbench_diffusion::io::safetensors::SafeTensors;
use sdbench_diffusion::models::qwen3::prompt::QwenPrompt;
use sdbench_diffusion::{BackendRequest, ModelSource, Pipeline, Precision};

fn edge_value(m: &mut Mutator) -> Value {
    let edges = [
        json!(0),
        json!(-1),
        json!(1),
        json!(2),
        json!(3),
        json!(7),
        json!(65535),
        json!(1u64 << 31),
        json!(1u64 << 32),
        json!(1u64 << 53),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e300),
        json!(-1e300),
        json!(0.5),
        json!(1e-300),
        json!(""),
        json!("x"),
        json!("float16"),
        Value::Null,
        json!(true),
        json!([]),
        json!({}),
        json!([0]),
        json!([1, 1, 1, 1, 1, 1, 1, 1, 1]),
    ];
    edges[m.below(edges.len())].clone()
}

/// JSON pointers to every value in `v`.
fn nodes(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (key, x) in map {
                nodes(
                    x,
                    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                nodes(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// One to three structural mutations of a JSON document.
fn mutate_json(m: &mut Mutator, seed: &Value) -> Value {
    let mut v = seed.clone();
    for _ in 0..1 + m.below(3) {
        let mut all = Vec::new();
        nodes(&v, String::new(), &mut all);
        let at = all[m.below(all.len())].clone();
        match (m.below(4), at.rsplit_once('/')) {
            (2, Some((parent, key))) => {
                let key = key.replace("~1", "/").replace("~0", "~");
                match v.pointer_mut(parent) {
                    Some(Value::Object(map)) => {
                        map.remove(&key);
                    }
                    Some(Value::Array(items)) => {
                        if let Ok(i) = key.parse::<usize>() {
                            if i < items.len() {
                                items.remove(i);
                            }
                        }
                    }
                    _ => {}
                }
            }
            (3, _) => {
                if let Some(Value::Array(items)) = v.pointer_mut(&at) {
                    if let Some(first) = items.first().cloned() {
                        let n = 1 + m.below(3);
                        items.extend(std::iter::repeat_n(first, n));
                    }
                }
            }
            _ => {
                if let Some(x) = v.pointer_mut(&at) {
                    *x = edge_value(m);
                }
            }
        }
    }
    v
}

/// Files under `dir` (relative) whose names end with one of `endings`.
fn files_ending(dir: &Path, endings: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if endings.iter().any(|e| path.to_string_lossy().ends_with(e)) {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// What SD Bench does with a model folder before and while loading it; true when it is accepted.
fn use_folder(folder: &Path, loads_left: &mut usize) -> bool {
    fuzz_checks::tokenizer_folder(&folder.join("tokenizer"));
    let source = ModelSource::Folder(folder.to_path_buf());
    let accepted = Pipeline::model_size(&source, Precision::F32).is_ok();
    if accepted && *loads_left > 0 {
        *loads_left -= 1;
        let device = select(BackendRequest::Cpu).unwrap();
        let _ = Pipeline::load(&source, device, Some(Precision::F32));
    }
    accepted
}

fn loads_budget() -> usize {
    std::env::var("FUZZ_LOADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
}

/// Mutates one file of a copy of the fixture folder `name` at a time (JSON by structure, text by
/// bytes), uses the folder, and puts the file back.
fn fuzz_folder(name: &str) {
    let (time, inputs, seed) = budget();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join(name);
    copy_tree(&fixtures().join(name), &folder);
    let files = files_ending(&folder, &[".json", ".txt", ".jinja"]);
    assert!(files.len() >= 5, "{name}: {files:?}");
    let originals: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(folder.join(f)).unwrap())
        .collect();
    let mut loads_left = loads_budget();
    assert!(
        use_folder(&folder, &mut loads_left),
        "{name}: the unchanged folder is refused"
    );
    let mut m = Mutator(seed);
    let started = Instant::now();
    let (mut tried, mut accepted) = (0usize, 0usize);
    while tried < inputs && started.elapsed() < time {
        let i = m.below(files.len());
        let path = folder.join(&files[i]);
        let mutated = match serde_json::from_slice::<Value>(&originals[i]) {
            Ok(doc) => serde_json::to_vec(&mutate_json(&mut m, &doc)).unwrap(),
            Err(_) => m.mutate(&originals[i]),
        };
        std::fs::write(&path, &mutated).unwrap();
        accepted += use_folder(&folder, &mut loads_left) as usize;
        std::fs::write(&path, &originals[i]).unwrap();
        tried += 1;
    }
    eprintln!(
        "{name} folder files: {tried} inputs in {:.1} s, {accepted} accepted, {} loads, no panic",
        started.elapsed().as_secs_f64(),
        loads_budget() - loads_left
    );
    assert!(tried > 0 && accepted < tried);
}

#[test]
fn sd_folders_from_strangers() {
    fuzz_folder("tiny-sd");
    fuzz_folder("tiny-sdxl");
}

#[test]
fn flux2_folders_from_strangers() {
    fuzz_folder("tiny-flux2-klein");
}

#[test]
fn zimage_folders_from_strangers() {
    fuzz_folder("tiny-zimage");
}

/// A file's tensors: name, stored type, shape.
type Tensors = Vec<(String, String, Vec<usize>)>;

/// A safetensors file with these tensors; the data are zeros (a sparse file).
fn write_tensor_file(path: &Path, tensors: &Tensors) {
    let size_of = |dtype: &str| match dtype {
        "F64" | "I64" | "U64" => 8,
        "F32" | "I32" | "U32" => 4,
        "F16" | "BF16" | "I16" | "U16" => 2,
        _ => 1,
    };
    let mut header = serde_json::Map::new();
    let mut offset = 0u64;
    for (name, dtype, shape) in tensors {
        let bytes = shape.iter().product::<usize>() as u64 * size_of(dtype);
        header.insert(
            name.clone(),
            json!({"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + bytes]}),
        );
        offset += bytes;
    }
    let text = serde_json::to_vec(&Value::Object(header)).unwrap();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    let file = std::fs::File::create(path).unwrap();
    use std::io::Write;
    (&file).write_all(&out).unwrap();
    file.set_len(out.len() as u64 + offset).unwrap();
}

/// A tensor name mutated by its dot-separated segments.
fn mutate_name(m: &mut Mutator, name: &str, others: &[String]) -> String {
    let mut parts: Vec<String> = name.split('.').map(str::to_string).collect();
    let at = m.below(parts.len());
    const NUMBERS: [&str; 8] = [
        "0",
        "1",
        "99",
        "-1",
        "4294967296",
        "18446744073709551615",
        "18446744073709551616",
        "",
    ];
    match m.below(6) {
        0 => parts[at] = NUMBERS[m.below(NUMBERS.len())].to_string(),
        1 if parts.len() > 1 => {
            parts.remove(at);
        }
        2 => {
            let copy = parts[at].clone();
            parts.insert(at, copy);
        }
        3 => {
            let other = &others[m.below(others.len())];
            let segments: Vec<&str> = other.split('.').collect();
            parts[at] = segments[m.below(segments.len())].to_string();
        }
        4 => return others[m.below(others.len())].clone(),
        _ => parts.push("weight".into()),
    }
    parts.join(".")
}

/// A tensor shape a stranger's header might give: none (a scalar), one small dimension, or two.
fn stranger_shape(m: &mut Mutator) -> Vec<usize> {
    match m.below(3) {
        0 => vec![],
        1 => vec![1 + m.below(64)],
        _ => vec![1 + m.below(64), 1 + m.below(64)],
    }
}

/// The tensor names (and some shapes) of single files and transformer files (the engine's key
/// maps), mutated, in header-only files, read with and without the configs of the folder they
/// belong to.
#[test]
fn checkpoint_names_from_strangers() {
    let dir = fixtures();
    let cases = [
        ("tiny-sd.ldm.safetensors", "tiny-sd"),
        ("tiny-sd2.ldm.safetensors", "tiny-sd2"),
        ("tiny-sdxl.ldm.safetensors", "tiny-sdxl"),
        (
            "weight-formats/tiny-flux2-klein.bfl-transformer.safetensors",
            "tiny-flux2-klein",
        ),
        (
            "weight-formats/tiny-zimage.original-transformer.safetensors",
            "tiny-zimage",
        ),
    ];
    let seeds: Vec<(Tensors, PathBuf)> = cases
        .iter()
        .map(|(file, folder)| {
            let st = SafeTensors::open(&dir.join(file)).unwrap();
            let mut tensors: Vec<_> = st
                .names()
                .map(|n| {
                    let info = st.info(n).unwrap();
                    (
                        n.to_string(),
                        info.dtype.name().to_string(),
                        info.shape.clone(),
                    )
                })
                .collect();
            tensors.sort();
            (tensors, dir.join(folder))
        })
        .collect();
    let all_names: Vec<String> = seeds
        .iter()
        .flat_map(|(t, _)| t.iter().map(|(n, _, _)| n.clone()))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("names.safetensors");
    let read = |config: Option<&Path>| {
        let source = ModelSource::Checkpoint {
            file: path.clone(),
            config: config.map(Path::to_path_buf),
            parts: Default::default(),
        };
        Pipeline::model_size(&source, Precision::F32).is_ok()
    };
    for (tensors, folder) in &seeds {
        write_tensor_file(&path, tensors);
        assert!(
            read(Some(folder)),
            "{}: the seed is refused",
            folder.display()
        );
    }
    let (time, inputs, seed) = budget();
    let mut m = Mutator(seed);
    let started = Instant::now();
    let (mut tried, mut accepted) = (0usize, 0usize);
    while tried < inputs && started.elapsed() < time {
        let (tensors, folder) = &seeds[m.below(seeds.len())];
        let mut tensors = tensors.clone();
        for _ in 0..1 + m.below(3) {
            let i = m.below(tensors.len());
            match m.below(8) {
                0 => {
                    tensors.remove(i);
                }
                1 => {
                    let mut copy = tensors[i].clone();
                    copy.0 = mutate_name(&mut m, &copy.0, &all_names);
                    tensors.push(copy);
                }
                2 => tensors[i].2 = stranger_shape(&mut m),
                _ => tensors[i].0 = mutate_name(&mut m, &tensors[i].0, &all_names),
            }
        }
        tensors.sort();
        tensors.dedup_by(|a, b| a.0 == b.0);
        write_tensor_file(&path, &tensors);
        accepted += read(Some(folder)) as usize;
        // As a transformer file given alone: the preset its shapes would fetch configs for.
        let _ = sdbench_diffusion::preset_for_denoiser_file(&path);
        // Without configs, as a file alone (the presets' checks; slower: SD1.5's tokenizer is built).
        if tried % 8 == 0 {
            read(None);
        }
        tried += 1;
    }
    eprintln!(
        "checkpoint and transformer-file names: {tried} inputs in {:.1} s, {accepted} accepted, no panic",
        started.elapsed().as_secs_f64()
    );
    assert!(tried > 0 && accepted > 0 && accepted < tried);
}

/// The tensor names and shapes of text encoder and VAE files given apart (`--text-encoder`,
/// `--vae`: the tiny klein's Qwen3 without `model.` and in llama.cpp's names, its VAE in Black
/// Forest Labs' names), mutated, in header-only files, read beside the klein transformer file and
/// its folder.
#[test]
fn component_file_names_from_strangers() {
    let dir = fixtures();
    let klein = dir.join("tiny-flux2-klein");
    let mut text: Tensors = Vec::new();
    for entry in std::fs::read_dir(klein.join("text_encoder")).unwrap() {
        let file = entry.unwrap().path();
        if !file.to_string_lossy().ends_with(".safetensors") {
            continue;
        }
        let st = SafeTensors::open(&file).unwrap();
        for n in st.names() {
            let info = st.info(n).unwrap();
            let name = n.strip_prefix("model.").unwrap_or(n).to_string();
            text.push((name, info.dtype.name().to_string(), info.shape.clone()));
        }
    }
    let table: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("weight-formats/vae-names.json")).unwrap(),
    )
    .unwrap();
    let vae: Tensors = table["tiny-flux2-klein"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let shape = serde_json::from_value(row[2].clone()).unwrap();
            (
                row[0].as_str().unwrap().to_string(),
                "F32".to_string(),
                shape,
            )
        })
        .collect();
    // The same text encoder in llama.cpp's GGUF names (`token_embd.weight`, `blk.N.`).
    let llama_cpp_names: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("weight-formats/qwen3-llama-cpp-names.json")).unwrap(),
    )
    .unwrap();
    let llama_cpp: Tensors = llama_cpp_names["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let transformers = row[1].as_str().unwrap();
            let bare = transformers.strip_prefix("model.").unwrap_or(transformers);
            let (_, dtype, shape) = text.iter().find(|t| t.0 == bare).unwrap().clone();
            (row[0].as_str().unwrap().to_string(), dtype, shape)
        })
        .collect();
    let seeds = [(text, true), (llama_cpp, true), (vae, false)];
    let all_names: Vec<String> = seeds
        .iter()
        .flat_map(|(t, _)| t.iter().map(|(n, _, _)| n.clone()))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("part.safetensors");
    let transformer = dir.join("weight-formats/tiny-flux2-klein.bfl-transformer.safetensors");
    let read = |is_text: bool| {
        let part = Some(path.clone());
        let parts = match is_text {
            true => sdbench_diffusion::ComponentFiles {
                text_encoders: part.into_iter().collect(),
                vae: None,
            },
            false => sdbench_diffusion::ComponentFiles {
                text_encoders: Vec::new(),
                vae: part,
            },
        };
        let source = ModelSource::Checkpoint {
            file: transformer.clone(),
            config: Some(klein.clone()),
            parts,
        };
        Pipeline::model_size(&source, Precision::F32).is_ok()
    };
    for (tensors, is_text) in &seeds {
        write_tensor_file(&path, tensors);
        assert!(
            read(*is_text),
            "the seed is refused (text encoder: {is_text})"
        );
    }
    let (time, inputs, seed) = budget();
    let mut m = Mutator(seed);
    let started = Instant::now();
    let (mut tried, mut accepted) = (0usize, 0usize);
    while tried < inputs && started.elapsed() < time {
        let (tensors, is_text) = &seeds[m.below(seeds.len())];
        let mut tensors = tensors.clone();
        for _ in 0..1 + m.below(3) {
            let i = m.below(tensors.len());
            match m.below(6) {
                0 => {
                    tensors.remove(i);
                }
                1 => tensors[i].2 = stranger_shape(&mut m),
                _ => tensors[i].0 = mutate_name(&mut m, &tensors[i].0, &all_names),
            }
        }
        tensors.sort();
        tensors.dedup_by(|a, b| a.0 == b.0);
        write_tensor_file(&path, &tensors);
        accepted += read(*is_text) as usize;
        tried += 1;
    }
    eprintln!(
        "text encoder and VAE file names: {tried} inputs in {:.1} s, {accepted} accepted, no panic",
        started.elapsed().as_secs_f64()
    );
    assert!(tried > 0 && accepted < tried);
}

/// Why `Pipeline::model_size` refuses `folder` (a test's damaged copy of a fixture).
fn refusal(folder: &Path) -> String {
    match Pipeline::model_size(&ModelSource::Folder(folder.to_path_buf()), Precision::F32) {
        Ok(_) => panic!("{} is accepted", folder.display()),
        Err(e) => e.to_string(),
    }
}

/// A shard index is a stranger's list of file names: each must be a plain name in the index's
/// own folder (no `..`, separator, root or Windows drive prefix such as `C:shard`).
#[test]
fn a_shard_index_naming_a_file_outside_its_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("tiny-zimage");
    copy_tree(&fixtures().join("tiny-zimage"), &folder);
    let index = folder.join("transformer/diffusion_pytorch_model.safetensors.index.json");
    let original = std::fs::read_to_string(&index).unwrap();
    for shard in [
        "../model_index.json",
        "..",
        "C:diffusion_pytorch_model-00001-of-00004.safetensors",
        "/etc/hostname",
        "sub\\x.safetensors",
    ] {
        let mut doc: Value = serde_json::from_str(&original).unwrap();
        let map = doc["weight_map"].as_object_mut().unwrap();
        let first = map.keys().next().unwrap().clone();
        map.insert(first, json!(shard));
        std::fs::write(&index, serde_json::to_vec(&doc).unwrap()).unwrap();
        let message = refusal(&folder);
        crate::common::assert_mentions(&message, &["outside its folder", shard]);
    }
}

/// The folder fuzzer's first find: a text encoder config's `num_hidden_layers` of 2^57 made the
/// size estimate list a name per unused layer (an allocation of 2^57 strings, which aborts).
/// Every count and width a config gives is now bounded, and named when it is not.
#[test]
fn a_config_count_beyond_any_model_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (model, file, key) in [
        (
            "tiny-flux2-klein",
            "text_encoder/config.json",
            "num_hidden_layers",
        ),
        ("tiny-zimage", "transformer/config.json", "n_layers"),
        ("tiny-sd", "vae/config.json", "layers_per_block"),
        ("tiny-sd", "text_encoder/config.json", "intermediate_size"),
        // A schedule holds a value per training step: refused as the config loads.
        (
            "tiny-sd",
            "scheduler/scheduler_config.json",
            "num_train_timesteps",
        ),
    ] {
        let folder = dir.path().join(format!("{model}-{key}"));
        copy_tree(&fixtures().join(model), &folder);
        let path = folder.join(file);
        let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        config[key] = json!(1u64 << 57);
        std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
        let message = refusal(&folder);
        crate::common::assert_mentions(&message, &[file, key, "144115188075855872", "1048576"]);
    }
}

/// The tokenizers library panics on some `tokenizer.json` files instead of refusing them: a syntax
/// error inside the decoder (the coverage-guided fuzzer's find, `found-decoder-syntax-error` in
/// its corpus) and, in valid JSON, a `Precompiled` normalizer whose table is not one. SD Bench
/// refuses both by name.
#[test]
fn a_tokenizer_file_the_tokenizers_library_panics_on_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("tokenizer");
    copy_tree(&fixtures().join("tiny-zimage/tokenizer"), &folder);
    let file = folder.join("tokenizer.json");
    let original: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let mut precompiled = original.clone();
    precompiled["normalizer"] = json!({"type": "Precompiled", "precompiled_charsmap": "AAAA"});
    let mut broken = serde_json::to_string_pretty(&original).unwrap();
    let at = broken.find("\"decoder\": {").unwrap() + "\"decoder\": {".len();
    broken.insert_str(at, "\"type\" \"ByteLevel\",");
    for (text, says) in [
        (
            serde_json::to_string(&precompiled).unwrap(),
            "cannot be read",
        ),
        (broken, "is not JSON"),
    ] {
        std::fs::write(&file, text).unwrap();
        let message = match QwenPrompt::load(&folder) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        };
        crate::common::assert_mentions(&message, &["tokenizer.json", says]);
    }
}
