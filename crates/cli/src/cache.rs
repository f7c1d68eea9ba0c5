//! `sdbench cache list|clean`: what the Hugging Face cache holds and removing SD Bench's models;
//! the compiled GPU kernels SD Bench keeps, and removing them.

use std::io::{BufRead, IsTerminal, Write};

use sdbench_diffusion::kernel_cache;
use sdbench_hub::{cache, HubSettings, RepoId, DEFAULT_MODEL};
use sdbench_session::hub_components::engine_components;

use crate::progress::human_bytes;

#[derive(clap::Subcommand, Debug)]
pub enum CacheCommand {
    /// Every model in the cache (id, size, whether SD Bench can run it, its folder) and the
    /// compiled GPU kernels (per device).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove models from the cache (default: the standard SD1.5 model), or the compiled GPU
    /// kernels with --kernels, and report the space freed.
    Clean {
        /// Hub id to remove; repeat for several.
        #[arg(long)]
        model: Vec<String>,
        /// Remove the compiled GPU kernels and autotune results (models only where --model is
        /// given too). The next run on each GPU compiles them again.
        #[arg(long)]
        kernels: bool,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(command: CacheCommand) -> anyhow::Result<()> {
    let settings = HubSettings::from_env();
    match command {
        CacheCommand::List { json } => list(&settings, json),
        CacheCommand::Clean {
            model,
            kernels,
            yes,
        } => {
            if kernels {
                clean_kernels(yes)?;
                if model.is_empty() {
                    return Ok(());
                }
            }
            clean(&settings, &model, yes)
        }
    }
}

fn list(settings: &HubSettings, json: bool) -> anyhow::Result<()> {
    let models = cache::list(settings, engine_components)?;
    let kernels = kernel_cache::default_dir()
        .map(|dir| kernel_cache::usage(&dir))
        .transpose()?;
    if json {
        let value = serde_json::json!({
            "cache_dir": settings.cache_dir,
            "models": models,
            "kernels": kernels,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    println!("cache: {}", settings.cache_dir.display());
    if models.is_empty() {
        println!("(no models)");
    } else {
        list_models(&models);
    }
    list_kernels(kernels.as_ref());
    Ok(())
}

fn list_kernels(kernels: Option<&kernel_cache::CacheUsage>) {
    let Some(usage) = kernels else {
        println!(
            "GPU kernels: not kept ({}=off); every run compiles them",
            kernel_cache::ENV
        );
        return;
    };
    println!("GPU kernels: {}", usage.dir.display());
    for device in &usage.devices {
        println!(
            "  {:>6} kernels  {:>10}  {}",
            device.kernels,
            human_bytes(device.bytes),
            device.name
        );
    }
    println!("  autotune results  {}", human_bytes(usage.autotune_bytes));
    println!("  total: {}", human_bytes(usage.bytes));
}

fn clean_kernels(yes: bool) -> anyhow::Result<()> {
    let Some(dir) = kernel_cache::default_dir() else {
        println!(
            "GPU kernels are not kept ({}=off): nothing to remove",
            kernel_cache::ENV
        );
        return Ok(());
    };
    let usage = kernel_cache::usage(&dir)?;
    if usage.bytes == 0 {
        println!("no GPU kernels in {}", dir.display());
        return Ok(());
    }
    println!(
        "will remove the GPU kernel cache ({}) at {}",
        human_bytes(usage.bytes),
        dir.display()
    );
    if !confirmed(yes, usage.bytes)? {
        return Ok(());
    }
    let freed = kernel_cache::clean(&dir)?;
    println!("freed {} ({freed} bytes)", human_bytes(freed));
    Ok(())
}

/// `--yes`, or a "y" typed at the terminal; without a terminal, an error.
fn confirmed(yes: bool, bytes: u64) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        anyhow::bail!("not removing anything without confirmation: pass --yes");
    }
    print!("remove {}? [y/N] ", human_bytes(bytes));
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    let yes = matches!(answer.trim(), "y" | "Y" | "yes");
    if !yes {
        println!("nothing removed");
    }
    Ok(yes)
}

fn list_models(models: &[cache::CachedModel]) {
    let width = models.iter().map(|m| m.repo.len()).max().unwrap_or(0);
    for m in models {
        let note = match (m.runnable, m.partial_bytes) {
            (_, p) if p > 0 => format!("partial download ({})", human_bytes(p)),
            (true, _) => "runnable".into(),
            (false, _) => "not an SD pipeline".into(),
        };
        println!(
            "{:<width$}  {:>10}  {:<22}  {}",
            m.repo,
            human_bytes(m.size_bytes),
            note,
            m.path.display()
        );
    }
    let total: u64 = models.iter().map(|m| m.size_bytes).sum();
    println!("total: {}", human_bytes(total));
}

fn clean(settings: &HubSettings, models: &[String], yes: bool) -> anyhow::Result<()> {
    let names: Vec<String> = if models.is_empty() {
        vec![DEFAULT_MODEL.to_string()]
    } else {
        models.to_vec()
    };
    let mut ids = Vec::new();
    for name in &names {
        let (id, note) = RepoId::parse(name)?;
        if let Some(note) = note {
            eprintln!("note: {note}");
        }
        ids.push(id);
    }
    let cached = cache::list(settings, engine_components)?;
    let present: Vec<_> = ids
        .iter()
        .filter_map(|id| {
            cached
                .iter()
                .find(|m| m.repo == id.as_str())
                .map(|m| (id, m))
        })
        .collect();
    if present.is_empty() {
        println!(
            "nothing to remove: {} not in {}",
            names.join(", "),
            settings.cache_dir.display()
        );
        return Ok(());
    }
    let total: u64 = present.iter().map(|(_, m)| m.size_bytes).sum();
    for (_, m) in &present {
        println!(
            "will remove {} ({}) at {}",
            m.repo,
            human_bytes(m.size_bytes),
            m.path.display()
        );
    }
    if !confirmed(yes, total)? {
        return Ok(());
    }
    let mut freed = 0;
    for (id, _) in present {
        freed += cache::remove(settings, id)?;
        println!("removed {id}");
    }
    println!("freed {} ({freed} bytes)", human_bytes(freed));
    Ok(())
}
