//! `sdbench clip-score`: each picture's CLIP score against a prompt, as torchmetrics' `CLIPScore`
//! computes it, with a CLIP model from the Hub (fetched into the cache once) or a folder.

use std::path::{Path, PathBuf};

use anyhow::Context;
use sdbench_diffusion::device::select;
use sdbench_diffusion::io::image::read_image;
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::quality::clip_score::{ClipScorer, CLIP_MODEL_FILES, DEFAULT_CLIP_MODEL};
use sdbench_hub::cache::cached_files;
use sdbench_hub::{HubSettings, RepoId};
use sdbench_session::hub_components::engine_hub;

use crate::progress::DownloadBar;

#[derive(clap::Args, Debug)]
pub struct ClipScoreArgs {
    /// The CLIP model: a Hub id (fetched into the cache once: config, processor, tokenizer and
    /// model.safetensors) or the folder of a transformers CLIPModel.
    #[arg(long, default_value = DEFAULT_CLIP_MODEL)]
    model: String,
    /// The text the pictures are scored against (cut at CLIP's 77 tokens, as torchmetrics does).
    #[arg(long)]
    prompt: String,
    /// PNG or JPEG pictures.
    #[arg(required = true)]
    images: Vec<PathBuf>,
    #[command(flatten)]
    device: crate::device_arg::DeviceArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: ClipScoreArgs) -> anyhow::Result<()> {
    // Every picture is read before the model: a wrong path fails at once.
    let pictures = args
        .images
        .iter()
        .map(|p| read_image(p).map(|i| (p.clone(), i)))
        .collect::<Result<Vec<_>, _>>()?;
    let folder = model_folder(&args.model)?;
    let device = select(args.device.request()?)?;
    let scorer = ClipScorer::<B>::load(&folder, &device.device)
        .with_context(|| format!("loading the CLIP model {}", args.model))?;
    let mut scores = Vec::new();
    for (path, picture) in &pictures {
        let score = scorer
            .score(picture, &args.prompt)
            .with_context(|| format!("scoring {}", path.display()))?;
        scores.push((path, score));
    }
    let mean = scores.iter().map(|(_, s)| s.score).sum::<f64>() / scores.len() as f64;
    if args.json {
        let list: Vec<_> = scores
            .iter()
            .map(|(p, s)| {
                serde_json::json!({"image": p.display().to_string(), "score": s.score, "similarity": s.similarity})
            })
            .collect();
        let out = serde_json::json!({"model": args.model, "prompt": args.prompt, "images": list, "mean": mean});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for (path, s) in &scores {
            println!("{:>7.3}  {}", s.score, path.display());
        }
        if scores.len() > 1 {
            println!("{mean:>7.3}  mean of {} pictures", scores.len());
        }
    }
    Ok(())
}

/// A folder as given, else the Hub model's snapshot: from the cache, or fetched into it.
pub(crate) fn model_folder(model: &str) -> anyhow::Result<PathBuf> {
    let path = Path::new(model);
    if path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let (id, note) = RepoId::parse(model)
        .with_context(|| format!("--model {model} is neither a folder nor a Hub model id"))?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    let settings = HubSettings::from_env();
    if let Some(cached) = cached_files(&settings, &id, "main", CLIP_MODEL_FILES) {
        return Ok(cached.path);
    }
    let hub = engine_hub(settings);
    let cancel = crate::interrupt::token();
    let mut bar = DownloadBar::new();
    let result = hub.download_files(
        &id,
        "main",
        CLIP_MODEL_FILES,
        &mut |p| bar.update(p),
        &|| cancel.is_cancelled(),
    );
    bar.finish();
    let snapshot = result.with_context(|| format!("fetching the CLIP model {id} failed"))?;
    Ok(snapshot.path)
}
