#![no_main]

#[path = "../../crates/diffusion/tests/integration/fuzz_checks.rs"]
#[allow(dead_code)] // each target uses one of the checks
mod fuzz_checks;

// The tokenizers library panics on some files it should refuse; SD Bench catches those panics
// (`models::tokenizer::guarded`, which also keeps libFuzzer's aborting hook from seeing them), so
// any panic that reaches the hook here is a crash.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_checks::tokenizer_files(data);
});
