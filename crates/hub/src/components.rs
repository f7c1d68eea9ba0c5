//! Which files of a diffusers pipeline a download fetches, and whether a folder holds them.
//!
//! The engine names the components it reads (from the pipeline's model_index.json, by its model
//! families' component lists); the hub names none. Each is fetched as diffusers'
//! `DiffusionPipeline.download(variant="fp16")` fetches it: a network's `config.json` and its
//! safetensors weights (the fp16 variant where the folder has one, else the plain files, a shard
//! index with its shards), and every file of any other component's folder (a tokenizer, a
//! scheduler). At the repository's root only model_index.json is read.

use std::fs;
use std::path::Path;

use serde_json::{Map, Value};

/// The pipeline's description at the root of a repository or folder.
pub const MODEL_INDEX: &str = "model_index.json";

/// model_index.json is a few hundred bytes; a larger one is not read (files come from strangers).
pub(crate) const MAX_INDEX_BYTES: u64 = 1 << 20;

/// A component of a pipeline that a download fetches, as the engine's model families list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedComponent {
    /// Its folder, as model_index.json names it (the engine's name for the component).
    pub folder: String,
    /// The files of its folder it cannot be read without (a network's "config.json").
    pub needs: Vec<String>,
    /// A network: its safetensors weights are fetched beside `needs`, and nothing else of its
    /// folder. Otherwise every file of the folder is fetched.
    pub weights: bool,
}

/// The engine's answer for a pipeline: from its model_index.json, the components it reads, or
/// why it cannot run that pipeline (which stops a download before anything else is fetched).
pub type ChooseComponents =
    fn(&Map<String, Value>) -> std::result::Result<Vec<WantedComponent>, String>;

/// model_index.json's object, from its bytes.
pub fn parse_index(bytes: &[u8]) -> std::result::Result<Map<String, Value>, String> {
    if bytes.len() as u64 > MAX_INDEX_BYTES {
        return Err(format!(
            "its {MODEL_INDEX} is {} bytes, more than any pipeline's ({MAX_INDEX_BYTES})",
            bytes.len()
        ));
    }
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!("its {MODEL_INDEX} is not a JSON object")),
        Err(e) => Err(format!("its {MODEL_INDEX} is not JSON ({e})")),
    }
}

/// The components `choose` names for the pipeline in `folder` (by its model_index.json).
pub fn components_in(
    folder: &Path,
    choose: ChooseComponents,
) -> std::result::Result<Vec<WantedComponent>, String> {
    let path = folder.join(MODEL_INDEX);
    let size = fs::metadata(&path)
        .map_err(|_| format!("it has no {MODEL_INDEX}"))?
        .len();
    if size > MAX_INDEX_BYTES {
        return Err(format!(
            "its {MODEL_INDEX} is {size} bytes, more than any pipeline's ({MAX_INDEX_BYTES})"
        ));
    }
    let bytes = fs::read(&path).map_err(|e| format!("{MODEL_INDEX}: {e}"))?;
    choose(&parse_index(&bytes)?)
}

/// The file names diffusers takes for weights: `{prefix}.{suffix}` and its shards and variants.
const WEIGHT_PREFIXES: &[&str] = &[
    "diffusion_pytorch_model",
    "model",
    "weights",
    "pytorch_model",
];
const WEIGHT_SUFFIXES: &[&str] = &["bin", "safetensors", "onnx", "pb"];
/// What a safetensors download leaves out: diffusers' ignore patterns with safetensors and no ONNX
/// (`*.bin`, `*.msgpack`, `*.onnx`, `*.pb` and their shard indexes).
const IGNORED_EXTENSIONS: &[&str] = &["bin", "msgpack", "onnx", "pb"];
const VARIANT: &str = "fp16";

/// `-00001-of-00002`: five digits, "-of-", five digits.
fn is_shard_numbering(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 15
        && b[0] == b'-'
        && b[1..6].iter().all(u8::is_ascii_digit)
        && &text[6..10] == "-of-"
        && b[10..].iter().all(u8::is_ascii_digit)
}

/// `name` is `{prefix}{middle}.{suffix}` for one of diffusers' weight prefixes and suffixes,
/// with `middle(rest)` true for what lies between.
fn is_weight_name(name: &str, middle: impl Fn(&str) -> bool) -> bool {
    WEIGHT_PREFIXES.iter().any(|prefix| {
        name.strip_prefix(prefix).is_some_and(|rest| {
            WEIGHT_SUFFIXES.iter().any(|suffix| {
                rest.strip_suffix(suffix)
                    .and_then(|r| r.strip_suffix('.'))
                    .is_some_and(&middle)
            })
        })
    })
}

