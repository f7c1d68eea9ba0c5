//! A single generation, as `sdbench generate` and the app's Create screen make one: the request
//! checked before anything is loaded, the model loaded on the device and memory profile chosen
//! for it (and kept for the next request while it serves), the images generated and checked,
//! written as PNGs with their parameters inside, and recorded in the history. The front ends keep
//! only their arguments, their progress display and their windows.

mod error;
mod generator;
mod output;
mod request;

pub use error::{GenerateError, Result};
pub use generator::{Context, Generator, ModelSetup, Outcome};
pub use output::Destination;
pub use request::{GenerationRequest, InitPicture, Picture, DEFAULT_SIDE, DEFAULT_STRENGTH};

#[cfg(test)]
mod tests;
