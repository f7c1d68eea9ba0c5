//! `sdbench timing`: seconds for one denoiser call (as each family's pipeline runs it: a UNet's at
//! batch 2, as classifier-free guidance runs it; a distilled transformer's at batch 1) and one
//! VAE decode at a given image size. One untimed warm-up call each, then `--repeat` timed calls
//! bounded by device syncs; prints the median with min and max and every raw sample. With `--ops`,
//! single layers at a preset's shapes instead (`--ops-of`, `sdbench_diffusion::op_timing`).

use std::time::Instant;

use anyhow::Context;
use sdbench_bench::stats::Stats;
use sdbench_diffusion::device::select;
use sdbench_diffusion::limits;
use sdbench_diffusion::op_timing::{self, Work};
use sdbench_diffusion::{LoadOptions, Pipeline, Precision, Preset, RequestShape, SelectedDevice};

#[derive(clap::Args, Debug)]
pub struct TimingArgs {
    #[arg(long, default_value = "synthetic", help = crate::model_arg::model_help())]
    model: String,
    #[command(flatten)]
    model_files: crate::model_arg::ModelFileArgs,
    /// Image width in pixels (the latents' and tokens' size follows).
    #[arg(long, default_value_t = 512)]
    width: usize,
    /// Image height in pixels.
    #[arg(long, default_value_t = 512)]
    height: usize,
    /// Timed calls per component, after one warm-up call.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[command(flatten)]
    device: crate::device_arg::DeviceArg,
    /// Weights and activations: auto (f16 where the device supports it, else f32), f32, f16, bf16.
    #[arg(long, default_value = "auto", value_parser = limits::PRECISION_CHOICES)]
    precision: String,
    #[command(flatten)]
    threads: crate::threads::ThreadsArg,
    /// Time single layers instead (a preset's heaviest convolutions, linears, attention and norms
    /// at this image size), each with its GFLOP/s or GB/s; no model is loaded.
    #[arg(long, conflicts_with_all = ["model", "model_config", "text_encoder", "vae"])]
    ops: bool,
    /// With --ops: whose layers (a preset's: SD1.5's UNet and VAE, a transformer's). Default: the
    /// preset plain `synthetic` names.
    #[arg(long, requires = "ops", default_value = sdbench_diffusion::PLAIN_SYNTHETIC.name(), value_parser = presets_with_op_cases())]
    ops_of: String,
    /// With --ops: the linear layers' weights kept in a file's codes and dequantized per call, as a
    /// GGUF or FP8 model runs them (Q8_0, Q4_K, ..., F8_E4M3); each linear line adds the
    /// dequantization's own time and share. Default: weights in the run's precision.
    #[arg(long, requires = "ops", value_name = "TYPE", value_parser = coded_weight_names())]
    ops_weights: Option<String>,
}

fn coded_weight_names() -> clap::builder::PossibleValuesParser {
    let names: Vec<&str> = op_timing::coded_weight_types()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    names.into()
}

/// The presets whose layers `--ops` can time.
fn presets_with_op_cases() -> clap::builder::PossibleValuesParser {
    Preset::all()
        .filter(|p| p.op_cases().is_some())
        .map(Preset::name)
        .collect::<Vec<_>>()
        .into()
}

pub fn run(args: TimingArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.repeat >= 1, "--repeat must be at least 1");
    for (name, side) in [("width", args.width), ("height", args.height)] {
        if let Some(problem) = limits::side_error(name, side) {
            anyhow::bail!(problem);
        }
    }
    let precision = limits::precision_choice(&args.precision).map_err(anyhow::Error::msg)?;
    args.threads.apply()?;
    let device = select(args.device.request()?)?;
    if args.ops {
        return time_ops(&args, device, precision);
    }
    let source = crate::model_arg::resolve(&args.model, &args.model_files)?;
    let kernels = sdbench_bench::kernels::KernelCounters::start(device.kind);
    let load_start = Instant::now();
    // The memory check before loading measures the size timed (one guided image: the UNet call
    // is batch 2), not the family's usual one.
    let options = LoadOptions {
        planned: Some(RequestShape::image(args.width, args.height)),
        ..LoadOptions::default()
    };
    let pipe = Pipeline::load_with(&source, device, precision, options)
        .context("loading the model failed")?;
    pipe.device.sync()?;
    let load_seconds = load_start.elapsed().as_secs_f64();
    println!(
        "backend {} on {}, {}, model {} (loaded in {load_seconds:.2} s)",
        pipe.device.kind,
        pipe.device.info.name,
        pipe.precision.name(),
        args.model
    );
    let params = pipe.parameter_counts();
    let millions = |n: usize| n as f64 / 1e6;
    println!(
        "parameters: text encoders {:.1}M, {} {:.1}M, vae decoder {:.1}M",
        millions(params.text_encoders),
        pipe.denoiser_name(),
        millions(params.denoiser),
        millions(params.vae)
    );
    for mut call in pipe.timed_calls(args.width, args.height)? {
        let samples = measure(&pipe, args.repeat, &mut call.run)?;
        report(&call.label, &samples);
    }
    // Load, warm-ups and timed calls together: what a cold (or cached) start cost.
    if let Some(kernels) = kernels.cold_start() {
        println!("{}", kernels.describe());
    }
    Ok(())
}

