mod base;
pub use base::*;

mod source;
pub use source::*;