/// `diffusion_pytorch_model.fp16.safetensors`, `model.fp16-00001-of-00002.safetensors`.
fn is_variant_file(name: &str) -> bool {
    is_weight_name(name, |m| {
        m.strip_prefix('.')
            .and_then(|m| m.strip_prefix(VARIANT))
            .is_some_and(|m| m.is_empty() || is_shard_numbering(m))
    })
}

/// `model.safetensors.index.fp16.json`.
fn is_variant_index(name: &str) -> bool {
    index_matches(name, &format!(".index.{VARIANT}.json"), true)
}

/// The old shard names: `diffusion_pytorch_model-00001-of-00002.fp16.safetensors`.
fn is_legacy_variant_file(name: &str) -> bool {
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    !extension.is_empty()
        && extension.chars().all(|c| c.is_ascii_lowercase())
        && stem.strip_suffix(&format!(".{VARIANT}")).is_some_and(|s| {
            s.len() >= 15
                && s.is_char_boundary(s.len() - 15)
                && is_shard_numbering(&s[s.len() - 15..])
        })
}

/// `model.safetensors.fp16.index.json`.
fn is_legacy_variant_index(name: &str) -> bool {
    index_matches(name, &format!(".{VARIANT}.index.json"), true)
}

/// `diffusion_pytorch_model.safetensors`, `model-00001-of-00002.safetensors`.
fn is_plain_file(name: &str) -> bool {
    is_weight_name(name, |m| m.is_empty() || is_shard_numbering(m))
}

/// `model.safetensors.index.json` (diffusers matches this one at the name's start only).
fn is_plain_index(name: &str) -> bool {
    index_matches(name, ".index.json", false)
}

/// `{prefix}.{suffix}{ending}`: the whole name when `whole`, else its start.
fn index_matches(name: &str, ending: &str, whole: bool) -> bool {
    WEIGHT_PREFIXES.iter().any(|prefix| {
        WEIGHT_SUFFIXES.iter().any(|suffix| {
            let pattern = format!("{prefix}.{suffix}{ending}");
            if whole {
                name == pattern
            } else {
                name.starts_with(&pattern)
            }
        })
    })
}

/// Whether diffusers leaves `path` out of a safetensors download: a pickle, ONNX, Flax or
/// TensorFlow file, or the shard index of one (`pytorch_model.bin.index.json`).
fn is_ignored(path: &str) -> bool {
    IGNORED_EXTENSIONS.iter().any(|extension| {
        path.ends_with(&format!(".{extension}"))
            || path
                .split_once(&format!(".{extension}.index."))
                .is_some_and(|(_, rest)| rest.ends_with("json"))
    })
}

/// The looser test diffusers applies before it picks a folder's weights: the name ends with the
/// extension's letters (`*.bin` stripped to "bin").
fn has_ignored_ending(name: &str) -> bool {
    IGNORED_EXTENSIONS.iter().any(|e| name.ends_with(e))
}

/// The weight files diffusers picks from one component folder's file names: the fp16 variant's
/// files and index where there are any (the current names, else the old shard names), else the
/// plain ones.
fn chosen_weights<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let names: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !has_ignored_ending(n))
        .collect();
    let pick = |file: fn(&str) -> bool, index: fn(&str) -> bool| -> Vec<&'a str> {
        let files: Vec<&str> = names.iter().copied().filter(|n| file(n)).collect();
        if files.is_empty() {
            return files;
        }
        names
            .iter()
            .copied()
            .filter(|n| file(n) || index(n))
            .collect()
    };
    let variant = pick(is_variant_file, is_variant_index);
    if !variant.is_empty() {
        return variant;
    }
    let legacy = pick(is_legacy_variant_file, is_legacy_variant_index);
    if !legacy.is_empty() {
        return legacy;
    }
    pick(is_plain_file, is_plain_index)
}

/// One file of a download plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    pub path: String,
    /// A weights file (a whole network's or a shard), as opposed to the small files that say
    /// what the pipeline is.
    pub weights: bool,
}

