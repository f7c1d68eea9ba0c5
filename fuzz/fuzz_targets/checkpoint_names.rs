#![no_main]

#[path = "../../crates/diffusion/tests/integration/fuzz_checks.rs"]
#[allow(dead_code)] // each target uses one of the checks
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_checks::checkpoint_names(data);
});
