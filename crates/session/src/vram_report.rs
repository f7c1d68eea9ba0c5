//! The backend allocator's memory after each phase of a generation (`--vram-report`): after the
//! model loads, after text encoding, after every denoising step and after decoding. Each figure is
//! read after a device sync (the generation syncs after every step), so it is what the device
//! holds at that point: `in_use` is live tensors, `reserved` what the allocator's pools hold from
//! the device, which only grows within a run and so bounds each phase's peak from above.

use serde::{Deserialize, Serialize};

use sdbench_diffusion::device::AllocatorMemory;
use sdbench_diffusion::Progress;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct VramReport {
    /// Which generation was measured.
    pub generation: String,
    pub phases: Vec<VramPhase>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct VramPhase {
    /// `load`, `text_encode`, `step` or `decode`.
    pub phase: String,
    /// The step's number (from 1), for `step`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    pub in_use_bytes: u64,
    pub reserved_bytes: u64,
}

impl VramPhase {
    pub fn of(phase: &str, step: Option<usize>, memory: AllocatorMemory) -> Self {
        VramPhase {
            phase: phase.into(),
            step,
            in_use_bytes: memory.in_use,
            reserved_bytes: memory.reserved,
        }
    }

    /// "load", "text encode", "step 3", "decode".
    pub fn name(&self) -> String {
        match self.step {
            Some(step) => format!("step {step}"),
            None => self.phase.replace('_', " "),
        }
    }
}

/// Collects phases from a memory query (the device's allocator; a plain function in tests).
pub struct VramRecorder<Q: FnMut() -> Option<AllocatorMemory>> {
    query: Q,
    phases: Vec<VramPhase>,
}

impl<Q: FnMut() -> Option<AllocatorMemory>> VramRecorder<Q> {
    /// None when the backend has no device allocator (the CPU).
    pub fn new(mut query: Q) -> Option<Self> {
        query()?;
        Some(VramRecorder {
            query,
            phases: Vec::new(),
        })
    }

    /// As `new`, going on from phases recorded earlier.
    pub fn resume(query: Q, phases: Vec<VramPhase>) -> Option<Self> {
        let mut recorder = Self::new(query)?;
        recorder.phases = phases;
        Some(recorder)
    }

    pub fn record(&mut self, phase: &str, step: Option<usize>) {
        if let Some(memory) = (self.query)() {
            self.phases.push(VramPhase::of(phase, step, memory));
        }
    }

    /// Records the phase a generation's progress event ends.
    pub fn observe(&mut self, event: &Progress) {
        match event {
            Progress::TextEncoded { .. } => self.record("text_encode", None),
            Progress::Step { index, .. } => self.record("step", Some(*index)),
            Progress::Decoded { .. } => self.record("decode", None),
        }
    }

    /// The phases recorded so far.
    pub fn phases(&self) -> &[VramPhase] {
        &self.phases
    }

    pub fn finish(self, generation: &str) -> VramReport {
        VramReport {
            generation: generation.into(),
            phases: self.phases,
        }
    }
}

impl VramReport {
    /// The largest reservation and the largest live memory of any phase.
    pub fn peaks(&self) -> (u64, u64) {
        self.phases.iter().fold((0, 0), |(use_, res), p| {
            (use_.max(p.in_use_bytes), res.max(p.reserved_bytes))
        })
    }

    /// A table for a terminal: one row a phase, in MiB.
    pub fn table(&self) -> String {
        let mib = |bytes: u64| bytes as f64 / (1u64 << 20) as f64;
        let mut out = format!(
            "VRAM after each phase ({}; backend allocator)\n{:<12} {:>12} {:>14}\n",
            self.generation, "phase", "in use MiB", "reserved MiB"
        );
        for p in &self.phases {
            let name = p.name();
            out += &format!(
                "{name:<12} {:>12.1} {:>14.1}\n",
                mib(p.in_use_bytes),
                mib(p.reserved_bytes)
            );
        }
        let (in_use, reserved) = self.peaks();
        out += &format!(
            "{:<12} {:>12.1} {:>14.1}\n",
            "peak",
            mib(in_use),
            mib(reserved)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_each_phase_of_a_generation() {
        let mut held = 100u64;
        let mut recorder = VramRecorder::new(|| {
            held += 10;
            Some(AllocatorMemory {
                in_use: held,
                reserved: held * 2,
            })
        })
        .unwrap();
        recorder.record("load", None);
        recorder.observe(&Progress::TextEncoded { seconds: 0.1 });
        for index in 1..=2 {
            recorder.observe(&Progress::Step {
                index,
                total: 2,
                seconds: Some(0.5),
            });
        }
        recorder.observe(&Progress::Decoded { seconds: 0.2 });
        let report = recorder.finish("test");
        let names: Vec<_> = report
            .phases
            .iter()
            .map(|p| (p.phase.as_str(), p.step))
            .collect();
        assert_eq!(
            names,
            [
                ("load", None),
                ("text_encode", None),
                ("step", Some(1)),
                ("step", Some(2)),
                ("decode", None)
            ]
        );
        assert_eq!(report.peaks(), (160, 320));
        let table = report.table();
        assert!(
            table.contains("step 2") && table.contains("text encode"),
            "{table}"
        );
    }

    #[test]
    fn no_allocator_no_report() {
        assert!(VramRecorder::new(|| None).is_none());
    }
}
