mod server;

pub(crate) mod command;
pub(crate) mod context;
pub(crate) mod fence;
pub(crate) mod io;
pub(crate) mod storage;
pub(crate) mod stream;

pub use server::*;
pub use storage::*;

pub(crate) const MB: usize = 1024 * 1024;
