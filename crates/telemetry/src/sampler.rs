//! Reads every source on its own thread at a fixed rate until stopped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::reading::{Sample, Source, SourceInfo};

/// The rate the benchmark samples at.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    handle: Option<JoinHandle<()>>,
    infos: Vec<SourceInfo>,
}

impl Sampler {
    /// Starts sampling now; sample times are seconds since `epoch`, the caller's clock for the run.
    pub fn start(mut sources: Vec<Box<dyn Source>>, interval: Duration, epoch: Instant) -> Sampler {
        let infos = sources.iter().map(|s| s.info().clone()).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let handle = if sources.is_empty() {
            None
        } else {
            let (stop, samples) = (stop.clone(), samples.clone());
            Some(thread::spawn(move || {
                let start = Instant::now();
                let mut tick: u32 = 0;
                loop {
                    for source in sources.iter_mut() {
                        let reading = source.read();
                        let t = epoch.elapsed().as_secs_f64();
                        let sample = Sample {
                            t,
                            source: source.info().id.clone(),
                            reading,
                        };
                        samples.lock().expect("sampler lock").push(sample);
                    }
                    // Checked after reading, so a stop request still gets one last reading that
                    // covers the end of the run.
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    tick += 1;
                    let next = start + interval * tick;
                    let now = Instant::now();
                    if next > now {
                        thread::park_timeout(next - now);
                    }
                }
            }))
        };
        Sampler {
            stop,
            samples,
            handle,
            infos,
        }
    }

    pub fn sources(&self) -> &[SourceInfo] {
        &self.infos
    }

    /// Samples so far (for a live view).
    pub fn samples(&self) -> Vec<Sample> {
        self.samples.lock().expect("sampler lock").clone()
    }

    /// The latest sample of each source.
    pub fn latest(&self) -> Vec<Sample> {
        let all = self.samples.lock().expect("sampler lock");
        self.infos
            .iter()
            .filter_map(|info| all.iter().rev().find(|s| s.source == info.id).cloned())
            .collect()
    }

    /// Stops the thread after one final reading and returns every sample.
    pub fn stop(mut self) -> Vec<Sample> {
        self.finish();
        std::mem::take(&mut *self.samples.lock().expect("sampler lock"))
    }

    fn finish(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.finish();
    }
}
