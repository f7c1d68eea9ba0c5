//! What SD Bench knows about the machine: system identity (OS, CPU, RAM, GPUs) and a 10 Hz sampler
//! of power, energy, VRAM, clocks, temperature and throttling (summarized per run: `hardware`), per vendor:
//! NVIDIA through NVML, AMD through amdgpu sysfs, Intel GPUs through i915/xe hwmon energy, the CPU
//! package through RAPL, Apple silicon GPUs through IOReport. Every figure names its source or says why it is unavailable. The sysfs
//! readers take a root folder so tests run on recorded trees.

pub mod amd;
pub mod apple;
pub mod cpu_state;
pub mod discover;
pub mod hardware;
pub mod intel;
pub mod nvidia;
pub mod power;
pub mod rapl;
pub mod reading;
pub mod sampler;
mod sysfs;
pub mod system;
pub mod windows;

pub use discover::{discover, Discovery, Unavailable};
pub use hardware::{summarize_hardware, HardwareState};
pub use power::{summarize_power, PowerSummary};
pub use reading::{Reading, Sample, Source, SourceInfo, Vendor};
pub use sampler::Sampler;
pub use system::{normalize_pci_bus, GpuInfo, SystemInfo};
