//! Z-Image transformer files as Tongyi-MAI's code and ComfyUI's `diffusion_models/` keep them
//! (`z_image_turbo_bf16.safetensors`): `layers.N.attention.qkv` fused, `attention.out`,
//! `q_norm`/`k_norm`, `x_embedder.` and `final_layer.` where diffusers has one per patch size
//! (`all_x_embedder.2-1.`, `all_final_layer.2-1.`), and a `norm_final` diffusers does not use.
//! Converted as diffusers' `convert_z_image_transformer_checkpoint_to_diffusers` converts them.

use crate::io::component_file::{Converted, DenoiserNames};

/// Z-Image's transformer files, for `io::component_file`.
pub static NAMES: DenoiserNames = DenoiserNames {
    what: "Z-Image transformer",
    is_diffusers: |name| name.starts_with("all_x_embedder."),
    // Its refiners are Z-Image's own (`x_embedder.` is SD3's original name too).
    is_original: |name| name.starts_with("noise_refiner.") || name.starts_with("context_refiner."),
    convert,
};

/// Substring renames, in diffusers' order.
const RENAMES: &[(&str, &str)] = &[
    ("final_layer.", "all_final_layer.2-1."),
    ("x_embedder.", "all_x_embedder.2-1."),
    (".attention.out.bias", ".attention.to_out.0.bias"),
    (".attention.k_norm.weight", ".attention.norm_k.weight"),
    (".attention.q_norm.weight", ".attention.norm_q.weight"),
    (".attention.out.weight", ".attention.to_out.0.weight"),
];

fn convert(name: &str) -> Option<Converted> {
    if name == "norm_final.weight" {
        return Some(Converted::Ignored);
    }
    let renamed = RENAMES
        .iter()
        .fold(name.to_string(), |n, (old, new)| n.replace(old, new));
    if let Some(base) = renamed.strip_suffix(".attention.qkv.weight") {
        return Some(Converted::Fused(
            ["to_q", "to_k", "to_v"].map(|p| format!("{base}.attention.{p}.weight")),
        ));
    }
    Some(Converted::Name(renamed))
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
        assert_eq!(
            name("final_layer.adaLN_modulation.1.weight"),
            "all_final_layer.2-1.adaLN_modulation.1.weight"
        );
        assert_eq!(name("x_embedder.bias"), "all_x_embedder.2-1.bias");
        assert_eq!(
            name("noise_refiner.1.attention.out.weight"),
            "noise_refiner.1.attention.to_out.0.weight"
        );
        assert_eq!(
            name("layers.29.attention.k_norm.weight"),
            "layers.29.attention.norm_k.weight"
        );
        assert_eq!(name("cap_embedder.1.weight"), "cap_embedder.1.weight");
        assert_eq!(
            convert("context_refiner.0.attention.qkv.weight"),
            Some(Converted::Fused([
                "context_refiner.0.attention.to_q.weight".into(),
                "context_refiner.0.attention.to_k.weight".into(),
                "context_refiner.0.attention.to_v.weight".into(),
            ]))
        );
        assert_eq!(convert("norm_final.weight"), Some(Converted::Ignored));
    }
}
