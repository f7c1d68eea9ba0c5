//! Single-file checkpoints in the original Stable Diffusion (LDM) layout, as fine-tunes are usually
//! shared: one safetensors (or GGUF) file holding the UNet under `model.diffusion_model.`, the VAE
//! under `first_stage_model.` and the text encoders: SD1.x's CLIP under
//! `cond_stage_model.transformer.`, SD2.x's OpenCLIP encoder under `cond_stage_model.model.`,
//! SDXL's CLIP-L under `conditioner.embedders.0.transformer.` and its OpenCLIP encoder under
//! `conditioner.embedders.1.model.` (OpenCLIP's names: one fused q/k/v projection per layer, a
//! transposed text projection). Each tensor name is converted to the diffusers name the engine
//! loads by, as diffusers' single-file loader does (`diffusers/loaders/single_file_utils.py`);
//! tests check the conversion against names that diffusers gives every tensor of a full-size
//! SD1.5 checkpoint, and tiny SD1.x, SD2.x and SDXL files against diffusers reading them.
use std::path::Path;

use crate::error::{DiffusionError, Result};
use crate::io::file_weights::{ComponentNames, Derived};
use crate::io::tensor_file::is_fp8_scale;
use crate::io::tensor_file::TensorFile;

pub const UNET_PREFIX: &str = "model.diffusion_model.";
pub const VAE_PREFIX: &str = "first_stage_model.";
pub const TEXT_ENCODER_PREFIX: &str = "cond_stage_model.transformer.";
pub const SD2_TEXT_ENCODER_PREFIX: &str = "cond_stage_model.model.";
pub const SDXL_TEXT_ENCODER_PREFIX: &str = "conditioner.embedders.0.transformer.";
pub const SDXL_TEXT_ENCODER_2_PREFIX: &str = "conditioner.embedders.1.model.";
/// What every SDXL checkpoint's text encoders sit under.
const SDXL_MARK: &str = "conditioner.embedders.";

/// SDXL's refiner: its one OpenCLIP encoder is the first embedder (base's first is CLIP-L).
const SDXL_REFINER_MARK: &str = "conditioner.embedders.0.model.";

/// The UNet's first blocks in the LDM names: what every SD1.x, SD2.x and SDXL checkpoint holds,
/// and no other family's file.
const UNET_MARK: &str = "model.diffusion_model.input_blocks.";

/// Whether `path` is a Stable Diffusion checkpoint in the LDM layout (the family's claim in the
/// registry, `FamilyDescriptor::checkpoints`): it holds the UNet's `input_blocks`. An SDXL
/// refiner is this family's, but refused by name.
pub fn claims(path: &Path) -> Result<bool> {
    let file = TensorFile::open(path)?;
    if file.names().any(|n| n.starts_with(SDXL_REFINER_MARK)) {
        return Err(DiffusionError::unsupported(
            path,
            "the file is a Stable Diffusion XL refiner checkpoint; SD Bench runs SDXL base, not its refiner",
        ));
    }
    let unet = file.names().any(|n| n.starts_with(UNET_MARK));
    Ok(unet)
}

/// Which Stable Diffusion a checkpoint holds, by where its text encoders sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// CLIP under `cond_stage_model.transformer.`.
    Sd1,
    /// OpenCLIP under `cond_stage_model.model.`.
    Sd2,
    /// Two encoders under `conditioner.embedders.`.
    Sdxl,
}

impl Kind {
    pub fn of(file: &TensorFile) -> Kind {
        if file.names().any(|n| n.starts_with(SDXL_MARK)) {
            Kind::Sdxl
        } else if file.names().any(|n| n.starts_with(SD2_TEXT_ENCODER_PREFIX)) {
            Kind::Sd2
        } else {
            Kind::Sd1
        }
    }

