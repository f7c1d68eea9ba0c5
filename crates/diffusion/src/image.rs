//! Decoded images: conversion to 8-bit RGB exactly as diffusers' postprocessing does, and PNG files
//! that carry the generation parameters in text chunks, written atomically.

use std::io::Write;
use std::path::Path;

use crate::error::{DiffusionError, Result};

/// An 8-bit RGB image, row-major, 3 bytes per pixel.
#[derive(Debug, Clone, PartialEq)]
pub struct RgbImage {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

/// `values`: the VAE output [3, H, W] in about [-1, 1], planar. Returns the float image in [0, 1]
/// as [H, W, 3] (diffusers' `output_type="np"`) and its 8-bit form (`round(x * 255)`).
pub fn postprocess(values: &[f32], height: usize, width: usize) -> (Vec<f32>, RgbImage) {
    let plane = height * width;
    let mut float = vec![0f32; plane * 3];
    let mut pixels = vec![0u8; plane * 3];
    for c in 0..3 {
        for i in 0..plane {
            let v = (values[c * plane + i] / 2.0 + 0.5).clamp(0.0, 1.0);
            float[i * 3 + c] = v;
            pixels[i * 3 + c] = (v * 255.0).round_ties_even() as u8;
        }
    }
    (
        float,
        RgbImage {
            width,
            height,
            pixels,
        },
    )
}

/// Writes `image` as an RGB PNG with one UTF-8 `iTXt` chunk per (keyword, text) pair. The file appears
/// complete or not at all: the PNG is written beside it and renamed into place.
pub fn write_png(path: &Path, image: &RgbImage, text: &[(&str, String)]) -> Result<()> {
    let fail = |problem: String| DiffusionError::ImageWrite {
        path: path.to_path_buf(),
        problem,
    };
    let mut encoded = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut encoded, image.width as u32, image.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        for (keyword, value) in text {
            encoder
                .add_itxt_chunk(keyword.to_string(), value.clone())
                .map_err(|e| fail(e.to_string()))?;
        }
        let mut writer = encoder.write_header().map_err(|e| fail(e.to_string()))?;
        writer
            .write_image_data(&image.pixels)
            .map_err(|e| fail(e.to_string()))?;
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| fail("the path has no file name".into()))?;
    let tmp = dir.join(format!(".{}.partial", name.to_string_lossy()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&encoded)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postprocess_maps_range_and_layout() {
        // 1x2 image: pixel 0 = (-1, 0, 1), pixel 1 = (2, -2, 0.5)
        let planar = [-1.0, 2.0, 0.0, -2.0, 1.0, 0.5];
        let (float, img) = postprocess(&planar, 1, 2);
        assert_eq!(img.pixels, vec![0, 128, 255, 255, 0, 191]);
        assert_eq!(float[0..3], [0.0, 0.5, 1.0]);
    }

    #[test]
    fn png_round_trip_keeps_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.png");
        let img = RgbImage {
            width: 2,
            height: 1,
            pixels: vec![1, 2, 3, 4, 5, 6],
        };
        write_png(&path, &img, &[("parameters", "prompt: a cat".into())]).unwrap();
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        reader.next_frame(&mut buf).unwrap();
        assert_eq!(&buf[..6], &[1, 2, 3, 4, 5, 6]);
        let text = &reader.info().utf8_text;
        assert_eq!(text[0].get_text().unwrap(), "prompt: a cat");
        assert!(!dir.path().join(".x.png.partial").exists());
    }
}
