//! The engine's integration tests, one module per concern, linked into one test binary: every test
//! binary links all of burn's backends, so one binary per crate keeps the test build short.

mod common;

mod allocation_failure;
mod bad_input;
mod checkpoint;
mod clip_score;
mod component_files;
mod cpu_attention;
mod cpu_cast;
mod cpu_conv;
mod cpu_copy;
mod cpu_group_norm;
mod cpu_instruction_set;
mod cpu_layer_norm;
mod cpu_silu;
mod flux1;
mod flux2;
mod flux2_reference;
mod fuzz_checks;
mod model_files_fuzz;
mod observer;
mod parity;
mod parsers_fuzz;
mod schedulers;
mod sd3;
mod sd3_files;
mod source_layout;
mod synthetic;
mod t5;
mod tokenizer;
mod weight_files;
mod weight_formats;
mod zimage;
