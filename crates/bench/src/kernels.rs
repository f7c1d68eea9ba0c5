//! The GPU-kernel part of a run's cold start, from the engine's compilation counters, and news
//! of compilation while it happens (a first run on a GPU can spend minutes compiling with the
//! step counter standing still).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sdbench_diffusion::kernel_cache::{self, KernelStats};
use sdbench_diffusion::BackendKind;

use crate::result::KernelColdStart;

/// Kernel counters at a run's edges: before loading, after the warm-up image, after the timed
/// images. Counters are per process, so a run is the only work while it is measured.
pub struct KernelCounters {
    kind: BackendKind,
    before_load: KernelStats,
    after_warmup: Option<KernelStats>,
}

impl KernelCounters {
    pub fn start(kind: BackendKind) -> Self {
        KernelCounters {
            kind,
            before_load: kernel_cache::stats(),
            after_warmup: None,
        }
    }

    pub fn warmed_up(&mut self) {
        self.after_warmup = Some(kernel_cache::stats());
    }

    /// The cold start's kernel figures (`None` where the backend does not count kernels).
    pub fn cold_start(&self) -> Option<KernelColdStart> {
        if !kernel_cache::counts(self.kind) {
            return None;
        }
        let now = kernel_cache::stats();
        let warm = self.after_warmup.unwrap_or(now);
        Some(figures(
            &warm.since(&self.before_load),
            now.since(&warm).compiled,
            cache_state(),
        ))
    }
}

impl KernelColdStart {
    /// One line: "kernels: 181 compiled in 44.6 s, 0 from the cache in 0.00 s, 6 autotuned in
    /// 40.1 s (0 from the cache); cache on".
    pub fn describe(&self) -> String {
        format!(
            "kernels: {} compiled in {:.2} s, {} from the cache in {:.2} s, {} autotuned in {:.2} s ({} from the cache); cache {}",
            self.compiled,
            self.compile_seconds,
            self.cache_hits,
            self.cache_load_seconds,
            self.tuned,
            self.tune_seconds,
            self.tune_cache_hits,
            self.cache
        )
    }
}

/// What a front end hears about kernels while the engine works.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelNews {
    /// Kernels are being compiled: the totals since the watch started.
    Compiling {
        compiled: u64,
        cache_hits: u64,
        seconds: f64,
    },
    /// The kernel cache cannot be written (once): runs still work, slower.
    CacheWarning(String),
}

impl KernelNews {
    /// The person's words for it.
    pub fn describe(&self) -> String {
        match self {
            KernelNews::Compiling {
                compiled,
                cache_hits,
                seconds,
            } => {
                let why = if *cache_hits == 0 {
                    "a first run on this GPU, driver or SD Bench build; later runs read them from the cache"
                } else {
                    "new shapes for this GPU; later runs read them from the cache"
                };
                format!(
                    "compiling GPU kernels: {compiled} compiled in {seconds:.0} s, {cache_hits} from the cache ({why})"
                )
            }
            KernelNews::CacheWarning(warning) => warning.clone(),
        }
    }
}

/// Reads the counters on a thread of its own while the engine runs, and reports compilation that
/// goes on (at most every `every`) and the cache's warning. Stops (after a last look for the
/// warning) when dropped.
pub struct CompileWatch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl CompileWatch {
    pub fn start(every: Duration, report: impl FnMut(KernelNews) + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || watch(&flag, every, report));
        CompileWatch {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for CompileWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn watch(stop: &AtomicBool, every: Duration, mut report: impl FnMut(KernelNews)) {
    const POLL: Duration = Duration::from_millis(100);
    let start = kernel_cache::stats();
    let mut last_report = Instant::now();
    let mut last_count = start.compiled;
    let mut warned = false;
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        if !warned {
            if let Some(warning) = kernel_cache::warning() {
                report(KernelNews::CacheWarning(warning));
                warned = true;
            }
        }
        if stopping {
            return;
        }
        let now = kernel_cache::stats().since(&start);
        if now.compiled > last_count && last_report.elapsed() >= every {
            report(KernelNews::Compiling {
                compiled: now.compiled,
                cache_hits: now.cache_hits,
                seconds: now.compile_time.as_secs_f64(),
            });
            last_report = Instant::now();
            last_count = now.compiled;
        }
        std::thread::sleep(POLL);
    }
}

/// `on`, `off` or `unwritable`, as the result records it.
pub fn cache_state() -> &'static str {
    match (kernel_cache::current_dir(), kernel_cache::warning()) {
        (None, _) => "off",
        (Some(_), Some(_)) => "unwritable",
        (Some(_), None) => "on",
    }
}

fn figures(cold: &KernelStats, compiled_while_timed: u64, cache: &str) -> KernelColdStart {
    KernelColdStart {
        compiled: cold.compiled,
        compile_seconds: cold.compile_time.as_secs_f64(),
        cache_hits: cold.cache_hits,
        cache_load_seconds: cold.cache_load_time.as_secs_f64(),
        tuned: cold.tuned,
        tune_seconds: cold.tune_time.as_secs_f64(),
        tune_cache_hits: cold.tune_cache_hits,
        compiled_while_timed,
        cache: cache.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn figures_are_the_cold_phase_with_the_timed_compilations_apart() {
        let cold = KernelStats {
            compiled: 80,
            compile_time: Duration::from_millis(44_600),
            cache_hits: 3,
            cache_load_time: Duration::from_millis(12),
            corrupt_entries: 0,
            tuned: 6,
            tune_time: Duration::from_secs(40),
            tune_cache_hits: 1,
        };
        let f = figures(&cold, 2, "on");
        assert_eq!(
            (f.compiled, f.cache_hits, f.tuned, f.tune_cache_hits),
            (80, 3, 6, 1)
        );
        assert!((f.compile_seconds - 44.6).abs() < 1e-9);
        assert!((f.cache_load_seconds - 0.012).abs() < 1e-9);
        assert_eq!(f.compiled_while_timed, 2);
        assert_eq!(f.cache, "on");
        assert_eq!(
            f.describe(),
            "kernels: 80 compiled in 44.60 s, 3 from the cache in 0.01 s, 6 autotuned in 40.00 s (1 from the cache); cache on"
        );
    }

    #[test]
    fn news_says_what_is_compiling_and_why() {
        let first = KernelNews::Compiling {
            compiled: 120,
            cache_hits: 0,
            seconds: 44.4,
        };
        let line = first.describe();
        assert!(
            line.starts_with("compiling GPU kernels: 120 compiled in 44 s, 0 from the cache"),
            "{line}"
        );
        assert!(line.contains("first run"), "{line}");
        let later = KernelNews::Compiling {
            compiled: 5,
            cache_hits: 300,
            seconds: 0.0,
        };
        assert!(later.describe().contains("new shapes"));
    }

    #[test]
    fn the_cpu_backend_reports_no_kernel_figures() {
        assert_eq!(KernelCounters::start(BackendKind::Cpu).cold_start(), None);
    }
}
