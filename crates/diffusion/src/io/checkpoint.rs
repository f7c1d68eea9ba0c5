//! Single-file checkpoints in the original Stable Diffusion (LDM) layout, as fine-tunes are usually
//! shared: one safetensors file holding the UNet under `model.diffusion_model.`, the VAE under
//! `first_stage_model.` and the CLIP text encoder under `cond_stage_model.transformer.`. Each tensor
//! name is converted to the diffusers name the engine loads by, as diffusers' single-file loader does
//! (`diffusers/loaders/single_file_utils.py`); tests check the conversion against names that
//! diffusers gives every tensor of a full-size SD1.5 checkpoint.

use std::collections::BTreeMap;

use crate::error::{DiffusionError, Result};
use crate::io::tensor_file::TensorFile;
use crate::io::weights::is_fp8_scale;

pub const UNET_PREFIX: &str = "model.diffusion_model.";
pub const VAE_PREFIX: &str = "first_stage_model.";
pub const TEXT_ENCODER_PREFIX: &str = "cond_stage_model.transformer.";

/// Prefixes that mark checkpoints of other model families, with what they are.
const OTHER_FAMILIES: &[(&str, &str)] = &[
    (
        "cond_stage_model.model.",
        "a Stable Diffusion 2 checkpoint (OpenCLIP text encoder)",
    ),
    ("conditioner.embedders.", "a Stable Diffusion XL checkpoint"),
    (
        "model.diffusion_model.joint_blocks.",
        "a Stable Diffusion 3 checkpoint",
    ),
    ("double_blocks.", "a FLUX checkpoint"),
];

/// One model of the three in a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    TextEncoder,
    UNet,
    Vae,
}

impl Component {
    fn prefix(self) -> &'static str {
        match self {
            Component::TextEncoder => TEXT_ENCODER_PREFIX,
            Component::UNet => UNET_PREFIX,
            Component::Vae => VAE_PREFIX,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Component::TextEncoder => "text encoder",
            Component::UNet => "UNet",
            Component::Vae => "VAE",
        }
    }
}

/// How the UNet's and VAE's blocks are laid out; the original names count layers across blocks.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Resnets in each UNet down block (the up blocks have one more each, in reverse order).
    pub unet_layers_per_block: Vec<usize>,
    /// Blocks in the VAE encoder and decoder.
    pub vae_blocks: usize,
}

/// The diffusers name for a tensor of the checkpoint, by its full name; `None` for a tensor outside
/// `component` or one the conversion does not know.
pub fn diffusers_name(component: Component, name: &str, layout: &Layout) -> Option<String> {
    let rest = name.strip_prefix(component.prefix())?;
    match component {
        // The transformers names, as SD1.x files store them.
        Component::TextEncoder => Some(rest.to_string()),
        Component::UNet => unet_name(rest, &layout.unet_layers_per_block),
        Component::Vae => vae_name(rest, layout.vae_blocks),
    }
}

/// A component's tensors in a checkpoint: diffusers name → stored name. Errors name a
/// checkpoint of another model family, a missing component, or a tensor with no diffusers name.
pub fn component_names(
    file: &TensorFile,
    component: Component,
    layout: &Layout,
) -> Result<BTreeMap<String, String>> {
    let path = file.path();
    let prefix = component.prefix();
    if let Some((_, family)) = OTHER_FAMILIES
        .iter()
        .find(|(p, _)| file.names().any(|n| n.starts_with(p)))
    {
        return Err(DiffusionError::unsupported(
            path,
            format!("the file is {family}; SD Bench reads SD1.x checkpoints"),
        ));
    }
    let mut names = BTreeMap::new();
    for stored in file
        .names()
        .filter(|n| n.starts_with(prefix) && !is_fp8_scale(n))
    {
        let converted = diffusers_name(component, stored, layout).ok_or_else(|| {
            DiffusionError::Tensor {
                path: path.to_path_buf(),
                tensor: stored.to_string(),
                problem: format!(
                    "has no counterpart in an SD1.x {} of this layout; is the checkpoint from a different architecture?",
                    component.describe()
                ),
            }
        })?;
        names.insert(converted, stored.to_string());
    }
    if names.is_empty() {
        return Err(DiffusionError::Weights {
            path: path.to_path_buf(),
            problem: format!(
                "has no {} tensors (names starting with `{prefix}`): not a single-file SD1.x checkpoint",
                component.describe()
            ),
        });
    }
    Ok(names)
}

/// A resnet's inner names: original → diffusers.
const UNET_RESNET: &[(&str, &str)] = &[
    ("in_layers.0.", "norm1."),
    ("in_layers.2.", "conv1."),
    ("emb_layers.1.", "time_emb_proj."),
    ("out_layers.0.", "norm2."),
    ("out_layers.3.", "conv2."),
    ("skip_connection.", "conv_shortcut."),
];

fn unet_resnet(rest: &str) -> Option<String> {
    UNET_RESNET
        .iter()
        .find_map(|(old, new)| rest.strip_prefix(old).map(|tail| format!("{new}{tail}")))
}

