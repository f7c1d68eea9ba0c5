//! Where each of a FLUX.1 model's networks is read from: the components of its diffusers folder,
//! or a transformer file as people keep it (`flux1-dev.safetensors`, ComfyUI's
//! `diffusion_models/`, city96's GGUFs: `bfl_names`) with the folder of its configs, its text
//! encoders and VAE from that folder or from files of their own as ComfyUI keeps them
//! (`clip_l.safetensors`; `t5xxl_fp16.safetensors`, FP8 or a T5 GGUF in llama.cpp's names;
//! `ae.safetensors`), each text encoder file told apart by its names and widths.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::bfl_names;
use super::spec::{flux1_vae, Spec};
use super::transformer::Flux1TransformerConfig;
use crate::error::{DiffusionError, Result};
use crate::io::component_file::{self, denoiser_file, text_encoder_file};
use crate::io::file_weights::FileWeights;
use crate::io::kept_weights::KeptWeights;
use crate::io::sharded::{component_kept, component_parameters, component_weights};
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{choose_weights_file, Precision, WeightSource};
use crate::models::clip;
use crate::models::config::ClipConfig;
use crate::models::t5::{self, embedding_name, llama_cpp_names, T5Config, TIED_EMBEDDING};
use crate::models::vae;
use crate::models::vae_file::{vae_file, vae_fits};
use crate::pipeline::component_roles::{self, Role};
use crate::pipeline::family::{Component, Preset};
use crate::pipeline::memory_need::ModelSize;
use crate::pipeline::ComponentFiles;

/// A diffusers network's weight-file stem.
const NETWORK_STEM: &str = "diffusion_pytorch_model";

/// Where one network's weights are.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum At {
    /// A component folder of a diffusers model (`text_encoder_2/`).
    Folder(PathBuf),
    /// A file of that network alone.
    File(PathBuf),
}

/// Where each network of a model is.
pub(super) struct Places {
    clip: At,
    t5: At,
    transformer: At,
    vae: At,
}

impl Places {
    /// A diffusers folder's components.
    pub(super) fn folder(folder: &Path) -> Places {
        let at = |sub: &str| At::Folder(folder.join(sub));
        Places {
            clip: at("text_encoder"),
            t5: at("text_encoder_2"),
            transformer: at("transformer"),
            vae: at("vae"),
        }
    }

    /// A transformer file read with `folder`'s configs (`spec`): each other network from its own
    /// file in `parts` (the text encoders matched by names and the configs' widths), else from
    /// the folder.
    pub(super) fn transformer_file(
        file: &Path,
        folder: &Path,
        parts: &ComponentFiles,
        spec: &Spec,
    ) -> Result<Places> {
        let mut places = Places::folder(folder);
        places.transformer = At::File(file.to_path_buf());
        let mut given = assign(&parts.text_encoders, spec)?;
        if let Some(clip) = given.remove("text_encoder") {
            places.clip = At::File(clip);
        }
        if let Some(t5) = given.remove("text_encoder_2") {
            places.t5 = At::File(t5);
        }
        if let Some(vae) = &parts.vae {
            places.vae = At::File(vae.clone());
        }
        Ok(places)
    }

    /// CLIP's weights (transformers' names, with or without `text_model.`) and the file read.
    pub(super) fn clip_weights(&self, precision: Precision) -> Result<(FileWeights, PathBuf)> {
        let file = match &self.clip {
            At::Folder(folder) => choose_weights_file(folder, "model", precision)?,
            At::File(file) => file.clone(),
        };
        let weights = FileWeights::open(&file)?
            .with_aliases(clip::ALIASES)
            .ignoring(clip::IGNORED_PREFIXES);
        Ok((weights, file))
    }

