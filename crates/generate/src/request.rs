//! What a person asks one generation for, checked before anything is loaded. Each rule's message
//! comes from where the rule lives (`sdbench_diffusion::limits`, the engine's strength check) and
//! reaches the person unchanged, whichever front end they use.

use std::path::Path;

use sdbench_diffusion::io::image::{decode_image, read_image, RgbImage};
use sdbench_diffusion::limits;
use sdbench_diffusion::pipeline::img2img_start;
use sdbench_diffusion::reference_pictures;
use sdbench_diffusion::{GenerateRequest, GuidanceOptions, InitImage, InitialNoise, SchedulerKind};

use crate::error::{GenerateError, Result};

/// The image side without a picture or a size given.
pub const DEFAULT_SIDE: usize = 512;
/// How much of a picture is redrawn when no strength is given. diffusers' img2img pipelines
/// default to 0.8 (SD) and 0.3 (SDXL); one default for every model.
pub const DEFAULT_STRENGTH: f64 = 0.8;

/// A picture a person gave, and its name (a path or a file name, as recorded).
#[derive(Debug, Clone)]
pub struct Picture {
    pub name: String,
    pub image: RgbImage,
}

impl Picture {
    /// A PNG or JPEG file.
    pub fn read(path: &Path) -> Result<Picture> {
        let image = read_image(path).map_err(|e| GenerateError::Request(e.to_string()))?;
        Ok(Picture {
            name: path.display().to_string(),
            image,
        })
    }

    /// A PNG or JPEG file's bytes, named `name`.
    pub fn decode(name: &str, bytes: &[u8]) -> Result<Picture> {
        let image = decode_image(bytes).map_err(|problem| {
            GenerateError::Request(format!("cannot use image {name}: {problem}"))
        })?;
        Ok(Picture {
            name: name.into(),
            image,
        })
    }

    fn with_strength(self, strength: f64) -> InitPicture {
        InitPicture {
            name: self.name,
            image: self.image,
            strength,
        }
    }
}

/// Image-to-image: the picture to start from, its name, and how much of it to redraw.
#[derive(Debug, Clone)]
pub struct InitPicture {
    pub name: String,
    pub image: RgbImage,
    pub strength: f64,
}

impl InitPicture {
    /// A PNG or JPEG file.
    pub fn read(path: &Path, strength: f64) -> Result<InitPicture> {
        Picture::read(path).map(|p| p.with_strength(strength))
    }

    /// A PNG or JPEG file's bytes, named `name`.
    pub fn decode(name: &str, bytes: &[u8], strength: f64) -> Result<InitPicture> {
        Picture::decode(name, bytes).map(|p| p.with_strength(strength))
    }
}

#[derive(Debug, Clone)]
pub struct GenerationRequest {
    pub prompt: String,
    pub negative_prompt: String,
    pub steps: usize,
    pub guidance: f64,
    /// Guidance truncation and normalization (Z-Image's; other families refuse them).
    pub guidance_options: GuidanceOptions,
    /// `None`: the model's own.
    pub scheduler: Option<SchedulerKind>,
    /// `None`: the picture's, or `DEFAULT_SIDE`.
    pub width: Option<usize>,
    pub height: Option<usize>,
    pub batch: usize,
    pub noise: InitialNoise,
    /// Where given latents came from (recorded in the PNG's parameters).
    pub latents_file: Option<String>,
    pub init: Option<InitPicture>,
    /// Pictures the image is conditioned on (FLUX.2 klein; other models refuse them).
    pub references: Vec<Picture>,
    /// Record the allocator's memory after each phase (`Event::Vram`, and in the history).
    pub vram_report: bool,
}

impl GenerationRequest {
    /// A text-to-image request with the defaults: 30 steps, guidance 7.5, seed 0, 512x512.
    pub fn new(prompt: impl Into<String>) -> GenerationRequest {
        GenerationRequest {
            prompt: prompt.into(),
            negative_prompt: String::new(),
            steps: 30,
            guidance: 7.5,
            guidance_options: GuidanceOptions::default(),
            scheduler: None,
            width: None,
            height: None,
            batch: 1,
            noise: InitialNoise::Seed(0),
            latents_file: None,
            init: None,
            references: Vec::new(),
            vram_report: false,
        }
    }

