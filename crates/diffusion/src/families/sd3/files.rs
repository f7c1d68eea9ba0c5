//! Where each of an SD3 model's networks is read from: the components of its diffusers folder, a
//! single file as Stability AI ships one (`sd3.5_medium.safetensors`: the MMDiT under
//! `model.diffusion_model.` in its original names, the VAE under `first_stage_model.`, in some
//! files the text encoders under `text_encoders.clip_l.transformer.`, `...clip_g...` and
//! `...t5xxl...`), and text encoder and VAE files of their own, as ComfyUI keeps them
//! (`clip_l.safetensors`, `clip_g.safetensors`, `t5xxl_fp16.safetensors`, FP8 or not), each told
//! apart by its names and widths.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::original_names;
use super::spec::{clip_g, clip_l, sd3_vae, Spec};
use super::transformer::Sd3TransformerConfig;
use crate::error::{DiffusionError, Result};
use crate::io::component_file::text_encoder_file;
use crate::io::file_weights::FileWeights;
use crate::io::kept_weights::KeptWeights;
use crate::io::sharded::{component_kept, component_parameters, component_weights};
use crate::io::tensor_file::is_fp8_scale;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{choose_weights_file, Precision, WeightSource};
use crate::models::clip;
use crate::models::t5::{self, embedding_name, llama_cpp_names, T5Config};
use crate::models::vae;
use crate::models::vae_file::{vae_fits, vae_within};
use crate::pipeline::component_roles::{self, Role};
use crate::pipeline::family::{Component, FilePart, Preset};
use crate::pipeline::ComponentFiles;

/// The MMDiT's prefix in Stability's single files.
const MMDIT: &str = "model.diffusion_model.";
/// The VAE's.
const VAE: &str = "first_stage_model.";
/// Each text encoder's prefix inside a single file, by its component's name.
const TEXT_ENCODERS: [(&str, &str); 3] = [
    ("text_encoder", "text_encoders.clip_l.transformer."),
    ("text_encoder_2", "text_encoders.clip_g.transformer."),
    ("text_encoder_3", "text_encoders.t5xxl.transformer."),
];
/// What messages call each text encoder.
const WHAT: [&str; 3] = ["CLIP-L", "CLIP-G", "T5-XXL encoder"];

/// Where one network's weights are.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Place {
    /// A component folder of a diffusers model (`text_encoder_2/`).
    Folder(PathBuf),
    /// The tensors of `file` under `prefix` (`""`: a file of that network alone).
    File { file: PathBuf, prefix: &'static str },
    /// A T5 encoder file in llama.cpp's GGUF names.
    LlamaCppT5(PathBuf),
}

impl Place {
    /// A text encoder's tensors here, under transformers' names.
    fn text_encoder(&self) -> Result<FileWeights> {
        match self {
            Place::File { file, prefix } => under(file, prefix),
            Place::LlamaCppT5(file) => text_encoder_file(file, &llama_cpp_names::file_names()),
            Place::Folder(folder) => Err(DiffusionError::ModelFolder {
                path: folder.clone(),
                problem: "is a folder, not a text encoder file".into(),
            }),
        }
    }
}

/// Where each network of a model is.
pub(super) struct Places {
    pub(super) clip_l: Place,
    pub(super) clip_g: Place,
    pub(super) t5: Option<Place>,
    pub(super) transformer: Place,
    pub(super) vae: Place,
}

impl Places {
    /// A diffusers folder's components.
    pub(super) fn folder(folder: &Path, spec: &Spec) -> Places {
        let at = |sub: &str| Place::Folder(folder.join(sub));
        Places {
            clip_l: at("text_encoder"),
            clip_g: at("text_encoder_2"),
            t5: spec.t5.as_ref().map(|_| at("text_encoder_3")),
            transformer: at("transformer"),
            vae: at("vae"),
        }
    }

