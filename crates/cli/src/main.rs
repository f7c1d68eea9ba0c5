//! `sdbench`: the command-line front end. Parses arguments, draws progress on stderr, prints the
//! whole error chain on failure and exits non-zero (1 for a failed run, 2 for bad usage).

mod bench;
mod cache;
mod clip_score;
mod compile_watch;
mod device_arg;
mod devices;
mod download;
mod generate;
mod history;
mod interrupt;
mod model_arg;
mod models;
mod parity;
mod progress;
mod reference;
mod report;
mod submit;
mod sweep;
mod threads;
mod timing;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "sdbench",
    version,
    about = about()
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What `sdbench --help` says it is, with the model families the registry holds.
fn about() -> String {
    let families: Vec<&str> = sdbench_diffusion::FAMILIES.iter().map(|f| f.name).collect();
    format!(
        "Image-generation benchmark and image generator ({})",
        families.join(", ")
    )
}

#[derive(Subcommand)]
enum Command {
    /// Run a standard benchmark (sd15-512-30 by default, or the one made for --model) and write benchmark_diffusion_result.json.
    Bench(bench::BenchArgs),
    /// Run one model over several backends, precisions, batch sizes, sizes or memory profiles (short runs of the same prompts and seeds), print a table with the fastest configuration, and write one sweep file.
    Sweep(sweep::SweepArgs),
    /// Score pictures against a prompt with CLIP (torchmetrics' CLIPScore: 100 x the cosine of the picture's and the text's features, at least 0).
    ClipScore(clip_score::ClipScoreArgs),
    /// Generate one image from a prompt and write it as a PNG.
    Generate(generate::GenerateArgs),
    /// List every backend, whether it is usable here, and why not.
    Devices(devices::DevicesArgs),
    /// Time one denoiser call (UNet or transformer, as its pipeline runs it) and one VAE decode: warm-up, then the median of repeats.
    Timing(timing::TimingArgs),
    /// Check the engine against diffusers' images on the tiny reference models (one backend and precision).
    Parity(parity::ParityArgs),
    /// List the models on this machine (the Hugging Face cache, ComfyUI's, AUTOMATIC1111's, Forge's, InvokeAI's and stable-diffusion.cpp's folders, --models-dir), and whether each runs.
    Models(models::ModelsArgs),
    /// Download a model into the Hugging Face cache.
    Download(download::DownloadArgs),
    /// List or clean the model cache.
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// Send a result file to a collection endpoint.
    Submit(submit::SubmitArgs),
    /// Write a result as a Markdown or HTML report with charts, or compare several in HTML.
    Report(report::ReportArgs),
    /// List, show, delete or export the runs SD Bench remembers.
    #[command(subcommand)]
    History(history::HistoryCommand),
    /// Print the command-line reference in Markdown (docs/cli-reference.md), or check a command line.
    #[command(hide = true)]
    Reference(reference::ReferenceArgs),
}

fn main() {
    quiet_exit_when_stdout_closes();
    sdbench_diffusion::device::quiet_vulkan_without_desktop_session();
    let cli = Cli::parse();
    let _compiling = matches!(
        cli.command,
        Command::Bench(_)
            | Command::Sweep(_)
            | Command::Generate(_)
            | Command::Timing(_)
            | Command::Parity(_)
    )
    .then(compile_watch::start);
    let result = match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::ClipScore(args) => clip_score::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Devices(args) => devices::run(args),
        Command::Timing(args) => timing::run(args),
        Command::Parity(args) => parity::run(args),
        Command::Models(args) => models::run(args),
        Command::Download(args) => download::run(args),
        Command::Cache(command) => cache::run(command),
        Command::Submit(args) => submit::run(args),
        Command::Report(args) => report::run(args),
        Command::History(command) => history::run(command),
        Command::Reference(args) => reference::run(args),
    };
    if let Err(error) = result {
        eprintln!("error: {error}");
        for cause in error.chain().skip(1) {
            eprintln!("  caused by: {cause}");
        }
        std::process::exit(1);
    }
}

/// `sdbench history list | head` closes stdout early, and the next `println!` panics with "failed
/// printing to stdout: Broken pipe". Exit as a Unix tool killed by SIGPIPE would (quietly, status
/// 141) instead of printing a panic; every other panic keeps the default report.
fn quiet_exit_when_stdout_closes() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}
