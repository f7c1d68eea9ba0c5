//! `--threads`: the CPU backend's worker threads, for the commands that run the engine.

#[derive(clap::Args, Debug, Clone, Copy)]
pub struct ThreadsArg {
    /// Worker threads of the CPU backend (default: one per physical core). GPU backends ignore it;
    /// CPU results record it, and runs compare only at the same count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
}

impl ThreadsArg {
    /// Fixes the count for this process; call before the device is selected.
    pub fn apply(self) -> anyhow::Result<()> {
        sdbench_diffusion::device::set_cpu_threads(self.threads.map(usize::from))?;
        Ok(())
    }
}
