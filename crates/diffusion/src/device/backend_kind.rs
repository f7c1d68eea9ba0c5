//! The backends SD Bench runs on, by name.

use std::fmt;

/// A concrete backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    Cpu,
    Cuda,
    Rocm,
    Vulkan,
    Metal,
    Dx12,
}

impl BackendKind {
    pub const ALL: [BackendKind; 6] = [
        BackendKind::Cuda,
        BackendKind::Rocm,
        BackendKind::Vulkan,
        BackendKind::Metal,
        BackendKind::Dx12,
        BackendKind::Cpu,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Rocm => "rocm",
            BackendKind::Vulkan => "vulkan",
            BackendKind::Metal => "metal",
            BackendKind::Dx12 => "dx12",
        }
    }

    /// Whether this build contains the backend (see the module docs on the `cuda` and `rocm` features).
    pub fn built_in(self) -> bool {
        let left_out = (self == BackendKind::Cuda && cfg!(not(feature = "cuda")))
            || (self == BackendKind::Rocm && cfg!(not(feature = "rocm")));
        !left_out
    }

    pub(crate) fn wgpu_backend(self) -> Option<wgpu::Backend> {
        match self {
            BackendKind::Vulkan => Some(wgpu::Backend::Vulkan),
            BackendKind::Metal => Some(wgpu::Backend::Metal),
            BackendKind::Dx12 => Some(wgpu::Backend::Dx12),
            _ => None,
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
