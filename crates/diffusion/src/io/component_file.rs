//! Components kept as files of their own, apart from a diffusers folder, as ComfyUI keeps them:
//! a denoiser (`diffusion_models/`) in its authors' tensor names or diffusers', sometimes under
//! ComfyUI's `model.diffusion_model.`, as safetensors, FP8 or GGUF (a family supplies the name
//! conversion, as diffusers' single-file converter for it does); a text encoder
//! (`text_encoders/`) in transformers' names; a VAE (`vae/`) in the original names or diffusers'.
//! This module reads such files, and takes each component's weights from its file or from the
//! folder.

use std::path::{Path, PathBuf};

use crate::error::{DiffusionError, Result};
pub use crate::io::file_weights::Converted;
use crate::io::file_weights::{is_fp8_scale, ComponentNames, FileWeights};
use crate::io::sharded::component_weights;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{Precision, WeightSource};
use crate::models::config::VaeConfig;
use crate::models::vae_names;
use crate::nn::blocks::KeptWeights;
use crate::pipeline::family::{Component, FilePart};
use crate::pipeline::{ComponentFiles, ModelSource};

/// The prefix ComfyUI saves whole models under.
const COMFY_PREFIX: &str = "model.diffusion_model.";

/// `prefix` when every one of `names` starts with it (a wrapper a whole file's tensors sit
/// under), else nothing.
fn shared_prefix<S: AsRef<str>>(mut names: impl Iterator<Item = S>, prefix: &str) -> &str {
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

/// What a pipeline loaded from `folder` (with the denoiser from `file` and the components
/// `parts` names, if given) was loaded from.
pub fn loaded_from(folder: &Path, file: Option<&Path>, parts: &ComponentFiles) -> ModelSource {
    match file {
        Some(file) => ModelSource::Checkpoint {
            file: file.to_path_buf(),
            config: Some(folder.to_path_buf()),
            parts: parts.clone(),
        },
        None => ModelSource::Folder(folder.to_path_buf()),
    }
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

/// The latent channels of the VAE of `blocks` blocks that `file` holds (its decoder's first
/// convolution's inputs); `None` when it is no such VAE.
pub fn vae_latent_channels(file: &Path, blocks: usize) -> Option<usize> {
    let weights = vae_file(file, blocks).ok()?;
    match weights.stored_shape("decoder.conv_in.weight")?[..] {
        [_, channels, _, _] => Some(channels),
        _ => None,
    }
}

/// Whether `file` holds the text encoder (read as `text`'s names, of its width) or the VAE (of
/// `vae`'s blocks and latent channels) that a denoiser file's built-in configs need, for a
/// family with one of each.
pub fn part_fits(
    component: &Component,
    file: &Path,
    text: (&TextEncoderNames, usize),
    vae: &VaeConfig,
) -> bool {
    match component.kind.file_part() {
        Some(FilePart::TextEncoder) => text_encoder_width(file, text.0) == Some(text.1),
        Some(FilePart::Vae) => vae_fits(file, vae),
        None => false,
    }
}

/// Whether `file` holds a VAE of `vae`'s blocks and latent channels.
pub fn vae_fits(file: &Path, vae: &VaeConfig) -> bool {
    vae_latent_channels(file, vae.block_out_channels.len()) == Some(vae.latent_channels)
}

/// The prefix a VAE keeps inside a Stable Diffusion checkpoint; a VAE file cut from one may
/// still carry it.
const VAE_CHECKPOINT_PREFIX: &str = "first_stage_model.";

/// A VAE of `blocks` encoder and decoder blocks kept as a file of its own (ComfyUI's `vae/`, a
/// fine-tuned VAE download): diffusers' names, or the original ones (SD checkpoints',
/// Black Forest Labs' `ae.safetensors`), with or without `first_stage_model.`.
pub fn vae_file(file: &Path, blocks: usize) -> Result<FileWeights> {
    vae_within(file, "", blocks)
}

/// The VAE among `file`'s tensors under `within` (a single file's `first_stage_model.`; `""`: a
/// VAE file of its own), read as `vae_file` reads one.
pub fn vae_within(file: &Path, within: &str, blocks: usize) -> Result<FileWeights> {
    let tensors = TensorFile::open(file)?;
    let stored: Vec<String> = tensors
        .names()
        .filter(|n| n.starts_with(within) && !is_fp8_scale(n))
        .map(str::to_string)
        .collect();
    let strip = match within {
        "" => shared_prefix(stored.iter(), VAE_CHECKPOINT_PREFIX),
        _ => within,
    };
    let rest = |n: &str| n[strip.len()..].to_string();
    if stored.iter().any(|n| vae_names::is_diffusers(&rest(n))) {
        let map = stored.iter().map(|n| (rest(n), n.clone())).collect();
        return Ok(FileWeights::renamed(tensors, map));
    }
    if !stored.iter().any(|n| vae_names::is_original(&rest(n))) {
        return Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: "is not a VAE: none of its tensors has a VAE's names (`decoder.up_blocks.` as diffusers names them, or `decoder.up.` as the original files do)".into(),
        });
    }
    let mut found = ComponentNames::default();
    for name in &stored {
        let converted =
            vae_names::diffusers_name(&rest(name), blocks).ok_or_else(|| DiffusionError::Tensor {
                path: file.to_path_buf(),
                tensor: name.clone(),
                problem: format!(
                    "has no counterpart in a VAE of {blocks} blocks; is the file another model's VAE?"
                ),
            })?;
        found.names.insert(converted, name.clone());
    }
    Ok(FileWeights::converted(tensors, found))
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

/// The VAE's weights (`blocks` blocks) and the files they come from: `file`'s when one is given,
/// else the folder's `vae/` component.
pub fn vae_weights(
    folder: &Path,
    file: Option<&Path>,
    blocks: usize,
    precision: Precision,
    ignored: &[&str],
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    let read = |file: &Path| vae_file(file, blocks);
    component_or_file(folder, VAE, file, read, precision, ignored)
}

/// A component's weights and the files they come from: `file`'s (read by `read`) when one is
/// given, else the folder's `sub/` component (sharded or not, the file a run in `precision`
/// reads).
fn component_or_file(
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

/// Where a diffusers-folder family's weights come from: its folder, and the files given in place
/// of its parts (a denoiser file, `--text-encoder`, `--vae`). Read from headers only, for the
/// memory estimate.
pub struct WeightFiles<'a> {
    pub folder: &'a Path,
    pub denoiser: Option<&'a Path>,
    pub parts: &'a ComponentFiles,
    /// Which file of a folder component a run reads (`.fp16` or not).
    pub precision: Precision,
}

const DENOISER: (&str, &str) = ("transformer", "diffusion_pytorch_model");
const TEXT_ENCODER: (&str, &str) = ("text_encoder", "model");
const VAE: (&str, &str) = ("vae", "diffusion_pytorch_model");

impl WeightFiles<'_> {
    /// Parameters of the text encoder's tensors `counted` picks (by the names the model loads).
    pub fn text_encoder_parameters(
        &self,
        names: &TextEncoderNames,
        counted: &dyn Fn(&str) -> bool,
    ) -> Result<u64> {
        match self.parts.text_encoder(names.what)? {
            Some(file) => Ok(text_encoder_file(file, names)?.parameters(counted)),
            None => self.folder_parameters(TEXT_ENCODER, counted),
        }
    }

    /// Parameters of the denoiser's tensors `counted` picks (by diffusers' names; a denoiser
    /// file is read with `names`).
    pub fn denoiser_parameters(
        &self,
        names: &DenoiserNames,
        counted: &dyn Fn(&str) -> bool,
    ) -> Result<u64> {
        match self.denoiser {
            Some(file) => Ok(denoiser_file(file, names)?.parameters(counted)),
            None => self.folder_parameters(DENOISER, counted),
        }
    }

    /// What the denoiser keeps in its codes (GGUF, FP8).
    pub fn denoiser_kept(&self) -> Result<KeptWeights> {
        match self.denoiser {
            Some(file) => denoiser_kept(file),
            None => crate::io::sharded::component_kept(
                &self.folder.join(DENOISER.0),
                DENOISER.1,
                self.precision,
            ),
        }
    }

    /// Parameters of the VAE's tensors `counted` picks (by diffusers' names), for a VAE of
    /// `blocks` blocks.
    pub fn vae_parameters(&self, blocks: usize, counted: &dyn Fn(&str) -> bool) -> Result<u64> {
        match &self.parts.vae {
            Some(file) => Ok(vae_file(file, blocks)?.parameters(counted)),
            None => self.folder_parameters(VAE, counted),
        }
    }

    fn folder_parameters(
        &self,
        (sub, stem): (&str, &str),
        counted: &dyn Fn(&str) -> bool,
    ) -> Result<u64> {
        crate::io::sharded::component_parameters(
            &self.folder.join(sub),
            stem,
            self.precision,
            counted,
        )
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
