//! Components kept as files of their own, apart from a diffusers folder, as ComfyUI keeps them:
//! a denoiser (`diffusion_models/`) in its authors' tensor names or diffusers', sometimes under
//! ComfyUI's `model.diffusion_model.`, as safetensors, FP8 or GGUF (a family supplies the name
//! conversion, as diffusers' single-file converter for it does); a text encoder
//! (`text_encoders/`) in transformers' names; a VAE (`vae/`) in the original names or diffusers'.
//! This module reads the denoiser and text encoder files (`models::vae_file` the VAE's), and
//! takes each component's weights from its file or from the folder.

use std::path::{Path, PathBuf};

use crate::error::{DiffusionError, Result};
pub use crate::io::file_weights::Converted;
use crate::io::file_weights::{ComponentNames, FileWeights};
use crate::io::kept_weights::KeptWeights;
use crate::io::sharded::component_weights;
use crate::io::tensor_file::is_fp8_scale;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{Precision, WeightSource};

/// Each folder component's subfolder and weight-file stem.
pub const DENOISER: (&str, &str) = ("transformer", "diffusion_pytorch_model");
pub const TEXT_ENCODER: (&str, &str) = ("text_encoder", "model");
pub const VAE: (&str, &str) = ("vae", "diffusion_pytorch_model");

/// The prefix ComfyUI saves whole models under.
const COMFY_PREFIX: &str = "model.diffusion_model.";

/// `prefix` when every one of `names` starts with it (a wrapper a whole file's tensors sit
/// under), else nothing.
pub fn shared_prefix<S: AsRef<str>>(mut names: impl Iterator<Item = S>, prefix: &str) -> &str {
    match names.all(|n| n.as_ref().starts_with(prefix)) {
        true => prefix,
        false => "",
    }
}

/// A family's denoiser file names.
pub struct DenoiserNames {
    /// "FLUX.2 transformer".
    pub what: &'static str,
    /// A name (after any ComfyUI prefix) only diffusers' layout has.
    pub is_diffusers: fn(&str) -> bool,
    /// A name only the original layout has.
    pub is_original: fn(&str) -> bool,
    /// An original name in diffusers' terms; `None` for a name the model does not have.
    pub convert: fn(&str) -> Option<Converted>,
}

/// The denoiser's weights in `file`, in either layout; anything else is refused by name.
pub fn denoiser_file(file: &Path, names: &DenoiserNames) -> Result<FileWeights> {
    let tensors = TensorFile::open(file)?;
    let prefix = shared_prefix(tensors.names(), COMFY_PREFIX);
    let stored: Vec<String> = tensors
        .names()
        .filter(|n| !is_fp8_scale(n))
        .map(str::to_string)
        .collect();
    let rest = |n: &str| n[prefix.len()..].to_string();
    if stored.iter().any(|n| (names.is_diffusers)(&rest(n))) {
        let map = stored.iter().map(|n| (rest(n), n.clone())).collect();
        return Ok(FileWeights::renamed(tensors, map));
    }
    if !stored.iter().any(|n| (names.is_original)(&rest(n))) {
        return Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: format!(
                "is not a {}: none of its tensors has that model's names",
                names.what
            ),
        });
    }
    let mut found = ComponentNames::default();
    for name in &stored {
        let converted = (names.convert)(&rest(name)).ok_or_else(|| DiffusionError::Tensor {
            path: file.to_path_buf(),
            tensor: name.clone(),
            problem: format!(
                "has no counterpart in a {}; is the file another model's?",
                names.what
            ),
        })?;
        found.add(converted, name);
    }
    Ok(FileWeights::converted(tensors, found))
}

/// What tells a denoiser's sizes apart in its file: the blocks of two groups (`prefix{N}.`) and
/// the first dimension of one tensor (its width), all by diffusers' names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DenoiserSizes {
    pub blocks: [usize; 2],
    pub width: Option<usize>,
}

impl DenoiserSizes {
    /// "of width 3072", or "of unknown width" where the file lacks the tensor that tells it.
    pub fn width_text(&self) -> String {
        self.width
            .map_or("of unknown width".to_string(), |w| format!("of width {w}"))
    }
}

