//! A model read as three parts (a text encoder, a denoiser, a VAE) from a diffusers folder, each
//! part's weights from a file of its own where one is given, or from synthetic weights: the
//! load, open and size skeleton that the families built this way (the diffusion transformers)
//! share. A family says what differs (`ThreePartModel`: its configs, names and prompt, and how
//! it assembles the loaded parts); `load` and `model_size` are written once.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::device::SelectedDevice;
use crate::error::Result;
use crate::io::component_file::{
    denoiser_weights, needs_its_folder, text_encoder_weights, DenoiserNames, TextEncoderNames,
};
use crate::io::kept_weights::KeptWeights;
use crate::io::synthetic_weights::SyntheticWeights;
use crate::io::weights::{Precision, WeightSource};
use crate::models::config::VaeConfig;
use crate::models::vae_file::vae_weights;
use crate::pipeline::family::Family;
use crate::pipeline::memory_need::ModelSize;
use crate::pipeline::part_files::{loaded_from, WeightFiles};
use crate::pipeline::{folder_index, ComponentFiles, LoadOptions, ModelSource, Placement};

/// The seed every synthetic part's weights are drawn with.
const SYNTHETIC_SEED: u64 = 0x5D_BE_AC_15;

/// What a three-part family tells the shared skeleton.
pub trait ThreePartModel: Sized {
    /// The architecture its models are counted as.
    const FAMILY: Family;
    /// The family's configs.
    type Spec;
    /// What its text encoder reads a prompt with (loaded from a folder; synthetic weights have none).
    type Prompt;

    /// A folder's configs, checked.
    fn read_spec(folder: &Path, index: &Map<String, Value>) -> Result<Self::Spec>;
    /// The built-in configs synthetic weights (and a size without files) are counted with.
    fn built_in_spec() -> Self::Spec;
    fn vae(spec: &Self::Spec) -> &VaeConfig;
    /// The text encoder's tensors the pipeline does not read.
    fn text_unused(spec: &Self::Spec) -> Vec<String>;
    /// How each part's tensors are named and which are not read.
    fn part_names<'a>(spec: &Self::Spec, text_unused: &'a [String]) -> PartNames<'a>;
    /// The VAE's tensors a load with `options` leaves unread (its encoder, unless asked for).
    fn vae_unused(options: &LoadOptions) -> Vec<&'static str>;
    /// The denoiser's parameters kept in f32 whatever the run's precision.
    fn denoiser_full_precision_params(spec: &Self::Spec) -> u64;
    fn load_prompt(spec: &Self::Spec) -> Result<Self::Prompt>;
    /// Builds the pipeline from its parts' weights.
    fn assemble(parts: Assembly<'_, Self::Spec, Self::Prompt>) -> Result<Self>;
}

/// What `ThreePartModel::assemble` builds a pipeline from.
pub struct Assembly<'a, S, P> {
    pub spec: S,
    pub size: ModelSize,
    /// Text encoder, denoiser, VAE.
    pub sources: [&'a mut dyn WeightSource; 3],
    pub prompt: Option<P>,
    pub device: SelectedDevice,
    pub placement: Placement,
    pub options: LoadOptions,
    pub source: ModelSource,
    pub weight_files: Vec<PathBuf>,
}

/// Loads a family's folder, a denoiser file with the folder that goes with it (`--model-config`:
/// its other parts and configs, unless files are given for them), or synthetic weights (the
/// device supports `precision`: `Pipeline::load_with` checked).
pub fn load<M: ThreePartModel>(
    source: &ModelSource,
    device: SelectedDevice,
    precision: Precision,
    options: LoadOptions,
) -> Result<M> {
    let no_parts = ComponentFiles::default();
    let (folder, file, parts) = match source {
        ModelSource::Folder(folder) => (folder, None, &no_parts),
        ModelSource::Checkpoint {
            file,
            config: Some(folder),
            parts,
        } => (folder, Some(file.as_path()), parts),
        ModelSource::Checkpoint {
            file, config: None, ..
        } => {
            let spec = M::built_in_spec();
            let what = M::part_names(&spec, &[]).denoiser.what;
            return Err(needs_its_folder(file, what));
        }
        ModelSource::Synthetic(_) => {
            let spec = M::built_in_spec();
            let [te, tr, va] = &mut [0; 3].map(|_| SyntheticWeights::new(SYNTHETIC_SEED));
            return M::assemble(Assembly {
                placement: placement::<M>(&spec, precision, &options),
                size: size_of::<M>(&spec, None)?,
                spec,
                sources: [te, tr, va],
                prompt: None,
                device,
                options,
                source: source.clone(),
                weight_files: Vec::new(),
            });
        }
    };
    let spec = M::read_spec(folder, &folder_index(folder)?)?;
    let placement = placement::<M>(&spec, precision, &options);
    let weights = WeightFiles {
        folder,
        denoiser: file,
        parts,
        precision,
    };
    let text_unused = M::text_unused(&spec);
    let names = M::part_names(&spec, &text_unused);
    let in_placement = [placement.text_encoders, placement.denoiser, placement.vae];
    let vae_unused = M::vae_unused(&options);
    let ([mut te, mut tr, mut va], weight_files) =
        names.open(&weights, in_placement, &vae_unused)?;
    let size = size_of::<M>(&spec, Some(&weights))?;
    let prompt = M::load_prompt(&spec)?;
    M::assemble(Assembly {
        spec,
        size,
        sources: [te.as_mut(), tr.as_mut(), va.as_mut()],
        prompt: Some(prompt),
        device,
        placement,
        options,
        source: loaded_from(folder, file, parts),
        weight_files,
    })
}

