//! Black Forest Labs' tensor-name layout, which their transformers' files share: whole modules
//! renamed by prefix, `final_layer.adaLN_modulation.1` stored as (shift, scale) where diffusers
//! loads (scale, shift), and blocks as `double_blocks.N.` and `single_blocks.N.` (diffusers'
//! `transformer_blocks.N.` and `single_transformer_blocks.N.`) with norms' weights as `.scale`.
//! A family gives its own module tables and fused projections.

use crate::io::file_weights::Converted;

/// One model's BFL names: module renames by prefix, each block kind's module table (BFL →
/// diffusers, parameter apart), and the projections stored fused.
pub struct BflLayout {
    pub renames: &'static [(&'static str, &'static str)],
    pub double_block: &'static [(&'static str, &'static str)],
    pub single_block: &'static [(&'static str, &'static str)],
    /// A single block's fused module's parts, where the model splits it (FLUX.1's `linear1`):
    /// given the diffusers block prefix (`single_transformer_blocks.3.`), the BFL module and the
    /// parameter (`weight`); `None` for a module kept whole. (A double block's q/k/v per stream,
    /// fused in every BFL file, are split by `convert` itself.)
    pub single_fused: fn(&str, &str, &str) -> Option<Converted>,
}

impl BflLayout {
    /// A BFL name in diffusers' terms; `None` for a name the model does not have.
    pub fn convert(&self, name: &str) -> Option<Converted> {
        if let Some(found) = self
            .renames
            .iter()
            .find_map(|(old, new)| name.strip_prefix(old).map(|t| format!("{new}{t}")))
        {
            return Some(Converted::Name(found));
        }
        if let Some(param) = name.strip_prefix("final_layer.adaLN_modulation.1.") {
            return Some(Converted::SwapHalves(format!("norm_out.linear.{param}")));
        }
        let (blocks, double) = if let Some(rest) = name.strip_prefix("double_blocks.") {
            (rest, true)
        } else if let Some(rest) = name.strip_prefix("single_blocks.") {
            (rest, false)
        } else {
            return None;
        };
        let (table, new_blocks) = match double {
            true => (self.double_block, "transformer_blocks"),
            false => (self.single_block, "single_transformer_blocks"),
        };
        let (index, inner) = blocks.split_once('.')?;
        let index: usize = index.parse().ok()?;
        let (module, param) = inner.rsplit_once('.')?;
        let param = if param == "scale" { "weight" } else { param };
        let prefix = format!("{new_blocks}.{index}.");
        let attn = |p: &str| format!("{prefix}attn.{p}.{param}");
        let fused = match (double, module) {
            (true, "img_attn.qkv") => Some(Converted::Fused(["to_q", "to_k", "to_v"].map(attn))),
            (true, "txt_attn.qkv") => Some(Converted::Fused(
                ["add_q_proj", "add_k_proj", "add_v_proj"].map(attn),
            )),
            (true, _) => None,
            (false, _) => (self.single_fused)(&prefix, module, param),
        };
        if fused.is_some() {
            return fused;
        }
        let (_, new) = table.iter().find(|(old, _)| *old == module)?;
        Some(Converted::Name(format!("{prefix}{new}.{param}")))
    }
}