/// What one of the UNet's `input_blocks` or `output_blocks` entries holds.
#[derive(Debug, Clone, Copy)]
enum UNetSlot {
    ConvIn,
    /// Down block, layer: a resnet (`.0.`) and, in cross-attention blocks, a transformer (`.1.`).
    Down(usize, usize),
    Downsampler(usize),
    /// Up block, layer, whether this layer also holds the block's upsampler.
    Up(usize, usize, bool),
}

fn input_slots(layers_per_block: &[usize]) -> Vec<UNetSlot> {
    let mut slots = vec![UNetSlot::ConvIn];
    for (b, &layers) in layers_per_block.iter().enumerate() {
        slots.extend((0..layers).map(|j| UNetSlot::Down(b, j)));
        if b + 1 < layers_per_block.len() {
            slots.push(UNetSlot::Downsampler(b));
        }
    }
    slots
}

fn output_slots(layers_per_block: &[usize]) -> Vec<UNetSlot> {
    let blocks = layers_per_block.len();
    let mut slots = Vec::new();
    for (b, &layers) in layers_per_block.iter().rev().enumerate() {
        let count = layers + 1;
        slots.extend((0..count).map(|j| UNetSlot::Up(b, j, j + 1 == count && b + 1 < blocks)));
    }
    slots
}

/// `index.sub.rest` → (index, sub, rest)
fn indexed(name: &str) -> Option<(usize, usize, &str)> {
    let (index, rest) = name.split_once('.')?;
    let (sub, rest) = rest.split_once('.')?;
    Some((index.parse().ok()?, sub.parse().ok()?, rest))
}

fn unet_name(name: &str, layers_per_block: &[usize]) -> Option<String> {
    const FIXED: &[(&str, &str)] = &[
        ("time_embed.0.", "time_embedding.linear_1."),
        ("time_embed.2.", "time_embedding.linear_2."),
        ("out.0.", "conv_norm_out."),
        ("out.2.", "conv_out."),
    ];
    if let Some(found) = FIXED
        .iter()
        .find_map(|(old, new)| name.strip_prefix(old).map(|tail| format!("{new}{tail}")))
    {
        return Some(found);
    }
    if let Some(rest) = name.strip_prefix("input_blocks.") {
        let (index, sub, rest) = indexed(rest)?;
        return match (*input_slots(layers_per_block).get(index)?, sub) {
            (UNetSlot::ConvIn, 0) => Some(format!("conv_in.{rest}")),
            (UNetSlot::Down(b, j), 0) => Some(format!(
                "down_blocks.{b}.resnets.{j}.{}",
                unet_resnet(rest)?
            )),
            (UNetSlot::Down(b, j), 1) => Some(format!("down_blocks.{b}.attentions.{j}.{rest}")),
            (UNetSlot::Downsampler(b), 0) => Some(format!(
                "down_blocks.{b}.downsamplers.0.conv.{}",
                rest.strip_prefix("op.")?
            )),
            _ => None,
        };
    }
    if let Some(rest) = name.strip_prefix("middle_block.") {
        let (index, rest) = rest.split_once('.')?;
        return match index {
            "0" => Some(format!("mid_block.resnets.0.{}", unet_resnet(rest)?)),
            "1" => Some(format!("mid_block.attentions.0.{rest}")),
            "2" => Some(format!("mid_block.resnets.1.{}", unet_resnet(rest)?)),
            _ => None,
        };
    }
    if let Some(rest) = name.strip_prefix("output_blocks.") {
        let (index, sub, rest) = indexed(rest)?;
        let UNetSlot::Up(b, j, upsampler) = *output_slots(layers_per_block).get(index)? else {
            return None;
        };
        // The upsampler follows the resnet (and the transformer, in cross-attention blocks).
        return match sub {
            0 => Some(format!("up_blocks.{b}.resnets.{j}.{}", unet_resnet(rest)?)),
            1 | 2 if upsampler && rest.starts_with("conv.") => {
                Some(format!("up_blocks.{b}.upsamplers.0.{rest}"))
            }
            1 => Some(format!("up_blocks.{b}.attentions.{j}.{rest}")),
            _ => None,
        };
    }
    None
}

