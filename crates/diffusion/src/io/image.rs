//! Images in and out: PNG and JPEG files read as 8-bit RGB and turned upright by their EXIF
//! orientation (image-to-image, reference pictures), conversion of decoded
//! latents to 8-bit RGB exactly as diffusers' postprocessing does, and PNG files that carry the
//! generation parameters in text chunks, written atomically.

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

/// Pictures wider or taller than this are refused before decoding (a 4096x4096 run is the limit).
const MAX_SIDE: usize = 8192;

/// Reads a PNG or JPEG file as 8-bit RGB (alpha dropped, grey expanded, 16-bit reduced), as PIL's
/// `Image.open(path).convert("RGB")` gives it to diffusers, turned as its EXIF orientation says
/// (diffusers' `load_image` applies `ImageOps.exif_transpose`: a phone's portrait photo is stored
/// sideways with a tag).
pub fn read_image(path: &Path) -> Result<RgbImage> {
    let bytes = std::fs::read(path).map_err(|e| DiffusionError::ImageRead {
        path: path.to_path_buf(),
        problem: e.to_string(),
    })?;
    decode_image(&bytes).map_err(|problem| DiffusionError::ImageRead {
        path: path.to_path_buf(),
        problem,
    })
}

/// Decodes PNG or JPEG bytes as 8-bit RGB, upright by their EXIF orientation; the error says
/// what is wrong with them.
pub fn decode_image(bytes: &[u8]) -> std::result::Result<RgbImage, String> {
    let stored = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        decode_png(bytes)?
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        decode_jpeg(bytes)?
    } else {
        return Err("is not a PNG or JPEG image".into());
    };
    Ok(oriented(stored, exif_orientation(bytes)))
}

/// The EXIF orientation tag of a PNG's or JPEG's metadata: 1 (as stored) to 8; 1 without one, or
/// when the metadata cannot be read (the picture is then used as stored, as PIL does).
fn exif_orientation(bytes: &[u8]) -> u32 {
    exif::Reader::new()
        .read_from_container(&mut std::io::Cursor::new(bytes))
        .ok()
        .and_then(|e| {
            e.get_field(exif::Tag::Orientation, exif::In::PRIMARY)
                .and_then(|f| f.value.get_uint(0))
        })
        .unwrap_or(1)
}

/// `image` turned upright for EXIF `orientation`, as PIL's `exif_transpose`: 2 mirrors, 3 turns
/// 180 degrees, 4 flips, 5 transposes, 6 turns 90 degrees clockwise, 7 transverses, 8 turns 90
/// degrees anticlockwise; other values leave it.
fn oriented(image: RgbImage, orientation: u32) -> RgbImage {
    if !(2..=8).contains(&orientation) {
        return image;
    }
    let (w, h) = (image.width, image.height);
    let (ow, oh) = if orientation >= 5 { (h, w) } else { (w, h) };
    // The stored pixel that lands at (x, y) of the upright picture.
    let source = |x: usize, y: usize| match orientation {
        2 => (w - 1 - x, y),
        3 => (w - 1 - x, h - 1 - y),
        4 => (x, h - 1 - y),
        5 => (y, x),
        6 => (y, h - 1 - x),
        7 => (w - 1 - y, h - 1 - x),
        _ => (w - 1 - y, x),
    };
    let mut pixels = Vec::with_capacity(image.pixels.len());
    for y in 0..oh {
        for x in 0..ow {
            let (sx, sy) = source(x, y);
            let i = (sy * w + sx) * 3;
            pixels.extend_from_slice(&image.pixels[i..i + 3]);
        }
    }
    RgbImage {
        width: ow,
        height: oh,
        pixels,
    }
}

fn decode_png(bytes: &[u8]) -> std::result::Result<RgbImage, String> {
    let broken = |e: png::DecodingError| format!("is not a readable PNG image ({e})");
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(broken)?;
    let (width, height) = {
        let info = reader.info();
        (info.width as usize, info.height as usize)
    };
    check_side(width, height)?;
    let size = reader
        .output_buffer_size()
        .ok_or("is a PNG image too large to decode")?;
    let mut buf = vec![0; size];
    let frame = reader.next_frame(&mut buf).map_err(broken)?;
    let channels = frame.color_type.samples();
    to_rgb(&buf[..frame.buffer_size()], width, height, channels)
}

