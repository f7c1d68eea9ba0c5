//! Errors as the UI shows them: what went wrong and what to do next.

use serde::Serialize;

/// What kind of trouble, so the UI can offer the right next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ErrorKind {
    NoDevice,
    OutOfMemory,
    Network,
    DiskFull,
    ModelMissing,
    BadModel,
    BadInput,
    Busy,
    NotFound,
    Cancelled,
    Internal,
}

/// An error the UI shows: `message` says what is wrong, `hint` what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UiError {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: String,
}

impl std::fmt::Display for UiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.hint)
    }
}

pub type UiResult<T> = Result<T, UiError>;

impl UiError {
    pub fn new(kind: ErrorKind, message: impl Into<String>, hint: impl Into<String>) -> Self {
        UiError {
            kind,
            message: message.into(),
            hint: hint.into(),
        }
    }

    pub fn bad_input(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadInput, message, hint)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::NotFound,
            message,
            "It may have been deleted; refresh the list.",
        )
    }

    pub fn cancelled() -> Self {
        Self::new(ErrorKind::Cancelled, "Cancelled", "Nothing was saved.")
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::Internal,
            message,
            "This is a bug in SD Bench; please report it with the message.",
        )
    }

    /// Classifies an error from the engine crates by its text, which carries the OS and driver
    /// messages the crates pass through.
    fn classify(message: String, default: ErrorKind) -> Self {
        let lower = message.to_lowercase();
        let (kind, hint) = if lower.contains("no space left")
            || lower.contains("os error 28")
            || lower.contains("not enough space on the disk")
        {
            (
                ErrorKind::DiskFull,
                "The disk is full: free some space (System → clean up model cache can help) and try again.",
            )
        } else if [
            "out of memory",
            "out_of_memory",
            "outofmemory",
            // The engine's own words: the fit check before starting, an allocation that failed
            // on the device, a tensor beyond the device's largest buffer.
            "out of device memory",
            "the device cannot hold",
        ]
        .iter()
        .any(|m| lower.contains(m))
        {
            (
                ErrorKind::OutOfMemory,
                "The device ran out of memory: choose a memory profile that needs less in System (balanced, low, minimal, or auto), close other programs using the GPU, or choose f16 precision or a smaller image size.",
            )
        } else {
            (default, default_hint(default))
        };
        UiError::new(kind, message, hint)
    }
}

fn default_hint(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NoDevice => "Choose another backend in System (Auto picks the best one that works; CPU always works but is slow).",
        ErrorKind::Network => "Check the internet connection, or choose a model folder on this disk in System. Models already downloaded work offline.",
        ErrorKind::ModelMissing => "Download the model on the Benchmark screen, or choose a model folder on this disk in System.",
        ErrorKind::BadModel => "Choose a complete SD 1.5 diffusers folder or .safetensors checkpoint in System, or download the default model again.",
        ErrorKind::Busy => "Wait for it to finish or cancel it.",
        ErrorKind::Cancelled => "Nothing was saved.",
        ErrorKind::NotFound => "It may have been deleted; refresh the list.",
        ErrorKind::BadInput => "Correct the value and try again.",
        ErrorKind::DiskFull | ErrorKind::OutOfMemory | ErrorKind::Internal => {
            "If this keeps happening, please report it with the message."
        }
    }
}

impl From<sdbench_diffusion::DiffusionError> for UiError {
    fn from(e: sdbench_diffusion::DiffusionError) -> Self {
        use sdbench_diffusion::DiffusionError as E;
        let kind = match &e {
            E::Cancelled => return UiError::cancelled(),
            E::BackendUnavailable { .. } => ErrorKind::NoDevice,
            E::Request(_) => ErrorKind::BadInput,
            E::ModelFolder { .. }
            | E::Config { .. }
            | E::Unsupported { .. }
            | E::Weights { .. }
            | E::Tensor { .. }
            | E::Tokenizer { .. } => ErrorKind::BadModel,
            _ => ErrorKind::Internal,
        };
        UiError::classify(e.to_string(), kind)
    }
}

