//! What the history holds: benchmark results as `sdbench-bench` writes them, and custom
//! generations; and the one-line summary the list shows for either.

use serde::{Deserialize, Serialize};

use sdbench_bench::result::{BenchResult, Stages};
use sdbench_bench::runner;
use sdbench_diffusion::{
    GenerateRequest, Generated, InitialNoise, MemoryProfile, Pipeline, SkipLayerGuidance,
};
use sdbench_session::vram_report::VramReport;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    Benchmark,
    Generation,
}

impl RunKind {
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Benchmark => "benchmark",
            RunKind::Generation => "generation",
        }
    }

    pub fn from_name(name: &str) -> Option<RunKind> {
        match name {
            "benchmark" => Some(RunKind::Benchmark),
            "generation" => Some(RunKind::Generation),
            _ => None,
        }
    }
}

/// One image made on the Create screen, with its parameters and timings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Generation {
    pub id: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub prompt: String,
    pub negative_prompt: String,
    pub steps: usize,
    pub guidance: f64,
    /// `None` when the run started from given latents.
    pub seed: Option<u64>,
    pub width: usize,
    pub height: usize,
    pub scheduler: String,
    pub model: String,
    pub backend: String,
    pub device: String,
    pub precision: String,
    pub seconds: f64,
    pub stages: Stages,
    pub step_seconds: Vec<f64>,
    /// The saved PNG, when it was saved.
    pub image_path: Option<String>,
    /// Image-to-image: the picture it started from and the strength.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_image: Option<InitImageRecord>,
    /// The pictures the image was conditioned on (FLUX.2 klein's reference pictures), as named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_images: Vec<String>,
    /// Z-Image's guidance options (`cfg_truncation`, `cfg_normalization`), where given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cfg_truncation: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cfg_normalization: Option<f64>,
    /// True classifier-free guidance's scale (`--true-cfg-scale`), where given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub true_cfg_scale: Option<f64>,
    /// Skip-layer guidance, where given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_layer_guidance: Option<SkipLayerRecord>,
    /// Images made together in one run, and this one's place among them (from 0); the timings
    /// are the whole run's.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub batch: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch_index: usize,
    /// The memory profile the pipeline was loaded with; absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_profile: Option<String>,
    /// The device allocator's memory after each phase (`generate --vram-report`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vram_report: Option<VramReport>,
    /// `generate --quality`: the picture's CLIP score against its prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip_score: Option<f64>,
}

/// Skip-layer guidance as a generation ran it: the denoiser blocks skipped, its scale, and the
/// fractions of the steps it starts after and stops before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SkipLayerRecord {
    pub layers: Vec<usize>,
    pub scale: f64,
    pub start: f64,
    pub stop: f64,
}

impl SkipLayerRecord {
    fn of(skip: &SkipLayerGuidance) -> Self {
        SkipLayerRecord {
            layers: skip.layer_list(),
            scale: skip.scale,
            start: skip.start,
            stop: skip.stop,
        }
    }

    /// "blocks 7,8,9, scale 2.8, from 0.01 to 0.2 of the steps".
    pub fn describe(&self) -> String {
        let layers: Vec<String> = self.layers.iter().map(usize::to_string).collect();
        format!(
            "blocks {}, scale {}, from {} to {} of the steps",
            layers.join(","),
            self.scale,
            self.start,
            self.stop
        )
    }
}

