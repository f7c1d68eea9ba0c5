/// Module with convolution operations.
pub mod conv;

/// Module with linear operations.
pub mod linear;

/// Module with attention operations.
pub mod attention;

/// Module with CTC loss operations.
pub mod ctc;

/// Module with unfold operations.
pub mod unfold;

/// Module with pooling operations.
pub mod pool;

/// Module for grid_sample operations
pub mod grid_sample;

/// (SD Bench) Group normalisation composed from tensor ops.
pub mod group_norm;

/// (SD Bench) Matrices kept in a model file's codes, dequantized.
pub mod codes;

mod base;

pub use base::*;