/// The files of a repository (`paths`, its listing) that `wanted` needs, in download order:
/// model_index.json, every file of the tokenizer and scheduler folders, the networks' configs and
/// shard indexes, then their weights. Err: what the repository lacks.
pub fn plan(
    paths: &[&str],
    wanted: &[WantedComponent],
) -> std::result::Result<Vec<PlannedFile>, Vec<String>> {
    let has = |path: &str| paths.contains(&path);
    let mut missing = Vec::new();
    if !has(MODEL_INDEX) {
        missing.push(MODEL_INDEX.to_string());
    }
    let mut small = vec![MODEL_INDEX.to_string()];
    let mut configs = Vec::new();
    let mut weights = Vec::new();
    for component in wanted {
        let prefix = format!("{}/", component.folder);
        for need in &component.needs {
            let path = format!("{prefix}{need}");
            if !has(&path) {
                missing.push(path);
            }
        }
        if !component.weights {
            let files: Vec<&str> = paths
                .iter()
                .copied()
                .filter(|p| p.starts_with(&prefix) && !is_ignored(p))
                .collect();
            if files.is_empty() && component.needs.is_empty() {
                missing.push(format!("{prefix} folder"));
            }
            small.extend(files.into_iter().map(str::to_string));
            continue;
        }
        configs.extend(component.needs.iter().map(|n| format!("{prefix}{n}")));
        // diffusers groups weights by folder: only the folder's own files, not deeper ones.
        let names: Vec<&str> = paths
            .iter()
            .filter_map(|p| p.strip_prefix(&prefix))
            .filter(|n| !n.contains('/'))
            .collect();
        let chosen = chosen_weights(&names);
        if !chosen.iter().any(|n| n.ends_with(".safetensors")) {
            missing.push(format!(
                "safetensors weights in {prefix} (diffusion_pytorch_model.safetensors, model.safetensors, their fp16 variants or shards; SD Bench reads no pickled .bin files)"
            ));
        }
        for name in chosen {
            let path = format!("{prefix}{name}");
            if is_ignored(&path) {
                continue;
            }
            if name.ends_with(".safetensors") {
                weights.push(path);
            } else {
                configs.push(path);
            }
        }
    }
    if !missing.is_empty() {
        return Err(missing);
    }
    let mut files: Vec<PlannedFile> = Vec::new();
    for (paths, weights) in [(small, false), (configs, false), (weights, true)] {
        for path in paths {
            if !files.iter().any(|f| f.path == path) {
                files.push(PlannedFile { path, weights });
            }
        }
    }
    Ok(files)
}

/// What `folder` lacks of `wanted`: model_index.json, each component's needed files and, when
/// `weights`, each network's weights (a shard index with every shard it names). Links are
/// followed, so a link to a missing blob counts as missing.
pub fn missing_in(folder: &Path, wanted: &[WantedComponent], weights: bool) -> Vec<String> {
    let mut missing = Vec::new();
    if !folder.join(MODEL_INDEX).is_file() {
        missing.push(MODEL_INDEX.to_string());
    }
    for component in wanted {
        let dir = folder.join(&component.folder);
        for need in &component.needs {
            if !dir.join(need).is_file() {
                missing.push(format!("{}/{need}", component.folder));
            }
        }
        if component.weights && weights {
            missing.extend(missing_weights(folder, &component.folder));
        }
    }
    missing
}

/// A network folder's weights as the download chose them: any complete set (an index and its
/// shards, or one file) counts.
fn missing_weights(folder: &Path, component: &str) -> Vec<String> {
    let dir = folder.join(component);
    let names: Vec<String> = fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().is_file())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let chosen = chosen_weights(&names);
    let indexes: Vec<&str> = chosen
        .iter()
        .copied()
        .filter(|n| !n.ends_with(".safetensors"))
        .collect();
    if indexes.is_empty() {
        if chosen.is_empty() {
            return vec![format!(
                "{component}/diffusion_pytorch_model.safetensors or model.safetensors (or an fp16 variant, or a shard index and its shards)"
            )];
        }
        return Vec::new();
    }
    let mut missing = Vec::new();
    for index in indexes {
        match indexed_shards(&dir.join(index)) {
            Some(shards) => missing.extend(
                shards
                    .into_iter()
                    .filter(|s| !dir.join(s).is_file())
                    .map(|s| format!("{component}/{s}")),
            ),
            None => missing.push(format!("{component}/{index} (unreadable)")),
        }
    }
    missing
}

/// The shard files a shard index names (relative to its folder), or `None` when the index cannot
/// be read or names a file outside its folder.
pub(crate) fn indexed_shards(index: &Path) -> Option<Vec<String>> {
    let meta = fs::metadata(index).ok()?;
    if meta.len() > 64 << 20 {
        return None;
    }
    let text = fs::read_to_string(index).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    let map = value.get("weight_map")?.as_object()?;
    let mut files = Vec::new();
    for file in map.values() {
        let file = file.as_str()?;
        if file.is_empty() || file.contains(['/', '\\']) || file == ".." {
            return None;
        }
        files.push(file.to_string());
    }
    files.sort();
    files.dedup();
    Some(files)
}

#[cfg(test)]
#[path = "components_tests.rs"]
mod tests;
