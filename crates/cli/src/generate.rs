//! `sdbench generate`: images from a prompt, or from a prompt and a picture (image-to-image).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use sdbench_bench::vram_report::VramRecorder;
use sdbench_diffusion::io::image::{read_image, write_png};
use sdbench_diffusion::io::npy;
use sdbench_diffusion::limits::{self, MAX_BATCH, PRECISION_CHOICES};
use sdbench_diffusion::pipeline::{img2img_start, StageTimings};
use sdbench_diffusion::{
    CancelToken, GenerateRequest, InitImage, InitialNoise, LoadOptions, MemoryProfile, Pipeline,
    Progress, SchedulerKind,
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
    /// Image width in pixels (a multiple of 8, at most 2048); default 512, or the init image's.
    #[arg(long)]
    width: Option<usize>,
    /// Image height in pixels (a multiple of 8, at most 2048); default 512, or the init image's.
    #[arg(long)]
    height: Option<usize>,
    /// Image-to-image: start from this picture (PNG or JPEG, sides multiples of 8).
    #[arg(long, value_name = "FILE")]
    init_image: Option<PathBuf>,
    /// With --init-image: how much to redraw, more than 0 and at most 1 (diffusers' `strength`);
    /// only the last steps x strength steps run.
    #[arg(long, requires = "init_image")]
    strength: Option<f64>,
    /// Images per prompt, made together (one UNet call per step for all of them); with more than
    /// one, --out NAME.png writes NAME-1.png, NAME-2.png, ...
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_BATCH as i64))]
    batch: u16,
    /// Seed of the initial noise (SD Bench's documented CPU generator, the same on every backend).
    #[arg(long, conflicts_with = "latents")]
    seed: Option<u64>,
    /// Initial latents: a float32 .npy of shape [batch, 4, H/8, W/8], used like diffusers' `latents=`
    /// (with --init-image: the noise added to the picture).
    #[arg(long)]
    latents: Option<PathBuf>,
    #[command(flatten)]
    device: crate::device_arg::DeviceArg,
    #[command(flatten)]
    memory: crate::device_arg::MemoryArg,
    /// Numeric precision: auto is f16 on GPUs that support it, f32 elsewhere.
    #[arg(long, default_value = "auto", value_parser = PRECISION_CHOICES)]
    precision: String,
    #[command(flatten)]
    threads: crate::threads::ThreadsArg,
    /// Where to write the PNG.
    #[arg(long)]
    out: PathBuf,
    /// Print the allocator's in-use and reserved memory after loading, text encoding, each step
    /// and decoding.
    #[arg(long)]
    vram_report: bool,
}

/// diffusers' img2img pipelines default to 0.8 (SD) and 0.3 (SDXL); one default for every model.
const DEFAULT_STRENGTH: f64 = 0.8;