fn vae_name(name: &str, blocks: usize) -> Option<String> {
    if name.starts_with("quant_conv.") || name.starts_with("post_quant_conv.") {
        return Some(name.to_string());
    }
    let (side, rest) = name.split_once('.')?;
    if side != "encoder" && side != "decoder" {
        return None;
    }
    let inner = if let Some(tail) = rest.strip_prefix("norm_out.") {
        format!("conv_norm_out.{tail}")
    } else if rest.starts_with("conv_in.") || rest.starts_with("conv_out.") {
        rest.to_string()
    } else if let Some(tail) = rest.strip_prefix("mid.") {
        vae_mid(tail)?
    } else {
        // `down.i` counts from the encoder's input; `up.i` from the decoder's output, which
        // diffusers reverses.
        let (group, tail) = rest.split_once('.')?;
        let (index, tail) = tail.split_once('.')?;
        let index: usize = index.parse().ok().filter(|&i| i < blocks)?;
        let (group, index, sampler, samplers) = match (side, group) {
            ("encoder", "down") => ("down_blocks", index, "downsample.", "downsamplers.0."),
            ("decoder", "up") => (
                "up_blocks",
                blocks - 1 - index,
                "upsample.",
                "upsamplers.0.",
            ),
            _ => return None,
        };
        if let Some(tail) = tail.strip_prefix(sampler) {
            format!("{group}.{index}.{samplers}{tail}")
        } else {
            let (layer, tail) = tail.strip_prefix("block.")?.split_once('.')?;
            let layer: usize = layer.parse().ok()?;
            format!("{group}.{index}.resnets.{layer}.{}", vae_resnet(tail))
        }
    };
    Some(format!("{side}.{inner}"))
}

fn vae_resnet(tail: &str) -> String {
    match tail.strip_prefix("nin_shortcut.") {
        Some(rest) => format!("conv_shortcut.{rest}"),
        None => tail.to_string(),
    }
}

fn vae_mid(tail: &str) -> Option<String> {
    if let Some(rest) = tail.strip_prefix("block_1.") {
        return Some(format!("mid_block.resnets.0.{}", vae_resnet(rest)));
    }
    if let Some(rest) = tail.strip_prefix("block_2.") {
        return Some(format!("mid_block.resnets.1.{}", vae_resnet(rest)));
    }
    let rest = tail.strip_prefix("attn_1.")?;
    const ATTENTION: &[(&str, &str)] = &[
        ("norm.", "group_norm."),
        ("q.", "to_q."),
        ("k.", "to_k."),
        ("v.", "to_v."),
        ("proj_out.", "to_out.0."),
    ];
    ATTENTION.iter().find_map(|(old, new)| {
        rest.strip_prefix(old)
            .map(|t| format!("mid_block.attentions.0.{new}{t}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sd15() -> Layout {
        Layout {
            unet_layers_per_block: vec![2, 2, 2, 2],
            vae_blocks: 4,
        }
    }

    #[test]
    fn unet_blocks_are_counted_across_the_network() {
        let l = sd15();
        let name = |n: &str| diffusers_name(Component::UNet, &format!("{UNET_PREFIX}{n}"), &l);
        assert_eq!(name("input_blocks.0.0.weight").unwrap(), "conv_in.weight");
        assert_eq!(
            name("input_blocks.4.0.in_layers.2.weight").unwrap(),
            "down_blocks.1.resnets.0.conv1.weight"
        );
        assert_eq!(
            name("input_blocks.9.0.op.bias").unwrap(),
            "down_blocks.2.downsamplers.0.conv.bias"
        );
        assert_eq!(
            name("output_blocks.2.1.conv.weight").unwrap(),
            "up_blocks.0.upsamplers.0.conv.weight"
        );
        assert_eq!(
            name("output_blocks.5.2.conv.weight").unwrap(),
            "up_blocks.1.upsamplers.0.conv.weight"
        );
        assert_eq!(
            name("output_blocks.5.1.proj_in.weight").unwrap(),
            "up_blocks.1.attentions.2.proj_in.weight"
        );
        // The last up block has no upsampler, and there is no 13th output layer.
        assert_eq!(name("output_blocks.11.2.conv.weight"), None);
        assert_eq!(name("output_blocks.12.0.in_layers.0.weight"), None);
        assert_eq!(name("input_blocks.12.0.op.weight"), None);
    }

    #[test]
    fn vae_decoder_blocks_are_reversed() {
        let l = sd15();
        let name = |n: &str| diffusers_name(Component::Vae, &format!("{VAE_PREFIX}{n}"), &l);
        assert_eq!(
            name("decoder.up.3.block.0.nin_shortcut.weight").unwrap(),
            "decoder.up_blocks.0.resnets.0.conv_shortcut.weight"
        );
        assert_eq!(
            name("decoder.up.1.upsample.conv.bias").unwrap(),
            "decoder.up_blocks.2.upsamplers.0.conv.bias"
        );
        assert_eq!(
            name("encoder.down.0.downsample.conv.weight").unwrap(),
            "encoder.down_blocks.0.downsamplers.0.conv.weight"
        );
        assert_eq!(
            name("decoder.mid.attn_1.proj_out.weight").unwrap(),
            "decoder.mid_block.attentions.0.to_out.0.weight"
        );
        assert_eq!(name("decoder.up.4.block.0.conv1.weight"), None);
        assert_eq!(name("decoder.down.0.block.0.conv1.weight"), None);
    }

    #[test]
    fn tensors_outside_a_component_are_not_its_own() {
        let l = sd15();
        assert_eq!(diffusers_name(Component::UNet, "model_ema.decay", &l), None);
        assert_eq!(
            diffusers_name(Component::TextEncoder, "alphas_cumprod", &l),
            None
        );
    }
}
