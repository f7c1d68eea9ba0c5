//! Resizing 8-bit RGB pictures with PIL's Lanczos or bicubic filter, the way
//! `Image.resize(size, LANCZOS | BICUBIC)` does it (Pillow's `Resample.c`), so that a picture
//! diffusers (or CLIP's image processor) resizes reaches the model with the same bytes here: the
//! filter (a 3-lobe windowed sinc, or Keys' cubic with a = -0.5) widened by the scale when
//! shrinking, weights rounded to 22-bit fixed point, a horizontal pass into 8-bit rows and then a
//! vertical one, each value rounded and clamped to 0-255.

use super::image::RgbImage;

/// Pillow's `PRECISION_BITS` for 8-bit images: 32 - 8 (the values) - 2 (headroom).
const PRECISION_BITS: u32 = 22;
/// The Lanczos window's half-width in input pixels at scale 1.
const SUPPORT: f64 = 3.0;

/// Pillow's resampling filters that SD Bench uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    Lanczos,
    Bicubic,
}

impl Filter {
    /// The half-width in input pixels at scale 1.
    fn support(self) -> f64 {
        match self {
            Filter::Lanczos => SUPPORT,
            Filter::Bicubic => 2.0,
        }
    }

    fn weight(self, x: f64) -> f64 {
        match self {
            Filter::Lanczos => lanczos(x),
            Filter::Bicubic => bicubic(x),
        }
    }
}

/// `image` resized to `width` x `height` (each at least 1) with PIL's Lanczos filter.
pub fn resize_lanczos(image: &RgbImage, width: usize, height: usize) -> RgbImage {
    resize(image, width, height, Filter::Lanczos)
}

/// `image` resized to `width` x `height` (each at least 1) with one of PIL's filters.
pub fn resize(image: &RgbImage, width: usize, height: usize, filter: Filter) -> RgbImage {
    let mut out = image.clone();
    if width != image.width {
        out = horizontal(&out, width, filter);
    }
    if height != image.height {
        out = vertical(&out, height, filter);
    }
    out
}

/// Pillow's `bicubic_filter` (a = -0.5).
fn bicubic(x: f64) -> f64 {
    const A: f64 = -0.5;
    let x = x.abs();
    if x < 1.0 {
        ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        (((x - 5.0) * x + 8.0) * x - 4.0) * A
    } else {
        0.0
    }
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
fn windows(input: usize, output: usize, filter: Filter) -> Vec<Window> {
    let scale = input as f64 / output as f64;
    let filter_scale = scale.max(1.0);
    let support = filter.support() * filter_scale;
    (0..output)
        .map(|i| {
            let center = (i as f64 + 0.5) * scale;
            // C's (int) cast truncates toward zero; the bounds are clamped to the input.
            let first = ((center - support + 0.5) as i64).max(0) as usize;
            let end = ((center + support + 0.5) as i64).min(input as i64) as usize;
            let raw: Vec<f64> = (first..end)
                .map(|x| filter.weight((x as f64 - center + 0.5) / filter_scale))
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

fn horizontal(image: &RgbImage, width: usize, filter: Filter) -> RgbImage {
    let windows = windows(image.width, width, filter);
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

fn vertical(image: &RgbImage, height: usize, filter: Filter) -> RgbImage {
    let windows = windows(image.height, height, filter);
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
        for (input, output, filter) in [
            (70, 45, Filter::Lanczos),
            (20, 37, Filter::Lanczos),
            (1100, 1073, Filter::Lanczos),
            (5, 5, Filter::Lanczos),
            (300, 224, Filter::Bicubic),
            (150, 224, Filter::Bicubic),
        ] {
            for window in windows(input, output, filter) {
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
