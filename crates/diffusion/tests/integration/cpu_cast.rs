//! Casts on the CPU backend between f32, f16 and bf16 (a bf16 run casts activations around every
//! norm, and its weights from the file's dtype), against `half`'s direct f32 conversions, which
//! round to nearest, ties to even. vendor/burn-flex converts directly in chunks on the worker
//! threads; upstream went through f64, whose conversion to bf16 ignores the f64's low 32 mantissa
//! bits and so rounded an f32 just past a tie (only its last three bits set) down to even.

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use sdbench_diffusion::device::cpu_device;
use sdbench_diffusion::noise::NormalGenerator;
use sdbench_diffusion::pipeline::B;

/// The f32 values of `dtype` codes `bits` (f16 or bf16).
fn widened(bits: &[u16], dtype: DType) -> Vec<u32> {
    bits.iter()
        .map(|&b| match dtype {
            DType::F16 => half::f16::from_bits(b).to_f32().to_bits(),
            _ => half::bf16::from_bits(b).to_f32().to_bits(),
        })
        .collect()
}

/// f32 values whose rounding to 16 bits is hard: just past a tie by their lowest bit, exact ties,
/// just under a tie, at the edges of the ranges, and random ones over several 64K chunks.
fn hard_values() -> Vec<f32> {
    let mut x = vec![
        46.625_004,
        46.625,
        46.624_996,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::MIN_POSITIVE,
    ];
    x.extend([65504.0, 65520.0, 1e-8, 5.9e-8, f32::MAX, -f32::MAX, 1e-40]);
    for round_bit in [12u32, 15] {
        for exponent in [100u32, 127, 140] {
            for low in [0u32, 1, 3, 7] {
                for even in [0u32, 1] {
                    let bits =
                        (exponent << 23) | (even << (round_bit + 1)) | (1 << round_bit) | low;
                    x.push(f32::from_bits(bits));
                    x.push(-f32::from_bits(bits));
                }
            }
        }
    }
    x.extend(
        NormalGenerator::new(9)
            .normals(150_001)
            .into_iter()
            .map(|v| 300.0 * v),
    );
    x
}

#[test]
fn cpu_casts_round_to_nearest_even_from_every_bit() {
    let x = hard_values();
    let n = x.len();
    let device = cpu_device();
    let f32_tensor =
        Tensor::<B, 1>::from_data(TensorData::new(x.clone(), [n]), (&device, DType::F32));
    for dtype in [DType::BF16, DType::F16] {
        let narrow = f32_tensor.clone().cast(dtype);
        let data = narrow.clone().into_data();
        let bits: Vec<u16> = match dtype {
            DType::F16 => data
                .into_vec::<half::f16>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect(),
            _ => data
                .into_vec::<half::bf16>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect(),
        };
        let expected: Vec<u16> = x
            .iter()
            .map(|&v| match dtype {
                DType::F16 => half::f16::from_f32(v).to_bits(),
                _ => half::bf16::from_f32(v).to_bits(),
            })
            .collect();
        if let Some(i) = bits.iter().zip(&expected).position(|(g, e)| g != e) {
            panic!(
                "{dtype:?}: {:e} became {:#06x}, not {:#06x}",
                x[i], bits[i], expected[i]
            );
        }
        // Back to f32 exactly, and between the two 16-bit types through f32.
        let back: Vec<u32> = narrow
            .clone()
            .cast(DType::F32)
            .into_data()
            .into_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(back, widened(&bits, dtype), "{dtype:?} to f32");
        let other = if dtype == DType::F16 {
            DType::BF16
        } else {
            DType::F16
        };
        let crossed = narrow
            .cast(other)
            .cast(DType::F32)
            .into_data()
            .into_vec::<f32>()
            .unwrap();
        let direct: Vec<f32> = widened(&bits, dtype)
            .into_iter()
            .map(|b| {
                let v = f32::from_bits(b);
                match other {
                    DType::F16 => half::f16::from_f32(v).to_f32(),
                    _ => half::bf16::from_f32(v).to_f32(),
                }
            })
            .collect();
        assert_eq!(
            crossed.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            direct.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{dtype:?} to {other:?}"
        );
    }
    // The value upstream got wrong: just past the tie between 46.5 and 46.75 in bf16.
    let past_tie = Tensor::<B, 1>::from_data(
        TensorData::new(vec![46.625_004f32], [1]),
        (&device, DType::F32),
    );
    let got = past_tie
        .cast(DType::BF16)
        .into_data()
        .into_vec::<half::bf16>()
        .unwrap()[0];
    assert_eq!(got.to_f32(), 46.75);
}
