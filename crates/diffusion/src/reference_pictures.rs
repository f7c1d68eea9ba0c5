//! Reference pictures (diffusers' `image=` argument of the pipelines that condition an image on
//! pictures, FLUX.2 klein's among them): the size rules every such picture meets before a family
//! encodes it. A picture over 1024x1024 pixels is resized to about that area (PIL's Lanczos), then
//! centre-cropped to a multiple of the family's token side. The checks and sizes are request-level
//! rules, so the generic request code and the front ends use them without naming a family.

use crate::error::{DiffusionError, Result};
use crate::io::image::RgbImage;
use crate::io::resample::resize_lanczos;

/// Pictures with more pixels than this are resized to about this many (`_resize_to_target_area`).
pub const MAX_AREA: usize = 1024 * 1024;
/// The shortest side a reference picture may have (`check_image_input`).
const MIN_SIDE: usize = 64;
/// The largest ratio of a reference picture's long side to its short side.
const MAX_ASPECT: usize = 8;
/// Image sides made from a reference picture (when a request gives none) are cut to a multiple of
/// this, which every family's latent grid divides.
pub const SIDE_MULTIPLE: usize = 16;

/// The checks diffusers makes of a reference picture, with what to do about a failure.
pub fn check(image: &RgbImage) -> Result<()> {
    let (w, h) = (image.width, image.height);
    if w < MIN_SIDE || h < MIN_SIDE {
        return Err(DiffusionError::Request(format!(
            "a reference picture is {w}x{h}: both sides must be at least {MIN_SIDE} pixels"
        )));
    }
    if w > MAX_ASPECT * h || h > MAX_ASPECT * w {
        return Err(DiffusionError::Request(format!(
            "a reference picture is {w}x{h}: its long side may be at most {MAX_ASPECT} times its short side; crop it"
        )));
    }
    Ok(())
}

/// The size a picture over `MAX_AREA` pixels is resized to, keeping its aspect (each side
/// truncated, as diffusers' `int(side * scale)`); other pictures keep theirs.
pub fn area_limited_size(width: usize, height: usize) -> (usize, usize) {
    if width * height <= MAX_AREA {
        return (width, height);
    }
    let scale = (MAX_AREA as f64 / (width * height) as f64).sqrt();
    (
        (width as f64 * scale) as usize,
        (height as f64 * scale) as usize,
    )
}

/// The size a picture reaches the VAE at: area-limited, then each side cut down to a multiple of
/// `token_side` pixels. Also the image's size when a request gives none (diffusers' default).
pub fn prepared_size(width: usize, height: usize, token_side: usize) -> (usize, usize) {
    let (w, h) = area_limited_size(width, height);
    (w / token_side * token_side, h / token_side * token_side)
}

/// `image` as the VAE encodes it: resized when over `MAX_AREA` pixels, then centre-cropped to
/// `prepared_size` (the left and top margins are the smaller half, as PIL's crop box).
pub fn prepare(image: &RgbImage, token_side: usize) -> Result<RgbImage> {
    check(image)?;
    let (w, h) = area_limited_size(image.width, image.height);
    let resized;
    let image = if (w, h) != (image.width, image.height) {
        resized = resize_lanczos(image, w, h);
        &resized
    } else {
        image
    };
    let (cw, ch) = prepared_size(image.width, image.height, token_side);
    let (left, top) = ((image.width - cw) / 2, (image.height - ch) / 2);
    let mut pixels = Vec::with_capacity(cw * ch * 3);
    for row in image
        .pixels
        .chunks_exact(image.width * 3)
        .skip(top)
        .take(ch)
    {
        pixels.extend_from_slice(&row[left * 3..(left + cw) * 3]);
    }
    Ok(RgbImage {
        width: cw,
        height: ch,
        pixels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(width: usize, height: usize) -> RgbImage {
        let pixels = (0..width * height * 3).map(|i| (i % 251) as u8).collect();
        RgbImage {
            width,
            height,
            pixels,
        }
    }

    #[test]
    fn pictures_are_cropped_about_their_centre_to_whole_tokens() {
        let image = picture(75, 66);
        let out = prepare(&image, 8).unwrap();
        assert_eq!((out.width, out.height), (72, 64));
        // Margins of (3/2, 2/2) = (1, 1): the output's first pixel is the input's (1, 1).
        assert_eq!(
            out.pixels[..3],
            image.pixels[(75 + 1) * 3..(75 + 1) * 3 + 3]
        );
        let last_row = &out.pixels[63 * 72 * 3..];
        assert_eq!(
            last_row[..3],
            image.pixels[(64 * 75 + 1) * 3..(64 * 75 + 1) * 3 + 3]
        );
    }

    #[test]
    fn small_or_extreme_pictures_are_refused_by_size() {
        for (w, h) in [(63, 200), (200, 40), (520, 64), (64, 513)] {
            let err = prepare(&picture(w, h), 16).unwrap_err().to_string();
            assert!(err.contains(&format!("{w}x{h}")), "{err}");
        }
        assert!(prepare(&picture(512, 64), 16).is_ok());
    }
}
