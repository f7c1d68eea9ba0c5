//! The CPU backend: its device, its worker threads, and its name.

use std::sync::OnceLock;

use burn::DispatchDevice;

use crate::error::{DiffusionError, Result};

/// The CPU backend's device, where components placed on the CPU run beside another device.
pub fn cpu_device() -> DispatchDevice {
    DispatchDevice::Flex(Default::default())
}

/// The CPU device's name: the processor's model and the backend's threads, so that runs on
/// different processors with the same thread count are never taken for one device.
pub(super) fn cpu_name() -> String {
    match cpu_threads() {
        1 => format!("{} (1 thread)", cpu_model()),
        n => format!("{} ({n} threads)", cpu_model()),
    }
}

/// The processor's model as the OS reports it ("AMD EPYC 7B13"), or "CPU" where it says none.
pub fn cpu_model() -> &'static str {
    static MODEL: OnceLock<String> = OnceLock::new();
    MODEL.get_or_init(|| {
        let mut sys = sysinfo::System::new();
        sys.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
        sys.cpus()
            .first()
            .map(|c| c.brand().split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| "CPU".into())
    })
}

/// Worker threads of the CPU backend in this process, once set (burn-flex runs its kernels on
/// rayon's global pool, which cannot be resized once built).
static CPU_THREADS: OnceLock<usize> = OnceLock::new();

/// One thread per physical core: a second hardware thread on a core adds little to these
/// compute-bound kernels and slows the first.
pub fn default_cpu_threads() -> usize {
    num_cpus::get_physical().max(1)
}

/// Sets the CPU backend's worker threads for this process (`None`: one per physical core) and
/// returns the count in effect. The first call, or the first CPU device selected, fixes it; a later
/// call asking for another count is refused.
pub fn set_cpu_threads(requested: Option<usize>) -> Result<usize> {
    if requested == Some(0) {
        return Err(DiffusionError::Request(
            "the CPU thread count must be at least 1".into(),
        ));
    }
    let wanted = requested.unwrap_or_else(default_cpu_threads);
    let in_effect = *CPU_THREADS.get_or_init(|| {
        match rayon::ThreadPoolBuilder::new()
            .num_threads(wanted)
            .build_global()
        {
            Ok(()) => wanted,
            // Something ran on the pool before: it has rayon's default size.
            Err(_) => rayon::current_num_threads(),
        }
    });
    match requested {
        Some(n) if n != in_effect => Err(DiffusionError::Request(format!(
            "the CPU backend already runs on {in_effect} threads in this process; \
             it cannot switch to {n} (start a new process to use another count)"
        ))),
        _ => Ok(in_effect),
    }
}

/// The CPU backend's worker threads: the count set, or the one the first CPU run will take.
pub fn cpu_threads() -> usize {
    CPU_THREADS
        .get()
        .copied()
        .unwrap_or_else(default_cpu_threads)
}