/// The picture an image-to-image generation started from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct InitImageRecord {
    /// What the person picked: a path, or a file name in the app.
    pub source: String,
    pub strength: f64,
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Generation {
    /// The record of image `batch_index` that `pipeline` made for `request`: a new id, now, the
    /// parameters as asked, the scheduler and device as used, and the timings. `model` is what the
    /// person named, `init_source` the picture an image-to-image request started from, `memory`
    /// the memory profile it was loaded with (`cpu` and `full` place a pipeline alike, so the
    /// pipeline cannot tell them apart). The seed is `None` when the run started from given
    /// latents.
    pub fn from_engine(
        model: &str,
        request: &GenerateRequest,
        pipeline: &Pipeline,
        memory: MemoryProfile,
        generated: &Generated,
        batch_index: usize,
        init_source: Option<&str>,
    ) -> Generation {
        let t = &generated.timings;
        Generation {
            id: runner::new_run_id(),
            created_at: runner::now_rfc3339(),
            prompt: request.prompt.clone(),
            negative_prompt: request.negative_prompt.clone(),
            steps: request.steps,
            guidance: request.guidance_scale,
            seed: match request.noise {
                InitialNoise::Seed(seed) => Some(seed),
                InitialNoise::Latents { .. } => None,
            },
            width: request.width,
            height: request.height,
            scheduler: generated.scheduler.name().into(),
            model: model.into(),
            backend: pipeline.device.kind.name().into(),
            device: pipeline.device.info.name.clone(),
            precision: pipeline.precision.name().into(),
            seconds: t.total,
            stages: Stages::from(t),
            step_seconds: t.denoiser_steps.clone(),
            image_path: None,
            init_image: request.init_image.as_ref().map(|init| InitImageRecord {
                source: init_source.unwrap_or("an image").to_string(),
                strength: init.strength,
            }),
            // Named by the front end (`Generation::reference_images`); counted here.
            reference_images: (1..=request.reference_images.len())
                .map(|i| format!("reference picture {i}"))
                .collect(),
            cfg_truncation: request.guidance_options.truncation,
            cfg_normalization: request.guidance_options.normalization,
            true_cfg_scale: request.guidance_options.true_cfg,
            skip_layer_guidance: (request.guidance_options.skip_layers.as_ref())
                .map(SkipLayerRecord::of),
            batch: request.batch,
            batch_index,
            memory_profile: Some(memory.name().to_string()),
            vram_report: None,
            clip_score: None,
        }
    }

    /// The PNG text chunks that carry this image's parameters: `parameters` in the A1111 style that
    /// image viewers and other tools read, and `sdbench` as JSON. `latents` names the file the run
    /// started from, when it did not start from a seed.
    pub fn png_text(&self, latents: Option<&str>, version: &str) -> Vec<(&'static str, String)> {
        let seed_text = match (latents, self.seed) {
            (Some(path), _) => format!("latents {path}"),
            (None, seed) => seed.unwrap_or(0).to_string(),
        };
        let mut parameters = format!(
            "{}\nNegative prompt: {}\nSteps: {}, Sampler: {}, CFG scale: {}, Seed: {}, Size: {}x{}, Model: {}, Backend: {}, Precision: {}",
            self.prompt,
            self.negative_prompt,
            self.steps,
            self.scheduler,
            self.guidance,
            seed_text,
            self.width,
            self.height,
            self.model,
            self.backend,
            self.precision,
        );
        if let Some(init) = &self.init_image {
            parameters.push_str(&format!(", Denoising strength: {}", init.strength));
        }
        if let Some(t) = self.cfg_truncation {
            parameters.push_str(&format!(", CFG truncation: {t}"));
        }
        if let Some(f) = self.cfg_normalization {
            parameters.push_str(&format!(", CFG normalization: {f}"));
        }
        if let Some(s) = self.true_cfg_scale {
            parameters.push_str(&format!(", True CFG scale: {s}"));
        }
        if let Some(skip) = &self.skip_layer_guidance {
            parameters.push_str(&format!(", Skip-layer guidance: {}", skip.describe()));
        }
        if self.batch > 1 {
            parameters.push_str(&format!(
                ", Batch size: {}, Batch pos: {}",
                self.batch, self.batch_index
            ));
        }
        let json = serde_json::json!({
            "prompt": self.prompt,
            "negative_prompt": self.negative_prompt,
            "steps": self.steps,
            "guidance_scale": self.guidance,
            "scheduler": self.scheduler,
            "width": self.width,
            "height": self.height,
            "seed": self.seed,
            "latents": latents,
            "model": self.model,
            "backend": self.backend,
            "device": self.device,
            "precision": self.precision,
            "init_image": self.init_image.as_ref().map(|i| &i.source),
            "strength": self.init_image.as_ref().map(|i| i.strength),
            "reference_images": self.reference_images,
            "cfg_truncation": self.cfg_truncation,
            "cfg_normalization": self.cfg_normalization,
            "true_cfg_scale": self.true_cfg_scale,
            "skip_layer_guidance": self.skip_layer_guidance,
            "batch": self.batch,
            "batch_index": self.batch_index,
            "sdbench_version": version,
        });
        vec![("parameters", parameters), ("sdbench", json.to_string())]
    }
}

