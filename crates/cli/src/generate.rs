//! `sdbench generate`: images from a prompt, or from a prompt and a picture (image-to-image).

use std::path::PathBuf;

use anyhow::Context as _;
use sdbench_diffusion::device::cpu_device;
use sdbench_diffusion::io::image::read_image;
use sdbench_diffusion::io::npy;
use sdbench_diffusion::limits::{self, MAX_BATCH, PRECISION_CHOICES};
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::quality::clip_score::ClipScorer;
use sdbench_diffusion::{GuidanceOptions, InitialNoise, SchedulerKind, SkipLayerGuidance};
use sdbench_generate::{
    Context, Destination, GenerationRequest, Generator, InitPicture, ModelSetup, Outcome, Picture,
    DEFAULT_STRENGTH,
};
use sdbench_history::{default_path, History};
use sdbench_hub::HubSettings;
use sdbench_session::vram_report::{VramPhase, VramReport};
use sdbench_session::Event;

use crate::progress::{DownloadBar, StepProgress};

#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    #[arg(long, help = crate::model_arg::model_help())]
    model: String,
    #[command(flatten)]
    model_files: crate::model_arg::ModelFileArgs,
    /// What to draw.
    #[arg(long)]
    prompt: String,
    /// What to steer away from (classifier-free guidance's unconditional text).
    #[arg(long, default_value = "")]
    negative: String,
    /// Denoising steps.
    #[arg(long, default_value_t = 30)]
    steps: usize,
    /// Guidance scale. Whether it runs classifier-free guidance (a second denoiser pass on the
    /// negative prompt) is the model family's rule, as its diffusers pipeline has it: above 1 for
    /// most, above 0 for some, never for a model that reads the scale as an input of its own
    /// (docs/models.md says which).
    #[arg(long, default_value_t = 7.5)]
    guidance: f64,
    /// Steps whose (1000 - t) / 1000 is above this run unguided (diffusers' `cfg_truncation`, from
    /// 0 to 1), for models whose guidance takes it (docs/models.md says which; others refuse it).
    #[arg(long, value_name = "FRACTION")]
    cfg_truncation: Option<f64>,
    /// Cap each guided prediction's norm at this many times the unguided one's (diffusers'
    /// `cfg_normalization`; 1 as its `True`), for models whose guidance takes it.
    #[arg(long, value_name = "FACTOR")]
    cfg_normalization: Option<f64>,
    /// True classifier-free guidance at this scale, above 1 (diffusers' `true_cfg_scale`), for
    /// models that read --guidance as an input of their own: a second denoiser pass a step on
    /// --negative (the empty prompt unless given). Other models refuse it by name.
    #[arg(long, value_name = "SCALE")]
    true_cfg_scale: Option<f64>,
    /// Skip-layer guidance over these transformer blocks on guided steps (diffusers'
    /// `skip_guidance_layers`), for models whose guidance takes it (docs/models.md gives the
    /// blocks their model cards use).
    #[arg(long, value_name = "BLOCKS", value_delimiter = ',')]
    skip_layers: Vec<usize>,
    /// Skip-layer guidance's scale (`skip_layer_guidance_scale`).
    #[arg(long, value_name = "SCALE", default_value_t = 2.8)]
    skip_layer_scale: f64,
    /// The fraction of the steps skip-layer guidance starts after and stops before
    /// (`skip_layer_guidance_start` and `_stop`).
    #[arg(long, value_name = "START,STOP", value_delimiter = ',', num_args = 2, default_values_t = [0.01, 0.2])]
    skip_layer_steps: Vec<f64>,
    #[arg(
        long,
        value_parser = clap::builder::PossibleValuesParser::new(SchedulerKind::NAMES),
        help = crate::model_arg::scheduler_help("Scheduler; default: the model folder's own")
    )]
    scheduler: Option<String>,
    /// Image width in pixels (a multiple of 8, at most 2048; of 16 for models of 2x2 patches);
    /// default 512, the init image's, or the first reference picture's (cropped to a multiple of
    /// 16).
    #[arg(long)]
    width: Option<usize>,
    /// Image height in pixels (a multiple of 8, at most 2048; of 16 for models of 2x2 patches);
    /// default 512, the init image's, or the first reference picture's (cropped to a multiple of
    /// 16).
    #[arg(long)]
    height: Option<usize>,
    /// Image-to-image: start from this picture (PNG or JPEG, sides multiples of 8).
    #[arg(long, value_name = "FILE")]
    init_image: Option<PathBuf>,
    /// With --init-image: how much to redraw, more than 0 and at most 1 (diffusers' `strength`);
    /// only the last steps x strength steps run. Default 0.8.
    #[arg(long, requires = "init_image")]
    strength: Option<f64>,
    /// A picture to condition the image on, for models that take reference pictures (PNG or JPEG,
    /// sides at least 64 pixels; over 1024x1024 pixels it is resized, then cropped to multiples of
    /// 16). Give it up to 4 times for several pictures.
    #[arg(long, value_name = "FILE", conflicts_with = "init_image")]
    reference_image: Vec<PathBuf>,
    /// Images per prompt, made together (one denoiser call per step for all of them); with more than
    /// one, --out NAME.png writes NAME-1.png, NAME-2.png, ...
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_BATCH as i64))]
    batch: u16,
    /// Seed of the initial noise (SD Bench's documented CPU generator, the same on every backend);
    /// default 0.
    #[arg(long, conflicts_with = "latents")]
    seed: Option<u64>,
    #[arg(long, help = crate::model_arg::latents_help())]
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
    /// Score each picture with CLIP against the prompt (torchmetrics' CLIPScore), print it and
    /// record it in the history; the CLIP model is a Hub id (fetched once) or a folder.
    #[arg(long, value_name = "CLIP_MODEL", num_args = 0..=1, default_missing_value = sdbench_diffusion::quality::clip_score::DEFAULT_CLIP_MODEL)]
    quality: Option<String>,
}