    /// A single file read with `folder`'s configs (`spec`): the MMDiT from the file, each other
    /// network from its own file in `parts` (matched by names and the configs' widths), else from
    /// inside the single file, else from the folder.
    pub(super) fn single_file(
        file: &Path,
        folder: &Path,
        parts: &ComponentFiles,
        spec: &Spec,
    ) -> Result<Places> {
        let mut places = Places::folder(folder, spec);
        places.transformer = Place::File {
            file: file.to_path_buf(),
            prefix: mmdit_prefix(&TensorFile::open(file)?),
        };
        let holds = inside(file);
        let within = |component: &str| -> Option<Place> {
            let prefix = match component {
                "vae" => VAE,
                _ => TEXT_ENCODERS.iter().find(|(c, _)| *c == component)?.1,
            };
            holds.contains(&component).then(|| Place::File {
                file: file.to_path_buf(),
                prefix,
            })
        };
        let given = assign(&parts.text_encoders, spec)?;
        let pick = |component: &str| -> Option<Place> {
            match given.get(component) {
                Some(loose) => Some(loose_text_encoder(loose)),
                None => within(component),
            }
        };
        if let Some(place) = pick("text_encoder") {
            places.clip_l = place;
        }
        if let Some(place) = pick("text_encoder_2") {
            places.clip_g = place;
        }
        if spec.t5.is_some() {
            if let Some(place) = pick("text_encoder_3") {
                places.t5 = Some(place);
            }
        } else if let Some(t5) = given.get("text_encoder_3") {
            return Err(DiffusionError::unsupported(
                t5,
                "--text-encoder: the model's configs (model_index.json) run it without T5",
            ));
        }
        match (&parts.vae, within("vae")) {
            (Some(vae), _) => {
                places.vae = Place::File {
                    file: vae.clone(),
                    prefix: "",
                }
            }
            (None, Some(place)) => places.vae = place,
            (None, None) => {}
        }
        let missing = places.missing();
        if !missing.is_empty() {
            return Err(DiffusionError::unsupported(
                file,
                format!(
                    "no weights for {}: neither the file nor its configs' folder ({}) holds them; give them as files of their own (ComfyUI keeps them in models/text_encoders/ and models/vae/), or --model-config naming a diffusers folder that has them",
                    missing.join(", "),
                    folder.display()
                ),
            ));
        }
        Ok(places)
    }

    /// The text encoders and VAE read from a folder that has no weights for them (a snapshot of
    /// configs alone), with the option that gives each as a file.
    fn missing(&self) -> Vec<String> {
        let mut missing = Vec::new();
        let places = [
            (Some(&self.clip_l), WHAT[0], "--text-encoder"),
            (Some(&self.clip_g), WHAT[1], "--text-encoder"),
            (self.t5.as_ref(), WHAT[2], "--text-encoder"),
            (Some(&self.vae), "VAE", "--vae"),
        ];
        for (place, what, option) in places {
            if let Some(Place::Folder(folder)) = place {
                let stem = match what == "VAE" {
                    true => "diffusion_pytorch_model",
                    false => "model",
                };
                if choose_weights_file(folder, stem, Precision::F32).is_err()
                    && !folder
                        .join(format!("{stem}.safetensors.index.json"))
                        .is_file()
                {
                    missing.push(format!("the {what} ({option} FILE)"));
                }
            }
        }
        missing
    }
}

/// Each of `files` matched to the text encoder of `spec` it holds.
fn assign(files: &[PathBuf], spec: &Spec) -> Result<BTreeMap<&'static str, PathBuf>> {
    let clip_width = |width: usize| move |f: &Path| clip_file_width(f) == Some(width);
    let (l, g) = (
        clip_width(spec.clip_l.value.hidden_size),
        clip_width(spec.clip_g.value.hidden_size),
    );
    let t5_width = spec.t5.as_ref().map(|c| c.value.d_model);
    let t5 = move |f: &Path| t5_width.is_some() && t5_file_width(f) == t5_width;
    let fits: [&dyn Fn(&Path) -> bool; 3] = [&l, &g, &t5];
    let roles: Vec<Role> = TEXT_ENCODERS
        .iter()
        .zip(WHAT)
        .zip(fits)
        .map(|(((component, _), what), fits)| Role {
            component,
            what,
            fits,
        })
        .collect();
    component_roles::assign(files, &roles, "--text-encoder", "Stable Diffusion 3")
}

