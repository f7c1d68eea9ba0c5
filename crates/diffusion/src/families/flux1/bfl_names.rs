//! FLUX.1 transformer files as people keep them apart from a diffusers folder: Black Forest Labs'
//! `flux1-schnell.safetensors` and `flux1-dev.safetensors`, ComfyUI's `diffusion_models/` (FP8,
//! scaled or not) and city96's GGUFs, in Black Forest Labs' tensor names (`double_blocks.N.img_attn.qkv`,
//! `single_blocks.N.linear1` with q, k, v and the MLP's input fused, `final_layer.adaLN_modulation.1`
//! with shift and scale in the other order, norms as `.scale`), sometimes under
//! `model.diffusion_model.`, or already in diffusers' names. Each name is converted as diffusers'
//! `convert_flux_transformer_checkpoint_to_diffusers` converts it.

use crate::io::bfl_names::BflLayout;
use crate::io::component_file::{Converted, DenoiserNames};

/// FLUX.1's transformer files, for `io::component_file`. The layouts are told by what only
/// FLUX.1 has among the transformers SD Bench reads: the pooled text's embedder (`vector_in`), and
/// in diffusers' names the single blocks' own MLP projection (FLUX.2's is fused with q, k and v).
pub static NAMES: DenoiserNames = DenoiserNames {
    what: "FLUX.1 transformer",
    is_diffusers: |name| {
        name.starts_with("single_transformer_blocks.") && name.contains(".proj_mlp.")
    },
    is_original: |name| name.starts_with("vector_in."),
    convert,
};

/// Whole-module renames (BFL → diffusers), by name prefix.
const RENAMES: &[(&str, &str)] = &[
    ("img_in.", "x_embedder."),
    ("txt_in.", "context_embedder."),
    (
        "time_in.in_layer.",
        "time_text_embed.timestep_embedder.linear_1.",
    ),
    (
        "time_in.out_layer.",
        "time_text_embed.timestep_embedder.linear_2.",
    ),
    (
        "vector_in.in_layer.",
        "time_text_embed.text_embedder.linear_1.",
    ),
    (
        "vector_in.out_layer.",
        "time_text_embed.text_embedder.linear_2.",
    ),
    (
        "guidance_in.in_layer.",
        "time_text_embed.guidance_embedder.linear_1.",
    ),
    (
        "guidance_in.out_layer.",
        "time_text_embed.guidance_embedder.linear_2.",
    ),
    ("final_layer.linear.", "proj_out."),
];

/// Inside `double_blocks.N.` (parameter suffix apart; `.scale` becomes `.weight`).
const DOUBLE_BLOCK: &[(&str, &str)] = &[
    ("img_mod.lin", "norm1.linear"),
    ("txt_mod.lin", "norm1_context.linear"),
    ("img_attn.norm.query_norm", "attn.norm_q"),
    ("img_attn.norm.key_norm", "attn.norm_k"),
    ("img_attn.proj", "attn.to_out.0"),
    ("img_mlp.0", "ff.net.0.proj"),
    ("img_mlp.2", "ff.net.2"),
    ("txt_attn.norm.query_norm", "attn.norm_added_q"),
    ("txt_attn.norm.key_norm", "attn.norm_added_k"),
    ("txt_attn.proj", "attn.to_add_out"),
    ("txt_mlp.0", "ff_context.net.0.proj"),
    ("txt_mlp.2", "ff_context.net.2"),
];

/// Inside `single_blocks.N.`.
const SINGLE_BLOCK: &[(&str, &str)] = &[
    ("modulation.lin", "norm.linear"),
    ("linear2", "proj_out"),
    ("norm.query_norm", "attn.norm_q"),
    ("norm.key_norm", "attn.norm_k"),
];

/// FLUX.1's modules in Black Forest Labs' layout.
static LAYOUT: BflLayout = BflLayout {
    renames: RENAMES,
    double_block: DOUBLE_BLOCK,
    single_block: SINGLE_BLOCK,
    single_fused,
};

/// A BFL name in diffusers' FluxTransformer2DModel.
fn convert(name: &str) -> Option<Converted> {
    LAYOUT.convert(name)
}

/// A single block's `linear1`: q, k, v (a width each) and the MLP's input (4 widths), 7 equal
/// slices of its rows.
fn single_fused(prefix: &str, module: &str, param: &str) -> Option<Converted> {
    let attn = |p: &str| format!("{prefix}attn.{p}.{param}");
    (module == "linear1").then(|| Converted::Split {
        parts: 7,
        pieces: vec![
            (attn("to_q"), 1),
            (attn("to_k"), 1),
            (attn("to_v"), 1),
            (format!("{prefix}proj_mlp.{param}"), 4),
        ],
    })
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
            name("vector_in.out_layer.bias"),
            "time_text_embed.text_embedder.linear_2.bias"
        );
        assert_eq!(
            name("double_blocks.18.txt_mod.lin.weight"),
            "transformer_blocks.18.norm1_context.linear.weight"
        );
        assert_eq!(
            name("double_blocks.4.txt_attn.norm.key_norm.scale"),
            "transformer_blocks.4.attn.norm_added_k.weight"
        );
        assert_eq!(
            name("single_blocks.37.linear2.bias"),
            "single_transformer_blocks.37.proj_out.bias"
        );
        assert_eq!(
            convert("double_blocks.0.img_attn.qkv.bias"),
            Some(Converted::Fused([
                "transformer_blocks.0.attn.to_q.bias".into(),
                "transformer_blocks.0.attn.to_k.bias".into(),
                "transformer_blocks.0.attn.to_v.bias".into(),
            ]))
        );
        let Some(Converted::Split { parts: 7, pieces }) = convert("single_blocks.2.linear1.weight")
        else {
            panic!("linear1 is split");
        };
        assert_eq!(
            pieces.last(),
            Some(&("single_transformer_blocks.2.proj_mlp.weight".to_string(), 4))
        );
        assert_eq!(
            convert("final_layer.adaLN_modulation.1.weight"),
            Some(Converted::SwapHalves("norm_out.linear.weight".into()))
        );
        // FLUX.2's shared modulations have no FLUX.1 counterpart.
        assert_eq!(convert("double_stream_modulation_img.lin.weight"), None);
    }
}
