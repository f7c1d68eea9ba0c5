mod policy;
mod queue;

pub use policy::FlushingPolicy;
pub use queue::{Fence, PendingDropQueue};
