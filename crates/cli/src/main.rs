//! `sdbench`: the command-line front end. Parses arguments, draws progress on stderr, prints the
//! whole error chain on failure and exits non-zero (1 for a failed run, 2 for bad usage).

mod devices;
mod generate;
mod progress;
mod timing;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "sdbench",
    version,
    about = "Stable Diffusion benchmark and image generator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate one image from a prompt and write it as a PNG.
    Generate(generate::GenerateArgs),
    /// List every backend, whether it is usable here, and why not.
    Devices(devices::DevicesArgs),
    /// Time one UNet call (batch 2) and one VAE decode: warm-up, then the median of repeats.
    Timing(timing::TimingArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Generate(args) => generate::run(args),
        Command::Devices(args) => devices::run(args),
        Command::Timing(args) => timing::run(args),
    };
    if let Err(error) = result {
        eprintln!("error: {error}");
        for cause in error.chain().skip(1) {
            eprintln!("  caused by: {cause}");
        }
        std::process::exit(1);
    }
}