    /// T5's weights, the name its embeddings are stored under, and the files read.
    pub(super) fn t5_weights(
        &self,
        precision: Precision,
    ) -> Result<(Box<dyn WeightSource>, &'static str, Vec<PathBuf>)> {
        match &self.t5 {
            At::Folder(folder) => t5::folder::folder_weights(folder, precision),
            At::File(file) => {
                let weights = t5_file(file)?;
                let embedding = embedding_name(|n| weights.stored_shape(n).is_some());
                let weights = weights.ignoring(&t5::folder::unread(embedding));
                Ok((Box::new(weights), embedding, vec![file.clone()]))
            }
        }
    }

    /// The transformer's weights: a folder's in diffusers' names, a file's in either.
    pub(super) fn transformer_weights(
        &self,
        precision: Precision,
    ) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
        match &self.transformer {
            At::Folder(folder) => component_weights(folder, NETWORK_STEM, precision, &[]),
            At::File(file) => Ok((
                Box::new(denoiser_file(file, &bfl_names::NAMES)?),
                vec![file.clone()],
            )),
        }
    }

    /// The VAE's decoder weights (the pipeline never encodes).
    pub(super) fn vae_weights(
        &self,
        blocks: usize,
        precision: Precision,
    ) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
        let ignored = vae::ENCODER_PREFIXES;
        match &self.vae {
            At::Folder(folder) => component_weights(folder, NETWORK_STEM, precision, ignored),
            At::File(file) => Ok((
                Box::new(vae_file(file, blocks)?.ignoring(ignored)),
                vec![file.clone()],
            )),
        }
    }

    /// Parameters of the networks that run and what the transformer keeps in codes, from the
    /// files' headers (nothing is loaded).
    pub(super) fn size(&self, spec: &Spec, precision: Precision) -> Result<ModelSize> {
        let family = super::family::family_of(&spec.transformer.value);
        let clip_read = |n: &str| !clip::IGNORED_PREFIXES.iter().any(|p| n.starts_with(p));
        let clip = match &self.clip {
            At::Folder(folder) => component_parameters(folder, "model", precision, clip_read)?,
            At::File(_) => self.clip_weights(precision)?.0.parameters(clip_read),
        };
        let t5_read = |n: &str| n != TIED_EMBEDDING;
        let t5 = match &self.t5 {
            At::Folder(folder) => component_parameters(folder, "model", precision, t5_read)?,
            At::File(file) => t5_file(file)?.parameters(t5_read),
        };
        let (transformer, kept) = match &self.transformer {
            At::Folder(folder) => (
                component_parameters(folder, NETWORK_STEM, precision, |_| true)?,
                component_kept(folder, NETWORK_STEM, precision)?,
            ),
            At::File(file) => (
                denoiser_file(file, &bfl_names::NAMES)?.parameters(|_| true),
                KeptWeights::of(&TensorFile::open(file)?, |_| true),
            ),
        };
        let encoder = |n: &str| vae::ENCODER_PREFIXES.iter().any(|p| n.starts_with(p));
        let blocks = spec.vae.value.block_out_channels.len();
        let vae = |counted: &dyn Fn(&str) -> bool| match &self.vae {
            At::Folder(folder) => component_parameters(folder, NETWORK_STEM, precision, counted),
            At::File(file) => Ok(vae_file(file, blocks)?.parameters(counted)),
        };
        Ok(ModelSize {
            text_encoder_params: clip + t5,
            denoiser_params: transformer,
            denoiser_full_precision_params: spec.transformer.value.full_precision_parameters(),
            denoiser_kept: kept,
            vae_decoder_params: vae(&|n| !encoder(n))?,
            vae_encoder_params: vae(&encoder)?,
            ..ModelSize::upstream(family, spec.vae.value.sample_size)
        })
    }
}

/// A T5 encoder file: transformers' names (`t5xxl_fp16.safetensors`, FP8 or not) or llama.cpp's
/// (a T5 GGUF, as city96's t5-v1_1-xxl-encoder-gguf has them).
fn t5_file(file: &Path) -> Result<FileWeights> {
    let tensors = TensorFile::open(file)?;
    if tensors.names().any(|n| n == "token_embd.weight") {
        return text_encoder_file(file, &llama_cpp_names::file_names());
    }
    FileWeights::open(file)
}

