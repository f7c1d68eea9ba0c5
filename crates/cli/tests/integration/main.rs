//! The `sdbench` binary end to end, in one test binary (each test binary links the whole engine, so
//! one per crate keeps the test build short).

mod bench;
mod cli;
mod clip_score;
mod common;
mod kernel_cache;
mod reference;
mod sweep;
