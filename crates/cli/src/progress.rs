//! Step progress on stderr: a redrawn line on a terminal, plain lines otherwise.

use std::io::{IsTerminal, Write};

use sdbench_diffusion::Progress;

pub struct StepProgress {
    terminal: bool,
    recent: Vec<f64>,
}

impl StepProgress {
    pub fn new() -> Self {
        StepProgress {
            terminal: std::io::stderr().is_terminal(),
            recent: Vec::new(),
        }
    }

    pub fn update(&mut self, event: &Progress) {
        let mut err = std::io::stderr().lock();
        match event {
            Progress::TextEncoded { seconds } => {
                let _ = writeln!(err, "text encoder: {seconds:.2} s");
            }
            Progress::Step {
                index,
                total,
                seconds,
            } => {
                self.recent.push(*seconds);
                // Rate over the last few steps, so the first (slower, compiling) ones fade out.
                let window = &self.recent[self.recent.len().saturating_sub(5)..];
                let rate = window.len() as f64 / window.iter().sum::<f64>().max(1e-9);
                let line = format!("step {index}/{total}  {rate:.2} it/s");
                if self.terminal {
                    let _ = write!(err, "\r{line}   ");
                    if index == total {
                        let _ = writeln!(err);
                    }
                } else {
                    let _ = writeln!(err, "{line}");
                }
            }
            Progress::Decoded { seconds } => {
                let _ = writeln!(err, "vae decode: {seconds:.2} s");
            }
        }
    }
}
