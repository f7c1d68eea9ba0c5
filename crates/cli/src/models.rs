//! `sdbench models`: every model on this machine that a run could use, without downloading: the
//! Hugging Face cache, other apps' model folders (ComfyUI, AUTOMATIC1111/Forge, InvokeAI,
//! stable-diffusion.cpp), folders given with --models-dir or SDBENCH_MODELS_DIRS, and each
//! preset's synthetic weights. For each: what `--model` takes, its family, form, size, and
//! whether SD Bench can run it, and why not.

use std::path::PathBuf;

use sdbench_hub::HubSettings;
use sdbench_session::local_models::{self, LocalModel};
use sdbench_session::model_folders;

use crate::progress::human_bytes;

#[derive(clap::Args, Debug)]
pub struct ModelsArgs {
    /// Another folder to look in (its subfolders too, five levels down); repeat for several.
    /// SDBENCH_MODELS_DIRS adds more, separated as PATH is.
    #[arg(long = "models-dir", value_name = "DIR")]
    models_dirs: Vec<PathBuf>,
    /// Only the models SD Bench can run.
    #[arg(long)]
    runnable: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `--model NAME`, and the part files a transformer file runs with.
fn run_arguments(m: &LocalModel) -> String {
    let mut words = vec!["--model".to_string(), shell_word(&m.name)];
    for (option, file) in m.parts.files() {
        words.push(option.into());
        words.push(shell_word(&file.display().to_string()));
    }
    words.join(" ")
}

pub fn run(args: ModelsArgs) -> anyhow::Result<()> {
    for dir in &args.models_dirs {
        if !dir.is_dir() {
            anyhow::bail!(
                "--models-dir {} is not a folder: name a folder that holds model files",
                dir.display()
            );
        }
    }
    let hub = HubSettings::from_env();
    let folders = model_folders::from_environment(&args.models_dirs);
    let models: Vec<LocalModel> = local_models::list(&hub, "main", None, &folders)
        .into_iter()
        .filter(|m| !args.runnable || m.problem.is_none())
        .collect();
    if args.json {
        let list: Vec<serde_json::Value> = models
            .iter()
            .map(|m| {
                serde_json::json!({
                    "model": m.name,
                    "family": m.architecture.map(|a| a.descriptor().name),
                    "architecture": m.architecture.map(|a| a.name()),
                    "form": m.kind.describe(),
                    "found_in": m.found_in,
                    "weights": m.weights,
                    "size_bytes": m.size_bytes,
                    "runnable": m.problem.is_none(),
                    "problem": m.problem,
                    "text_encoders": m.parts.text_encoders,
                    "vae": m.parts.vae,
                })
            })
            .collect();
        let value = serde_json::json!({
            "hub_cache": hub.cache_dir,
            "folders": folders.iter().map(|f| serde_json::json!({"app": f.app, "path": f.path})).collect::<Vec<_>>(),
            "models": list,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    println!(
        "looked in: {} (Hugging Face cache)",
        hub.cache_dir.display()
    );
    for folder in &folders {
        println!("           {} ({})", folder.path.display(), folder.app);
    }
    println!();
    for m in &models {
        let family = m
            .architecture
            .map(|a| format!("{} ({})", a.descriptor().name, a.name()))
            .unwrap_or_else(|| "-".into());
        let size = m.size_bytes.map(human_bytes).unwrap_or_else(|| "-".into());
        println!("{}", m.name);
        println!("    {family}; {}; {size}", m.describe());
        match &m.problem {
            None => println!("    runs: {}", run_arguments(m)),
            Some(problem) => println!("    cannot run: {problem}"),
        }
    }
    let runnable = models.iter().filter(|m| m.problem.is_none()).count();
    println!(
        "\n{} models, {runnable} runnable; nothing was copied or moved",
        models.len()
    );
    Ok(())
}

/// `text` quoted for a shell when it has spaces or quotes.
fn shell_word(text: &str) -> String {
    if text.contains([' ', '\'', '"']) {
        format!("'{}'", text.replace('\'', "'\\''"))
    } else {
        text.to_string()
    }
}
