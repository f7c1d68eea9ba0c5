//! `--backend` and `--device`: which backend, and which of its devices, a command runs on.

use sdbench_diffusion::{BackendRequest, DeviceRequest, MemoryProfile};

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

/// `--memory`: how the model is placed to fit the device's memory.
#[derive(clap::Args, Debug, Clone)]
pub struct MemoryArg {
    /// Memory profile: full (everything on the GPU; the standard score's), balanced (text encoders
    /// on the CPU, pooled memory released before decoding), low (as balanced, plus sequential
    /// guidance, the UNet off the GPU while decoding, tiled VAE), cpu (everything on the CPU).
    #[arg(long = "memory", default_value = "full", value_parser = clap::builder::PossibleValuesParser::new(MemoryProfile::NAMES))]
    memory: String,
}

impl MemoryArg {
    pub fn profile(&self) -> MemoryProfile {
        MemoryProfile::from_name(&self.memory).expect("clap checked the profile")
    }

    /// The device request for this profile: `cpu` runs on the CPU backend, and names any other
    /// backend asked for as a conflict.
    pub fn device_request(&self, device: &DeviceArg) -> anyhow::Result<DeviceRequest> {
        let mut request = device.request()?;
        if self.profile().needs_cpu_backend() {
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
