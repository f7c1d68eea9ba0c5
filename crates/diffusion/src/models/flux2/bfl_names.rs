//! FLUX.2 transformer files as people keep them apart from a diffusers folder: ComfyUI's
//! `diffusion_models/flux-2-klein-*.safetensors` (or `.gguf`), in Black Forest Labs' own tensor
//! names (`double_blocks.N.img_attn.qkv`, `single_blocks.N.linear1`,
//! `final_layer.adaLN_modulation.1` with shift and scale in the other order, norms as `.scale`),
//! sometimes under `model.diffusion_model.`, or already in diffusers' names. Each name is converted
//! as diffusers' `convert_flux2_transformer_checkpoint_to_diffusers` converts it: the fused q/k/v
//! projections split in three and the final modulation's halves swapped.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{DiffusionError, Result};
use crate::io::checkpoint::ComponentNames;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{is_fp8_scale, Derived, FileWeights};

/// The prefix ComfyUI saves whole models under.
const COMFY_PREFIX: &str = "model.diffusion_model.";

/// Whole-module renames (BFL → diffusers), by name prefix.
const RENAMES: &[(&str, &str)] = &[
    ("img_in.", "x_embedder."),
    ("txt_in.", "context_embedder."),
    (
        "time_in.in_layer.",
        "time_guidance_embed.timestep_embedder.linear_1.",
    ),
    (
        "time_in.out_layer.",
        "time_guidance_embed.timestep_embedder.linear_2.",
    ),
    (
        "guidance_in.in_layer.",
        "time_guidance_embed.guidance_embedder.linear_1.",
    ),
    (
        "guidance_in.out_layer.",
        "time_guidance_embed.guidance_embedder.linear_2.",
    ),
    (
        "double_stream_modulation_img.lin.",
        "double_stream_modulation_img.linear.",
    ),
    (
        "double_stream_modulation_txt.lin.",
        "double_stream_modulation_txt.linear.",
    ),
    (
        "single_stream_modulation.lin.",
        "single_stream_modulation.linear.",
    ),
    ("final_layer.linear.", "proj_out."),
];

/// Inside `double_blocks.N.` (parameter suffix apart; `.scale` becomes `.weight`).
const DOUBLE_BLOCK: &[(&str, &str)] = &[
    ("img_attn.norm.query_norm", "attn.norm_q"),
    ("img_attn.norm.key_norm", "attn.norm_k"),
    ("img_attn.proj", "attn.to_out.0"),
    ("img_mlp.0", "ff.linear_in"),
    ("img_mlp.2", "ff.linear_out"),
    ("txt_attn.norm.query_norm", "attn.norm_added_q"),
    ("txt_attn.norm.key_norm", "attn.norm_added_k"),
    ("txt_attn.proj", "attn.to_add_out"),
    ("txt_mlp.0", "ff_context.linear_in"),
    ("txt_mlp.2", "ff_context.linear_out"),
];

/// Inside `single_blocks.N.`.
const SINGLE_BLOCK: &[(&str, &str)] = &[
    ("linear1", "attn.to_qkv_mlp_proj"),
    ("linear2", "attn.to_out"),
    ("norm.query_norm", "attn.norm_q"),
    ("norm.key_norm", "attn.norm_k"),
];

/// What a BFL name is in diffusers' Flux2Transformer2DModel.
#[derive(Debug, PartialEq)]
enum Converted {
    Name(String),
    /// A fused q/k/v projection: the three diffusers names, in order.
    Fused([String; 3]),
    /// `final_layer.adaLN_modulation.1`: (shift, scale) stored, (scale, shift) loaded.
    SwapHalves(String),
}

fn convert(name: &str) -> Option<Converted> {
    if let Some(found) = RENAMES
        .iter()
        .find_map(|(old, new)| name.strip_prefix(old).map(|t| format!("{new}{t}")))
    {
        return Some(Converted::Name(found));
    }
    if let Some(param) = name.strip_prefix("final_layer.adaLN_modulation.1.") {
        return Some(Converted::SwapHalves(format!("norm_out.linear.{param}")));
    }
    let (blocks, table, new_blocks) = if let Some(rest) = name.strip_prefix("double_blocks.") {
        (rest, DOUBLE_BLOCK, "transformer_blocks")
    } else if let Some(rest) = name.strip_prefix("single_blocks.") {
        (rest, SINGLE_BLOCK, "single_transformer_blocks")
    } else {
        return None;
    };
    let (index, inner) = blocks.split_once('.')?;
    let index: usize = index.parse().ok()?;
    let (module, param) = inner.rsplit_once('.')?;
    let param = if param == "scale" { "weight" } else { param };
    let prefix = format!("{new_blocks}.{index}.");
    let fused = match module {
        "img_attn.qkv" if new_blocks == "transformer_blocks" => Some(["to_q", "to_k", "to_v"]),
        "txt_attn.qkv" if new_blocks == "transformer_blocks" => {
            Some(["add_q_proj", "add_k_proj", "add_v_proj"])
        }
        _ => None,
    };
    if let Some(parts) = fused {
        return Some(Converted::Fused(
            parts.map(|p| format!("{prefix}attn.{p}.{param}")),
        ));
    }
    let (_, new) = table.iter().find(|(old, _)| *old == module)?;
    Some(Converted::Name(format!("{prefix}{new}.{param}")))
}