/// A text encoder file of its own: transformers' names, or a single file's under its prefix,
/// or llama.cpp's GGUF names (a T5 encoder's).
fn loose_text_encoder(file: &Path) -> Place {
    let Ok(tensors) = TensorFile::open(file) else {
        return Place::File {
            file: file.to_path_buf(),
            prefix: "",
        };
    };
    if tensors.names().any(|n| n == "token_embd.weight") {
        return Place::LlamaCppT5(file.to_path_buf());
    }
    let prefix = TEXT_ENCODERS
        .iter()
        .map(|(_, p)| *p)
        .find(|p| tensors.names().all(|n| n.starts_with(p) || is_fp8_scale(n)))
        .unwrap_or("");
    Place::File {
        file: file.to_path_buf(),
        prefix,
    }
}

/// `MMDIT` when the file keeps the MMDiT under it, else `""` (a file of the MMDiT alone).
fn mmdit_prefix(tensors: &TensorFile) -> &'static str {
    match tensors.names().any(|n| n.starts_with(MMDIT)) {
        true => MMDIT,
        false => "",
    }
}

/// The tensors of `file` under `prefix`, by their names without it.
fn under(file: &Path, prefix: &str) -> Result<FileWeights> {
    let tensors = TensorFile::open(file)?;
    let map = tensors
        .names()
        .filter(|n| n.starts_with(prefix) && !is_fp8_scale(n))
        .map(|n| (n[prefix.len()..].to_string(), n.to_string()))
        .collect();
    Ok(FileWeights::renamed(tensors, map))
}

/// The CLIP width of a text encoder file (its token embeddings' second dimension, in
/// transformers' names); `None` for any other file.
fn clip_file_width(file: &Path) -> Option<usize> {
    let place @ Place::File { .. } = loose_text_encoder(file) else {
        return None;
    };
    let weights = place.text_encoder().ok()?;
    let names = [
        "text_model.embeddings.token_embedding.weight",
        "embeddings.token_embedding.weight",
    ];
    names
        .iter()
        .find_map(|n| match weights.stored_shape(n)?[..] {
            [_, width] => Some(width),
            _ => None,
        })
}