/// The width of a CLIP text encoder file (its token embeddings' second dimension); `None` for
/// any other file.
fn clip_file_width(file: &Path) -> Option<usize> {
    let tensors = TensorFile::open(file).ok()?;
    let names = [
        "text_model.embeddings.token_embedding.weight",
        "embeddings.token_embedding.weight",
    ];
    names
        .iter()
        .find_map(|n| match tensors.entry(n)?.shape[..] {
            [_, width] => Some(width),
            _ => None,
        })
}

/// The width of a T5 encoder file (its embeddings' second dimension); `None` for any other file.
fn t5_file_width(file: &Path) -> Option<usize> {
    let weights = t5_file(file).ok()?;
    if !weights
        .model_names()
        .any(|n| n.starts_with("encoder.block."))
    {
        return None;
    }
    let embedding = embedding_name(|n| weights.stored_shape(n).is_some());
    match weights.stored_shape(embedding)?[..] {
        [_, width] => Some(width),
        _ => None,
    }
}

/// Each `--text-encoder` file matched to the text encoder of `spec` it holds.
fn assign(files: &[PathBuf], spec: &Spec) -> Result<BTreeMap<&'static str, PathBuf>> {
    let clip_width = spec.clip.value.hidden_size;
    let t5_width = spec.t5.value.d_model;
    let clip = move |f: &Path| clip_file_width(f) == Some(clip_width);
    let t5 = move |f: &Path| t5_file_width(f) == Some(t5_width);
    let roles = [
        Role {
            component: "text_encoder",
            what: "CLIP-L",
            fits: &clip,
        },
        Role {
            component: "text_encoder_2",
            what: "T5-XXL encoder",
            fits: &t5,
        },
    ];
    component_roles::assign(files, &roles, "--text-encoder", "FLUX.1")
}

/// Whether `file` holds `component` as the built-in configs have it (the upstream models'
/// widths), to pair a transformer file with the files beside it.
pub(super) fn part_fits(component: &Component, file: &Path) -> bool {
    match component.name {
        "text_encoder" => clip_file_width(file) == Some(ClipConfig::sd15().hidden_size),
        "text_encoder_2" => t5_file_width(file) == Some(T5Config::xxl().d_model),
        "vae" => vae_fits(file, &flux1_vae()),
        _ => false,
    }
}

/// The preset whose repository's configs a FLUX.1 transformer file needs, by its sizes and
/// whether it has the guidance embedding (`Ok(None)`: not a FLUX.1 transformer file); one of no
/// built-in preset's sizes is refused, asking for its configs.
pub(super) fn file_preset(file: &Path) -> Result<Option<Preset>> {
    let groups = ["transformer_blocks.", "single_transformer_blocks."];
    let Some(found) =
        component_file::denoiser_sizes(file, &bfl_names::NAMES, groups, "x_embedder.weight")?
    else {
        return Ok(None);
    };
    let guidance = denoiser_file(file, &bfl_names::NAMES)?
        .has("time_text_embed.guidance_embedder.linear_1.weight");
    let config = match guidance {
        true => Flux1TransformerConfig::dev(),
        false => Flux1TransformerConfig::schnell(),
    };
    let expected = component_file::DenoiserSizes {
        blocks: [config.num_layers, config.num_single_layers],
        width: Some(config.inner_dim()),
    };
    if found == expected {
        return Ok(Some(match guidance {
            true => Preset::FLUX1_DEV,
            false => Preset::FLUX1_SCHNELL,
        }));
    }
    let [double, single] = found.blocks;
    Err(DiffusionError::unsupported(
        file,
        format!(
            "holds a FLUX.1 transformer of {double} double- and {single} single-stream blocks {}, the sizes of no built-in FLUX.1 model ({}, {}, width {}): give --model-config naming the diffusers folder of its configs",
            found.width_text(),
            config.num_layers,
            config.num_single_layers,
            config.inner_dim(),
        ),
    ))
}