fn decode_jpeg(bytes: &[u8]) -> std::result::Result<RgbImage, String> {
    use zune_core::colorspace::ColorSpace;
    use zune_core::options::DecoderOptions;
    let options = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::RGB);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(
        zune_core::bytestream::ZCursor::new(bytes),
        options,
    );
    let broken = |e: zune_jpeg::errors::DecodeErrors| format!("is not a readable JPEG image ({e})");
    decoder.decode_headers().map_err(broken)?;
    let info = decoder
        .info()
        .ok_or("is a JPEG image without a frame header")?;
    let (width, height) = (info.width as usize, info.height as usize);
    check_side(width, height)?;
    let pixels = decoder.decode().map_err(broken)?;
    let channels = decoder
        .output_colorspace()
        .map_or(3, |c| c.num_components());
    to_rgb(&pixels, width, height, channels)
}

fn check_side(width: usize, height: usize) -> std::result::Result<(), String> {
    if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
        return Err(format!(
            "is {width}x{height} pixels; images from 1 to {MAX_SIDE} pixels a side can be used"
        ));
    }
    Ok(())
}

/// Interleaved 8-bit samples with 1 (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA) channels to RGB.
fn to_rgb(
    samples: &[u8],
    width: usize,
    height: usize,
    channels: usize,
) -> std::result::Result<RgbImage, String> {
    let count = width * height;
    if !(1..=4).contains(&channels) || samples.len() < count * channels {
        return Err(format!(
            "decoded to {} bytes for {width}x{height} pixels of {channels} channels",
            samples.len()
        ));
    }
    let mut pixels = Vec::with_capacity(count * 3);
    for px in samples.chunks_exact(channels).take(count) {
        match channels {
            1 | 2 => pixels.extend_from_slice(&[px[0]; 3]),
            _ => pixels.extend_from_slice(&px[..3]),
        }
    }
    Ok(RgbImage {
        width,
        height,
        pixels,
    })
}

/// `image` as diffusers' `VaeImageProcessor.preprocess` gives it to the VAE encoder: planar
/// [3, H, W] in [-1, 1] (`x / 255 * 2 - 1`, in f32).
pub fn preprocess(image: &RgbImage) -> Vec<f32> {
    let plane = image.width * image.height;
    let mut values = vec![0f32; plane * 3];
    for (i, px) in image.pixels.chunks_exact(3).enumerate() {
        for c in 0..3 {
            values[c * plane + i] = (px[c] as f32 / 255.0) * 2.0 - 1.0;
        }
    }
    values
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

/// `image` as the bytes of an RGB PNG with one UTF-8 `iTXt` chunk per (keyword, text) pair.
pub fn encode_png(image: &RgbImage, text: &[(&str, String)]) -> std::io::Result<Vec<u8>> {
    let encoding = |e: png::EncodingError| std::io::Error::other(e);
    let mut encoded = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut encoded, image.width as u32, image.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        for (keyword, value) in text {
            encoder
                .add_itxt_chunk(keyword.to_string(), value.clone())
                .map_err(encoding)?;
        }
        let mut writer = encoder.write_header().map_err(encoding)?;
        writer.write_image_data(&image.pixels).map_err(encoding)?;
    }
    Ok(encoded)
}

