//! Stable Diffusion's presets: the configs of upstream SD1.5, SD2.1 and SDXL base, copied verbatim
//! from the repositories they name.

use serde_json::{Map, Value};

use crate::families::sd::unet::config::UNetConfig;
use crate::models::config::{ClipConfig, VaeConfig};
use crate::pipeline::family::{Family, PresetSpec};
use crate::pipeline::Preset;

pub(super) static SD15: PresetSpec = PresetSpec {
    name: "sd15",
    repository: "stable-diffusion-v1-5/stable-diffusion-v1-5",
    family: Family(&super::family::SD1),
    short_label: "SD1.5",
    long_label: "Stable Diffusion 1.5",
    step_cost: 1.0,
    op_cases: Some(super::op_cases::SD15_OP_CASES),
};

/// 768 px, v-prediction.
pub(super) static SD21: PresetSpec = PresetSpec {
    name: "sd21",
    repository: "stabilityai/stable-diffusion-2-1",
    family: Family(&super::family::SD2),
    short_label: "SD2.1",
    long_label: "Stable Diffusion 2.1",
    step_cost: 1.0,
    op_cases: None,
};

pub(super) static SDXL_BASE: PresetSpec = PresetSpec {
    name: "sdxl-base",
    repository: "stabilityai/stable-diffusion-xl-base-1.0",
    family: Family(&super::family::SDXL),
    short_label: "SDXL",
    long_label: "Stable Diffusion XL base 1.0",
    // SDXL's UNet does about twice SD1.5's work per latent pixel.
    step_cost: 2.0,
    op_cases: None,
};

impl Preset {
    pub const SD15: Preset = Preset(&SD15);
    pub const SD21: Preset = Preset(&SD21);
    pub const SDXL_BASE: Preset = Preset(&SDXL_BASE);
}

/// A preset's component configs.
pub struct PresetConfigs {
    pub text_encoder: ClipConfig,
    pub text_encoder_2: Option<ClipConfig>,
    pub unet: UNetConfig,
    pub vae: VaeConfig,
    pub scheduler: Map<String, Value>,
    /// The tokenizers' pad token: SD1.5 pads with end-of-text, SD2.x's and SDXL's second
    /// tokenizer with "!".
    pub pad_with_exclamation: [bool; 2],
}

/// A Stable Diffusion preset's configs, parsed as a model folder's files are (`None` for other
/// families' presets).
pub fn configs(preset: Preset) -> Option<PresetConfigs> {
    fn parse<T: serde::de::DeserializeOwned>(text: &str) -> T {
        serde_json::from_str(text).expect("built-in config")
    }
    Some(if preset == Preset::SD15 {
        PresetConfigs {
            text_encoder: ClipConfig::sd15(),
            text_encoder_2: None,
            unet: UNetConfig::sd15(),
            vae: VaeConfig::sd15(),
            scheduler: parse(SD15_SCHEDULER),
            pad_with_exclamation: [false, false],
        }
    } else if preset == Preset::SD21 {
        PresetConfigs {
            text_encoder: parse(SD21_TEXT_ENCODER),
            text_encoder_2: None,
            unet: parse(SD21_UNET),
            // stabilityai/stable-diffusion-2-1: vae/config.json is SD1.5's but for its
            // sample size (the tile diffusers' tiled decoding uses).
            vae: VaeConfig {
                sample_size: 768,
                ..VaeConfig::sd15()
            },
            scheduler: parse(SD21_SCHEDULER),
            pad_with_exclamation: [true, false],
        }
    } else if preset == Preset::SDXL_BASE {
        PresetConfigs {
            text_encoder: ClipConfig::sd15(),
            text_encoder_2: Some(parse(SDXL_TEXT_ENCODER_2)),
            unet: parse(SDXL_UNET),
            vae: parse(SDXL_VAE),
            scheduler: parse(SDXL_SCHEDULER),
            pad_with_exclamation: [false, true],
        }
    } else {
        return None;
    })
}