/// A whole stored run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", content = "run", rename_all = "lowercase")]
#[ts(rename = "HistoryRecord")]
pub enum Record {
    Benchmark(Box<BenchResult>),
    Generation(Box<Generation>),
}

impl Record {
    pub fn id(&self) -> &str {
        match self {
            Record::Benchmark(r) => &r.run_id,
            Record::Generation(g) => &g.id,
        }
    }

    pub fn kind(&self) -> RunKind {
        match self {
            Record::Benchmark(_) => RunKind::Benchmark,
            Record::Generation(_) => RunKind::Generation,
        }
    }

    /// The line the history list shows.
    pub fn summary(&self) -> RunSummary {
        match self {
            Record::Benchmark(r) => RunSummary {
                id: r.run_id.clone(),
                kind: RunKind::Benchmark,
                created_at: r.created_at.clone(),
                title: r.workload.name.clone(),
                model: r.workload.model.id.clone(),
                backend: r.backend.name.clone(),
                device: r.backend.device.clone(),
                precision: r.precision_with_weights(),
                score: r.scores.score,
                images_per_minute: Some(r.scores.images_per_minute),
                seconds_per_image: Some(r.scores.seconds_per_image.mean),
                valid: r.valid,
                standard: r.workload.standard,
                memory_profile: r.backend.memory_profile.clone(),
                sweep_id: r.sweep_id.clone(),
            },
            Record::Generation(g) => RunSummary {
                id: g.id.clone(),
                kind: RunKind::Generation,
                created_at: g.created_at.clone(),
                title: g.prompt.clone(),
                model: g.model.clone(),
                backend: g.backend.clone(),
                device: g.device.clone(),
                precision: g.precision.clone(),
                score: None,
                images_per_minute: (g.seconds > 0.0).then(|| 60.0 / g.seconds),
                seconds_per_image: Some(g.seconds),
                valid: true,
                standard: false,
                memory_profile: g.memory_profile.clone(),
                sweep_id: None,
            },
        }
    }
}

/// One line of the history list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunSummary {
    pub id: String,
    pub kind: RunKind,
    pub created_at: String,
    /// The workload name for a benchmark, the prompt for a generation.
    pub title: String,
    pub model: String,
    pub backend: String,
    pub device: String,
    pub precision: String,
    pub score: Option<u64>,
    pub images_per_minute: Option<f64>,
    pub seconds_per_image: Option<f64>,
    pub valid: bool,
    pub standard: bool,
    /// The memory profile it ran with (`None` for runs from before profiles, which ran as
    /// `full`).
    #[serde(default)]
    pub memory_profile: Option<String>,
    /// The sweep the run is a point of, where it is one.
    #[serde(default)]
    pub sweep_id: Option<String>,
}

/// Which runs the list shows; every set field must match. Newest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default)]
#[ts(rename = "HistoryFilter")]
pub struct Filter {
    pub kind: Option<RunKind>,
    pub backend: Option<String>,
    /// Case-insensitive, in the title, model or device.
    pub text: Option<String>,
    pub standard_only: bool,
    pub valid_only: bool,
    /// Only the points of this sweep.
    pub sweep: Option<String>,
    /// RFC 3339 bounds on `created_at`, inclusive.
    pub since: Option<String>,
    pub until: Option<String>,
    /// At most this many (all when unset).
    pub limit: Option<usize>,
}