/// The sizes of the denoiser `file` holds in `names`' layouts (`groups`: the two block prefixes,
/// `width_of`: the tensor whose rows are the width); `None` for a file that is not such a
/// denoiser by its tensor names (or does not open as a tensor file: loading it names its problem).
pub fn denoiser_sizes(
    file: &Path,
    names: &DenoiserNames,
    groups: [&str; 2],
    width_of: &str,
) -> Result<Option<DenoiserSizes>> {
    let Ok(tensors) = TensorFile::open(file) else {
        return Ok(None);
    };
    let rest = |n: &str| n.strip_prefix(COMFY_PREFIX).unwrap_or(n).to_string();
    let ours = tensors
        .names()
        .any(|n| (names.is_diffusers)(&rest(n)) || (names.is_original)(&rest(n)));
    if !ours {
        return Ok(None);
    }
    let weights = denoiser_file(file, names)?;
    // One more than the largest `N` of `prefix{N}.`.
    let blocks = |prefix: &str| {
        weights
            .model_names()
            .filter_map(|n| {
                n.strip_prefix(prefix)?
                    .split('.')
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
            .map(|n| n.saturating_add(1))
            .max()
            .unwrap_or(0)
    };
    Ok(Some(DenoiserSizes {
        blocks: groups.map(blocks),
        width: weights
            .stored_shape(width_of)
            .and_then(|s| s.first().copied()),
    }))
}

/// What a denoiser file keeps in its codes (GGUF, FP8): all of its matrices are the denoiser's.
pub fn denoiser_kept(file: &Path) -> Result<KeptWeights> {
    Ok(KeptWeights::of(&TensorFile::open(file)?, |_| true))
}

/// The denoiser's weights and the files they come from: `file`'s when one is given, else the
/// folder's `transformer/` component (sharded or not, the file a run in `precision` reads).
pub fn denoiser_weights(
    folder: &Path,
    file: Option<&Path>,
    names: &DenoiserNames,
    precision: Precision,
    ignored: &[&str],
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    let read = |file: &Path| denoiser_file(file, names);
    component_or_file(folder, DENOISER, file, read, precision, ignored)
}

/// How a family's text encoder names its tensors, for a text encoder file.
pub struct TextEncoderNames {
    /// "Qwen3 text encoder".
    pub what: &'static str,
    /// The prefix the family's model loads its tensors under (`model.` for transformers'
    /// `...ForCausalLM` checkpoints, none for a bare model).
    pub prefix: &'static str,
    /// A tensor every such encoder has, without any prefix (`embed_tokens.weight`).
    pub marker: &'static str,
    /// How llama.cpp's GGUF names map to these, where the family reads such files.
    pub llama_cpp: Option<LlamaCppNames>,
}

/// A text encoder's tensors under llama.cpp's GGUF names (`token_embd.weight`, `blk.N.`).
pub struct LlamaCppNames {
    /// `general.architecture` of such a file (`qwen3`).
    pub architecture: &'static str,
    /// The transformers name (without `model.`) of a llama.cpp tensor name; `None` for one the
    /// architecture does not have.
    pub transformers_name: fn(&str) -> Option<String>,
}

/// A llama.cpp block tensor's name `{prefix}{N}.{rest}` as (N, rest): the block number only as
/// written (`blk.7.`, not `blk.07.` or `blk.+7.`); `None` for any other name.
pub fn llama_cpp_block<'a>(name: &'a str, prefix: &str) -> Option<(usize, &'a str)> {
    let (block, rest) = name.strip_prefix(prefix)?.split_once('.')?;
    let number: usize = block.parse().ok()?;
    (number.to_string() == block).then_some((number, rest))
}

/// The tensor llama.cpp's files name their token embeddings by.
const LLAMA_CPP_MARKER: &str = "token_embd.weight";

/// Tensors a text encoder file may hold that an encoder never reads: a language model's head.
const TEXT_HEAD: &str = "lm_head.";

/// A text encoder kept as a file of its own (ComfyUI's `text_encoders/`): transformers' names,
/// with or without the `model.` that `...ForCausalLM` checkpoints put before them, read under
/// the names the family loads by.
pub fn text_encoder_file(file: &Path, names: &TextEncoderNames) -> Result<FileWeights> {
    let tensors = TensorFile::open(file)?;
    if tensors.names().any(|n| n == LLAMA_CPP_MARKER) {
        return llama_cpp_text_encoder(tensors, names);
    }
    let stored: Vec<String> = tensors
        .names()
        .filter(|n| !is_fp8_scale(n) && !n.starts_with(TEXT_HEAD))
        .map(str::to_string)
        .collect();
    let strip = shared_prefix(stored.iter(), "model.");
    if !stored.iter().any(|n| n[strip.len()..] == *names.marker) {
        return Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: format!(
                "is not a {}: it has no `{}` (transformers' names, with or without `model.`){}",
                names.what,
                names.marker,
                match names.llama_cpp {
                    Some(_) => " or `token_embd.weight` (llama.cpp's)",
                    None => "",
                }
            ),
        });
    }
    let map = stored
        .iter()
        .map(|n| (format!("{}{}", names.prefix, &n[strip.len()..]), n.clone()))
        .collect();
    Ok(FileWeights::renamed(tensors, map))
}

