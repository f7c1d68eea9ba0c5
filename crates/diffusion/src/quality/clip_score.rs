//! CLIP score as torchmetrics' `CLIPScore` computes it: 100 · max(cos(image features, text
//! features), 0) with a transformers `CLIPModel` folder (openai/clip-vit-large-patch14 by default)
//! and its processor: the picture's shortest side resized to the processor's size with PIL's
//! bicubic filter, centre-cropped, scaled to 0..1 and normalised by CLIP's mean and std; the
//! prompt tokenized whole and cut at the text tower's positions (77: its end-of-text token is
//! then gone), pooled where transformers pools it.

use std::path::Path;

use burn::prelude::*;
use burn::tensor::TensorData;
use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::io::image::RgbImage;
use crate::io::resample::{resize, Filter};
use crate::io::sharded::component_weights;
use crate::io::weights::Precision;
use crate::models::clip::ClipTextModel;
use crate::models::clip_vision::{ClipModelConfig, ClipVisionModel, IGNORED};
use crate::models::config::read_json;
use crate::models::tokenizer::Tokenizer;
use crate::nn::loader::Loader;

/// The CLIP model torchmetrics' `CLIPScore` uses by default (and MLPerf's text-to-image CLIP score).
pub const DEFAULT_CLIP_MODEL: &str = "openai/clip-vit-large-patch14";

/// The files of a transformers `CLIPModel` repository the scorer reads.
pub const CLIP_MODEL_FILES: &[&str] = &[
    "config.json",
    "preprocessor_config.json",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "model.safetensors",
];

/// One picture's score against one prompt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClipScore {
    /// 100 · the cosine of the two features (negative where they point apart).
    pub similarity: f64,
    /// `similarity`, 0 where it is negative: torchmetrics' CLIP score.
    pub score: f64,
}

/// `preprocessor_config.json` of a `CLIPProcessor` (openai's values by default).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
struct ImageProcessorConfig {
    do_resize: bool,
    size: Size,
    resample: u32,
    do_center_crop: bool,
    crop_size: Size,
    do_rescale: bool,
    rescale_factor: f64,
    do_normalize: bool,
    image_mean: [f64; 3],
    image_std: [f64; 3],
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Size {
    shortest_edge: Option<usize>,
    height: Option<usize>,
    width: Option<usize>,
}

impl Default for ImageProcessorConfig {
    fn default() -> Self {
        ImageProcessorConfig {
            do_resize: true,
            size: Size {
                shortest_edge: Some(224),
                ..Size::default()
            },
            resample: 3,
            do_center_crop: true,
            crop_size: Size {
                height: Some(224),
                width: Some(224),
                ..Size::default()
            },
            do_rescale: true,
            rescale_factor: 1.0 / 255.0,
            do_normalize: true,
            image_mean: [0.48145466, 0.4578275, 0.40821073],
            image_std: [0.26862954, 0.26130258, 0.27577711],
        }
    }
}

/// What the scorer does to a picture before the vision tower.
#[derive(Debug, Clone)]
struct Preprocess {
    shortest_edge: usize,
    crop: usize,
    filter: Filter,
    mean: [f64; 3],
    std: [f64; 3],
}

impl Preprocess {
    /// The processor's settings, refused where SD Bench does otherwise (or the vision tower
    /// takes another size).
    fn read(path: &Path, image_size: usize) -> Result<Self> {
        let c: ImageProcessorConfig = match path.is_file() {
            true => read_json(path)?,
            false => ImageProcessorConfig::default(),
        };
        let unsupported = |what: &str| Err(DiffusionError::unsupported(path, what.to_string()));
        if !(c.do_resize && c.do_center_crop && c.do_rescale && c.do_normalize) {
            return unsupported(
                "a CLIP image processor that does not resize, crop, rescale and normalize",
            );
        }
        if (c.rescale_factor - 1.0 / 255.0).abs() > 1e-9 {
            return unsupported("a rescale factor other than 1/255");
        }
        let filter = match c.resample {
            3 => Filter::Bicubic,
            1 => Filter::Lanczos,
            _ => return unsupported("a resampling filter other than bicubic (3) or Lanczos (1)"),
        };
        let Some(shortest_edge) = c.size.shortest_edge else {
            return unsupported("a resize to other than a shortest edge");
        };
        let crop = match (c.crop_size.height, c.crop_size.width) {
            (Some(h), Some(w)) if h == w && h == image_size => h,
            _ => return unsupported("a crop other than the vision tower's square image size"),
        };
        if shortest_edge < crop || shortest_edge > 4 * crop || c.image_std.iter().any(|s| *s <= 0.0)
        {
            return unsupported("a shortest edge smaller than the crop (or over 4 times it), or a standard deviation of 0");
        }
        Ok(Preprocess {
            shortest_edge,
            crop,
            filter,
            mean: c.image_mean,
            std: c.image_std,
        })
    }

