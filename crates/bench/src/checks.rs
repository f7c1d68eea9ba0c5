//! Checks every benchmark image must pass, and the hashes that identify it.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use sdbench_diffusion::io::image::RgbImage;

/// An image whose 8-bit values vary less than this (standard deviation over all pixels and
/// channels) is blank: a broken pipeline (all black, all grey) rather than a picture.
pub const MIN_PIXEL_STDEV: f64 = 2.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ImageCheck {
    /// sha256 of the 8-bit RGB pixels, row-major (independent of PNG encoding and metadata).
    pub sha256: String,
    /// 64-bit DCT perceptual hash, 16 hex digits: close images differ in few bits.
    pub phash: String,
    /// Standard deviation of the 8-bit values.
    pub pixel_stdev: f64,
    pub valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Checks an image: no NaN or infinite values (`non_finite`, as the engine counted them), not
/// blank; records its hashes.
pub fn check_image(image: &RgbImage, non_finite: usize) -> ImageCheck {
    let pixels = &image.pixels;
    let n = pixels.len().max(1) as f64;
    let mean = pixels.iter().map(|&p| p as f64).sum::<f64>() / n;
    let pixel_stdev = (pixels
        .iter()
        .map(|&p| (p as f64 - mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    let reason = if non_finite > 0 {
        Some(format!("{non_finite} pixel values are NaN or infinite"))
    } else if pixels.is_empty() {
        Some("the image is empty".into())
    } else if pixel_stdev < MIN_PIXEL_STDEV {
        Some(format!(
            "the image is blank (pixel standard deviation {pixel_stdev:.2} < {MIN_PIXEL_STDEV})"
        ))
    } else {
        None
    };
    ImageCheck {
        sha256: hex(&Sha256::digest(pixels)),
        phash: format!("{:016x}", phash(image)),
        pixel_stdev,
        valid: reason.is_none(),
        reason,
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The classic DCT perceptual hash: luma averaged down to 32x32, 2-D DCT-II, the 8x8 lowest
/// frequencies; bit i is set when coefficient i exceeds the median of the 63 non-DC ones.
pub fn phash(image: &RgbImage) -> u64 {
    const N: usize = 32;
    let (w, h) = (image.width.max(1), image.height.max(1));
    let mut small = [[0f64; N]; N];
    for (y, row) in small.iter_mut().enumerate() {
        let (y0, y1) = (y * h / N, ((y + 1) * h / N).max(y * h / N + 1).min(h));
        for (x, cell) in row.iter_mut().enumerate() {
            let (x0, x1) = (x * w / N, ((x + 1) * w / N).max(x * w / N + 1).min(w));
            let mut sum = 0.0;
            let mut count = 0.0;
            for yy in y0..y1 {
                for xx in x0..x1 {
                    let i = (yy * image.width + xx) * 3;
                    if let Some(p) = image.pixels.get(i..i + 3) {
                        sum += 0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64;
                        count += 1.0;
                    }
                }
            }
            *cell = if count > 0.0 { sum / count } else { 0.0 };
        }
    }
    let cos = |k: usize, n: usize| {
        (std::f64::consts::PI * (2 * n + 1) as f64 * k as f64 / (2 * N) as f64).cos()
    };
    let mut coeffs = [0f64; 64];
    for u in 0..8 {
        for v in 0..8 {
            let mut s = 0.0;
            for (y, row) in small.iter().enumerate() {
                for (x, value) in row.iter().enumerate() {
                    s += value * cos(u, y) * cos(v, x);
                }
            }
            coeffs[u * 8 + v] = s;
        }
    }
    let mut ac: Vec<f64> = coeffs[1..].to_vec();
    ac.sort_by(f64::total_cmp);
    let median = ac[ac.len() / 2];
    coeffs
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > median)
        .fold(0u64, |bits, (i, _)| bits | (1 << i))
}

/// Bits that differ between two perceptual hashes (0: the same picture to the eye).
pub fn phash_distance(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(width: usize, height: usize, f: impl Fn(usize, usize) -> [u8; 3]) -> RgbImage {
        let mut pixels = Vec::with_capacity(width * height * 3);
        for y in 0..height {
            for x in 0..width {
                pixels.extend_from_slice(&f(x, y));
            }
        }
        RgbImage {
            width,
            height,
            pixels,
        }
    }

    #[test]
    fn blank_and_non_finite_images_are_invalid() {
        let grey = image(64, 64, |_, _| [128, 128, 128]);
        let check = check_image(&grey, 0);
        assert!(!check.valid);
        assert!(check.reason.unwrap().contains("blank"));

        let scene = image(64, 64, |x, y| [(x * 4) as u8, (y * 4) as u8, 90]);
        let check = check_image(&scene, 0);
        assert!(check.valid, "{:?}", check.reason);
        let check = check_image(&scene, 1);
        assert_eq!(
            check.reason.as_deref(),
            Some("1 pixel values are NaN or infinite")
        );
    }

    #[test]
    fn sha256_is_of_the_pixels() {
        let tiny = image(1, 1, |_, _| [1, 2, 3]);
        // sha256 of the bytes 01 02 03.
        assert_eq!(
            check_image(&tiny, 0).sha256,
            "039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81"
        );
    }

    #[test]
    fn phash_survives_small_changes_and_separates_different_pictures() {
        let scene = |x: usize, y: usize| {
            let v = ((x as f64 / 9.0).sin() * 60.0 + (y as f64 / 23.0).cos() * 60.0 + 128.0) as u8;
            [v, v / 2, 255 - v]
        };
        let a = image(128, 96, scene);
        let brighter = image(128, 96, |x, y| scene(x, y).map(|c| c.saturating_add(6)));
        let other = image(128, 96, |x, y| {
            let v = if (x / 16 + y / 16) % 2 == 0 { 30 } else { 220 };
            [v, v, v]
        });
        let (ha, hb, hc) = (phash(&a), phash(&brighter), phash(&other));
        assert!(phash_distance(ha, hb) <= 4, "{}", phash_distance(ha, hb));
        assert!(phash_distance(ha, hc) >= 16, "{}", phash_distance(ha, hc));
    }
}
