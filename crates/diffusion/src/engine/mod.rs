//! The top of the engine: the family registry and the `Pipeline` every front end loads. A
//! model is handed to the family the registry finds for it (`registry::family_of`), whose
//! pipeline then runs behind `FamilyPipeline`. Nothing below this folder knows the families.

pub mod denoiser_parts;
pub mod registry;

use crate::device::{BackendKind, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::io::weights::Precision;
use crate::models::config::VaeConfig;
use crate::pipeline::host_memory::{choose_profile, AutoChoice};
use crate::pipeline::memory;
use crate::pipeline::memory_need::{ModelSize, RequestShape};
use crate::pipeline::{
    backend_failure, host_memory, CancelToken, FamilyPipeline, GenerateRequest, Generated,
    LoadOptions, ModelInfo, ModelSource, ParameterCounts, Placement, Progress, StepSync, TimedCall,
};

/// A loaded model of any family.
pub struct Pipeline {
    /// The device the denoiser runs on (and every component the placement does not put on the CPU).
    pub device: SelectedDevice,
    /// The denoiser's precision.
    pub precision: Precision,
    pub info: ModelInfo,
    model: Box<dyn FamilyPipeline>,
    /// What the load chose that the person did not ask for, for the front ends to show (the
    /// precision `auto` took on a machine short of memory).
    pub notes: Vec<String>,
    /// Declared after `model`, so it drops after the weights are freed.
    _heap: ReturnFreedOnDrop,
}

/// Hands the host heap's free pages back to the OS when a pipeline is dropped: the CPU backend
/// keeps freed blocks for reuse while a model runs (device/cpu_heap.rs).
struct ReturnFreedOnDrop;

impl Drop for ReturnFreedOnDrop {
    fn drop(&mut self) {
        crate::device::return_freed_heap();
    }
}

impl Pipeline {
    /// Loads a model onto `device` in `precision` (`None`: f16 where the device supports it) for
    /// text-to-image.
    pub fn load(
        source: &ModelSource,
        device: SelectedDevice,
        precision: Option<Precision>,
    ) -> Result<Self> {
        Self::load_with(source, device, precision, LoadOptions::default())
    }

    /// `load`, with the extra parts `options` asks for.
    pub fn load_with(
        source: &ModelSource,
        device: SelectedDevice,
        precision: Option<Precision>,
        options: LoadOptions,
    ) -> Result<Self> {
        let available = host_memory::available_host_memory();
        let mut notes = Vec::new();
        // The model's size, read from its configs and weight headers once for both memory
        // checks below (again only where `auto` chose another precision than the default).
        let mut sized = None;
        let precision = match precision {
            Some(precision) => precision,
            None => {
                let default = device.default_precision();
                let (size, vae) = Self::model_size(source, default)?;
                let work = options
                    .planned
                    .unwrap_or_else(|| RequestShape::usual(size.family));
                let (precision, note) =
                    host_memory::auto_precision(&size, &vae, &device, &work, &options, available);
                notes.extend(note);
                sized = Some((default, size, vae));
                precision
            }
        };
        if !device.supports(precision) {
            let instead = if device.supports(Precision::F16) {
                "f16 or f32"
            } else {
                "f32"
            };
            return Err(DiffusionError::BackendUnavailable {
                backend: device.kind.name().into(),
                reason: format!(
                    "{} does not support {}; use --precision {instead}",
                    device.info.name,
                    precision.name()
                ),
            });
        }
        let family = registry::family_of(source)?;
        if let Some(available) = available {
            let (size, vae) = match sized {
                Some((sized_in, size, vae)) if sized_in == precision => (size, vae),
                _ => Self::model_size(source, precision)?,
            };
            let placement = Placement::for_model(size.family, &vae, precision, &options);
            let work = options
                .planned
                .unwrap_or_else(|| RequestShape::usual(size.family));
            host_memory::check_host_fit(
                &size, &vae, &placement, &device, &work, &options, available,
            )?;
        }
        let profile = memory::MemoryProfile::of_options(&options);
        let model = backend_failure::guard(&device, profile, Some(precision), || {
            (family.load)(source, device.clone(), precision, options)
        })?;
        Ok(Pipeline {
            device: model.device().clone(),
            precision: model.info().placement.denoiser,
            info: model.info().clone(),
            model,
            notes,
            _heap: ReturnFreedOnDrop,
        })
    }

    /// What the memory estimate needs to know of `source` (its family, parameters and VAE), read
    /// from its configs and weight headers without loading anything.
    pub fn model_size(
        source: &ModelSource,
        precision: Precision,
    ) -> Result<(ModelSize, VaeConfig)> {
        (registry::family_of(source)?.model_size)(source, precision)
    }

    /// The memory a model of `source` needs for requests of `work` in `profile` at `precision`
    /// on a device of `kind`, from its configs and weight headers (nothing is loaded): the figure
    /// the fit check compares with the device's memory, or on the CPU backend with the host's.
    pub fn memory_need(
        source: &ModelSource,
        kind: BackendKind,
        precision: Precision,
        profile: memory::MemoryProfile,
        work: &RequestShape,
    ) -> Result<u64> {
        let (size, vae) = Self::model_size(source, precision)?;
        let options = profile.load_options(LoadOptions {
            planned: Some(*work),
            ..LoadOptions::default()
        });
        let placement = Placement::for_model(size.family, &vae, precision, &options);
        Ok(match kind {
            BackendKind::Cpu => host_memory::host_need(&size, &placement, true, work),
            _ => crate::pipeline::memory_need::estimate(&size, &placement, work).peak(),
        })
    }

    /// The family's own pipeline inside, for its component access (parity tests, timing):
    /// `None` when the model is of another family.
    pub fn family_pipeline<T: 'static>(&self) -> Option<&T> {
        self.model.as_any().downcast_ref()
    }

    pub fn validate(&self, request: &GenerateRequest) -> Result<()> {
        self.model.validate(request)
    }

    pub fn check_fits(&self, shape: &RequestShape) -> Result<()> {
        self.model.check_fits(shape)
    }

    /// Runs one generation with a device sync after every step (live step progress and per-step
    /// times). `progress` receives stage and step events; `cancel` is checked between steps.
    pub fn generate(
        &self,
        request: &GenerateRequest,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated> {
        self.generate_with_sync(request, StepSync::EveryStep, progress, cancel)
    }

    pub fn generate_with_sync(
        &self,
        request: &GenerateRequest,
        sync: StepSync,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated> {
        self.model
            .generate_with_sync(request, sync, progress, cancel)
    }

    /// A step-distilled model (FLUX.2 klein 4B) ignores the guidance scale.
    pub fn ignores_guidance(&self) -> bool {
        self.model.ignores_guidance()
    }

    /// For callers that want a picture or nothing: an error when `generated` holds NaN or
    /// infinite values. (A benchmark records such an image as invalid instead.)
    pub fn require_finite(&self, generated: &Generated) -> Result<()> {
        if generated.non_finite() == 0 {
            return Ok(());
        }
        Err(DiffusionError::Backend {
            backend: self.device.kind.name().into(),
            message: format!(
                "the decoded image contains {} NaN or infinite values (numeric overflow in {}); try --precision f32",
                generated.non_finite(),
                self.precision.name()
            ),
        })
    }

    pub fn parameter_counts(&self) -> ParameterCounts {
        self.model.parameter_counts()
    }

    pub fn memory_profile(&self) -> Option<memory::MemoryProfile> {
        self.model.memory_profile()
    }

    /// Bytes of the denoiser's weights as stored (int8 weights count a byte each).
    pub fn denoiser_weight_bytes(&self) -> u64 {
        self.model.denoiser_weight_bytes()
    }

    pub fn has_vae_encoder(&self) -> bool {
        self.model.has_vae_encoder()
    }

    pub fn decode_tile_count(&self, width: usize, height: usize) -> usize {
        self.model.decode_tile_count(width, height)
    }

    pub fn denoiser_name(&self) -> &'static str {
        self.model.denoiser_name()
    }

    pub fn timed_calls(&self, width: usize, height: usize) -> Result<Vec<TimedCall<'_>>> {
        self.model.timed_calls(width, height)
    }
}

/// `--memory auto`: the fastest profile whose estimated need for `work` fits the device's memory
/// and whose host part (what it keeps on the CPU) fits the host's available memory; `cpu` when no
/// profile fits the device (the caller then selects the CPU backend); on the CPU backend `cpu`, or
/// `minimal` where only its int8 weights fit the host; `full` when the device's memory size is
/// unknown, saying so. Profiles that fit the device but
/// not the host are refused with both figures, before anything loads.
pub fn choose_auto(
    source: &ModelSource,
    device: &SelectedDevice,
    precision: Option<Precision>,
    work: &RequestShape,
) -> Result<AutoChoice> {
    // On the CPU, `--precision auto` takes bf16 where f32 does not fit (`auto_precision`): the
    // lightest it can run in is what int8 is weighed against.
    let precision = precision.unwrap_or_else(|| match device.kind {
        BackendKind::Cpu if device.supports(Precision::Bf16) => Precision::Bf16,
        _ => device.default_precision(),
    });
    let (size, vae) = Pipeline::model_size(source, precision)?;
    let host = host_memory::available_host_memory();
    choose_profile(&size, &vae, device, precision, work, host)
}