    /// `image` as the vision tower takes it: [3, crop, crop] values, channel-major.
    fn pixels(&self, image: &RgbImage) -> Result<Vec<f32>> {
        let (w, h) = (image.width, image.height);
        if w == 0 || h == 0 || image.pixels.len() != w * h * 3 {
            return Err(DiffusionError::Request(format!(
                "a {w}x{h} picture of {} bytes cannot be scored",
                image.pixels.len()
            )));
        }
        // transformers' get_resize_output_image_size: the long side as int(edge * long / short).
        let (short, long) = (w.min(h), w.max(h));
        let edge = self.shortest_edge;
        let stretched = ((edge * long) as f64 / short as f64) as usize;
        let (rw, rh) = if w <= h {
            (edge, stretched)
        } else {
            (stretched, edge)
        };
        let resized = resize(image, rw, rh, self.filter);
        let (top, left) = ((rh - self.crop) / 2, (rw - self.crop) / 2);
        let n = self.crop * self.crop;
        let mut out = vec![0f32; 3 * n];
        for y in 0..self.crop {
            for x in 0..self.crop {
                let at = ((top + y) * rw + left + x) * 3;
                for c in 0..3 {
                    let v = f64::from(resized.pixels[at + c]) / 255.0;
                    out[c * n + y * self.crop + x] = ((v - self.mean[c]) / self.std[c]) as f32;
                }
            }
        }
        Ok(out)
    }
}

/// A CLIP model ready to score pictures against prompts.
pub struct ClipScorer<B: Backend> {
    text: ClipTextModel<B>,
    vision: ClipVisionModel<B>,
    tokenizer: Tokenizer,
    preprocess: Preprocess,
    /// The text tower's end-of-text id; 2 is transformers' legacy rule (pooled at the largest id).
    eos_token_id: u32,
    positions: usize,
    device: B::Device,
}

impl<B: Backend> ClipScorer<B> {
    /// Reads a transformers `CLIPModel` folder (config.json, model.safetensors, the tokenizer's
    /// vocab.json and merges.txt, preprocessor_config.json) onto `device`, in f32.
    pub fn load(folder: &Path, device: &B::Device) -> Result<Self> {
        let config_path = folder.join("config.json");
        if !config_path.is_file() {
            return Err(DiffusionError::ModelFolder {
                path: folder.to_path_buf(),
                problem: "has no config.json: give the folder of a transformers CLIPModel (openai/clip-vit-large-patch14's)".into(),
            });
        }
        let config = ClipModelConfig::read(&config_path)?;
        let preprocess = Preprocess::read(
            &folder.join("preprocessor_config.json"),
            config.vision_config.image_size,
        )?;
        let tokenizer = Tokenizer::from_folder(folder)?;
        let (mut weights, _) = component_weights(folder, "model", Precision::F32, IGNORED)?;
        let mut loader = Loader::new(weights.as_mut(), device, Precision::F32);
        let text = ClipTextModel::load(&config.text_config, true, &mut loader)?;
        let vision =
            ClipVisionModel::load(&config.vision_config, config.projection_dim, &mut loader)?;
        loader.finish()?;
        Ok(ClipScorer {
            text,
            vision,
            tokenizer,
            preprocess,
            eos_token_id: config.text_eos_token_id,
            positions: config.text_config.max_position_embeddings,
            device: device.clone(),
        })
    }

    /// The prompt's token ids as the text tower reads them: `[BOS] tokens [EOS]`, cut at its
    /// positions (torchmetrics cuts after tokenizing, so a long prompt loses its end-of-text).
    pub fn token_ids(&self, prompt: &str) -> Result<Vec<u32>> {
        let mut ids = self.tokenizer.encode_unpadded(prompt)?;
        ids.truncate(self.positions);
        Ok(ids)
    }

    /// Where transformers reads the pooled output: with the legacy end-of-text id 2 (openai's
    /// configs), at the largest id; otherwise at the first end-of-text token, else position 0.
    fn pooled_at(&self, ids: &[u32]) -> usize {
        if self.eos_token_id == 2 {
            let largest = ids.iter().copied().max().unwrap_or(0);
            ids.iter().position(|&id| id == largest).unwrap_or(0)
        } else {
            ids.iter()
                .position(|&id| id == self.eos_token_id)
                .unwrap_or(0)
        }
    }

    /// `get_text_features`: the pooled state through `text_projection`.
    pub fn text_features(&self, prompt: &str) -> Result<Vec<f32>> {
        let ids = self.token_ids(prompt)?;
        let at = self.pooled_at(&ids);
        let s = ids.len();
        let values: Vec<i64> = ids.iter().map(|&id| i64::from(id)).collect();
        let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(values, [1, s]), &self.device);
        let out = self.text.forward(ids);
        values_of(self.text.pooled(out.last_hidden_state, &[at]))
    }

    /// The picture as the vision tower takes it: [3, crop, crop] values.
    pub fn pixels(&self, image: &RgbImage) -> Result<Vec<f32>> {
        self.preprocess.pixels(image)
    }

    /// `get_image_features` of the preprocessed picture.
    pub fn image_features(&self, image: &RgbImage) -> Result<Vec<f32>> {
        let crop = self.preprocess.crop;
        let pixels = self.pixels(image)?;
        let pixels =
            Tensor::<B, 4>::from_data(TensorData::new(pixels, [1, 3, crop, crop]), &self.device);
        values_of(self.vision.forward(pixels))
    }

    /// The picture's CLIP score against the prompt.
    pub fn score(&self, image: &RgbImage, prompt: &str) -> Result<ClipScore> {
        let a = self.image_features(image)?;
        let b = self.text_features(prompt)?;
        Ok(score_of(&a, &b))
    }
}

/// 100 · cos(a, b), and that clamped at 0.
pub fn score_of(a: &[f32], b: &[f32]) -> ClipScore {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let cosine = dot / (norm(a) * norm(b)).max(1e-12);
    let similarity = 100.0 * cosine;
    ClipScore {
        similarity,
        score: similarity.max(0.0),
    }
}

fn values_of<B: Backend>(t: Tensor<B, 2>) -> Result<Vec<f32>> {
    t.into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .map_err(|e| DiffusionError::Request(format!("the CLIP features cannot be read: {e:?}")))
}
