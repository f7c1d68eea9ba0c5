//! `--backend` and `--device`: which backend, and which of its devices, a command runs on.

use sdbench_diffusion::{BackendRequest, DeviceRequest};

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
