//! Two runs' pictures side by side: each image of one run paired with the other's of the same
//! prompt, seed and place in its batch, with their mean absolute difference, PSNR and a picture
//! of where they differ. This is how people judge a backend or a quantized file: by looking.

use std::path::Path;

use sdbench_bench::result::{BenchResult, ImageResult};
use sdbench_diffusion::io::image::{decode_image, encode_png, RgbImage};

use crate::html::escape;
use crate::Run;

/// A run and the folder its image files are in (its result file's).
#[derive(Clone, Copy)]
pub struct Pictures<'a> {
    pub run: Run<'a>,
    pub dir: &'a Path,
}

/// How two pictures differ, on 0..255 values over every channel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    pub mean_abs: f64,
    /// Infinite for identical pictures.
    pub psnr_db: f64,
    /// The largest difference of one channel of one pixel.
    pub max_abs: u8,
}

/// `a` against `b` (the same size): the figures and the difference picture, scaled so that the
/// largest difference is white.
pub fn difference(a: &RgbImage, b: &RgbImage) -> Option<(Difference, RgbImage)> {
    if (a.width, a.height) != (b.width, b.height) || a.pixels.len() != b.pixels.len() {
        return None;
    }
    let diffs: Vec<u8> = a
        .pixels
        .iter()
        .zip(&b.pixels)
        .map(|(x, y)| x.abs_diff(*y))
        .collect();
    let n = diffs.len().max(1) as f64;
    let mean_abs = diffs.iter().map(|&d| f64::from(d)).sum::<f64>() / n;
    let mse = diffs.iter().map(|&d| f64::from(d).powi(2)).sum::<f64>() / n;
    let psnr_db = match mse {
        0.0 => f64::INFINITY,
        mse => 10.0 * (255.0f64 * 255.0 / mse).log10(),
    };
    let max_abs = diffs.iter().copied().max().unwrap_or(0);
    let scale = 255.0 / f64::from(max_abs.max(1));
    let picture = RgbImage {
        width: a.width,
        height: a.height,
        pixels: diffs
            .iter()
            .map(|&d| (f64::from(d) * scale).round().min(255.0) as u8)
            .collect(),
    };
    Some((
        Difference {
            mean_abs,
            psnr_db,
            max_abs,
        },
        picture,
    ))
}

/// Pictures are shown at most this wide or tall (the figures use every pixel).
const SHOWN_SIDE: usize = 384;

/// `image` shrunk by a whole factor (averaging each block) to at most `SHOWN_SIDE` a side.
fn shrunk(image: &RgbImage) -> RgbImage {
    let factor = image.width.max(image.height).div_ceil(SHOWN_SIDE).max(1);
    if factor == 1 {
        return image.clone();
    }
    let (w, h) = (image.width / factor, image.height / factor);
    let mut pixels = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            for c in 0..3 {
                let mut sum = 0u32;
                for dy in 0..factor {
                    for dx in 0..factor {
                        let i = ((y * factor + dy) * image.width + x * factor + dx) * 3 + c;
                        sum += u32::from(image.pixels[i]);
                    }
                }
                pixels.push((sum / (factor * factor) as u32) as u8);
            }
        }
    }
    RgbImage {
        width: w,
        height: h,
        pixels,
    }
}

/// `image`, shrunk to be shown, as a `data:` address of a PNG.
pub fn data_uri(image: &RgbImage) -> String {
    let data = encode_png(&shrunk(image), &[]).unwrap_or_default();
    format!(
        "data:image/png;base64,{}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, data)
    )
}

/// An `<img>` of `image`, embedded as a PNG.
fn img(image: &RgbImage, alt: &str) -> String {
    format!("<img alt=\"{}\" src=\"{}\">", escape(alt), data_uri(image))
}

/// The first pass's image of `r` with `image`'s prompt, seed and place in its batch.
fn counterpart<'a>(
    r: &'a BenchResult,
    of: &BenchResult,
    image: &ImageResult,
) -> Option<&'a ImageResult> {
    let prompt = &of.workload.prompts.get(image.prompt_index)?.prompt;
    r.results.iter().find(|x| {
        x.pass == 0
            && x.seed == image.seed
            && x.batch_index == image.batch_index
            && r.workload.prompts.get(x.prompt_index).map(|p| &p.prompt) == Some(prompt)
    })
}