/// The width of a T5 encoder file (its embeddings' second dimension); `None` for any other file.
fn t5_file_width(file: &Path) -> Option<usize> {
    let weights = loose_text_encoder(file).text_encoder().ok()?;
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

/// A CLIP with projection's weights at `place`, under either of transformers' namings.
pub(super) fn clip_weights(
    place: &Place,
    precision: Precision,
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    let (weights, file) = match place {
        Place::Folder(folder) => {
            let file = choose_weights_file(folder, "model", precision)?;
            (FileWeights::open(&file)?, file)
        }
        Place::File { file, .. } => (place.text_encoder()?, file.clone()),
        Place::LlamaCppT5(file) => {
            return Err(DiffusionError::unsupported(
                file,
                "is a T5 encoder in llama.cpp's names, where a CLIP text encoder was wanted",
            ))
        }
    };
    let weights = weights
        .with_aliases(clip::ALIASES)
        .ignoring(clip::IGNORED_WITH_PROJECTION);
    Ok((Box::new(weights), vec![file]))
}

/// T5's weights at `place`, the name its embeddings are stored under, and the files read.
pub(super) fn t5_weights(
    place: &Place,
    precision: Precision,
) -> Result<(Box<dyn WeightSource>, &'static str, Vec<PathBuf>)> {
    match place {
        Place::Folder(folder) => t5::folder::folder_weights(folder, precision),
        Place::File { file, .. } | Place::LlamaCppT5(file) => {
            let weights = place.text_encoder()?;
            let embedding = embedding_name(|n| weights.stored_shape(n).is_some());
            let weights = weights.ignoring(&t5::folder::unread(embedding));
            Ok((Box::new(weights), embedding, vec![file.clone()]))
        }
    }
}

/// The MMDiT's weights at `place`: a folder's in diffusers' names, a file's in Stability's.
pub(super) fn transformer_weights(
    place: &Place,
    precision: Precision,
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    match place {
        Place::Folder(folder) => {
            component_weights(folder, "diffusion_pytorch_model", precision, &[])
        }
        Place::File { file, prefix } => {
            let weights = mmdit_file(file, prefix)?;
            Ok((Box::new(weights), vec![file.clone()]))
        }
        Place::LlamaCppT5(file) => Err(not_a_text_encoder_here(file)),
    }
}

/// The refusal for a T5 file in llama.cpp's names where another network was wanted.
fn not_a_text_encoder_here(file: &Path) -> DiffusionError {
    DiffusionError::unsupported(
        file,
        "is a T5 encoder in llama.cpp's names, not this network",
    )
}

/// The MMDiT of `file` under `prefix`, in Stability's names, read under diffusers'.
fn mmdit_file(file: &Path, prefix: &str) -> Result<FileWeights> {
    let tensors = TensorFile::open(file)?;
    let names: Vec<String> = tensors
        .names()
        .filter(|n| n.starts_with(prefix) && !is_fp8_scale(n))
        .map(|n| n[prefix.len()..].to_string())
        .filter(|n| prefix == MMDIT || !n.starts_with(VAE) && !n.starts_with("text_encoders."))
        .collect();
    if !names.iter().any(|n| original_names::is_original(n)) {
        return Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: "is not a Stable Diffusion 3 MMDiT in Stability AI's names: it has no `joint_blocks.`".into(),
        });
    }
    let converted =
        original_names::convert_all(&names, |n| format!("{prefix}{n}")).map_err(|name| {
            DiffusionError::Tensor {
                path: file.to_path_buf(),
                tensor: format!("{prefix}{name}"),
                problem:
                    "has no counterpart in a Stable Diffusion 3 MMDiT; is the file another model's?"
                        .into(),
            }
        })?;
    Ok(FileWeights::converted(tensors, converted))
}

/// The VAE's weights at `place` (its decoder: the pipeline never encodes).
pub(super) fn vae_weights(
    place: &Place,
    blocks: usize,
    precision: Precision,
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    match place {
        Place::Folder(folder) => component_weights(
            folder,
            "diffusion_pytorch_model",
            precision,
            vae::ENCODER_PREFIXES,
        ),
        Place::File { file, prefix } => {
            let weights = vae_within(file, prefix, blocks)?.ignoring(vae::ENCODER_PREFIXES);
            Ok((Box::new(weights), vec![file.clone()]))
        }
        Place::LlamaCppT5(file) => Err(not_a_text_encoder_here(file)),
    }
}

/// Parameters at `place` that `counted` picks (by the names the model loads), read from headers.
pub(super) fn parameters(
    place: &Place,
    kind: FilePart,
    blocks: usize,
    precision: Precision,
    counted: &dyn Fn(&str) -> bool,
) -> Result<u64> {
    match place {
        Place::Folder(folder) => {
            let stem = match kind {
                FilePart::Vae => "diffusion_pytorch_model",
                FilePart::TextEncoder => "model",
            };
            component_parameters(folder, stem, precision, counted)
        }
        Place::File { file, prefix } => match kind {
            FilePart::Vae => Ok(vae_within(file, prefix, blocks)?.parameters(counted)),
            FilePart::TextEncoder => Ok(place.text_encoder()?.parameters(counted)),
        },
        Place::LlamaCppT5(_) => Ok(place.text_encoder()?.parameters(counted)),
    }
}

