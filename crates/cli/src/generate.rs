//! `sdbench generate`: one image from a prompt.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use sdbench_diffusion::device::select;
use sdbench_diffusion::image::write_png;
use sdbench_diffusion::npy;
use sdbench_diffusion::{
    BackendRequest, CancelToken, GenerateRequest, InitialNoise, Pipeline, Precision, SchedulerKind,
};
use sdbench_history::{default_path, Generation, History};

use crate::progress::StepProgress;

#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    /// A diffusers model folder, a single-file SD1.x checkpoint (.safetensors), a Hub id (from the
    /// Hugging Face cache, downloaded if missing), or `synthetic` for SD1.5's architecture with
    /// generated weights (`synthetic-sd21`, `synthetic-sdxl-base`: SD2.1's, SDXL base's).
    #[arg(long)]
    model: String,
    /// For a single-file checkpoint: a diffusers model folder whose configs, tokenizer and scheduler
    /// describe it (default: SD1.5's, built in).
    #[arg(long, value_name = "FOLDER")]
    model_config: Option<PathBuf>,
    /// What to draw.
    #[arg(long)]
    prompt: String,
    /// What to steer away from (classifier-free guidance's unconditional text).
    #[arg(long, default_value = "")]
    negative: String,
    /// Denoising steps.
    #[arg(long, default_value_t = 30)]
    steps: usize,
    /// Classifier-free guidance scale; 1 or less turns guidance off.
    #[arg(long, default_value_t = 7.5)]
    guidance: f64,
    /// Scheduler; default: the model folder's own.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(SchedulerKind::NAMES))]
    scheduler: Option<String>,
    /// Image width in pixels (a multiple of 8).
    #[arg(long, default_value_t = 512)]
    width: usize,
    /// Image height in pixels (a multiple of 8).
    #[arg(long, default_value_t = 512)]
    height: usize,
    /// Seed of the initial noise (SD Bench's documented CPU generator, the same on every backend).
    #[arg(long, conflicts_with = "latents")]
    seed: Option<u64>,
    /// Initial latents: a float32 .npy of shape [1, 4, H/8, W/8], used like diffusers' `latents=`.
    #[arg(long)]
    latents: Option<PathBuf>,
    /// Compute backend.
    #[arg(long, default_value = "auto", value_parser = clap::builder::PossibleValuesParser::new(BackendRequest::NAMES))]
    backend: String,
    /// Numeric precision: auto is f16 on GPUs that support it, f32 elsewhere.
    #[arg(long, default_value = "auto", value_parser = ["auto", "f32", "f16"])]
    precision: String,
    #[command(flatten)]
    threads: crate::threads::ThreadsArg,
    /// Where to write the PNG.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: GenerateArgs) -> anyhow::Result<()> {
    // Cheap checks first: nothing is loaded when the request cannot succeed.
    check_output_path(&args.out)?;
    for (name, side) in [("--width", args.width), ("--height", args.height)] {
        if side == 0 || side % 8 != 0 {
            bail!("{name} must be a positive multiple of 8 (got {side})");
        }
    }
    if args.steps == 0 {
        bail!("--steps must be at least 1");
    }
    if !args.guidance.is_finite() {
        bail!("--guidance must be a finite number");
    }
    let noise = match (&args.latents, args.seed) {
        (Some(path), _) => {
            let array = npy::read_f32(path)?;
            InitialNoise::Latents {
                shape: array.shape,
                data: array.data,
                step_seed: 0,
            }
        }
        (None, seed) => InitialNoise::Seed(seed.unwrap_or(0)),
    };
    let scheduler = args
        .scheduler
        .as_deref()
        .map(SchedulerKind::from_name)
        .transpose()?;
    let precision = match args.precision.as_str() {
        "f32" => Some(Precision::F32),
        "f16" => Some(Precision::F16),
        _ => None,
    };
    let source = crate::model_arg::resolve(&args.model, args.model_config.as_deref())?;

    args.threads.apply()?;
    let device = select(BackendRequest::from_name(&args.backend)?)?;
    eprintln!("backend: {} on {}", device.kind, device.name);
    let load_start = Instant::now();
    let pipeline =
        Pipeline::load(&source, device, precision).context("loading the model failed")?;
    eprintln!(
        "model loaded in {:.1} s ({})",
        load_start.elapsed().as_secs_f64(),
        pipeline.precision.name()
    );

    let request = GenerateRequest {
        prompt: args.prompt.clone(),
        negative_prompt: args.negative.clone(),
        steps: args.steps,
        guidance_scale: args.guidance,
        scheduler,
        width: args.width,
        height: args.height,
        noise,
    };
    pipeline.validate(&request)?;
    let mut progress = StepProgress::new();
    let generated =
        pipeline.generate(&request, &mut |e| progress.update(e), &CancelToken::new())?;
    pipeline.require_finite(&generated)?;

    let mut record = Generation::from_engine(&args.model, &request, &pipeline, &generated);
    let latents = args.latents.as_ref().map(|p| p.display().to_string());
    write_png(
        &args.out,
        &generated.image,
        &record.png_text(latents.as_deref(), env!("CARGO_PKG_VERSION")),
    )?;
    record.image_path = Some(
        std::path::absolute(&args.out)
            .unwrap_or_else(|_| args.out.clone())
            .display()
            .to_string(),
    );
    // The history is a convenience: an image that cannot be recorded is still written.
    if let Err(e) = History::open(&default_path()).and_then(|h| h.add_generation(&record)) {
        eprintln!("warning: the image was not added to the history: {e}");
    }
    let t = &generated.timings;
    let rate = t.unet_steps.len() as f64 / t.unet_total.max(1e-9);
    println!(
        "wrote {} ({}x{}) in {:.2} s: text encoder {:.2} s, {} steps {:.2} s ({:.2} it/s), vae decode {:.2} s",
        args.out.display(),
        generated.image.width,
        generated.image.height,
        t.total,
        t.text_encoder,
        t.unet_steps.len(),
        t.unet_total,
        rate,
        t.vae_decode
    );
    Ok(())
}

fn check_output_path(out: &Path) -> anyhow::Result<()> {
    let is_png = out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if !is_png {
        bail!("--out must name a .png file (got {})", out.display());
    }
    if out.is_dir() {
        bail!("--out {} is a folder; name a .png file", out.display());
    }
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        bail!("the folder for --out ({}) does not exist", parent.display());
    }
    Ok(())
}