/// The preset whose text encoder(s), UNet and VAE configs equal these (a fine-tune of it
/// computes exactly what it does), if any.
pub fn matching(
    text_encoder: &ClipConfig,
    text_encoder_2: Option<&ClipConfig>,
    unet: &UNetConfig,
    vae: &VaeConfig,
) -> Option<Preset> {
    super::FAMILY.presets.iter().copied().find(|&p| {
        let Some(c) = configs(p) else {
            return false;
        };
        // The VAE's sample size is only its tile size when tiling (SD2.1 says 768, 2.1-base 512).
        let vae = VaeConfig {
            sample_size: c.vae.sample_size,
            ..vae.clone()
        };
        &c.text_encoder == text_encoder
            && c.text_encoder_2.as_ref() == text_encoder_2
            && &c.unet == unet
            && c.vae == vae
    })
}

/// stable-diffusion-v1-5: scheduler/scheduler_config.json
const SD15_SCHEDULER: &str = r#"{"_class_name": "PNDMScheduler", "_diffusers_version": "0.6.0",
 "beta_end": 0.012, "beta_schedule": "scaled_linear", "beta_start": 0.00085,
 "num_train_timesteps": 1000, "set_alpha_to_one": false, "skip_prk_steps": true, "steps_offset": 1,
 "trained_betas": null, "clip_sample": false}"#;

/// stabilityai/stable-diffusion-2-1: text_encoder/config.json
const SD21_TEXT_ENCODER: &str = r#"{"architectures": ["CLIPTextModel"], "attention_dropout": 0.0,
 "bos_token_id": 0, "dropout": 0.0, "eos_token_id": 2, "hidden_act": "gelu", "hidden_size": 1024,
 "initializer_factor": 1.0, "initializer_range": 0.02, "intermediate_size": 4096,
 "layer_norm_eps": 1e-05, "max_position_embeddings": 77, "model_type": "clip_text_model",
 "num_attention_heads": 16, "num_hidden_layers": 23, "pad_token_id": 1, "projection_dim": 512,
 "torch_dtype": "float32", "vocab_size": 49408}"#;

/// stabilityai/stable-diffusion-2-1: unet/config.json
const SD21_UNET: &str = r#"{"_class_name": "UNet2DConditionModel", "_diffusers_version": "0.10.0.dev0",
 "act_fn": "silu", "attention_head_dim": [5, 10, 20, 20], "block_out_channels": [320, 640, 1280, 1280],
 "center_input_sample": false, "cross_attention_dim": 1024,
 "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
 "downsample_padding": 1, "dual_cross_attention": false, "flip_sin_to_cos": true, "freq_shift": 0,
 "in_channels": 4, "layers_per_block": 2, "mid_block_scale_factor": 1, "norm_eps": 1e-05,
 "norm_num_groups": 32, "num_class_embeds": null, "only_cross_attention": false, "out_channels": 4,
 "sample_size": 96,
 "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
 "upcast_attention": true, "use_linear_projection": true}"#;

/// stabilityai/stable-diffusion-2-1: scheduler/scheduler_config.json
const SD21_SCHEDULER: &str = r#"{"_class_name": "DDIMScheduler", "_diffusers_version": "0.8.0",
 "beta_end": 0.012, "beta_schedule": "scaled_linear", "beta_start": 0.00085, "clip_sample": false,
 "num_train_timesteps": 1000, "prediction_type": "v_prediction", "set_alpha_to_one": false,
 "skip_prk_steps": true, "steps_offset": 1, "trained_betas": null}"#;

/// stabilityai/stable-diffusion-xl-base-1.0: text_encoder_2/config.json
const SDXL_TEXT_ENCODER_2: &str = r#"{"architectures": ["CLIPTextModelWithProjection"],
 "attention_dropout": 0.0, "bos_token_id": 0, "dropout": 0.0, "eos_token_id": 2, "hidden_act": "gelu",
 "hidden_size": 1280, "initializer_factor": 1.0, "initializer_range": 0.02, "intermediate_size": 5120,
 "layer_norm_eps": 1e-05, "max_position_embeddings": 77, "model_type": "clip_text_model",
 "num_attention_heads": 20, "num_hidden_layers": 32, "pad_token_id": 1, "projection_dim": 1280,
 "torch_dtype": "float16", "vocab_size": 49408}"#;