/// The transformer's parameters and what it keeps in codes.
pub(super) fn transformer_size(place: &Place, precision: Precision) -> Result<(u64, KeptWeights)> {
    let stem = "diffusion_pytorch_model";
    match place {
        Place::Folder(folder) => Ok((
            component_parameters(folder, stem, precision, |_| true)?,
            component_kept(folder, stem, precision)?,
        )),
        Place::File { file, prefix } => {
            let count = mmdit_file(file, prefix)?.parameters(|_| true);
            let kept = KeptWeights::of(&TensorFile::open(file)?, |n| n.starts_with(prefix));
            Ok((count, kept))
        }
        Place::LlamaCppT5(file) => Err(not_a_text_encoder_here(file)),
    }
}

/// The components a Stability single file holds besides the MMDiT (`FamilyDescriptor`'s
/// `DenoiserFiles::inside`).
pub(super) fn inside(file: &Path) -> Vec<&'static str> {
    let Ok(tensors) = TensorFile::open(file) else {
        return Vec::new();
    };
    let holds = |prefix: &str| tensors.names().any(|n| n.starts_with(prefix));
    let mut found: Vec<&'static str> = TEXT_ENCODERS
        .iter()
        .filter(|(_, prefix)| holds(prefix))
        .map(|(component, _)| *component)
        .collect();
    if holds(VAE) {
        found.push("vae");
    }
    found
}

/// Whether `file` holds `component` as the built-in configs have it (the upstream models'
/// widths), to pair a single file with the files beside it.
pub(super) fn part_fits(component: &Component, file: &Path) -> bool {
    match component.name {
        "text_encoder" => clip_file_width(file) == Some(clip_l().hidden_size),
        "text_encoder_2" => clip_file_width(file) == Some(clip_g().hidden_size),
        "text_encoder_3" => t5_file_width(file) == Some(T5Config::xxl().d_model),
        "vae" => vae_fits(file, &sd3_vae()),
        _ => false,
    }
}

