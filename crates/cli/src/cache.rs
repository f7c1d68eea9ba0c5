//! `sdbench cache list|clean`: what the Hugging Face cache holds, and removing SD Bench's models.

use std::io::{BufRead, IsTerminal, Write};

use sdbench_hub::{cache, HubSettings, RepoId, DEFAULT_MODEL};

use crate::progress::human_bytes;

#[derive(clap::Subcommand, Debug)]
pub enum CacheCommand {
    /// Every model in the cache: id, size, whether SD Bench can run it, and its folder.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove models from the cache (default: the standard SD1.5 model) and report the space freed.
    Clean {
        /// Hub id to remove; repeat for several.
        #[arg(long)]
        model: Vec<String>,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(command: CacheCommand) -> anyhow::Result<()> {
    let settings = HubSettings::from_env();
    match command {
        CacheCommand::List { json } => list(&settings, json),
        CacheCommand::Clean { model, yes } => clean(&settings, &model, yes),
    }
}

fn list(settings: &HubSettings, json: bool) -> anyhow::Result<()> {
    let models = cache::list(settings)?;
    if json {
        let value = serde_json::json!({
            "cache_dir": settings.cache_dir,
            "models": models,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    println!("cache: {}", settings.cache_dir.display());
    if models.is_empty() {
        println!("(no models)");
        return Ok(());
    }
    let width = models.iter().map(|m| m.repo.len()).max().unwrap_or(0);
    for m in &models {
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
    Ok(())
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
    let cached = cache::list(settings)?;
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
    if !yes {
        if !std::io::stdin().is_terminal() {
            anyhow::bail!("not removing anything without confirmation: pass --yes");
        }
        print!("remove {}? [y/N] ", human_bytes(total));
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("nothing removed");
            return Ok(());
        }
    }
    let mut freed = 0;
    for (id, _) in present {
        freed += cache::remove(settings, id)?;
        println!("removed {id}");
    }
    println!("freed {} ({freed} bytes)", human_bytes(freed));
    Ok(())
}