/// What the memory estimate needs of `source`, from its configs and weight headers (a
/// denoiser file's architecture is its folder's: the load checks every shape); the built-in
/// configs' upstream size for synthetic weights.
pub fn model_size<M: ThreePartModel>(
    source: &ModelSource,
    precision: Precision,
) -> Result<(ModelSize, VaeConfig)> {
    let no_parts = ComponentFiles::default();
    let (folder, denoiser, parts) = match source {
        ModelSource::Folder(folder) => (folder, None, &no_parts),
        ModelSource::Checkpoint {
            file,
            config: Some(folder),
            parts,
        } => (folder, Some(file.as_path()), parts),
        _ => {
            let spec = M::built_in_spec();
            return Ok((size_of::<M>(&spec, None)?, M::vae(&spec).clone()));
        }
    };
    let spec = M::read_spec(folder, &folder_index(folder)?)?;
    let files = WeightFiles {
        folder,
        denoiser,
        parts,
        precision,
    };
    Ok((size_of::<M>(&spec, Some(&files))?, M::vae(&spec).clone()))
}

/// Each part's precision and device.
pub fn placement<M: ThreePartModel>(
    spec: &M::Spec,
    precision: Precision,
    options: &LoadOptions,
) -> Placement {
    Placement::for_model(M::FAMILY, M::vae(spec), precision, options)
}

/// Parameters of the parts that run, from the files' headers (a folder, and the files given
/// with it) or, without files, the upstream model's.
fn size_of<M: ThreePartModel>(spec: &M::Spec, files: Option<&WeightFiles>) -> Result<ModelSize> {
    let upstream = ModelSize::upstream(M::FAMILY, M::vae(spec).sample_size);
    let Some(files) = files else {
        return Ok(upstream);
    };
    let text_unused = M::text_unused(spec);
    let counted = M::part_names(spec, &text_unused).parameters(files)?;
    Ok(ModelSize {
        text_encoder_params: counted.text_encoder,
        denoiser_params: counted.denoiser,
        denoiser_full_precision_params: M::denoiser_full_precision_params(spec),
        denoiser_kept: counted.denoiser_kept,
        vae_decoder_params: counted.vae_decoder,
        vae_encoder_params: counted.vae_encoder,
        ..upstream
    })
}

/// How a family names each part's tensors, and which of them it leaves unread.
pub struct PartNames<'a> {
    pub text_encoder: TextEncoderNames,
    /// Name prefixes of the text encoder's tensors not read (later layers, a head).
    pub text_unused: &'a [String],
    pub denoiser: &'a DenoiserNames,
    pub denoiser_unused: &'a [&'a str],
    /// The VAE's blocks (how a VAE file's names are read).
    pub vae_blocks: usize,
    /// Name prefixes of the VAE's encoder (counted apart from its decoder).
    pub vae_encoder: &'a [&'a str],
    /// Name prefixes of VAE tensors counted in neither (batch-norm statistics).
    pub vae_uncounted: &'a [&'a str],
}

/// The three parts' weights, in the order text encoder, denoiser, VAE.
pub type PartSources = [Box<dyn WeightSource>; 3];

/// Parameters of each part, from its files' headers.
pub struct PartParameters {
    pub text_encoder: u64,
    pub denoiser: u64,
    /// What the denoiser keeps in its codes (GGUF, FP8).
    pub denoiser_kept: KeptWeights,
    pub vae_decoder: u64,
    pub vae_encoder: u64,
}

impl PartNames<'_> {
    /// Each part's weights from `files`, in the precision given for it (text encoder, denoiser,
    /// VAE), with `vae_unused` left unread of the VAE; and the files read, in that order.
    pub fn open(
        &self,
        files: &WeightFiles,
        [text, denoiser, vae]: [Precision; 3],
        vae_unused: &[&str],
    ) -> Result<(PartSources, Vec<PathBuf>)> {
        let text_unused: Vec<&str> = self.text_unused.iter().map(String::as_str).collect();
        let (te, mut read) = text_encoder_weights(
            files.folder,
            files.parts.text_encoder(self.text_encoder.what)?,
            &self.text_encoder,
            text,
            &text_unused,
        )?;
        let (tr, tr_files) = denoiser_weights(
            files.folder,
            files.denoiser,
            self.denoiser,
            denoiser,
            self.denoiser_unused,
        )?;
        let (va, vae_files) = vae_weights(
            files.folder,
            files.parts.vae.as_deref(),
            self.vae_blocks,
            vae,
            vae_unused,
        )?;
        read.extend(tr_files);
        read.extend(vae_files);
        Ok(([te, tr, va], read))
    }

    /// Parameters of the tensors each part reads, from the files' headers (nothing is loaded).
    pub fn parameters(&self, files: &WeightFiles) -> Result<PartParameters> {
        let starts = |name: &str, prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
        let text_read = |name: &str| {
            !self
                .text_unused
                .iter()
                .any(|p| name.starts_with(p.as_str()))
        };
        let encoder = |name: &str| starts(name, self.vae_encoder);
        let decoder = |name: &str| !encoder(name) && !starts(name, self.vae_uncounted);
        Ok(PartParameters {
            text_encoder: files.text_encoder_parameters(&self.text_encoder, &text_read)?,
            denoiser: files
                .denoiser_parameters(self.denoiser, &|name| !starts(name, self.denoiser_unused))?,
            denoiser_kept: files.denoiser_kept()?,
            vae_decoder: files.vae_parameters(self.vae_blocks, &decoder)?,
            vae_encoder: files.vae_parameters(self.vae_blocks, &encoder)?,
        })
    }
}
