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
    /// A fused module's parts: given the diffusers block prefix (`transformer_blocks.3.`), the
    /// BFL module (`img_attn.qkv`) and the parameter (`weight`); `None` for an unfused module.
    pub fused: fn(&str, &str, &str) -> Option<Converted>,
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
        let (blocks, table, new_blocks) = if let Some(rest) = name.strip_prefix("double_blocks.") {
            (rest, self.double_block, "transformer_blocks")
        } else if let Some(rest) = name.strip_prefix("single_blocks.") {
            (rest, self.single_block, "single_transformer_blocks")
        } else {
            return None;
        };
        let (index, inner) = blocks.split_once('.')?;
        let index: usize = index.parse().ok()?;
        let (module, param) = inner.rsplit_once('.')?;
        let param = if param == "scale" { "weight" } else { param };
        let prefix = format!("{new_blocks}.{index}.");
        if let Some(parts) = (self.fused)(&prefix, module, param) {
            return Some(parts);
        }
        let (_, new) = table.iter().find(|(old, _)| *old == module)?;
        Some(Converted::Name(format!("{prefix}{new}.{param}")))
    }
}