impl From<sdbench_hub::HubError> for UiError {
    fn from(e: sdbench_hub::HubError) -> Self {
        use sdbench_hub::HubError as E;
        let kind = match &e {
            E::Cancelled => return UiError::cancelled(),
            E::Network { .. } | E::Unreachable { .. } | E::Http { .. } => ErrorKind::Network,
            E::NotCached { .. } => ErrorKind::ModelMissing,
            E::BadRepoId(_) => ErrorKind::BadInput,
            E::NotAPipeline { .. } | E::Listing { .. } | E::Checksum { .. } => ErrorKind::BadModel,
            E::Busy { .. } => ErrorKind::Busy,
            E::Io { .. } => ErrorKind::Internal,
        };
        UiError::classify(e.to_string(), kind)
    }
}

impl From<sdbench_bench::BenchError> for UiError {
    fn from(e: sdbench_bench::BenchError) -> Self {
        use sdbench_bench::BenchError as E;
        match e {
            E::Cancelled => UiError::cancelled(),
            E::Hub(e) => e.into(),
            E::Engine(e) => e.into(),
            E::Model(_) | E::Workload(_) => UiError::classify(e.to_string(), ErrorKind::BadInput),
            E::Submit { .. } => UiError::classify(e.to_string(), ErrorKind::Network),
            other => UiError::classify(other.to_string(), ErrorKind::Internal),
        }
    }
}

impl From<sdbench_history::HistoryError> for UiError {
    fn from(e: sdbench_history::HistoryError) -> Self {
        UiError::classify(
            format!("The run history could not be read or written: {e}"),
            ErrorKind::Internal,
        )
    }
}

impl From<sdbench_report::ReportError> for UiError {
    fn from(e: sdbench_report::ReportError) -> Self {
        UiError::classify(e.to_string(), ErrorKind::BadInput)
    }
}

impl From<std::io::Error> for UiError {
    fn from(e: std::io::Error) -> Self {
        UiError::classify(e.to_string(), ErrorKind::Internal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_full_and_out_of_memory_are_recognised_in_any_error() {
        let io = std::io::Error::from_raw_os_error(28);
        let e = UiError::from(sdbench_hub::HubError::Io {
            path: "/cache/blob".into(),
            source: io,
            hint: "",
        });
        assert_eq!(e.kind, ErrorKind::DiskFull, "{e:?}");
        assert!(e.hint.contains("free some space"));

        let e = UiError::from(sdbench_diffusion::DiffusionError::Backend {
            backend: "cuda".into(),
            message: "CUDA_ERROR_OUT_OF_MEMORY: out of memory".into(),
        });
        assert_eq!(e.kind, ErrorKind::OutOfMemory);
        for message in [
            "out of device memory: allocating 145 MiB failed; try --memory low",
            "the device cannot hold a 145 MiB tensor in one buffer (its largest is 128 MiB)",
        ] {
            let e = UiError::from(sdbench_diffusion::DiffusionError::Backend {
                backend: "vulkan".into(),
                message: message.into(),
            });
            assert_eq!(e.kind, ErrorKind::OutOfMemory, "{message}");
        }
        let e = UiError::from(sdbench_diffusion::DiffusionError::DoesNotFit(
            "out of device memory before starting: the full memory profile needs about 3.1 GiB"
                .into(),
        ));
        assert_eq!(e.kind, ErrorKind::OutOfMemory);
        assert!(e.hint.contains("memory profile"), "{}", e.hint);
    }

    #[test]
    fn each_error_family_gets_its_next_step() {
        let e = UiError::from(sdbench_diffusion::DiffusionError::BackendUnavailable {
            backend: "cuda".into(),
            reason: "no NVIDIA driver".into(),
        });
        assert_eq!(e.kind, ErrorKind::NoDevice);
        assert!(e.message.contains("no NVIDIA driver"));
        assert!(e.hint.contains("backend"));

        let e = UiError::from(sdbench_bench::BenchError::Hub(
            sdbench_hub::HubError::Unreachable {
                url: "https://huggingface.co".into(),
                reason: "dns".into(),
            },
        ));
        assert_eq!(e.kind, ErrorKind::Network);
        assert!(e.hint.contains("offline"));

        assert_eq!(
            UiError::from(sdbench_bench::BenchError::Cancelled).kind,
            ErrorKind::Cancelled
        );
    }
}