    /// The image's size: the picture's (a size given must match it), else the one given, else
    /// the first reference picture's as it is prepared (about 1024x1024 pixels at most, sides
    /// cut to multiples of 16: diffusers' default), else `DEFAULT_SIDE` square; each side checked.
    pub fn size(&self) -> Result<(usize, usize)> {
        let bad = |problem: String| Err(GenerateError::Request(problem));
        let (width, height) = match &self.init {
            Some(init) => {
                let (w, h) = (init.image.width, init.image.height);
                if self.width.is_some_and(|x| x != w) || self.height.is_some_and(|x| x != h) {
                    return bad(format!(
                        "the picture {} is {w}x{h}: leave out the width and height or give its size (resizing is not done for you)",
                        init.name
                    ));
                }
                let problem = limits::side_error("width", w).or(limits::side_error("height", h));
                if let Some(problem) = problem {
                    return bad(format!(
                        "the picture {} is {w}x{h}: its {problem}; crop or resize it",
                        init.name
                    ));
                }
                (w, h)
            }
            None => match self.references.first() {
                Some(first) => {
                    let (w, h) = (first.image.width, first.image.height);
                    let (pw, ph) =
                        reference_pictures::prepared_size(w, h, reference_pictures::SIDE_MULTIPLE);
                    let size = (self.width.unwrap_or(pw), self.height.unwrap_or(ph));
                    // A side taken from the picture that no image may have is the picture's fault.
                    let taken = [
                        ("width", size.0, self.width.is_none()),
                        ("height", size.1, self.height.is_none()),
                    ];
                    let problem = taken
                        .into_iter()
                        .filter(|&(_, _, taken)| taken)
                        .find_map(|(name, side, _)| limits::side_error(name, side));
                    if let Some(problem) = problem {
                        return bad(format!(
                            "the reference picture {} ({w}x{h}) would make a {}x{} image: its {problem}; give --width and --height (the app's Width and Height)",
                            first.name, size.0, size.1
                        ));
                    }
                    size
                }
                None => (
                    self.width.unwrap_or(DEFAULT_SIDE),
                    self.height.unwrap_or(DEFAULT_SIDE),
                ),
            },
        };
        for (name, side) in [("width", width), ("height", height)] {
            if let Some(problem) = limits::side_error(name, side) {
                return bad(problem);
            }
        }
        Ok((width, height))
    }

    /// Every check that needs no model: size, steps, batch, guidance, strength.
    pub fn check(&self) -> Result<()> {
        self.checked_size().map(|_| ())
    }

    /// `size`, once every other check has passed too.
    fn checked_size(&self) -> Result<(usize, usize)> {
        let size = self.size()?;
        let problem = limits::steps_error(self.steps)
            .or_else(|| limits::batch_error(self.batch))
            .or_else(|| limits::guidance_error(self.guidance))
            .or_else(|| limits::guidance_options_error(&self.guidance_options));
        if let Some(problem) = problem {
            return Err(GenerateError::Request(problem));
        }
        if let Some(init) = &self.init {
            img2img_start(self.steps, init.strength)
                .map_err(|e| GenerateError::Request(e.to_string()))?;
        }
        Ok(size)
    }

    /// The engine's request, once every check that needs no model has passed.
    pub fn engine_request(&self) -> Result<GenerateRequest> {
        let (width, height) = self.checked_size()?;
        Ok(GenerateRequest {
            prompt: self.prompt.clone(),
            negative_prompt: self.negative_prompt.clone(),
            steps: self.steps,
            guidance_scale: self.guidance,
            scheduler: self.scheduler,
            width,
            height,
            noise: self.noise.clone(),
            batch: self.batch,
            init_image: self.init.as_ref().map(|init| InitImage {
                image: init.image.clone(),
                strength: init.strength,
            }),
            reference_images: self.references.iter().map(|p| p.image.clone()).collect(),
            guidance_options: self.guidance_options,
        })
    }
}
