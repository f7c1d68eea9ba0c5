//! Stable Diffusion's standard workloads, each defined on a preset.

use crate::pipeline::family::WorkloadSpec;
use crate::pipeline::workload::SDBENCH_PROMPTS;
use crate::pipeline::Preset;
use crate::scheduler::SchedulerKind;

/// `sd15-512-30` v1, the standard workload: SD1.5, 512x512, 30 steps of Euler, guidance 7.5,
/// SD Bench's five prompts and seeds, an empty negative prompt.
pub static SD15_512_30: WorkloadSpec = WorkloadSpec {
    name: "sd15-512-30",
    version: 1,
    preset: Preset(&super::presets::SD15),
    width: 512,
    height: 512,
    steps: 30,
    scheduler: SchedulerKind::Euler,
    guidance: 7.5,
    prompts: SDBENCH_PROMPTS,
    note: "",
};

/// `sdxl-1024-20` v1: SDXL base 1.0, 1024x1024, 20 steps of Euler, guidance 8 (MLPerf's
/// text-to-image settings), the same prompts and seeds. The VAE decodes in f32 unless the
/// model's VAE is marked safe in f16 (`force_upcast: false`).
pub static SDXL_1024_20: WorkloadSpec = WorkloadSpec {
    name: "sdxl-1024-20",
    preset: Preset(&super::presets::SDXL_BASE),
    width: 1024,
    height: 1024,
    steps: 20,
    guidance: 8.0,
    note: " (MLPerf's settings)",
    ..SD15_512_30
};
