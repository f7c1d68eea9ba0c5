mod base;
mod bool_cast;

pub use base::*;
pub use bool_cast::*;
