//! While a command runs the engine: says on stderr when GPU kernels are being compiled (every few
//! seconds) and once when the kernel cache cannot be written.

use std::time::Duration;

use sdbench_bench::kernels::{CompileWatch, KernelNews};

pub fn start() -> CompileWatch {
    CompileWatch::start(Duration::from_secs(5), |news| match news {
        KernelNews::CacheWarning(_) => eprintln!("warning: {}", news.describe()),
        KernelNews::Compiling { .. } => eprintln!("{}", news.describe()),
    })
}
