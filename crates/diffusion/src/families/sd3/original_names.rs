//! The MMDiT in Stability AI's own tensor names (`joint_blocks.N.x_block.attn.qkv`,
//! `final_layer.adaLN_modulation.1` with shift and scale in the other order), as its single files
//! keep it under `model.diffusion_model.`, converted as diffusers'
//! `convert_sd3_transformer_checkpoint_to_diffusers` converts it: the fused q/k/v projections
//! (weights and biases) split in three, the final modulation's halves swapped, and the last
//! block's too (its context half is `context_pre_only`, an `AdaLayerNormContinuous`).

use crate::io::component_file::Converted;
use crate::io::file_weights::ComponentNames;

/// Whole-module renames outside the blocks, by name prefix.
const RENAMES: &[(&str, &str)] = &[
    ("x_embedder.proj.", "pos_embed.proj."),
    (
        "t_embedder.mlp.0.",
        "time_text_embed.timestep_embedder.linear_1.",
    ),
    (
        "t_embedder.mlp.2.",
        "time_text_embed.timestep_embedder.linear_2.",
    ),
    (
        "y_embedder.mlp.0.",
        "time_text_embed.text_embedder.linear_1.",
    ),
    (
        "y_embedder.mlp.2.",
        "time_text_embed.text_embedder.linear_2.",
    ),
    ("context_embedder.", "context_embedder."),
    ("final_layer.linear.", "proj_out."),
];

/// Inside `joint_blocks.N.x_block.` (the parameter suffix apart).
const IMAGE_BLOCK: &[(&str, &str)] = &[
    ("attn.ln_q", "attn.norm_q"),
    ("attn.ln_k", "attn.norm_k"),
    ("attn.proj", "attn.to_out.0"),
    ("attn2.ln_q", "attn2.norm_q"),
    ("attn2.ln_k", "attn2.norm_k"),
    ("attn2.proj", "attn2.to_out.0"),
    ("adaLN_modulation.1", "norm1.linear"),
    ("mlp.fc1", "ff.net.0.proj"),
    ("mlp.fc2", "ff.net.2"),
];

/// Inside `joint_blocks.N.context_block.`.
const CONTEXT_BLOCK: &[(&str, &str)] = &[
    ("attn.ln_q", "attn.norm_added_q"),
    ("attn.ln_k", "attn.norm_added_k"),
    ("attn.proj", "attn.to_add_out"),
    ("adaLN_modulation.1", "norm1_context.linear"),
    ("mlp.fc1", "ff_context.net.0.proj"),
    ("mlp.fc2", "ff_context.net.2"),
];

/// Whether a name (without `model.diffusion_model.`) is the MMDiT's in Stability's names.
pub(super) fn is_original(name: &str) -> bool {
    name.starts_with("joint_blocks.")
}

/// The number of joint blocks `names` hold (one more than the largest index).
pub(super) fn blocks(names: &[String]) -> usize {
    names
        .iter()
        .filter_map(|n| {
            n.strip_prefix("joint_blocks.")?
                .split('.')
                .next()?
                .parse()
                .ok()
        })
        .map(|n: usize| n.saturating_add(1))
        .max()
        .unwrap_or(0)
}

/// The diffusers name of each of `names` (Stability's, without any prefix), keyed back to
/// `stored(name)`; `Err` names the first tensor SD3's MMDiT does not have.
pub(super) fn convert_all(
    names: &[String],
    stored: impl Fn(&str) -> String,
) -> std::result::Result<ComponentNames, String> {
    let last = blocks(names).saturating_sub(1);
    let mut found = ComponentNames::default();
    for name in names {
        let converted = convert(name, last).ok_or_else(|| name.clone())?;
        found.add(converted, &stored(name));
    }
    Ok(found)
}

