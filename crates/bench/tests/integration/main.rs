//! The benchmark crate's integration tests in one test binary (each test binary links the whole
//! engine, so one per crate keeps the test build short).

mod run_tiny;
mod schema;
mod submit;
