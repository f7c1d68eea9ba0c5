//! `sdbench parity`: the engine against diffusers' images on the tiny reference models, on one
//! backend and precision. `scripts/gpu-check` runs it on every usable backend.

use std::path::{Path, PathBuf};

use anyhow::Context;
use sdbench_diffusion::device::select;
use sdbench_diffusion::limits;
use sdbench_diffusion::parity;
use sdbench_diffusion::{ModelSource, Pipeline};

#[derive(clap::Args, Debug)]
pub struct ParityArgs {
    /// The fixtures folder (the repository's crates/diffusion/tests/fixtures). Default: that folder
    /// in the current folder or one above it, else in the source tree this binary was built from.
    #[arg(long)]
    fixtures: Option<PathBuf>,
    #[command(flatten)]
    device: crate::device_arg::DeviceArg,
    /// `auto`: the device's default (f16 on GPUs that support it, f32 on the CPU).
    #[arg(long, default_value = "auto", value_parser = limits::PRECISION_CHOICES)]
    precision: String,
    /// Only these fixtures (comma-separated; default: all).
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(parity::fixtures()))]
    only: Vec<String>,
    #[command(flatten)]
    threads: crate::threads::ThreadsArg,
    /// Print JSON instead of lines.
    #[arg(long)]
    json: bool,
}

/// Where the fixtures are below a clone's root.
const FIXTURES_IN_CLONE: &str = "crates/diffusion/tests/fixtures";

fn has_fixtures(dir: &Path) -> bool {
    dir.join("tiny-sd.reference.json").is_file()
}

/// The fixtures folder `--fixtures` names, or the first that holds fixtures of: the current folder
/// and each folder above it (a clone's root or any folder inside it), then the source tree this
/// binary was built from. Otherwise an error naming every place looked at.
fn find_fixtures(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = given {
        anyhow::ensure!(
            has_fixtures(&dir),
            "--fixtures {}: no reference fixtures there; give the repository's {FIXTURES_IN_CLONE}",
            dir.display()
        );
        return Ok(dir);
    }
    let mut looked = Vec::new();
    let here = std::env::current_dir().context("reading the current folder")?;
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let candidates = here.ancestors().map(Path::to_path_buf).chain([built_from]);
    for root in candidates {
        let dir = root.join(FIXTURES_IN_CLONE);
        if has_fixtures(&dir) {
            return Ok(dir);
        }
        looked.push(dir.display().to_string());
    }
    anyhow::bail!(
        "no reference fixtures found; looked in:\n  {}\nrun it inside a clone of the repository, or give --fixtures FOLDER",
        looked.join("\n  ")
    )
}

pub fn run(args: ParityArgs) -> anyhow::Result<()> {
    let fixtures = find_fixtures(args.fixtures.clone())?;
    let choice = limits::precision_choice(&args.precision).map_err(anyhow::Error::msg)?;
    args.threads.apply()?;
    let backend = args.device.request()?;
    let precision = match choice {
        Some(precision) => precision,
        None => select(backend)?.default_precision(),
    };
    let default_tolerance = parity::image_tolerance(precision);
    let names: Vec<&str> = if args.only.is_empty() {
        parity::fixtures()
    } else {
        args.only.iter().map(String::as_str).collect()
    };
    let mut device_name = String::new();
    let mut backend_name = String::new();
    let mut results = Vec::new();
    let mut all_ok = true;
    for name in names {
        let tolerance = parity::fixture_tolerance(&fixtures, name, precision)?;
        let device = select(backend)?;
        (device_name, backend_name) = (device.info.name.clone(), device.kind.name().to_string());
        let (model, options) = parity::fixture_model(name);
        let source = ModelSource::Folder(fixtures.join(model));
        // A fixture that cannot load or run is reported and fails the check; the others still run.
        let diffs = Pipeline::load_with(&source, device, Some(precision), options)
            .with_context(|| format!("loading {name}"))
            .and_then(|pipe| {
                parity::generations(&pipe, &fixtures, name, None)
                    .with_context(|| format!("{name}'s reference generations"))
            });
        let diffs = match diffs {
            Ok(diffs) => diffs,
            Err(e) => {
                let problem = format!("{e:#}");
                all_ok = false;
                if !args.json {
                    println!(
                        "{name} {backend_name} {}: error: {problem}",
                        precision.name()
                    );
                }
                results.push(serde_json::json!({"fixture": name, "ok": false, "error": problem}));
                continue;
            }
        };
        let worst = diffs
            .iter()
            .max_by(|a, b| a.max_abs_diff.total_cmp(&b.max_abs_diff));
        let (worst_diff, worst_key) = worst.map_or((0.0, ""), |d| (d.max_abs_diff, d.key.as_str()));
        let ok = !diffs.is_empty() && worst_diff <= tolerance;
        all_ok &= ok;
        if !args.json {
            println!(
                "{name} {backend_name} {}: {} generations, worst |diff| {worst_diff:.2e} ({worst_key}), tolerance {tolerance:.1e}: {}",
                precision.name(),
                diffs.len(),
                if ok { "ok" } else { "FAILED" }
            );
        }
        results.push(serde_json::json!({
            "fixture": name,
            "ok": ok,
            "worst": worst_diff,
            "worst_key": worst_key,
            "tolerance": tolerance,
            "runs": diffs.iter().map(|d| serde_json::json!({"key": d.key, "max_abs_diff": d.max_abs_diff})).collect::<Vec<_>>(),
        }));
    }
    if args.json {
        let report = serde_json::json!({
            "backend": backend_name,
            "device": device_name,
            "precision": precision.name(),
            "tolerance": default_tolerance,
            "ok": all_ok,
            "fixtures": results,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    anyhow::ensure!(
        all_ok,
        "parity with diffusers failed on {backend_name} {}: a fixture did not run, or a generated image differs from diffusers' beyond its tolerance",
        precision.name()
    );
    Ok(())
}