/// The transformer's weights in `file`: in BFL's names (converted), or in diffusers' own; under
/// ComfyUI's `model.diffusion_model.` or not. Anything else is refused by name.
pub fn transformer_weights(file: &Path) -> Result<FileWeights> {
    let tensors = TensorFile::open(file)?;
    let all_prefixed = tensors.names().all(|n| n.starts_with(COMFY_PREFIX));
    let prefix = if all_prefixed { COMFY_PREFIX } else { "" };
    let rest = |n: &'_ str| n[prefix.len()..].to_string();
    let names: Vec<String> = tensors
        .names()
        .filter(|n| !is_fp8_scale(n))
        .map(|n| n.to_string())
        .collect();
    if names
        .iter()
        .any(|n| rest(n).starts_with("transformer_blocks."))
    {
        // Diffusers' names already.
        let map: BTreeMap<String, String> = names.iter().map(|n| (rest(n), n.clone())).collect();
        return Ok(FileWeights::renamed(tensors, map));
    }
    if !names.iter().any(|n| rest(n).starts_with("double_blocks.")) {
        return Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: "is not a FLUX.2 transformer: it has neither Black Forest Labs' `double_blocks.` tensors nor diffusers' `transformer_blocks.`".into(),
        });
    }
    let mut found = ComponentNames::default();
    for stored in &names {
        let converted = convert(&rest(stored)).ok_or_else(|| DiffusionError::Tensor {
            path: file.to_path_buf(),
            tensor: stored.clone(),
            problem: "has no counterpart in a FLUX.2 transformer; is the file another model's (FLUX.1's names differ)?".into(),
        })?;
        match converted {
            Converted::Name(name) => {
                found.names.insert(name, stored.clone());
            }
            Converted::Fused(parts) => {
                for (part, name) in parts.into_iter().enumerate() {
                    let rows = Derived::Rows {
                        stored: stored.clone(),
                        part,
                        parts: 3,
                    };
                    found.derived.insert(name, rows);
                }
            }
            Converted::SwapHalves(name) => {
                let swapped = Derived::SwapHalves {
                    stored: stored.clone(),
                };
                found.derived.insert(name, swapped);
            }
        }
    }
    Ok(FileWeights::converted(tensors, found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_convert_as_diffusers_converts_them() {
        let name = |n: &str| match convert(n) {
            Some(Converted::Name(name)) => name,
            other => panic!("{n}: {other:?}"),
        };
        assert_eq!(name("img_in.weight"), "x_embedder.weight");
        assert_eq!(
            name("time_in.out_layer.weight"),
            "time_guidance_embed.timestep_embedder.linear_2.weight"
        );
        assert_eq!(
            name("double_blocks.4.txt_attn.norm.key_norm.scale"),
            "transformer_blocks.4.attn.norm_added_k.weight"
        );
        assert_eq!(
            name("single_blocks.19.linear1.weight"),
            "single_transformer_blocks.19.attn.to_qkv_mlp_proj.weight"
        );
        assert_eq!(
            convert("double_blocks.0.txt_attn.qkv.weight"),
            Some(Converted::Fused([
                "transformer_blocks.0.attn.add_q_proj.weight".into(),
                "transformer_blocks.0.attn.add_k_proj.weight".into(),
                "transformer_blocks.0.attn.add_v_proj.weight".into(),
            ]))
        );
        assert_eq!(
            convert("final_layer.adaLN_modulation.1.weight"),
            Some(Converted::SwapHalves("norm_out.linear.weight".into()))
        );
        // FLUX.1's modulation layers have no FLUX.2 counterpart.
        assert_eq!(convert("double_blocks.0.img_mod.lin.weight"), None);
        assert_eq!(convert("single_blocks.0.qkv.weight"), None);
    }
}