pub fn run(args: GenerateArgs) -> anyhow::Result<()> {
    let init = args
        .init_image
        .as_deref()
        .map(|path| InitPicture::read(path, args.strength.unwrap_or(DEFAULT_STRENGTH)))
        .transpose()?;
    let references = args
        .reference_image
        .iter()
        .map(|path| Picture::read(path))
        .collect::<Result<Vec<_>, _>>()?;
    let noise = match &args.latents {
        Some(path) => {
            let array = npy::read_f32(path)?;
            InitialNoise::Latents {
                shape: array.shape,
                data: array.data,
                step_seed: 0,
            }
        }
        None => InitialNoise::Seed(args.seed.unwrap_or(0)),
    };
    let request = GenerationRequest {
        prompt: args.prompt.clone(),
        negative_prompt: args.negative.clone(),
        steps: args.steps,
        guidance: args.guidance,
        guidance_options: guidance_options(&args)?,
        scheduler: args
            .scheduler
            .as_deref()
            .map(SchedulerKind::from_name)
            .transpose()?,
        width: args.width,
        height: args.height,
        batch: args.batch as usize,
        noise,
        latents_file: args.latents.as_ref().map(|p| p.display().to_string()),
        init,
        references,
        vram_report: args.vram_report,
    };
    let setup = ModelSetup {
        label: args.model.clone(),
        model: crate::model_arg::parse(&args.model, &args.model_files)?,
        device: args.memory.device_request(&args.device)?,
        memory: args.memory.choice()?,
        precision: limits::precision_choice(&args.precision).map_err(anyhow::Error::msg)?,
    };
    args.threads.apply()?;
    // The CLIP model is found (or fetched) before anything is generated.
    let clip = match &args.quality {
        Some(name) => Some((name.clone(), crate::clip_score::model_folder(name)?)),
        None => None,
    };
    let hub = HubSettings::from_env();
    let context = Context {
        hub: &hub,
        history: &default_path(),
        app_version: env!("CARGO_PKG_VERSION"),
    };
    let mut view = GenerationView::default();
    let outcome = Generator::default().generate(
        &setup,
        &request,
        &Destination::File(args.out.clone()),
        &context,
        &mut |e| view.event(e),
        &crate::interrupt::token(),
    );
    // The table comes from the phases as they were reported: a generation that failed (a NaN
    // image, out of memory) still shows what it held until then.
    if args.vram_report {
        view.print_vram_table(outcome.is_ok());
    }
    let mut outcome = outcome?;
    if let Some(warning) = &outcome.history_warning {
        eprintln!("warning: {warning}");
    }
    if let Some((name, folder)) = &clip {
        score_pictures(&mut outcome, &args.prompt, name, folder)?;
    }
    let names: Vec<String> = outcome
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    println!(
        "wrote {} ({}x{}) in {}",
        names.join(", "),
        outcome.width,
        outcome.height,
        outcome.summary()
    );
    Ok(())
}

