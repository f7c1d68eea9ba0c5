mod profiling;
pub use profiling::*;

mod server;

pub use server::*;
