//! Step progress on stderr: a redrawn line on a terminal, plain lines otherwise.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use sdbench_hub::DownloadProgress;

/// Mean seconds per step over the last few steps, so the first (slower, compiling) ones fade out.
#[derive(Default)]
pub struct RecentSteps(Vec<f64>);

impl RecentSteps {
    /// Records a step and returns the current mean step time.
    pub fn push(&mut self, seconds: f64) -> f64 {
        self.0.push(seconds);
        let window = &self.0[self.0.len().saturating_sub(5)..];
        window.iter().sum::<f64>() / window.len() as f64
    }

    pub fn clear(&mut self) {
        self.0.clear()
    }
}

pub struct StepProgress {
    terminal: bool,
    recent: RecentSteps,
}

impl Default for StepProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl StepProgress {
    pub fn new() -> Self {
        StepProgress {
            terminal: std::io::stderr().is_terminal(),
            recent: RecentSteps::default(),
        }
    }

    pub fn text_encoded(&mut self, seconds: f64) {
        eprintln!("text encoder: {seconds:.2} s");
    }

    pub fn step(&mut self, index: usize, total: usize, seconds: Option<f64>) {
        let line = match seconds {
            Some(seconds) => {
                let rate = 1.0 / self.recent.push(seconds).max(1e-9);
                format!("step {index}/{total}  {rate:.2} it/s")
            }
            None => format!("step {index}/{total}"),
        };
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r{line}   ");
            if index == total {
                let _ = writeln!(err);
            }
        } else {
            let _ = writeln!(err, "{line}");
        }
    }

    pub fn decoded(&mut self, seconds: f64) {
        eprintln!("vae decode: {seconds:.2} s");
    }
}

/// Download progress: bytes, rate and ETA, redrawn at most ten times a second.
pub struct DownloadBar {
    terminal: bool,
    start: Instant,
    last_draw: Option<Instant>,
    first_done: Option<u64>,
    drew: bool,
}

impl Default for DownloadBar {
    fn default() -> Self {
        Self::new()
    }
}

impl DownloadBar {
    pub fn new() -> Self {
        DownloadBar {
            terminal: std::io::stderr().is_terminal(),
            start: Instant::now(),
            last_draw: None,
            first_done: None,
            drew: false,
        }
    }

    pub fn update(&mut self, p: &DownloadProgress) {
        // Bytes already on disk at the start are not part of the rate.
        let base = *self
            .first_done
            .get_or_insert(p.done.saturating_sub(p.file_done));
        let now = Instant::now();
        let interval = if self.terminal { 0.1 } else { 2.0 };
        let finished = p.done >= p.total;
        if let Some(last) = self.last_draw {
            if now.duration_since(last).as_secs_f64() < interval && !finished {
                return;
            }
        }
        self.last_draw = Some(now);
        let elapsed = now.duration_since(self.start).as_secs_f64().max(1e-3);
        let rate = p.done.saturating_sub(base) as f64 / elapsed;
        let eta = if rate > 0.0 {
            format_duration((p.total - p.done.min(p.total)) as f64 / rate)
        } else {
            "--:--".into()
        };
        let line = format!(
            "downloading {}  {} / {}  {}/s  ETA {}",
            p.file,
            human_bytes(p.done),
            human_bytes(p.total),
            human_bytes(rate as u64),
            eta
        );
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r{line:<100.100}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        self.drew = true;
    }

    pub fn finish(&mut self) {
        if self.terminal && self.drew {
            eprintln!();
        }
        self.drew = false;
    }
}

pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

pub fn format_duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}
