//! Denoiser files kept apart from their model (a ComfyUI transformer file, Stability's single
//! files): the preset whose configs such a file needs, and the text encoder and VAE files it
//! runs with, asked of its family's descriptor.

use std::path::{Path, PathBuf};

use super::registry::FAMILIES;
use crate::error::Result;
use crate::pipeline::family::{Component, FilePart, Preset};
use crate::pipeline::ComponentFiles;

/// The preset whose repository's configs and tokenizer a denoiser file kept apart from its
/// repository needs (a ComfyUI transformer file), by its family's names and its tensor shapes;
/// `None` for any other file (a whole checkpoint carries its own configs or reads built-in
/// ones).
pub fn preset_for_denoiser_file(file: &Path) -> Result<Option<Preset>> {
    for family in FAMILIES {
        if let Some(files) = family.denoiser_files {
            if let Some(found) = (files.preset)(file)? {
                return Ok(Some(found));
            }
        }
    }
    Ok(None)
}

/// The text encoder and VAE files among `candidates` that `file`, a denoiser file of `preset`
/// (`preset_for_denoiser_file`), runs with (ComfyUI keeps them in `text_encoders/` and `vae/`
/// beside its `diffusion_models/`): for each such component the family has and the file does not
/// hold, the first candidate that fits it. Empty for a family whose denoiser files are not read
/// apart.
pub fn parts_for_denoiser_file(
    preset: Preset,
    file: &Path,
    candidates: &[PathBuf],
) -> ComponentFiles {
    let descriptor = preset.family().descriptor();
    let Some(files) = descriptor.denoiser_files else {
        return ComponentFiles::default();
    };
    let inside = (files.inside)(file);
    let mut parts = ComponentFiles::default();
    for component in descriptor.components {
        let Some(part) = component.kind.file_part() else {
            continue;
        };
        if inside.contains(&component.name) {
            continue;
        }
        let taken = |c: &PathBuf| parts.text_encoders.contains(c) || parts.vae.as_ref() == Some(c);
        let found = candidates
            .iter()
            .find(|c| c.as_path() != file && !taken(c) && (files.part_fits)(component, c))
            .cloned();
        match (part, found) {
            (FilePart::TextEncoder, Some(found)) => parts.text_encoders.push(found),
            (FilePart::Vae, Some(found)) => parts.vae = Some(found),
            (_, None) => {}
        }
    }
    parts
}

/// The components (text encoders, VAE) that `file`, a denoiser file of `preset`, runs with and
/// neither holds nor has among `parts` (`describe_parts` words them). A given
/// file counts for the component it fits by the built-in configs' widths, or, fitting none, for
/// the first one left (its load tells whether it is that).
pub fn parts_lacking(
    preset: Preset,
    file: &Path,
    parts: &ComponentFiles,
) -> Vec<&'static Component> {
    let descriptor = preset.family().descriptor();
    let Some(files) = descriptor.denoiser_files else {
        return Vec::new();
    };
    let inside = (files.inside)(file);
    let wanted = |part: FilePart| -> Vec<&'static Component> {
        descriptor
            .components
            .iter()
            .filter(|c| c.kind.file_part() == Some(part) && !inside.contains(&c.name))
            .collect()
    };
    let mut lacking = Vec::new();
    for (part, given) in [
        (FilePart::TextEncoder, parts.text_encoders.clone()),
        (FilePart::Vae, parts.vae.iter().cloned().collect()),
    ] {
        let mut left = wanted(part);
        let mut unmatched = 0;
        for given in &given {
            match left.iter().position(|c| (files.part_fits)(c, given)) {
                Some(i) => {
                    left.remove(i);
                }
                None => unmatched += 1,
            }
        }
        lacking.extend(left.into_iter().skip(unmatched));
    }
    lacking
}

/// "text_encoder_2 (a CLIP text encoder), vae (a VAE)", and the options that give them as files:
/// "--text-encoder and --vae", "--text-encoder (once for each)".
pub fn describe_parts(components: &[&Component]) -> (String, String) {
    let what: Vec<String> = components
        .iter()
        .map(|c| format!("{} ({})", c.name, c.kind.describe()))
        .collect();
    let count = |part| {
        components
            .iter()
            .filter(|c| c.kind.file_part() == Some(part))
            .count()
    };
    let mut options = Vec::new();
    match count(FilePart::TextEncoder) {
        0 => {}
        1 => options.push("--text-encoder"),
        _ => options.push("--text-encoder (once for each)"),
    }
    if count(FilePart::Vae) > 0 {
        options.push("--vae");
    }
    (what.join(", "), options.join(" and "))
}
