mod base;
mod tune;

pub use base::*;
pub use tune::*;
