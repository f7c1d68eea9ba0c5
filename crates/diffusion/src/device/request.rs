//! What a person asks for: a backend (`--backend`) and, optionally, which of its devices.

use crate::error::{DiffusionError, Result};

/// What `--backend` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendRequest {
    Auto,
    Cpu,
    Cuda,
    Rocm,
    Vulkan,
    Metal,
    Dx12,
}

impl BackendRequest {
    pub const NAMES: &'static [&'static str] =
        &["auto", "cpu", "cuda", "rocm", "vulkan", "metal", "dx12"];

    pub fn from_name(name: &str) -> Result<Self> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "auto" => BackendRequest::Auto,
            "cpu" => BackendRequest::Cpu,
            "cuda" => BackendRequest::Cuda,
            "rocm" | "hip" => BackendRequest::Rocm,
            "vulkan" => BackendRequest::Vulkan,
            "metal" => BackendRequest::Metal,
            "dx12" => BackendRequest::Dx12,
            _ => {
                return Err(DiffusionError::Request(format!(
                    "unknown backend `{name}`; choose one of: {}",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }

    /// The name `from_name` takes.
    pub fn name(self) -> &'static str {
        match self {
            BackendRequest::Auto => "auto",
            BackendRequest::Cpu => "cpu",
            BackendRequest::Cuda => "cuda",
            BackendRequest::Rocm => "rocm",
            BackendRequest::Vulkan => "vulkan",
            BackendRequest::Metal => "metal",
            BackendRequest::Dx12 => "dx12",
        }
    }
}

/// A backend and, optionally, which of its devices (`--device N`: the number `sdbench devices`
/// lists; without one, the backend's best device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceRequest {
    pub backend: BackendRequest,
    pub index: Option<usize>,
}

impl From<BackendRequest> for DeviceRequest {
    fn from(backend: BackendRequest) -> Self {
        DeviceRequest {
            backend,
            index: None,
        }
    }
}
