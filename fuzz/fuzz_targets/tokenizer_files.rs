#![no_main]

#[path = "../../crates/diffusion/tests/integration/fuzz_checks.rs"]
#[allow(dead_code)] // each target uses one of the checks
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(
    init: {
        // The tokenizers library panics on some files it should refuse; SD Bench catches those
        // panics and refuses the file (`models::tokenizer::guarded`). libFuzzer's hook aborts on
        // any panic, caught or not: here it aborts on all but the library's own.
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.location().is_some_and(|l| l.file().contains("/tokenizers-")) {
                abort(info);
            }
        }));
    },
    |data: &[u8]| {
        fuzz_checks::tokenizer_files(data);
    }
);
