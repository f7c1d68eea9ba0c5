//! Backend failures (a panic or an error from the device) turned into errors that say what went
//! wrong and what to try. Out-of-memory is the usual one: the fit check estimates before loading,
//! and this is what a person sees when an estimate was short.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::memory::MemoryProfile;
use crate::device::{BackendKind, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::io::weights::Precision;

/// Runs backend work on `device` for a pipeline of `profile` running in `precision` (where
/// known), turning a backend panic and a backend error (out of memory, a driver error) into an
/// error that explains itself.
pub(crate) fn guard<T>(
    device: &SelectedDevice,
    profile: Option<MemoryProfile>,
    precision: Option<Precision>,
    work: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let profile = match device.kind {
        BackendKind::Cpu => Some(MemoryProfile::Cpu),
        _ => profile,
    };
    let explain = |message: &str| {
        let backend = device.kind.name().into();
        let message = explain(message, device.max_buffer_bytes(), profile, precision);
        if is_out_of_memory(&message) {
            DiffusionError::OutOfMemory { backend, message }
        } else {
            DiffusionError::Backend { backend, message }
        }
    };
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(Err(DiffusionError::Backend { message, .. })) => Err(explain(&message)),
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown failure".into());
            Err(explain(&message))
        }
    }
}

/// The person's version of a backend's failure message. `max_buffer` is the device's largest
/// buffer; `profile` the memory profile the work ran in, so the advice names lighter ones, and
/// `precision` the run's, so it names f16 only to a run in f32 (or of unknown precision).
/// Messages this has explained already pass through unchanged (guards may nest).
pub(crate) fn explain(
    message: &str,
    max_buffer: Option<u64>,
    profile: Option<MemoryProfile>,
    precision: Option<Precision>,
) -> String {
    if is_out_of_memory(message) {
        return message.to_string();
    }
    let lower = message.to_lowercase();
    // cubecl's allocation error, alone or first in an unhealthy server's list of errors.
    let failed_size = lower
        .split("can't allocate buffer of size:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok());
    let advice = advice(profile, precision);
    match failed_size {
        Some(bytes) if max_buffer.is_some_and(|max| bytes > max) => format!(
            "{TOO_BIG} a {} tensor in one buffer (its largest is {}); {advice}",
            mib(bytes),
            mib(max_buffer.unwrap_or_default())
        ),
        Some(bytes) => format!(
            "{OUT_OF_MEMORY}: allocating {} failed; {advice}",
            mib(bytes)
        ),
        None if ["out of memory", "outofmemory", "out_of_memory"]
            .iter()
            .any(|m| lower.contains(m)) =>
        {
            let first_line = message.lines().next().unwrap_or_default().trim();
            format!("{OUT_OF_MEMORY} ({first_line}); {advice}")
        }
        // Work on a tensor whose memory was never allocated (an allocation failed earlier on the
        // device's thread).
        None if lower.contains("couldn't find resource for that handle") => {
            format!("{OUT_OF_MEMORY}: a tensor's memory could not be allocated; {advice}")
        }
        None => message.to_string(),
    }
}

const OUT_OF_MEMORY: &str = "out of device memory";

/// Whether `explain` made `message` an out-of-memory one.
fn is_out_of_memory(message: &str) -> bool {
    message.starts_with(OUT_OF_MEMORY) || message.starts_with(TOO_BIG)
}
const TOO_BIG: &str = "the device cannot hold";

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// What to try after `profile` ran out in `precision`: the profiles that need less, then the
/// other levers (f16 only where the run was not already in a 16-bit precision).
fn advice(profile: Option<MemoryProfile>, precision: Option<Precision>) -> String {
    if profile == Some(MemoryProfile::Cpu) {
        return "try a smaller size or fewer images per batch".into();
    }
    let lighter: Vec<&str> = match profile {
        Some(profile) => MemoryProfile::ALL
            .into_iter()
            .skip_while(|p| *p != profile)
            .skip(1)
            .filter(|p| !p.needs_cpu_backend())
            .map(MemoryProfile::name)
            .collect(),
        None => vec!["balanced", "low", "minimal"],
    };
    let profiles = match lighter.split_first() {
        Some((first, [])) => format!("--memory {first} (the app's System screen), "),
        Some((first, rest)) => format!(
            "--memory {first} (then {}; the app's System screen), ",
            rest.join(", then ")
        ),
        None => String::new(),
    };
    let half = match precision {
        Some(Precision::F16 | Precision::Bf16) => "",
        Some(Precision::F32) | None => "--precision f16, ",
    };
    format!("try {profiles}{half}a smaller size, or --memory cpu")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_failures_name_the_size_and_the_lighter_profiles() {
        let too_big = "called `Result::unwrap()` on an `Err` value: can't allocate buffer of size: 151781376\n   0: backtrace lines";
        let text = explain(too_big, Some(128 << 20), Some(MemoryProfile::Full), None);
        assert_eq!(
            text,
            "the device cannot hold a 145 MiB tensor in one buffer (its largest is 128 MiB); try \
             --memory balanced (then low, then minimal; the app's System screen), --precision \
             f16, a smaller size, or --memory cpu"
        );
        // The same size within the largest buffer: the device ran out.
        let text = explain(too_big, Some(1 << 30), Some(MemoryProfile::Low), None);
        assert_eq!(
            text,
            "out of device memory: allocating 145 MiB failed; try --memory minimal (the app's \
             System screen), --precision f16, a smaller size, or --memory cpu"
        );
        // An unhealthy server's list of errors, as a sync returns it.
        let unhealthy = "An error happened during execution\nCaused by:\n  The server is in an invalid state\nCaused by:\n  [Io(can't allocate buffer of size: 320000000\nNo backtrace available), Io(couldn't find resource for that handle: Memory page 0 doesn't exist\nNo backtrace available)]";
        let text = explain(unhealthy, None, Some(MemoryProfile::Minimal), None);
        assert_eq!(
            text,
            "out of device memory: allocating 305 MiB failed; try --precision f16, a smaller \
             size, or --memory cpu"
        );
        // Explained once only.
        assert_eq!(explain(&text, None, None, None), text);
        // A run already in f16 or bf16 is not told to use f16.
        for precision in [Precision::F16, Precision::Bf16] {
            let text = explain(
                too_big,
                Some(128 << 20),
                Some(MemoryProfile::Low),
                Some(precision),
            );
            assert_eq!(
                text,
                "the device cannot hold a 145 MiB tensor in one buffer (its largest is 128 \
                 MiB); try --memory minimal (the app's System screen), a smaller size, or \
                 --memory cpu"
            );
        }
        let f32_run = explain(too_big, Some(1 << 30), None, Some(Precision::F32));
        assert!(f32_run.contains("--precision f16"), "{f32_run}");
    }

    #[test]
    fn guarded_work_returns_explained_errors_for_errors_and_panics() {
        let cpu = crate::device::select(crate::BackendRequest::Cpu).unwrap();
        let failed_sync = guard(&cpu, Some(MemoryProfile::Full), None, || -> Result<()> {
            Err(DiffusionError::Backend {
                backend: "cpu".into(),
                message: "The server is in an invalid state: [Io(can't allocate buffer of size: 2097152\n".into(),
            })
        });
        let expected =
            "out of device memory: allocating 2 MiB failed; try a smaller size or fewer \
                        images per batch";
        assert_eq!(
            failed_sync.unwrap_err().to_string(),
            format!("the cpu backend failed: {expected}")
        );
        let panicked = guard(&cpu, None, None, || -> Result<()> {
            panic!("out of memory")
        });
        assert!(panicked
            .unwrap_err()
            .to_string()
            .contains("out of device memory (out of memory)"));
        assert_eq!(guard(&cpu, None, None, || Ok(7)).unwrap(), 7);
    }

    #[test]
    fn other_failures_pass_through_or_name_out_of_memory() {
        let oom = explain("CUDA_ERROR_OUT_OF_MEMORY\n  backtrace", None, None, None);
        assert_eq!(
            oom,
            "out of device memory (CUDA_ERROR_OUT_OF_MEMORY); try --memory balanced (then low, \
             then minimal; the app's System screen), --precision f16, a smaller size, or \
             --memory cpu"
        );
        let lost = explain(
            "couldn't find resource for that handle: Memory page 0",
            None,
            None,
            None,
        );
        assert!(lost.starts_with("out of device memory: a tensor's memory could not be allocated"));
        assert_eq!(explain("device lost", None, None, None), "device lost");
        assert_eq!(
            explain("out of memory", None, Some(MemoryProfile::Cpu), None),
            "out of device memory (out of memory); try a smaller size or fewer images per batch"
        );
    }
}