/// Writes `image` as an RGB PNG with one UTF-8 `iTXt` chunk per (keyword, text) pair. The file appears
/// complete or not at all: the PNG is written beside it and renamed into place.
pub fn write_png(path: &Path, image: &RgbImage, text: &[(&str, String)]) -> Result<()> {
    let fail = |source: std::io::Error| DiffusionError::ImageWrite {
        path: path.to_path_buf(),
        source,
    };
    let encoded = encode_png(image, text).map_err(fail)?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| {
        let problem = "the path has no file name";
        fail(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            problem,
        ))
    })?;
    let tmp = dir.join(format!(".{}.partial", name.to_string_lossy()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&encoded)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
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
    fn a_failed_write_keeps_the_os_error_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let img = RgbImage {
            width: 1,
            height: 1,
            pixels: vec![1, 2, 3],
        };
        let path = dir.path().join("missing").join("x.png");
        match write_png(&path, &img, &[]) {
            Err(DiffusionError::ImageWrite {
                path: named,
                source,
            }) => {
                assert_eq!(named, path);
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("expected ImageWrite, got {other:?}"),
        }
        assert!(!dir.path().join("missing").exists());
    }

    #[test]
    fn images_read_back_as_rgb_and_bad_bytes_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.png");
        let img = RgbImage {
            width: 2,
            height: 1,
            pixels: vec![1, 2, 3, 250, 128, 0],
        };
        write_png(&path, &img, &[]).unwrap();
        assert_eq!(read_image(&path).unwrap(), img);
        let values = preprocess(&img);
        assert_eq!(values.len(), 6);
        assert_eq!(values[0], 1.0 / 255.0 * 2.0 - 1.0); // red of pixel 0
        assert_eq!(values[1], 250.0 / 255.0 * 2.0 - 1.0); // red of pixel 1
        assert_eq!(values[5], -1.0); // blue of pixel 1

        // Grey with alpha: grey copied to all three channels, alpha dropped.
        assert_eq!(
            to_rgb(&[7, 255, 9, 0], 2, 1, 2).unwrap().pixels,
            vec![7, 7, 7, 9, 9, 9]
        );
        let text = dir.path().join("notes.png");
        std::fs::write(&text, "hello").unwrap();
        let err = read_image(&text).unwrap_err().to_string();
        assert!(
            err.contains("notes.png") && err.contains("not a PNG or JPEG"),
            "{err}"
        );
        let mut truncated = std::fs::read(&path).unwrap();
        truncated.truncate(30);
        let err = decode_image(&truncated).unwrap_err();
        assert!(err.contains("PNG"), "{err}");
        let err = decode_image(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 1]).unwrap_err();
        assert!(err.contains("JPEG"), "{err}");
        let err = read_image(&dir.path().join("missing.png"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.png"), "{err}");
    }

    /// A 3x2 PNG carrying each EXIF orientation in an `eXIf` chunk reads upright, pixel for pixel
    /// as PIL's `ImageOps.exif_transpose` gives it (red = stored index x + 3y; the expected
    /// orders printed by PIL 12 for orientations 1 to 8).
    #[test]
    fn exif_orientation_turns_pictures_as_pil_does() {
        let expected: [&[u8]; 8] = [
            &[0, 1, 2, 3, 4, 5],
            &[2, 1, 0, 5, 4, 3],
            &[5, 4, 3, 2, 1, 0],
            &[3, 4, 5, 0, 1, 2],
            &[0, 3, 1, 4, 2, 5],
            &[3, 0, 4, 1, 5, 2],
            &[5, 2, 4, 1, 3, 0],
            &[2, 5, 1, 4, 0, 3],
        ];
        let stored: Vec<u8> = (0..6u8).flat_map(|i| [i, 100, 200]).collect();
        for (orientation, order) in (1u16..=8).zip(expected) {
            // Big-endian TIFF: header, one IFD entry (0x0112, SHORT, 1 value), no next IFD.
            let mut tiff = b"MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01".to_vec();
            tiff.extend_from_slice(&orientation.to_be_bytes());
            tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
            let mut bytes = Vec::new();
            let mut encoder = png::Encoder::new(&mut bytes, 3, 2);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header().unwrap();
            writer
                .write_chunk(png::chunk::ChunkType(*b"eXIf"), &tiff)
                .unwrap();
            writer.write_image_data(&stored).unwrap();
            writer.finish().unwrap();
            let image = decode_image(&bytes).unwrap();
            let size = if orientation >= 5 { (2, 3) } else { (3, 2) };
            assert_eq!((image.width, image.height), size, "{orientation}");
            let red: Vec<u8> = image.pixels.iter().step_by(3).copied().collect();
            assert_eq!(red, order, "orientation {orientation}");
            assert!(image.pixels.chunks(3).all(|p| p[1..] == [100, 200]));
        }
    }

    /// A JPEG stored sideways (16x8, red left, blue right) with EXIF orientation 6, from
    /// scripts/make_flux2_fixtures.py: read upright, 8x16, red on top and blue below (PIL reads
    /// (254, 0, 0) and (0, 0, 254) at the two ends).
    #[test]
    fn a_sideways_jpeg_reads_upright() {
        let bytes = include_bytes!("../../tests/fixtures/oriented-6.jpg");
        let image = decode_image(bytes).unwrap();
        assert_eq!((image.width, image.height), (8, 16));
        let pixel = |x: usize, y: usize| &image.pixels[(y * 8 + x) * 3..(y * 8 + x) * 3 + 3];
        let near = |p: &[u8], q: [u8; 3]| p.iter().zip(q).all(|(&a, b)| a.abs_diff(b) <= 12);
        for x in 0..8 {
            assert!(near(pixel(x, 1), [255, 0, 0]), "{x}: {:?}", pixel(x, 1));
            assert!(near(pixel(x, 14), [0, 0, 255]), "{x}: {:?}", pixel(x, 14));
        }
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