fn time_ops(
    args: &TimingArgs,
    device: SelectedDevice,
    precision: Option<Precision>,
) -> anyhow::Result<()> {
    let precision = precision.unwrap_or_else(|| device.default_precision());
    anyhow::ensure!(
        device.supports(precision),
        "{} does not support {}",
        device.info.name,
        precision.name()
    );
    let op_cases = Preset::named(&args.ops_of)
        .and_then(Preset::op_cases)
        .with_context(|| format!("no layers to time for --ops-of {}", args.ops_of))?;
    let (whose, cases) = (op_cases.whose, (op_cases.cases)(args.height, args.width));
    let weights = args.ops_weights.as_deref().map(|name| {
        let types = op_timing::coded_weight_types();
        types
            .into_iter()
            .find(|(n, _)| *n == name)
            .expect("clap checked the name")
    });
    println!(
        "backend {} on {}, {}: {whose} layers at {}x{}{}",
        device.kind,
        device.info.name,
        precision.name(),
        args.width,
        args.height,
        weights.map_or(String::new(), |(name, _)| format!(
            ", linear weights {name}"
        ))
    );
    let weights = weights.map(|(_, dtype)| dtype);
    let kernels = sdbench_bench::kernels::KernelCounters::start(device.kind);
    for case in cases {
        let samples = op_timing::time_case(&device, precision, case, weights, args.repeat)
            .with_context(|| format!("timing {case} failed"))?;
        let median = Stats::of(&samples).context("no samples")?.median;
        let rate = match case.work(precision) {
            Work::Flops(flops) => format!("{:.1} GFLOP/s", flops / median / 1e9),
            Work::Bytes(bytes) => format!("{:.1} GB/s", bytes / median / 1e9),
        };
        let dequantize = match weights {
            Some(dtype) => op_timing::time_dequantize(&device, precision, case, dtype, args.repeat)
                .with_context(|| format!("timing {case}'s dequantization failed"))?,
            None => None,
        };
        let share = match dequantize {
            Some(samples) => {
                let alone = Stats::of(&samples).context("no samples")?.median;
                format!(
                    "; dequantize {:.3} ms ({:.0}%)",
                    alone * 1e3,
                    100.0 * alone / median
                )
            }
            None => String::new(),
        };
        println!(
            "op {case}: median {:.3} ms, {rate} (n={}){share}",
            median * 1e3,
            samples.len()
        );
    }
    if let Some(kernels) = kernels.cold_start() {
        println!("{}", kernels.describe());
    }
    Ok(())
}

/// (warm-up seconds, timed samples)
fn measure(
    pipe: &Pipeline,
    repeat: usize,
    mut call: impl FnMut() -> sdbench_diffusion::Result<()>,
) -> anyhow::Result<(f64, Vec<f64>)> {
    let mut once = || -> anyhow::Result<f64> {
        pipe.device.sync()?;
        let start = Instant::now();
        call()?; // reads the result back, so the device has finished
        pipe.device.sync()?;
        Ok(start.elapsed().as_secs_f64())
    };
    let warm_up = once()?;
    let samples = (0..repeat)
        .map(|_| once())
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((warm_up, samples))
}

fn report(what: &str, (warm_up, samples): &(f64, Vec<f64>)) {
    let Some(stats) = Stats::of(samples) else {
        return;
    };
    let raw: Vec<String> = samples.iter().map(|s| format!("{s:.3}")).collect();
    println!(
        "{what}: median {:.3} s (min {:.3}, max {:.3}, n={}); warm-up {warm_up:.3} s; samples [{}]",
        stats.median,
        stats.min,
        stats.max,
        samples.len(),
        raw.join(", ")
    );
}