pub fn run(args: GenerateArgs) -> anyhow::Result<()> {
    // Cheap checks first: nothing is loaded when the request cannot succeed.
    check_output_path(&args.out)?;
    let batch = args.batch as usize;
    let outputs = output_paths(&args.out, batch);
    let init = match &args.init_image {
        Some(path) => {
            let image = read_image(path)?;
            let strength = args.strength.unwrap_or(DEFAULT_STRENGTH);
            Some(InitImage { image, strength })
        }
        None => None,
    };
    let (width, height) = match &init {
        Some(init) => {
            let (w, h) = (init.image.width, init.image.height);
            if args.width.is_some_and(|x| x != w) || args.height.is_some_and(|x| x != h) {
                bail!(
                    "--init-image {} is {w}x{h}; leave out --width and --height or give its size (resizing is not done for you)",
                    display(args.init_image.as_deref())
                );
            }
            if let Some(problem) = limits::side_problem(w).or_else(|| limits::side_problem(h)) {
                bail!(
                    "--init-image {} is {w}x{h}; each side {problem}: crop or resize it",
                    display(args.init_image.as_deref())
                );
            }
            (w, h)
        }
        None => (args.width.unwrap_or(512), args.height.unwrap_or(512)),
    };
    for (name, side) in [("--width", width), ("--height", height)] {
        if let Some(problem) = limits::side_problem(side) {
            bail!("{name} {problem}");
        }
    }
    if let Some(problem) = limits::steps_problem(args.steps) {
        bail!("--steps {problem}");
    }
    if let Some(init) = &init {
        img2img_start(args.steps, init.strength).map_err(|e| anyhow::anyhow!("--strength: {e}"))?;
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
    let precision = limits::precision_choice(&args.precision).map_err(anyhow::Error::msg)?;
    let source = crate::model_arg::resolve(&args.model, args.model_config.as_deref())?;

    let request = GenerateRequest {
        prompt: args.prompt.clone(),
        negative_prompt: args.negative.clone(),
        steps: args.steps,
        guidance_scale: args.guidance,
        scheduler,
        width,
        height,
        noise,
        batch,
        init_image: init,
    };

    args.threads.apply()?;
    let (device, profile) =
        args.memory
            .select(&args.device, &source, precision, &request.shape())?;
    eprintln!("backend: {} on {}", device.kind, device.info.name);
    let load_start = Instant::now();
    let options = profile.load_options(LoadOptions {
        vae_encoder: request.init_image.is_some(),
        planned: Some(request.shape()),
        ..LoadOptions::default()
    });
    if profile != MemoryProfile::Full && !args.memory.is_auto() {
        eprintln!("memory profile: {profile}");
    }
    let pipeline = Pipeline::load_with(&source, device, precision, options)
        .context("loading the model failed")?;
    eprintln!(
        "model loaded in {:.1} s ({})",
        load_start.elapsed().as_secs_f64(),
        pipeline.precision.name()
    );

    pipeline.validate(&request)?;
    if pipeline.ignores_guidance() && request.guidance_scale > 1.0 {
        eprintln!(
            "note: this model is step-distilled (FLUX.2 klein): it runs without classifier-free guidance, whatever --guidance says"
        );
    }
    let mut vram = args
        .vram_report
        .then(|| VramRecorder::new(|| pipeline.device.allocator_memory()))
        .flatten()
        .map(|mut recorder| {
            recorder.record("load", None);
            recorder
        });
    let mut progress = StepProgress::new();
    // Each phase is printed as it ends too: a slow device's figures are known before the end.
    let mut printed = 0;
    let mut observe = |e: &Progress| {
        progress.update(e);
        if let Some(recorder) = vram.as_mut() {
            recorder.observe(e);
            for phase in &recorder.phases()[printed..] {
                let mib = |bytes: u64| bytes as f64 / (1u64 << 20) as f64;
                eprintln!(
                    "vram after {}: {:.1} MiB in use, {:.1} MiB reserved",
                    phase.name(),
                    mib(phase.in_use_bytes),
                    mib(phase.reserved_bytes)
                );
            }
            printed = recorder.phases().len();
        }
    };
    // Every step ends with a device sync, so each phase's memory is what the device holds then.
    let generated = pipeline.generate(&request, &mut observe, &CancelToken::new())?;
    // Printed, and kept in the history record of each image.
    let vram_report = vram.map(|recorder| recorder.finish("this generation"));
    if args.vram_report {
        match &vram_report {
            Some(report) => eprint!("{}", report.table()),
            None => eprintln!(
                "{}",
                crate::bench::no_vram_report(pipeline.device.kind.name())
            ),
        }
    }
    // A non-finite image is not written, but how long it took still says what ran (the memory
    // profile measurements read it).
    if let Err(e) = pipeline.require_finite(&generated) {
        eprintln!(
            "generated nothing usable in {}",
            timing_summary(&generated.timings, &request)
        );
        return Err(e.into());
    }

    let latents = args.latents.as_ref().map(|p| p.display().to_string());
    let init_source = args.init_image.as_ref().map(|p| p.display().to_string());
    let history = History::open(&default_path());
    for (k, (image, out)) in generated.images.iter().zip(&outputs).enumerate() {
        let mut record = Generation::from_engine(
            &args.model,
            &request,
            &pipeline,
            profile,
            &generated,
            k,
            init_source.as_deref(),
        );
        write_png(
            out,
            &image.image,
            &record.png_text(latents.as_deref(), env!("CARGO_PKG_VERSION")),
        )?;
        record.image_path = Some(
            std::path::absolute(out)
                .unwrap_or_else(|_| out.clone())
                .display()
                .to_string(),
        );
        record.vram_report = vram_report.clone();
        // The history is a convenience: an image that cannot be recorded is still written.
        let added = match &history {
            Ok(h) => h.add_generation(&record).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = added {
            eprintln!("warning: the image was not added to the history: {e}");
        }
    }
    let names: Vec<String> = outputs.iter().map(|p| p.display().to_string()).collect();
    println!(
        "wrote {} ({width}x{height}) in {}",
        names.join(", "),
        timing_summary(&generated.timings, &request)
    );
    Ok(())
}

/// "X s: text encoder ..., N steps ... s (R it/s), vae decode ... s": the generation's time
/// (loading left out) and its stages'.
fn timing_summary(t: &StageTimings, request: &GenerateRequest) -> String {
    let rate = t.unet_steps.len() as f64 / t.unet_total.max(1e-9);
    let encode = if request.init_image.is_some() {
        format!(", vae encode {:.2} s", t.vae_encode)
    } else {
        String::new()
    };
    format!(
        "{:.2} s: text encoder {:.2} s{encode}, {} steps {:.2} s ({:.2} it/s), vae decode {:.2} s",
        t.total,
        t.text_encoder,
        t.unet_steps.len(),
        t.unet_total,
        rate,
        t.vae_decode
    )
}

/// Where each image of a batch goes: `--out` itself for one image, NAME-1.png, NAME-2.png, ... for more.
fn output_paths(out: &Path, batch: usize) -> Vec<PathBuf> {
    if batch == 1 {
        return vec![out.to_path_buf()];
    }
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = out
        .extension()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "png".into());
    (1..=batch)
        .map(|k| out.with_file_name(format!("{stem}-{k}.{ext}")))
        .collect()
}

fn display(path: Option<&Path>) -> String {
    path.map(|p| p.display().to_string()).unwrap_or_default()
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
