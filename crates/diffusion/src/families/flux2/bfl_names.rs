//! FLUX.2 transformer files as people keep them apart from a diffusers folder: ComfyUI's
//! `diffusion_models/flux-2-klein-*.safetensors` (or `.gguf`), in Black Forest Labs' own tensor
//! names (`double_blocks.N.img_attn.qkv`, `single_blocks.N.linear1`,
//! `final_layer.adaLN_modulation.1` with shift and scale in the other order, norms as `.scale`),
//! sometimes under `model.diffusion_model.`, or already in diffusers' names. Each name is converted
//! as diffusers' `convert_flux2_transformer_checkpoint_to_diffusers` converts it: the fused q/k/v
//! projections split in three and the final modulation's halves swapped.

use crate::io::bfl_names::BflLayout;
use crate::io::component_file::{Converted, DenoiserNames};

/// FLUX.2's transformer files, for `io::component_file`. The layouts are told by what only FLUX.2
/// has among the transformers SD Bench reads: the image stream's modulation shared by all double
/// blocks (FLUX.1's blocks each have their own; its files share the block names).
pub static NAMES: DenoiserNames = DenoiserNames {
    what: "FLUX.2 transformer",
    is_diffusers: |name| name.starts_with("double_stream_modulation_img.linear."),
    is_original: |name| name.starts_with("double_stream_modulation_img.lin."),
    convert,
};

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

/// FLUX.2's modules in Black Forest Labs' layout (a single block's `linear1` stays whole:
/// diffusers keeps it as `to_qkv_mlp_proj`).
static LAYOUT: BflLayout = BflLayout {
    renames: RENAMES,
    double_block: DOUBLE_BLOCK,
    single_block: SINGLE_BLOCK,
    single_fused: |_, _, _| None,
};

/// A BFL name in diffusers' Flux2Transformer2DModel.
fn convert(name: &str) -> Option<Converted> {
    LAYOUT.convert(name)
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
