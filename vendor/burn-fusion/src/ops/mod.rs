mod activation;
mod binary;
mod bool_tensor;
// (SD Bench)
mod codes;
#[cfg(feature = "distributed")]
mod distributed;
mod int_tensor;
mod module;
mod qtensor;
mod tensor;
mod transaction;
mod unary;

mod base;
pub use base::NoOp;
