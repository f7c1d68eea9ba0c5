//! Where a generation's images go, written with their parameters inside, and their records in the
//! history.

use std::path::{Path, PathBuf};

use sdbench_diffusion::io::image::write_png;
use sdbench_history::{Generation, History};

use crate::error::{GenerateError, Result};

/// Where the images are written.
#[derive(Debug, Clone, PartialEq)]
pub enum Destination {
    /// This PNG for one image; for a batch, NAME-1.png, NAME-2.png, ... beside it.
    File(PathBuf),
    /// `{folder}/{generation id}.png`, one per image.
    Folder(PathBuf),
}

impl Destination {
    /// A destination that cannot be written is refused before anything is loaded.
    pub fn check(&self) -> Result<()> {
        let bad = |problem: String| Err(GenerateError::Request(problem));
        match self {
            Destination::File(out) => {
                let is_png = out
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("png"));
                if !is_png {
                    return bad(format!(
                        "the output must be a .png file (got {})",
                        out.display()
                    ));
                }
                if out.is_dir() {
                    return bad(format!(
                        "the output {} is a folder; name a .png file",
                        out.display()
                    ));
                }
                let parent = out
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                if !parent.is_dir() {
                    return bad(format!(
                        "the output's folder {} does not exist",
                        parent.display()
                    ));
                }
                Ok(())
            }
            Destination::Folder(folder) if !folder.is_dir() => bad(format!(
                "the images folder {} does not exist",
                folder.display()
            )),
            Destination::Folder(_) => Ok(()),
        }
    }

    /// Where image `k` (from 0) of a batch of `batch` goes.
    fn path(&self, record: &Generation, k: usize, batch: usize) -> PathBuf {
        match self {
            Destination::File(out) if batch == 1 => out.clone(),
            Destination::File(out) => {
                let stem = out
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let ext = out
                    .extension()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "png".into());
                out.with_file_name(format!("{stem}-{}.{ext}", k + 1))
            }
            Destination::Folder(folder) => folder.join(format!("{}.png", record.id)),
        }
    }
}

/// Writes each image (parameters inside) and records it in the history at `history`. The
/// history is a convenience: an image it cannot record is still written, with the reason
/// returned as a warning.
pub(crate) fn save(
    images: &[&sdbench_diffusion::io::image::RgbImage],
    records: &mut [Generation],
    destination: &Destination,
    latents_file: Option<&str>,
    app_version: &str,
    history: &Path,
) -> Result<(Vec<PathBuf>, Option<String>)> {
    let batch = images.len();
    let mut paths = Vec::with_capacity(batch);
    for (k, (image, record)) in images.iter().zip(records.iter_mut()).enumerate() {
        let path = destination.path(record, k, batch);
        write_png(&path, image, &record.png_text(latents_file, app_version))?;
        let shown = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        record.image_path = Some(shown.display().to_string());
        paths.push(path);
    }
    let recorded = History::open(history).and_then(|h| {
        records
            .iter()
            .try_for_each(|record| h.add_generation(record))
    });
    let warning = recorded
        .err()
        .map(|e| format!("the image was not added to the history: {e}"));
    Ok((paths, warning))
}