/// A text encoder file in llama.cpp's names (a GGUF from llama.cpp's converter, as ComfyUI-GGUF
/// and stable-diffusion.cpp read them), read under the names the family loads by.
fn llama_cpp_text_encoder(tensors: TensorFile, names: &TextEncoderNames) -> Result<FileWeights> {
    let path = tensors.path().to_path_buf();
    let Some(llama_cpp) = &names.llama_cpp else {
        return Err(DiffusionError::Weights {
            path,
            problem: format!(
                "is in llama.cpp's names (`token_embd.weight`, `blk.N.`), which SD Bench does not read for a {}: use the safetensors file ComfyUI or the model's Hub repository has",
                names.what
            ),
        });
    };
    if let Some(architecture) = tensors.gguf_text("general.architecture") {
        if architecture != llama_cpp.architecture {
            return Err(DiffusionError::Weights {
                path,
                problem: format!(
                    "is a llama.cpp `{architecture}` model, not a {} (`{}`)",
                    names.what, llama_cpp.architecture
                ),
            });
        }
    }
    let mut map = std::collections::BTreeMap::new();
    for stored in tensors.names() {
        let name = (llama_cpp.transformers_name)(stored).ok_or_else(|| DiffusionError::Tensor {
            path: path.clone(),
            tensor: stored.to_string(),
            problem: format!("is not a tensor a {} has in llama.cpp's names", names.what),
        })?;
        if !name.starts_with(TEXT_HEAD) {
            map.insert(format!("{}{name}", names.prefix), stored.to_string());
        }
    }
    Ok(FileWeights::renamed(tensors, map))
}

/// The width of the text encoder `file` holds when read as `names` (its token embeddings' second
/// dimension); `None` when it is no such text encoder.
pub fn text_encoder_width(file: &Path, names: &TextEncoderNames) -> Option<usize> {
    let weights = text_encoder_file(file, names).ok()?;
    match weights.stored_shape(&format!("{}{}", names.prefix, names.marker))?[..] {
        [_, width] => Some(width),
        _ => None,
    }
}

/// The text encoder's weights and the files they come from: `file`'s when one is given, else the
/// folder's `text_encoder/` component.
pub fn text_encoder_weights(
    folder: &Path,
    file: Option<&Path>,
    names: &TextEncoderNames,
    precision: Precision,
    ignored: &[&str],
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    let read = |file: &Path| text_encoder_file(file, names);
    component_or_file(folder, TEXT_ENCODER, file, read, precision, ignored)
}

/// A component's weights and the files they come from: `file`'s (read by `read`) when one is
/// given, else the folder's `sub/` component (sharded or not, the file a run in `precision`
/// reads).
pub fn component_or_file(
    folder: &Path,
    (sub, stem): (&str, &str),
    file: Option<&Path>,
    read: impl FnOnce(&Path) -> Result<FileWeights>,
    precision: Precision,
    ignored: &[&str],
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    match file {
        Some(file) => Ok((
            Box::new(read(file)?.ignoring(ignored)),
            vec![file.to_path_buf()],
        )),
        None => component_weights(&folder.join(sub), stem, precision, ignored),
    }
}

/// The refusal for a component file a family does not take apart from its model file.
pub fn not_taken(file: &Path, option: &str, why: &str) -> DiffusionError {
    DiffusionError::unsupported(file, format!("{option} does not apply here: {why}"))
}

/// The refusal for a denoiser file given without the folder its other components come from.
pub fn needs_its_folder(file: &Path, what: &str) -> DiffusionError {
    DiffusionError::unsupported(
        file,
        format!(
            "a {what} file runs with the diffusers folder its configs and tokenizer come from (and its text encoder and VAE, unless --text-encoder and --vae name files of their own): add --model-config FOLDER (e.g. the Hub repository's)"
        ),
    )
}