/// `--quality`: each written picture's CLIP score against the prompt, printed and recorded in its
/// history entry. Scored on the CPU: the generator's model still holds the device's memory.
fn score_pictures(
    outcome: &mut Outcome,
    prompt: &str,
    name: &str,
    folder: &std::path::Path,
) -> anyhow::Result<()> {
    let scorer = ClipScorer::<B>::load(folder, &cpu_device())
        .with_context(|| format!("loading the CLIP model {name}"))?;
    for (generation, path) in outcome.generations.iter_mut().zip(&outcome.paths) {
        let picture = read_image(path)?;
        let score = scorer.score(&picture, prompt)?.score;
        println!("CLIP score {score:.2} ({name}): {}", path.display());
        generation.clip_score = Some(score);
    }
    if outcome.history_warning.is_none() {
        let history = History::open(&default_path())?;
        for generation in &outcome.generations {
            history.add_generation(generation)?;
        }
    }
    Ok(())
}

/// A generation's progress on stderr.
#[derive(Default)]
struct GenerationView {
    steps: StepProgress,
    download: DownloadBar,
    /// The backend loaded on, and the allocator's phases so far (with --vram-report).
    backend: Option<String>,
    vram: Vec<VramPhase>,
}

impl GenerationView {
    /// `finished`: whether the generation ended well (a failed one may have stopped before its
    /// first phase ended, which says nothing of the backend's allocator).
    fn print_vram_table(&self, finished: bool) {
        let Some(backend) = &self.backend else {
            return; // nothing was loaded
        };
        if self.vram.is_empty() {
            if finished {
                eprintln!("{}", crate::bench::no_vram_report(backend));
            } else {
                eprintln!("no VRAM report: the generation failed before its first phase ended");
            }
            return;
        }
        let report = VramReport {
            generation: "this generation".into(),
            phases: self.vram.clone(),
        };
        eprint!("{}", report.table());
    }

    fn event(&mut self, event: &Event) {
        if !matches!(event, Event::Download(_)) {
            self.download.finish();
        }
        match event {
            Event::Note { text } => eprintln!("note: {text}"),
            Event::Download(p) => self.download.update(p),
            Event::Loading { backend, .. } => {
                eprintln!("loading on {backend}…");
                self.backend = Some(backend.clone());
            }
            Event::Loaded {
                seconds,
                device,
                precision,
            } => eprintln!("model loaded in {seconds:.1} s on {device} ({precision})"),
            Event::TextEncoded { seconds } => self.steps.text_encoded(*seconds),
            Event::Step {
                step,
                steps,
                seconds,
                ..
            } => self.steps.step(*step, *steps, *seconds),
            Event::Decoded { seconds } => self.steps.decoded(*seconds),
            // Each phase is printed as it ends: a slow device's figures are known before the end.
            Event::Vram { phase } => {
                self.vram.push(phase.clone());
                let mib = |bytes: u64| bytes as f64 / (1u64 << 20) as f64;
                eprintln!(
                    "vram after {}: {:.1} MiB in use, {:.1} MiB reserved",
                    phase.name(),
                    mib(phase.in_use_bytes),
                    mib(phase.reserved_bytes)
                );
            }
            Event::Baseline { .. }
            | Event::ImageStarted { .. }
            | Event::ImageFinished { .. }
            | Event::Estimate { .. }
            | Event::Telemetry { .. } => {}
        }
    }
}

/// `--cfg-truncation`, `--cfg-normalization`, `--skip-layers` with its scale and steps, and
/// `--true-cfg-scale` (checked with the request).
fn guidance_options(args: &GenerateArgs) -> anyhow::Result<GuidanceOptions> {
    let skip_layers = match args.skip_layers.as_slice() {
        [] => None,
        layers => {
            let Some(skip) = SkipLayerGuidance::new(layers) else {
                anyhow::bail!(
                    "--skip-layers takes transformer block indices from 0 to {}",
                    SkipLayerGuidance::MAX_LAYER
                );
            };
            let (start, stop) = match args.skip_layer_steps[..] {
                [start, stop] => (start, stop),
                _ => anyhow::bail!("--skip-layer-steps takes two fractions: START,STOP"),
            };
            Some(SkipLayerGuidance {
                scale: args.skip_layer_scale,
                start,
                stop,
                ..skip
            })
        }
    };
    Ok(GuidanceOptions {
        truncation: args.cfg_truncation,
        normalization: args.cfg_normalization,
        skip_layers,
        true_cfg: args.true_cfg_scale,
    })
}
