//! `--quality`: the run's pictures scored with CLIP after the timed region (its telemetry
//! stopped, so nothing of it is in the timed figures), each against its prompt.

use std::time::Instant;

use sdbench_diffusion::io::image::RgbImage;
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::quality::clip_score::ClipScorer;
use sdbench_diffusion::{BackendKind, MemoryProfile};

use super::load::Loaded;
use super::QualityModel;
use crate::error::{BenchError, Result};
use crate::result::{BenchResult, Quality};
use sdbench_session::events::Event;

/// Scores the first pass's `images` (the result's first entries) and records each score and
/// their mean. `epoch`: time zero of the run's samples.
pub(super) fn score(
    model: &QualityModel,
    loaded: &Loaded,
    result: &mut BenchResult,
    images: &[RgbImage],
    epoch: Instant,
    observer: &mut dyn FnMut(&Event),
) -> Result<()> {
    let started_at = epoch.elapsed().as_secs_f64();
    let start = Instant::now();
    // Beside a model in the full profile the device has room; a profile that saves device
    // memory scores on the CPU instead.
    let dev = &loaded.pipeline.device;
    let on_device = loaded.memory == MemoryProfile::Full || dev.kind == BackendKind::Cpu;
    let device = match on_device {
        true => dev.device.clone(),
        false => sdbench_diffusion::device::cpu_device(),
    };
    observer(&Event::note(format!(
        "scoring {} pictures with CLIP ({}), after the timed region",
        images.len(),
        model.name
    )));
    let scorer = ClipScorer::<B>::load(&model.folder, &device)
        .map_err(|e| BenchError::Model(format!("--quality {}: {e}", model.name)))?;
    let mut scores = Vec::with_capacity(images.len());
    for (image, entry) in images.iter().zip(result.results.iter_mut()) {
        let prompt = &result.workload.prompts[entry.prompt_index].prompt;
        let score = scorer.score(image, prompt)?.score;
        entry.clip_score = Some(score);
        scores.push(score);
    }
    let mean = scores.iter().sum::<f64>() / scores.len().max(1) as f64;
    result.scores.quality = Some(Quality {
        clip_model: model.name.clone(),
        clip_score_mean: mean,
        started_at,
        seconds: start.elapsed().as_secs_f64(),
        note: result.workload.model.synthetic.then(|| {
            "synthetic weights: the pictures are noise, so their CLIP score says nothing of a model"
                .to_string()
        }),
    });
    Ok(())
}
