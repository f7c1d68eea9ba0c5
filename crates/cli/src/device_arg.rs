//! `--backend` and `--device`: which backend, and which of its devices, a command runs on.

use sdbench_diffusion::{BackendRequest, DeviceRequest, MemoryProfile};
use sdbench_session::device_memory::{memory_limit_bytes, MemoryChoice, MAX_MEMORY_LIMIT_GIB};

#[derive(clap::Args, Debug, Clone)]
pub struct DeviceArg {
    /// Compute backend.
    #[arg(long, default_value = "auto", value_parser = clap::builder::PossibleValuesParser::new(BackendRequest::NAMES))]
    backend: String,
    /// Which of the backend's devices, by the number `sdbench devices` lists (default: the best).
    #[arg(long, value_name = "N")]
    device: Option<usize>,
}

impl DeviceArg {
    pub fn request(&self) -> anyhow::Result<DeviceRequest> {
        Ok(DeviceRequest {
            backend: BackendRequest::from_name(&self.backend)?,
            index: self.device,
        })
    }
}

/// `--memory` and `--memory-limit`: how the model is placed to fit the device's memory.
#[derive(clap::Args, Debug, Clone)]
pub struct MemoryArg {
    /// Memory profile: full (everything on the GPU; the standard score's), balanced (text encoders
    /// on the CPU, pooled memory released before decoding), low (as balanced, plus sequential
    /// guidance, the denoiser (UNet or transformer) off the GPU while decoding, tiled VAE), minimal
    /// (as low, plus int8 denoiser weights and smaller attention chunks), cpu (everything on the CPU), auto (the fastest that
    /// fits the device's memory, with what it keeps on the CPU fitting the RAM).
    #[arg(long = "memory", default_value = "full", value_parser = clap::builder::PossibleValuesParser::new(MEMORY_CHOICES))]
    memory: String,
    /// Device memory in GiB that the fit check and --memory auto assume instead of what the GPU
    /// has free (read from NVML or amdgpu's sysfs) or its driver's total: what a smaller GPU would
    /// fit, or a size for a wgpu device that nothing reads.
    #[arg(long = "memory-limit", value_name = "GIB")]
    memory_limit: Option<f64>,
}

const MEMORY_CHOICES: [&str; 6] = ["full", "balanced", "low", "minimal", "cpu", "auto"];

impl MemoryArg {
    pub fn is_auto(&self) -> bool {
        self.memory == "auto"
    }

    /// The profile asked for; `full` stands in for `auto` until `select` resolves it.
    pub fn profile(&self) -> MemoryProfile {
        MemoryProfile::from_name(&self.memory).unwrap_or(MemoryProfile::Full)
    }

    /// `--memory-limit` in bytes.
    pub fn limit_bytes(&self) -> anyhow::Result<Option<u64>> {
        match self.memory_limit {
            None => Ok(None),
            Some(gib) => match memory_limit_bytes(gib) {
                Some(bytes) => Ok(Some(bytes)),
                None => anyhow::bail!(
                    "--memory-limit {gib}: give the device memory in GiB, more than 0 and at most {MAX_MEMORY_LIMIT_GIB}"
                ),
            },
        }
    }

    /// The memory choice as the engine's use cases take it.
    pub fn choice(&self) -> anyhow::Result<MemoryChoice> {
        Ok(MemoryChoice {
            profile: self.profile(),
            auto: self.is_auto(),
            limit: self.limit_bytes()?,
        })
    }

    /// The device request for this profile: `cpu` runs on the CPU backend, and names any other
    /// backend asked for as a conflict.
    pub fn device_request(&self, device: &DeviceArg) -> anyhow::Result<DeviceRequest> {
        let mut request = device.request()?;
        if self.profile().needs_cpu_backend() && !self.is_auto() {
            match request.backend {
                BackendRequest::Auto | BackendRequest::Cpu => request.backend = BackendRequest::Cpu,
                _ => anyhow::bail!(
                    "--memory cpu runs everything on the CPU backend, but --backend {} was asked for; \
                     leave out one of them",
                    device.backend
                ),
            }
        }
        Ok(request)
    }
}
