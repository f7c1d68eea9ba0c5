//! Resizing 8-bit RGB pictures with PIL's Lanczos filter, the way `Image.resize(size, LANCZOS)`
//! does it (Pillow's `Resample.c`), so that a picture diffusers resizes before encoding reaches
//! the model with the same bytes here: a 3-lobe windowed sinc widened by the scale when shrinking,
//! weights rounded to 22-bit fixed point, a horizontal pass into 8-bit rows and then a vertical
//! one, each value rounded and clamped to 0-255.

use super::image::RgbImage;

/// Pillow's `PRECISION_BITS` for 8-bit images: 32 - 8 (the values) - 2 (headroom).
const PRECISION_BITS: u32 = 22;
/// The Lanczos window's half-width in input pixels at scale 1.
const SUPPORT: f64 = 3.0;

/// `image` resized to `width` x `height` (each at least 1) with PIL's Lanczos filter.
pub fn resize_lanczos(image: &RgbImage, width: usize, height: usize) -> RgbImage {
    let mut out = image.clone();
    if width != image.width {
        out = horizontal(&out, width);
    }
    if height != image.height {
        out = vertical(&out, height);
    }
    out
}

/// One output position's input window: its first input index and fixed-point weights.
struct Window {
    first: usize,
    weights: Vec<i32>,
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let x = x * std::f64::consts::PI;
        x.sin() / x
    }
}

fn lanczos(x: f64) -> f64 {
    if (-SUPPORT..SUPPORT).contains(&x) {
        sinc(x) * sinc(x / SUPPORT)
    } else {
        0.0
    }
}

/// Pillow's `precompute_coeffs` and `normalize_coeffs_8bpc` for `input` -> `output` pixels.
fn windows(input: usize, output: usize) -> Vec<Window> {
    let scale = input as f64 / output as f64;
    let filter_scale = scale.max(1.0);
    let support = SUPPORT * filter_scale;
    (0..output)
        .map(|i| {
            let center = (i as f64 + 0.5) * scale;
            // C's (int) cast truncates toward zero; the bounds are clamped to the input.
            let first = ((center - support + 0.5) as i64).max(0) as usize;
            let end = ((center + support + 0.5) as i64).min(input as i64) as usize;
            let raw: Vec<f64> = (first..end)
                .map(|x| lanczos((x as f64 - center + 0.5) / filter_scale))
                .collect();
            let total: f64 = raw.iter().sum();
            let weights = raw
                .iter()
                .map(|&w| {
                    let w = if total != 0.0 { w / total } else { w };
                    let fixed = w * f64::from(1u32 << PRECISION_BITS);
                    // Rounded half away from zero, as Pillow's (int)(x +/- 0.5).
                    (if fixed < 0.0 {
                        fixed - 0.5
                    } else {
                        fixed + 0.5
                    }) as i32
                })
                .collect();
            Window { first, weights }
        })
        .collect()
}

/// A fixed-point sum back to a byte: rounded (the sum starts at half), shifted, clamped.
fn to_byte(sum: i64) -> u8 {
    (sum >> PRECISION_BITS).clamp(0, 255) as u8
}

const HALF: i64 = 1 << (PRECISION_BITS - 1);

fn horizontal(image: &RgbImage, width: usize) -> RgbImage {
    let windows = windows(image.width, width);
    let mut pixels = Vec::with_capacity(width * image.height * 3);
    for row in image.pixels.chunks_exact(image.width * 3) {
        for window in &windows {
            for c in 0..3 {
                let sum = window
                    .weights
                    .iter()
                    .enumerate()
                    .fold(HALF, |sum, (k, &w)| {
                        sum + i64::from(row[(window.first + k) * 3 + c]) * i64::from(w)
                    });
                pixels.push(to_byte(sum));
            }
        }
    }
    RgbImage {
        width,
        height: image.height,
        pixels,
    }
}

fn vertical(image: &RgbImage, height: usize) -> RgbImage {
    let windows = windows(image.height, height);
    let stride = image.width * 3;
    let mut pixels = Vec::with_capacity(stride * height);
    for window in &windows {
        for x in 0..stride {
            let sum = window
                .weights
                .iter()
                .enumerate()
                .fold(HALF, |sum, (k, &w)| {
                    sum + i64::from(image.pixels[(window.first + k) * stride + x]) * i64::from(w)
                });
            pixels.push(to_byte(sum));
        }
    }
    RgbImage {
        width: image.width,
        height,
        pixels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_of_each_window_sum_to_one_in_fixed_point() {
        for (input, output) in [(70, 45), (20, 37), (1100, 1073), (5, 5)] {
            for window in windows(input, output) {
                let total: i64 = window.weights.iter().map(|&w| i64::from(w)).sum();
                assert!(
                    (total - (1 << PRECISION_BITS)).abs() <= window.weights.len() as i64,
                    "{input} -> {output}: {total}"
                );
                assert!(window.first + window.weights.len() <= input);
            }
        }
    }

    #[test]
    fn a_flat_picture_stays_flat() {
        let image = RgbImage {
            width: 9,
            height: 7,
            pixels: [10u8, 200, 255].repeat(63),
        };
        let out = resize_lanczos(&image, 4, 13);
        assert_eq!((out.width, out.height), (4, 13));
        assert!(out.pixels.chunks_exact(3).all(|p| p == [10, 200, 255]));
    }
}
