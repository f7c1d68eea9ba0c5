//! Errors as the UI shows them: what went wrong and what to do next.

use serde::Serialize;

/// What kind of trouble, so the UI can offer the right next step: the library's kinds.
pub use sdbench_session::ErrorKind;

/// An error the UI shows: `message` says what is wrong, `hint` what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
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

    /// An error of `kind` with its next step. The kind comes from the error's type; the
    /// message passes through unchanged.
    pub fn of_kind(kind: ErrorKind, message: String) -> Self {
        if kind == ErrorKind::Cancelled {
            return UiError::cancelled();
        }
        UiError::new(kind, message, default_hint(kind))
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
        ErrorKind::DiskFull => "The disk is full: free some space (System → clean up model cache can help) and try again.",
        ErrorKind::OutOfMemory => "The device ran out of memory: choose a memory profile that needs less in System (balanced, low, minimal, or auto), close other programs using the GPU, or choose f16 precision or a smaller image size.",
        ErrorKind::Internal => "If this keeps happening, please report it with the message.",
    }
}

impl From<sdbench_diffusion::DiffusionError> for UiError {
    fn from(e: sdbench_diffusion::DiffusionError) -> Self {
        UiError::of_kind(ErrorKind::of_engine(&e), e.to_string())
    }
}

impl From<sdbench_hub::HubError> for UiError {
    fn from(e: sdbench_hub::HubError) -> Self {
        UiError::of_kind(ErrorKind::of_hub(&e), e.to_string())
    }
}

impl From<sdbench_bench::BenchError> for UiError {
    fn from(e: sdbench_bench::BenchError) -> Self {
        UiError::of_kind(e.kind(), e.to_string())
    }
}

impl From<sdbench_generate::GenerateError> for UiError {
    fn from(e: sdbench_generate::GenerateError) -> Self {
        UiError::of_kind(e.kind(), e.to_string())
    }
}

impl From<sdbench_history::HistoryError> for UiError {
    fn from(e: sdbench_history::HistoryError) -> Self {
        UiError::of_kind(
            e.kind(),
            format!("The run history could not be read or written: {e}"),
        )
    }
}

impl From<sdbench_report::ReportError> for UiError {
    fn from(e: sdbench_report::ReportError) -> Self {
        UiError::of_kind(ErrorKind::BadInput, e.to_string())
    }
}

impl From<std::io::Error> for UiError {
    fn from(e: std::io::Error) -> Self {
        UiError::of_kind(ErrorKind::of_io(&e), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sdbench_diffusion::DiffusionError;

    /// Each kind the window acts on comes from the error's type, whatever its words.
    #[test]
    fn each_kind_comes_from_the_type() {
        let cases: Vec<(UiError, ErrorKind)> = vec![
            (
                DiffusionError::DoesNotFit("needs about 3.1 GiB".into()).into(),
                ErrorKind::OutOfMemory,
            ),
            (
                DiffusionError::OutOfMemory {
                    backend: "cuda".into(),
                    message: "allocating 145 MiB failed".into(),
                }
                .into(),
                ErrorKind::OutOfMemory,
            ),
            (DiffusionError::Cancelled.into(), ErrorKind::Cancelled),
            (
                sdbench_bench::BenchError::Cancelled.into(),
                ErrorKind::Cancelled,
            ),
            (
                DiffusionError::Request("width must be a multiple of 8".into()).into(),
                ErrorKind::BadInput,
            ),
            (
                sdbench_generate::GenerateError::Request("steps must be from 1".into()).into(),
                ErrorKind::BadInput,
            ),
            (
                DiffusionError::BackendUnavailable {
                    backend: "cuda".into(),
                    reason: "no NVIDIA driver".into(),
                }
                .into(),
                ErrorKind::NoDevice,
            ),
            (
                sdbench_bench::BenchError::Hub(sdbench_hub::HubError::Unreachable {
                    url: "https://huggingface.co".into(),
                    reason: "dns".into(),
                })
                .into(),
                ErrorKind::Network,
            ),
            (
                sdbench_hub::HubError::Io {
                    path: "/cache/blob".into(),
                    source: std::io::Error::from(std::io::ErrorKind::StorageFull),
                    hint: "",
                }
                .into(),
                ErrorKind::DiskFull,
            ),
            (
                DiffusionError::ImageWrite {
                    path: "/images/a.png".into(),
                    source: std::io::Error::from(std::io::ErrorKind::StorageFull),
                }
                .into(),
                ErrorKind::DiskFull,
            ),
            // A backend's own failure that is not about memory stays what it is, even when its
            // words mention memory.
            (
                DiffusionError::Backend {
                    backend: "vulkan".into(),
                    message: "shader uses too much shared memory".into(),
                }
                .into(),
                ErrorKind::Internal,
            ),
        ];
        for (error, kind) in cases {
            assert_eq!(error.kind, kind, "{error:?}");
            assert!(!error.hint.is_empty());
        }
    }

    #[test]
    fn the_message_passes_through_with_the_kinds_next_step() {
        let e = UiError::from(DiffusionError::BackendUnavailable {
            backend: "cuda".into(),
            reason: "no NVIDIA driver".into(),
        });
        assert!(e.message.contains("no NVIDIA driver"));
        assert!(e.hint.contains("backend"));
        let e = UiError::from(DiffusionError::DoesNotFit(
            "out of device memory before starting: the full memory profile needs about 3.1 GiB"
                .into(),
        ));
        assert!(e
            .message
            .starts_with("out of device memory before starting"));
        assert!(e.hint.contains("memory profile"), "{}", e.hint);
        let e = UiError::from(std::io::Error::from_raw_os_error(28));
        assert_eq!(e.kind, ErrorKind::DiskFull, "{e:?}");
        assert!(e.hint.contains("free some space"));
    }
}