/// stabilityai/stable-diffusion-xl-base-1.0: unet/config.json
const SDXL_UNET: &str = r#"{"_class_name": "UNet2DConditionModel", "_diffusers_version": "0.19.0.dev0",
 "act_fn": "silu", "addition_embed_type": "text_time", "addition_embed_type_num_heads": 64,
 "addition_time_embed_dim": 256, "attention_head_dim": [5, 10, 20], "block_out_channels": [320, 640, 1280],
 "center_input_sample": false, "class_embed_type": null, "class_embeddings_concat": false,
 "conv_in_kernel": 3, "conv_out_kernel": 3, "cross_attention_dim": 2048, "cross_attention_norm": null,
 "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"],
 "downsample_padding": 1, "dual_cross_attention": false, "encoder_hid_dim": null,
 "encoder_hid_dim_type": null, "flip_sin_to_cos": true, "freq_shift": 0, "in_channels": 4,
 "layers_per_block": 2, "mid_block_only_cross_attention": null, "mid_block_scale_factor": 1,
 "mid_block_type": "UNetMidBlock2DCrossAttn", "norm_eps": 1e-05, "norm_num_groups": 32,
 "num_attention_heads": null, "num_class_embeds": null, "only_cross_attention": false,
 "out_channels": 4, "projection_class_embeddings_input_dim": 2816, "resnet_out_scale_factor": 1.0,
 "resnet_skip_time_act": false, "resnet_time_scale_shift": "default", "sample_size": 128,
 "time_cond_proj_dim": null, "time_embedding_act_fn": null, "time_embedding_dim": null,
 "time_embedding_type": "positional", "timestep_post_act": null,
 "transformer_layers_per_block": [1, 2, 10],
 "up_block_types": ["CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"],
 "upcast_attention": null, "use_linear_projection": true}"#;

/// stabilityai/stable-diffusion-xl-base-1.0: vae/config.json
const SDXL_VAE: &str = r#"{"_class_name": "AutoencoderKL", "_diffusers_version": "0.20.0.dev0",
 "act_fn": "silu", "block_out_channels": [128, 256, 512, 512],
 "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D"],
 "force_upcast": true, "in_channels": 3, "latent_channels": 4, "layers_per_block": 2,
 "norm_num_groups": 32, "out_channels": 3, "sample_size": 1024, "scaling_factor": 0.13025,
 "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D"]}"#;

/// stabilityai/stable-diffusion-xl-base-1.0: scheduler/scheduler_config.json
const SDXL_SCHEDULER: &str = r#"{"_class_name": "EulerDiscreteScheduler", "_diffusers_version": "0.19.0.dev0",
 "beta_end": 0.012, "beta_schedule": "scaled_linear", "beta_start": 0.00085, "clip_sample": false,
 "interpolation_type": "linear", "num_train_timesteps": 1000, "prediction_type": "epsilon",
 "sample_max_value": 1.0, "set_alpha_to_one": false, "skip_prk_steps": true, "steps_offset": 1,
 "timestep_spacing": "leading", "trained_betas": null, "use_karras_sigmas": false}"#;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn every_preset_is_a_model_the_engine_can_build() {
        let here = Path::new("<preset>");
        for &preset in crate::families::sd::FAMILY.presets {
            let c = configs(preset).unwrap();
            c.text_encoder.validate(here).unwrap();
            if let Some(te2) = &c.text_encoder_2 {
                te2.validate(here).unwrap();
            }
            c.unet.plan(here).unwrap();
            c.vae.validate(here).unwrap();
            assert_eq!(
                matching(&c.text_encoder, c.text_encoder_2.as_ref(), &c.unet, &c.vae),
                Some(preset)
            );
            assert_eq!(
                c.text_encoder_2.is_some(),
                preset.family() == Family::SDXL,
                "{preset}"
            );
        }
        let sdxl = configs(Preset::SDXL_BASE).unwrap().unet;
        assert_eq!(sdxl.addition_embed_type.as_deref(), Some("text_time"));
        assert!(!sdxl.upcast_attention, "null reads as false");
    }
}