/// The preset whose repository's configs a single file of Stability's needs, by its MMDiT's
/// sizes (`Ok(None)`: not an SD3 MMDiT file); an SD3 file of no built-in preset's sizes is
/// refused, asking for its configs.
pub(super) fn file_preset(file: &Path) -> Result<Option<Preset>> {
    let Ok(tensors) = TensorFile::open(file) else {
        return Ok(None);
    };
    let prefix = mmdit_prefix(&tensors);
    let names: Vec<String> = tensors
        .names()
        .filter_map(|n| n.strip_prefix(prefix))
        .map(str::to_string)
        .collect();
    if !names.iter().any(|n| original_names::is_original(n)) {
        return Ok(None);
    }
    let blocks = original_names::blocks(&names);
    let width = tensors
        .entry(&format!("{prefix}x_embedder.proj.weight"))
        .and_then(|e| e.shape.first().copied());
    let dual: Vec<usize> = (0..blocks)
        .filter(|i| {
            names
                .iter()
                .any(|n| n.starts_with(&format!("joint_blocks.{i}.x_block.attn2.")))
        })
        .collect();
    let qk_norm = names.iter().any(|n| n.contains(".attn.ln_q."));
    let matches = |c: &Sd3TransformerConfig| {
        c.num_layers == blocks
            && width == Some(c.num_attention_heads * c.attention_head_dim)
            && c.dual_attention_layers == dual
            && c.qk_norm.is_some() == qk_norm
    };
    let presets = super::family::FAMILY.presets;
    if let Some(&preset) = presets.iter().find(|&&p| {
        super::family::built_in_spec(p).is_ok_and(|spec| matches(&spec.transformer.value))
    }) {
        return Ok(Some(preset));
    }
    let width = width.map_or("of unknown width".to_string(), |w| format!("of width {w}"));
    Err(DiffusionError::unsupported(
        file,
        format!(
            "holds a Stable Diffusion 3 MMDiT of {blocks} joint blocks {width}, the sizes of no built-in SD3 or SD3.5 model (Medium, Large, SD3 Medium): give --model-config naming the diffusers folder of its configs"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with the names (and the embedder's width) of an MMDiT of `blocks` joint blocks,
    /// dual attention in `dual`, QK norms or not, under `model.diffusion_model.`, and `extra`.
    fn shaped(
        dir: &Path,
        blocks: usize,
        width: usize,
        dual: usize,
        qk: bool,
        extra: &[&str],
    ) -> PathBuf {
        let mut names = vec![];
        for i in 0..blocks {
            names.push(format!("{MMDIT}joint_blocks.{i}.x_block.attn.qkv.weight"));
            if qk {
                names.push(format!("{MMDIT}joint_blocks.{i}.x_block.attn.ln_q.weight"));
            }
            if i < dual {
                names.push(format!("{MMDIT}joint_blocks.{i}.x_block.attn2.qkv.weight"));
            }
        }
        names.extend(extra.iter().map(|n| n.to_string()));
        let embedder = vec![0.0f32; width];
        let one = [0.0f32];
        let embedder_name = format!("{MMDIT}x_embedder.proj.weight");
        let mut tensors: Vec<(&str, Vec<usize>, &[f32])> =
            vec![(embedder_name.as_str(), vec![width, 1], &embedder)];
        tensors.extend(names.iter().map(|n| (n.as_str(), vec![1], &one[..])));
        let path = dir.join(format!("mmdit-{blocks}-{width}-{dual}-{qk}.safetensors"));
        crate::io::safetensors::write_f32(&path, &tensors).unwrap();
        path
    }

    /// Each preset's MMDiT is told by its blocks, width, dual attention and QK norms; Large
    /// Turbo's shapes are Large's; other sizes are refused naming them; another file is not SD3's.
    #[test]
    fn a_single_files_preset_is_found_by_its_mmdits_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let found = |path: PathBuf| file_preset(&path).unwrap();
        assert_eq!(
            found(shaped(d, 24, 1536, 13, true, &[])),
            Some(Preset::SD35_MEDIUM)
        );
        assert_eq!(
            found(shaped(d, 38, 2432, 0, true, &[])),
            Some(Preset::SD35_LARGE)
        );
        assert_eq!(
            found(shaped(d, 24, 1536, 0, false, &[])),
            Some(Preset::SD3_MEDIUM)
        );
        let err = file_preset(&shaped(d, 24, 1536, 12, true, &[]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("24 joint blocks of width 1536") && err.contains("--model-config"),
            "{err}"
        );
        let err = file_preset(&shaped(d, 30, 1536, 0, true, &[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("30 joint blocks"), "{err}");
        let other = d.join("other.safetensors");
        crate::io::safetensors::write_f32(
            &other,
            &[("double_blocks.0.img_attn.qkv.weight", vec![1], &[0.0])],
        )
        .unwrap();
        assert_eq!(file_preset(&other).unwrap(), None);
    }

    /// What a single file holds beside the MMDiT, by its prefixes.
    #[test]
    fn a_single_files_other_components_are_found_by_their_prefixes() {
        let dir = tempfile::tempdir().unwrap();
        let with = [
            "first_stage_model.decoder.conv_in.weight",
            "text_encoders.clip_l.transformer.text_model.final_layer_norm.weight",
            "text_encoders.t5xxl.transformer.shared.weight",
        ];
        let file = shaped(dir.path(), 24, 1536, 13, true, &with);
        assert_eq!(inside(&file), ["text_encoder", "text_encoder_3", "vae"]);
        let bare = shaped(dir.path(), 24, 1536, 0, false, &[]);
        assert!(inside(&bare).is_empty());
    }
}
