mod base;
mod exclusive_pool;
pub(crate) mod handle;
mod memory_page;
mod persistent_pool;
mod sliced_pool;

pub(crate) use base::*;
pub(crate) use exclusive_pool::*;
pub(crate) use memory_page::*;
pub(crate) use persistent_pool::*;
pub(crate) use sliced_pool::*;

pub use handle::*;