/// Reads the picture a result names beside it, or says why it cannot.
fn picture(side: &Pictures, image: &ImageResult) -> Result<RgbImage, String> {
    let Some(name) = image.image.file.as_deref() else {
        return Err(format!("{} kept no file of this image", side.run.label));
    };
    // A name from a stranger's result stays inside its folder.
    if Path::new(name).components().count() != 1 {
        return Err(format!(
            "{}: the image name {name} is not a file name",
            side.run.label
        ));
    }
    let bytes = std::fs::read(side.dir.join(name))
        .map_err(|e| format!("{}: {name}: {e}", side.run.label))?;
    decode_image(&bytes).map_err(|e| format!("{}: {name} {e}", side.run.label))
}

/// Two pictures of one prompt and seed, and how they differ (none where the sizes differ).
pub struct Compared {
    pub a: RgbImage,
    pub b: RgbImage,
    pub difference: Option<(Difference, RgbImage)>,
}

/// One image of the first run and its counterpart, or why they cannot be compared.
pub struct Pair {
    pub prompt: String,
    pub seed: u64,
    pub compared: Result<Compared, String>,
}

/// Each first-pass image of `a` paired with `b`'s of the same prompt, seed and batch place.
pub fn pairs(a: &Pictures, b: &Pictures) -> Vec<Pair> {
    let (ra, rb) = (a.run.result, b.run.result);
    ra.results
        .iter()
        .filter(|x| x.pass == 0)
        .map(|image| {
            let prompt = ra
                .workload
                .prompts
                .get(image.prompt_index)
                .map_or(String::new(), |p| p.prompt.clone());
            let compared = match counterpart(rb, ra, image) {
                None => Err(format!(
                    "{} has no image of this prompt and seed",
                    b.run.label
                )),
                Some(other) => picture(a, image).and_then(|pa| {
                    let pb = picture(b, other)?;
                    Ok(Compared {
                        difference: difference(&pa, &pb),
                        a: pa,
                        b: pb,
                    })
                }),
            };
            Pair {
                prompt,
                seed: image.seed,
                compared,
            }
        })
        .collect()
}

/// "identical", or the PSNR in dB.
pub fn psnr_text(d: &Difference) -> String {
    match d.psnr_db.is_finite() {
        true => format!("{:.1}", d.psnr_db),
        false => "identical".into(),
    }
}

/// The HTML section pairing `a`'s images with `b`'s.
pub fn section(a: &Pictures, b: &Pictures) -> String {
    let mut out = format!(
        "<h2>Images side by side</h2>\n<p class=\"muted\">{} against {}, paired by prompt and seed: the mean absolute difference and PSNR over every pixel's channels (0–255), and where they differ (scaled so that the largest difference is white).</p>\n<table class=\"pictures\">\n<tr><th>prompt · seed</th><th>{}</th><th>{}</th><th>difference</th><th>mean abs. diff.</th><th>PSNR (dB)</th></tr>\n",
        escape(a.run.label),
        escape(b.run.label),
        escape(a.run.label),
        escape(b.run.label)
    );
    for pair in pairs(a, b) {
        out.push_str(&format!(
            "<tr class=\"pair\"><td>{} · {}</td>",
            escape(&pair.prompt),
            pair.seed
        ));
        match &pair.compared {
            Err(why) => out.push_str(&format!(
                "<td colspan=\"5\" class=\"muted\">{}</td>",
                escape(why)
            )),
            Ok(c) => {
                out.push_str(&format!(
                    "<td>{}</td><td>{}</td>",
                    img(&c.a, a.run.label),
                    img(&c.b, b.run.label)
                ));
                match &c.difference {
                    Some((d, picture)) => out.push_str(&format!(
                        "<td>{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{}</td>",
                        img(picture, "difference"),
                        d.mean_abs,
                        psnr_text(d)
                    )),
                    None => out.push_str(&format!(
                        "<td colspan=\"3\" class=\"muted\">the sizes differ ({}x{} and {}x{})</td>",
                        c.a.width, c.a.height, c.b.width, c.b.height
                    )),
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}