/// One Stability name in diffusers' `SD3Transformer2DModel`; `last`: the last block's index.
fn convert(name: &str, last: usize) -> Option<Converted> {
    if name == "pos_embed" {
        return Some(Converted::Name("pos_embed.pos_embed".into()));
    }
    if let Some(found) = RENAMES
        .iter()
        .find_map(|(old, new)| name.strip_prefix(old).map(|t| format!("{new}{t}")))
    {
        return Some(Converted::Name(found));
    }
    if let Some(param) = name.strip_prefix("final_layer.adaLN_modulation.1.") {
        return Some(Converted::SwapHalves(format!("norm_out.linear.{param}")));
    }
    let rest = name.strip_prefix("joint_blocks.")?;
    let (index, inner) = rest.split_once('.')?;
    let index: usize = index.parse().ok()?;
    let (half, inner) = inner.split_once('.')?;
    let (module, param) = inner.rsplit_once('.')?;
    let prefix = format!("transformer_blocks.{index}.");
    let context = match half {
        "x_block" => false,
        "context_block" => true,
        _ => return None,
    };
    let fused = match (context, module) {
        (false, "attn.qkv") => Some(["attn.to_q", "attn.to_k", "attn.to_v"]),
        (false, "attn2.qkv") => Some(["attn2.to_q", "attn2.to_k", "attn2.to_v"]),
        (true, "attn.qkv") => Some(["attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"]),
        _ => None,
    };
    if let Some(parts) = fused {
        return Some(Converted::Fused(
            parts.map(|p| format!("{prefix}{p}.{param}")),
        ));
    }
    let table = if context { CONTEXT_BLOCK } else { IMAGE_BLOCK };
    let (_, new) = table.iter().find(|(old, _)| *old == module)?;
    let new = format!("{prefix}{new}.{param}");
    if context && index == last {
        // The last block's context half only conditions the image: diffusers reads its
        // modulation (swapped) and QK norms, and leaves any output projection or MLP unread.
        return Some(match module {
            "adaLN_modulation.1" => Converted::SwapHalves(new),
            "attn.proj" | "mlp.fc1" | "mlp.fc2" => Converted::Ignored,
            _ => Converted::Name(new),
        });
    }
    Some(Converted::Name(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_convert_as_diffusers_converts_them() {
        let name = |n: &str| match convert(n, 23) {
            Some(Converted::Name(name)) => name,
            other => panic!("{n}: {other:?}"),
        };
        assert_eq!(name("pos_embed"), "pos_embed.pos_embed");
        assert_eq!(name("x_embedder.proj.bias"), "pos_embed.proj.bias");
        assert_eq!(
            name("y_embedder.mlp.2.weight"),
            "time_text_embed.text_embedder.linear_2.weight"
        );
        assert_eq!(
            name("joint_blocks.3.context_block.attn.ln_k.weight"),
            "transformer_blocks.3.attn.norm_added_k.weight"
        );
        assert_eq!(
            name("joint_blocks.0.x_block.attn2.proj.bias"),
            "transformer_blocks.0.attn2.to_out.0.bias"
        );
        assert_eq!(
            name("joint_blocks.7.x_block.mlp.fc1.weight"),
            "transformer_blocks.7.ff.net.0.proj.weight"
        );
        assert_eq!(
            convert("joint_blocks.2.context_block.attn.qkv.bias", 23),
            Some(Converted::Fused([
                "transformer_blocks.2.attn.add_q_proj.bias".into(),
                "transformer_blocks.2.attn.add_k_proj.bias".into(),
                "transformer_blocks.2.attn.add_v_proj.bias".into(),
            ]))
        );
        assert_eq!(
            convert(
                "joint_blocks.23.context_block.adaLN_modulation.1.weight",
                23
            ),
            Some(Converted::SwapHalves(
                "transformer_blocks.23.norm1_context.linear.weight".into()
            ))
        );
        assert_eq!(
            convert(
                "joint_blocks.22.context_block.adaLN_modulation.1.weight",
                23
            ),
            Some(Converted::Name(
                "transformer_blocks.22.norm1_context.linear.weight".into()
            ))
        );
        assert_eq!(
            convert("final_layer.adaLN_modulation.1.bias", 23),
            Some(Converted::SwapHalves("norm_out.linear.bias".into()))
        );
        // FLUX.1's names have no SD3 counterpart.
        assert_eq!(convert("double_blocks.0.img_attn.qkv.weight", 23), None);
        assert_eq!(convert("joint_blocks.0.x_block.attn.norm.weight", 23), None);
    }
}
