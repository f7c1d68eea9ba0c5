//! Which instruction set the CPU kernels dispatch to here. scripts/simd-levels runs the kernel and
//! parity tests under QEMU with other CPUs' CPUID and names the set each must present
//! (`SDBENCH_EXPECT_SIMD`: `avx512`, `avx2` or `baseline`); this test fails when the binary saw
//! something else, so a run that claims AVX2 really took the AVX2 paths.

#[test]
fn cpu_instruction_set_is_the_one_asked_for() {
    #[cfg(target_arch = "x86_64")]
    {
        let seen = if is_x86_feature_detected!("avx512f") {
            "avx512"
        } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            "avx2"
        } else if is_x86_feature_detected!("sse4.1") {
            "sse4"
        } else {
            "baseline"
        };
        eprintln!("CPU kernels dispatch for: {seen}");
        if let Ok(expected) = std::env::var("SDBENCH_EXPECT_SIMD") {
            assert_eq!(
                seen, expected,
                "the tests ran on another instruction set than asked"
            );
        }
    }
}
