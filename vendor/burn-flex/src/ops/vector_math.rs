//! (SD Bench) Element-wise math that vectorises: an `exp` without a libm call, and `multiversion!`,
//! which compiles a loop for AVX-512 and AVX2+FMA as well and picks one at run time (release
//! builds target baseline x86-64; other targets run the portable code, NEON being baseline on
//! aarch64).

/// Defines `pub fn $name(args) -> ret` running `$portable` (an `#[inline(always)]` function) built
/// for the widest vector unit the CPU has.
macro_rules! multiversion {
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty => $portable:ident) => {
        $(#[$meta])*
        pub fn $name($($arg: $ty),*) -> $ret {
            #[cfg(all(target_arch = "x86_64", feature = "std"))]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512($($arg: $ty),*) -> $ret {
                    $portable($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($arg: $ty),*) -> $ret {
                    $portable($($arg),*)
                }
                if std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F.
                    return unsafe { avx512($($arg),*) };
                }
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU has AVX2 and FMA.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $portable($($arg),*)
        }
    };
}
pub(crate) use multiversion;

/// `e^x` for f32 without a libm call (so it vectorises): Cephes' expf, about 1 ulp on the range
/// where the result is a normal number; below it the result is e^-87.3 (~1.6e-38) rather than a
/// denormal or zero, which no softmax sum can tell apart. NaN stays NaN.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = core::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5 * 2^23 rounds to an integer in the float's low bits (the FPU's
    // round-to-nearest): no `round` call, which baseline x86-64 lacks as an instruction.
    const ROUNDER: f32 = 12_582_912.0;
    let x = if x < -87.336_54 { -87.336_54 } else { x };
    let x = if x > 88.376_26 { 88.376_26 } else { x };
    let t = x * LOG2E + ROUNDER;
    let n = t - ROUNDER;
    let n_bits = (t.to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 5.000_000_1e-1;
    let y = p * r * r + r + 1.0;
    y * f32::from_bits(((n_bits + 127) << 23) as u32)
}
