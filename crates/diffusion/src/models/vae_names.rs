//! The KL VAE's original tensor names (the LDM layout), as Stable Diffusion checkpoints keep them
//! under `first_stage_model.` and Black Forest Labs' `ae.safetensors` files (FLUX.1's, which
//! Z-Image uses, and FLUX.2's, ComfyUI's `vae/` files) keep them bare. FLUX.2's files hold the
//! latent convolutions inside the encoder and decoder (`encoder.quant_conv`,
//! `decoder.post_quant_conv`) and its latent batch norm as `bn.`, as diffusers'
//! `scripts/convert_flux2_to_diffusers.py` maps them; the rest is diffusers'
//! `convert_ldm_vae_checkpoint`.

/// The diffusers name of a VAE tensor stored under its original name (after any checkpoint
/// prefix), for a VAE of `blocks` encoder and decoder blocks; `None` for a name the VAE does not
/// have.
pub fn diffusers_name(name: &str, blocks: usize) -> Option<String> {
    let top = ["quant_conv.", "post_quant_conv.", "bn."];
    if top.iter().any(|p| name.starts_with(p)) {
        return Some(name.to_string());
    }
    // FLUX.2's files keep the latent convolutions inside the encoder and decoder.
    if let Some(rest) = name.strip_prefix("encoder.quant_conv.") {
        return Some(format!("quant_conv.{rest}"));
    }
    if let Some(rest) = name.strip_prefix("decoder.post_quant_conv.") {
        return Some(format!("post_quant_conv.{rest}"));
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

/// Whether `name` is one of diffusers' VAE names (an original file has none of these).
pub fn is_diffusers(name: &str) -> bool {
    [
        "encoder.down_blocks.",
        "decoder.up_blocks.",
        "encoder.mid_block.",
        "decoder.mid_block.",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Whether `name` is one of the original layout's VAE names.
pub fn is_original(name: &str) -> bool {
    [
        "encoder.down.",
        "decoder.up.",
        "encoder.mid.",
        "decoder.mid.",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoder_blocks_are_reversed() {
        let name = |n: &str| diffusers_name(n, 4);
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
    fn flux2_latent_convolutions_and_batch_norm_are_read_as_diffusers_maps_them() {
        let name = |n: &str| diffusers_name(n, 4);
        assert_eq!(
            name("encoder.quant_conv.weight").unwrap(),
            "quant_conv.weight"
        );
        assert_eq!(
            name("decoder.post_quant_conv.bias").unwrap(),
            "post_quant_conv.bias"
        );
        assert_eq!(name("bn.running_var").unwrap(), "bn.running_var");
        assert_eq!(name("quant_conv.bias").unwrap(), "quant_conv.bias");
        assert!(is_original("decoder.mid.block_1.conv1.weight"));
        assert!(is_diffusers("decoder.mid_block.resnets.0.conv1.weight"));
        assert!(!is_original("decoder.mid_block.resnets.0.conv1.weight"));
    }
}
