//! Where each component of a pipeline runs and in which precision, and the load options (memory
//! profiles' switches) it comes from.

use burn::DispatchDevice;

use crate::io::weights::Precision;
use crate::models::config::VaeConfig;
use crate::pipeline::memory_need::RequestShape;
use crate::pipeline::Family;

/// Where each component runs and in which precision. The denoiser runs on the pipeline's device in
/// the run's precision; the text encoders and the VAE may run on the CPU backend instead (in f32),
/// leaving the device's memory to the denoiser. A VAE whose config asks for it
/// (`force_upcast`, SDXL's) decodes in f32 where its family honours that, as diffusers does, so
/// that f16 runs never give black images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub text_encoders: Precision,
    pub denoiser: Precision,
    pub vae: Precision,
    pub text_encoders_on_cpu: bool,
    pub vae_on_cpu: bool,
    /// Guided steps run the denoiser twice (unconditional, then conditional) on the batch instead of
    /// once on the doubled batch.
    pub sequential_cfg: bool,
    /// The VAE decodes (and encodes) tile by tile when the image is larger than its tile
    /// (`models::vae_tiling`, diffusers' `enable_vae_tiling`).
    pub vae_tiling: bool,
    /// The allocator's unused memory goes back to the device between denoising and decoding.
    pub release_memory_between_stages: bool,
    /// The denoiser's weights move to host memory while the VAE decodes, and back for the next image.
    pub denoiser_offload: bool,
    /// The denoiser's linear and convolution weights are int8 on the device, dequantized to `denoiser`'s
    /// precision layer by layer (W8A16, `nn::int8`).
    pub denoiser_int8: bool,
    /// Tiled decoding and encoding use tiles of half the VAE's own side (a quarter of its
    /// activations).
    pub small_vae_tiles: bool,
    /// The VAE's encoder is loaded (image-to-image), beside its decoder.
    pub vae_encoder: bool,
}

impl Placement {
    /// The device the text encoders run on: the CPU backend (`cpu`) or the pipeline's `device`.
    pub(crate) fn text_device<'a>(
        &self,
        device: &'a DispatchDevice,
        cpu: &'a DispatchDevice,
    ) -> &'a DispatchDevice {
        if self.text_encoders_on_cpu {
            cpu
        } else {
            device
        }
    }

    /// The device the VAE runs on.
    pub(crate) fn vae_device<'a>(
        &self,
        device: &'a DispatchDevice,
        cpu: &'a DispatchDevice,
    ) -> &'a DispatchDevice {
        if self.vae_on_cpu {
            cpu
        } else {
            device
        }
    }

    pub(crate) fn for_model(
        family: Family,
        vae: &VaeConfig,
        precision: Precision,
        options: &LoadOptions,
    ) -> Self {
        // diffusers upcasts a VAE marked `force_upcast` only from f16, whose range it overflows
        // (bf16 has f32's), and only in the pipelines that read the flag (SDXL's).
        let upcast = family.architecture().honours_vae_force_upcast
            && vae.force_upcast
            && precision != Precision::Bf16;
        let vae_precision = if options.vae_on_cpu || upcast {
            Precision::F32
        } else {
            precision
        };
        Placement {
            text_encoders: if options.text_encoders_on_cpu {
                Precision::F32
            } else {
                precision
            },
            denoiser: precision,
            vae: vae_precision,
            text_encoders_on_cpu: options.text_encoders_on_cpu,
            vae_on_cpu: options.vae_on_cpu,
            sequential_cfg: options.sequential_cfg,
            vae_tiling: options.vae_tiling,
            release_memory_between_stages: options.release_memory_between_stages,
            denoiser_offload: options.denoiser_offload,
            denoiser_int8: options.denoiser_int8,
            small_vae_tiles: options.vae_tiling && options.small_vae_tiles,
            // A family that never starts from a picture keeps no VAE encoder on the device.
            vae_encoder: options.vae_encoder && family.architecture().image_to_image,
        }
    }
}

/// What to load besides what text-to-image needs, and where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// The VAE encoder, which image-to-image requests need.
    pub vae_encoder: bool,
    /// Run the text encoders on the CPU backend (f32) instead of the device.
    pub text_encoders_on_cpu: bool,
    /// Run the VAE on the CPU backend (f32) instead of the device.
    pub vae_on_cpu: bool,
    /// Sequential classifier-free guidance: each guided step runs the denoiser on the unconditional
    /// and then the conditional half instead of on both at once, halving the denoiser's activation
    /// memory for two calls' worth of weight reads. The result is the same.
    pub sequential_cfg: bool,
    /// Tiled VAE decoding and encoding above the VAE's tile size: one tile's activation memory
    /// instead of the whole image's, at a slightly different result (diffusers' tiled output).
    pub vae_tiling: bool,
    /// Hand the allocator's unused memory back to the device after the denoising loop, so the
    /// VAE (or another program) can have what the denoiser's activations used. Costs a reallocation.
    pub release_memory_between_stages: bool,
    /// Move the denoiser's weights to host memory before the VAE decodes (and back before the next
    /// image's denoising), so the decode has the device's memory without them. Costs two weight
    /// transfers per image. Nothing moves when the pipeline runs on the CPU.
    pub denoiser_offload: bool,
    /// Store the denoiser's linear and convolution weights as int8 with a scale per output channel
    /// (W8A16: about half the weight memory of f16), dequantized layer by layer. Each family keeps
    /// the layers int8 would harm in the run's precision (SD: the first and last convolutions and
    /// the embeddings; the transformers: their embedders and more, as each family's load names).
    pub denoiser_int8: bool,
    /// Attention in smaller query chunks (`memory::SMALL_SCORE_BUDGET` score elements per call
    /// instead of `nn::SCORE_BUDGET`) where the backend does not tile attention itself.
    pub small_attention_chunks: bool,
    /// With `vae_tiling`, decode and encode in tiles of half the VAE's own side: a quarter of a
    /// tile's activation memory, more tiles (SDXL's VAE tiles are 1024 pixels, so a 1024x1024
    /// decode would otherwise be one piece).
    pub small_vae_tiles: bool,
    /// The request the front end will make first, which the fit check measures the placement
    /// against before any weight is read (`None`: one guided image at the family's usual size).
    /// Every request is checked again before it runs.
    pub planned: Option<RequestShape>,
}