    /// The upstream model whose built-in configs read a file of this kind without `--model-config`.
    pub fn upstream(self) -> &'static str {
        match self {
            Kind::Sd1 => "SD1.5",
            Kind::Sd2 => "SD2.1 (768 px, v-prediction)",
            Kind::Sdxl => "SDXL base",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Kind::Sd1 => "SD1.x",
            Kind::Sd2 => "SD2.x",
            Kind::Sdxl => "SDXL",
        }
    }
}

/// One model of the three (SDXL: four) in a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    TextEncoder,
    /// SDXL's OpenCLIP text encoder (diffusers' `text_encoder_2`).
    TextEncoder2,
    UNet,
    Vae,
}

impl Component {
    fn prefix(self, layout: &Layout) -> &'static str {
        match self {
            Component::TextEncoder => match layout.kind {
                Kind::Sd1 => TEXT_ENCODER_PREFIX,
                Kind::Sd2 => SD2_TEXT_ENCODER_PREFIX,
                Kind::Sdxl => SDXL_TEXT_ENCODER_PREFIX,
            },
            Component::TextEncoder2 => SDXL_TEXT_ENCODER_2_PREFIX,
            Component::UNet => UNET_PREFIX,
            Component::Vae => VAE_PREFIX,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Component::TextEncoder => "text encoder",
            Component::TextEncoder2 => "second (OpenCLIP) text encoder",
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
    /// Which Stable Diffusion the configs describe.
    pub kind: Kind,
    /// The text encoder's layers (`num_hidden_layers`): an SD2.x file's OpenCLIP encoder has one
    /// more, unused (SD2 conditions on OpenCLIP's penultimate layer; diffusers' 23-layer encoder
    /// drops the 24th).
    pub text_encoder_layers: usize,
}

impl Layout {
    /// Whether `component` is stored in OpenCLIP's names.
    fn open_clip(&self, component: Component) -> bool {
        component == Component::TextEncoder2
            || (component == Component::TextEncoder && self.kind == Kind::Sd2)
    }
}

/// The diffusers name for a tensor of the checkpoint, by its full name; `None` for a tensor outside
/// `component` or one the conversion does not know. (The OpenCLIP encoder's fused and transposed
/// tensors have no one name: `component_names` gives their parts.)
pub fn diffusers_name(component: Component, name: &str, layout: &Layout) -> Option<String> {
    let rest = name.strip_prefix(component.prefix(layout))?;
    if layout.open_clip(component) {
        return match open_clip_name(rest)? {
            OpenClip::Name(name) => Some(name),
            _ => None,
        };
    }
    match component {
        // The transformers names, as SD1.x and SDXL files store them.
        Component::TextEncoder | Component::TextEncoder2 => Some(rest.to_string()),
        Component::UNet => unet_name(rest, &layout.unet_layers_per_block),
        Component::Vae => crate::models::vae_names::diffusers_name(rest, layout.vae_blocks),
    }
}

/// What an OpenCLIP tensor name (after its prefix) is in diffusers' CLIPTextModelWithProjection.
enum OpenClip {
    Name(String),
    /// A fused `in_proj` of q, k and v (weight or bias): diffusers' `...self_attn.{q,k,v}_proj.*`.
    Fused {
        base: String,
        kind: String,
    },
    /// `text_projection`, stored as (width, projection): the Linear's weight is its transpose.
    Transposed(String),
    /// Not a weight of the text model (`logit_scale`, `attn_mask`).
    Ignored,
}

/// The layer an OpenCLIP tensor name (after its prefix) belongs to, if it is a layer's.
fn open_clip_layer(rest: &str) -> Option<usize> {
    rest.strip_prefix("transformer.resblocks.")?
        .split_once('.')?
        .0
        .parse()
        .ok()
}

fn open_clip_name(rest: &str) -> Option<OpenClip> {
    const FIXED: &[(&str, &str)] = &[
        (
            "token_embedding.weight",
            "text_model.embeddings.token_embedding.weight",
        ),
        (
            "positional_embedding",
            "text_model.embeddings.position_embedding.weight",
        ),
        ("ln_final.weight", "text_model.final_layer_norm.weight"),
        ("ln_final.bias", "text_model.final_layer_norm.bias"),
    ];
    if let Some((_, name)) = FIXED.iter().find(|(old, _)| *old == rest) {
        return Some(OpenClip::Name(name.to_string()));
    }
    match rest {
        "text_projection" => return Some(OpenClip::Transposed("text_projection.weight".into())),
        "logit_scale" | "attn_mask" => return Some(OpenClip::Ignored),
        _ => {}
    }
    let rest = rest.strip_prefix("transformer.resblocks.")?;
    let (layer, tail) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let base = format!("text_model.encoder.layers.{layer}.");
    if let Some(kind) = tail.strip_prefix("attn.in_proj_") {
        return Some(OpenClip::Fused {
            base: format!("{base}self_attn."),
            kind: kind.to_string(),
        });
    }
    const LAYER: &[(&str, &str)] = &[
        ("attn.out_proj.", "self_attn.out_proj."),
        ("ln_1.", "layer_norm1."),
        ("ln_2.", "layer_norm2."),
        ("mlp.c_fc.", "mlp.fc1."),
        ("mlp.c_proj.", "mlp.fc2."),
    ];
    LAYER.iter().find_map(|(old, new)| {
        tail.strip_prefix(old)
            .map(|t| OpenClip::Name(format!("{base}{new}{t}")))
    })
}

/// A component's tensors in a checkpoint. Errors name a checkpoint of another Stable Diffusion
/// (its configs describe another), a missing component, or a tensor with no diffusers name.
pub fn component_names(
    file: &TensorFile,
    component: Component,
    layout: &Layout,
) -> Result<ComponentNames> {
    let path = file.path();
    let prefix = component.prefix(layout);
    let expected = layout.kind.describe();
    let found = Kind::of(file);
    if found != layout.kind {
        let found = found.describe();
        return Err(DiffusionError::Weights {
            path: path.to_path_buf(),
            problem: format!(
                "is an {found} checkpoint, but its configs (--model-config) describe an {expected} model"
            ),
        });
    }
    let mut found = ComponentNames::default();
    for stored in file
        .names()
        .filter(|n| n.starts_with(prefix) && !is_fp8_scale(n))
    {
        let unknown = || {
            DiffusionError::Tensor {
            path: path.to_path_buf(),
            tensor: stored.to_string(),
            problem: format!(
                "has no counterpart in an {expected} {} of this layout; is the checkpoint from a different architecture?",
                component.describe()
            ),
        }
        };
        if layout.open_clip(component) {
            let rest = &stored[prefix.len()..];
            // SD2.x: OpenCLIP's last layer and its projection, which SD2 does not use.
            let sd2_unused = component == Component::TextEncoder
                && (rest == "text_projection"
                    || open_clip_layer(rest).is_some_and(|l| l >= layout.text_encoder_layers));
            if sd2_unused {
                continue;
            }
            match open_clip_name(rest).ok_or_else(unknown)? {
                OpenClip::Name(name) => {
                    found.names.insert(name, stored.to_string());
                }
                OpenClip::Fused { base, kind } => {
                    for (part, which) in ["q", "k", "v"].iter().enumerate() {
                        found.derived.insert(
                            format!("{base}{which}_proj.{kind}"),
                            Derived::Rows {
                                stored: stored.to_string(),
                                first: part,
                                count: 1,
                                parts: 3,
                            },
                        );
                    }
                }
                OpenClip::Transposed(name) => {
                    found.derived.insert(
                        name,
                        Derived::Transposed {
                            stored: stored.to_string(),
                        },
                    );
                }
                OpenClip::Ignored => {}
            }
            continue;
        }
        let converted = diffusers_name(component, stored, layout).ok_or_else(unknown)?;
        found.names.insert(converted, stored.to_string());
    }
    if found.names.is_empty() && found.derived.is_empty() {
        let vae_apart = match component {
            Component::Vae => " (one kept without its VAE runs with --vae naming a VAE file)",
            _ => "",
        };
        return Err(DiffusionError::Weights {
            path: path.to_path_buf(),
            problem: format!(
                "has no {} tensors (names starting with `{prefix}`): not a single-file {expected} checkpoint{vae_apart}",
                component.describe()
            ),
        });
    }
    Ok(found)
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
        // SDXL's size and crop conditioning.
        ("label_emb.0.0.", "add_embedding.linear_1."),
        ("label_emb.0.2.", "add_embedding.linear_2."),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sd15() -> Layout {
        Layout {
            unet_layers_per_block: vec![2, 2, 2, 2],
            vae_blocks: 4,
            kind: Kind::Sd1,
            text_encoder_layers: 12,
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
    fn open_clip_names_convert_as_diffusers_converts_them() {
        let name = |n: &str| match open_clip_name(n) {
            Some(OpenClip::Name(name)) => name,
            _ => panic!("{n} has no one name"),
        };
        assert_eq!(
            name("transformer.resblocks.31.mlp.c_fc.bias"),
            "text_model.encoder.layers.31.mlp.fc1.bias"
        );
        assert_eq!(
            name("transformer.resblocks.0.attn.out_proj.weight"),
            "text_model.encoder.layers.0.self_attn.out_proj.weight"
        );
        assert_eq!(
            name("positional_embedding"),
            "text_model.embeddings.position_embedding.weight"
        );
        assert!(matches!(
            open_clip_name("transformer.resblocks.2.attn.in_proj_weight"),
            Some(OpenClip::Fused { base, kind })
                if base == "text_model.encoder.layers.2.self_attn." && kind == "weight"
        ));
        assert!(matches!(
            open_clip_name("text_projection"),
            Some(OpenClip::Transposed(n)) if n == "text_projection.weight"
        ));
        assert!(matches!(
            open_clip_name("logit_scale"),
            Some(OpenClip::Ignored)
        ));
        assert!(open_clip_name("transformer.resblocks.x.ln_1.weight").is_none());
        // SDXL's size conditioning in the UNet.
        let sdxl = Layout {
            unet_layers_per_block: vec![2, 2, 2],
            vae_blocks: 4,
            kind: Kind::Sdxl,
            text_encoder_layers: 12,
        };
        assert_eq!(
            diffusers_name(
                Component::UNet,
                "model.diffusion_model.label_emb.0.2.bias",
                &sdxl
            )
            .unwrap(),
            "add_embedding.linear_2.bias"
        );
        assert_eq!(
            diffusers_name(
                Component::TextEncoder,
                "conditioner.embedders.0.transformer.text_model.final_layer_norm.weight",
                &sdxl
            )
            .unwrap(),
            "text_model.final_layer_norm.weight"
        );
        // SD2.x's one encoder, in OpenCLIP's names under `cond_stage_model.model.`.
        let sd2 = Layout {
            kind: Kind::Sd2,
            text_encoder_layers: 23,
            ..sd15()
        };
        assert_eq!(
            diffusers_name(
                Component::TextEncoder,
                "cond_stage_model.model.transformer.resblocks.22.ln_2.bias",
                &sd2
            )
            .unwrap(),
            "text_model.encoder.layers.22.layer_norm2.bias"
        );
        assert_eq!(
            diffusers_name(
                Component::TextEncoder,
                "cond_stage_model.transformer.text_model.final_layer_norm.weight",
                &sd2
            ),
            None
        );
        assert_eq!(
            open_clip_layer("transformer.resblocks.23.attn.in_proj_bias"),
            Some(23)
        );
        assert_eq!(open_clip_layer("ln_final.weight"), None);
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
