//! Unit tests of loader.rs: uploads in each precision, linears in parts.

use super::*;
use crate::io::safetensors::Stored;
use crate::io::synthetic_weights::SyntheticWeights;

/// bf16 file values reach a bf16 run bit for bit; f32 and f16 ones are rounded to bf16 once.
#[test]
fn values_are_uploaded_in_bf16_as_stored_or_rounded_once() {
    type B = crate::pipeline::B;
    let device = crate::device::cpu_device();
    let mut source = SyntheticWeights::new(1);
    let loader = Loader::<B>::new(&mut source, &device, Precision::Bf16);
    let wanted = [1.0f32, -3.140625, 1e30, 7.2e-3];
    let bits = |t: Tensor<B, 1>| -> Vec<u16> {
        assert_eq!(t.dtype(), DType::BF16);
        let values = t.into_data().to_vec::<half::bf16>().unwrap();
        values.iter().map(|v| v.to_bits()).collect()
    };
    let expected: Vec<u16> = wanted
        .iter()
        .map(|&v| half::bf16::from_f32(v).to_bits())
        .collect();
    let stored = |dtype: StDtype, bytes: Vec<u8>| Values::Stored(Stored { dtype, bytes });
    let as_bf16: Vec<u8> = expected.iter().flat_map(|b| b.to_le_bytes()).collect();
    let as_f32: Vec<u8> = wanted.iter().flat_map(|v| v.to_le_bytes()).collect();
    let upload = |values: Values| bits(loader.upload(values, [4], DType::BF16));
    assert_eq!(upload(stored(StDtype::BF16, as_bf16)), expected);
    assert_eq!(upload(stored(StDtype::F32, as_f32)), expected);
    assert_eq!(upload(Values::F32(wanted.to_vec())), expected);
    // From an f16 file, bf16 keeps what f16 held (1e30 is left out: f16 holds it as infinity).
    let halves = [1.0f32, -3.140625, 7.2e-3];
    let as_f16: Vec<u8> = halves
        .iter()
        .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
        .collect();
    let via_f16: Vec<u16> = halves
        .iter()
        .map(|&v| half::bf16::from_f32(half::f16::from_f32(v).to_f32()).to_bits())
        .collect();
    assert_eq!(
        bits(loader.upload(stored(StDtype::F16, as_f16), [3], DType::BF16)),
        via_f16
    );
}

#[test]
fn a_linear_in_parts_computes_the_whole_ones_outputs_in_the_parts_order() {
    type B = crate::pipeline::B;
    let device = crate::device::cpu_device();
    let (inputs, outputs) = (5, 7);
    let load = |int8: bool, parts: Option<&[Vec<usize>]>| {
        let mut source = SyntheticWeights::new(7);
        let mut loader = Loader::<B>::new(&mut source, &device, Precision::F32);
        loader.int8_weights = int8;
        match parts {
            None => vec![loader.linear("layer", inputs, outputs, true).unwrap()],
            Some(parts) => loader
                .linear_parts("layer", inputs, outputs, true, parts)
                .unwrap(),
        }
    };
    let x = Tensor::<B, 2>::from_data(
        TensorData::new(
            (0..2 * inputs).map(|v| v as f32 * 0.3 - 1.0).collect(),
            [2, inputs],
        ),
        &device,
    );
    let values = |t: Tensor<B, 2>| t.into_data().to_vec::<f32>().unwrap();
    let parts = [vec![6, 0, 3], vec![1, 2], vec![4, 5]];
    for int8 in [false, true] {
        let whole = values(load(int8, None)[0].forward(x.clone()));
        let split = load(int8, Some(&parts));
        for (layer, rows) in split.iter().zip(&parts) {
            let got = values(layer.forward(x.clone()));
            for sample in 0..2 {
                for (k, &row) in rows.iter().enumerate() {
                    let (a, b) = (got[sample * rows.len() + k], whole[sample * outputs + row]);
                    assert!(
                        (a - b).abs() <= 1e-6,
                        "int8 {int8}: output {row}: {a} vs {b}"
                    );
                }
            }
        }
    }
    // A row the layer does not have is an error, not a panic.
    let mut source = SyntheticWeights::new(7);
    let mut loader = Loader::<B>::new(&mut source, &device, Precision::F32);
    assert!(loader
        .linear_parts("layer", inputs, outputs, false, &[vec![outputs]])
        .is_err());
}

/// A source that only has `take`: the loader transposes its matrices itself.
struct TakeOnly(SyntheticWeights);

impl WeightSource for TakeOnly {
    fn take(&mut self, name: &str, shape: &[usize], init: Init) -> Result<Values> {
        self.0.take(name, shape, init)
    }
    fn finish(&mut self) -> Result<()> {
        self.0.finish()
    }
}

/// Synthetic linear weights made in the layer's [in, out] order are the layer that transposing
/// the stored [out, in] values makes: the same outputs to the bit, in each precision and in int8.
#[test]
fn a_linear_from_transposed_values_is_the_one_the_loader_transposes() {
    type B = crate::pipeline::B;
    let device = crate::device::cpu_device();
    let (inputs, outputs) = (67, 45);
    let x = Tensor::<B, 2>::from_data(
        TensorData::new(
            (0..3 * inputs).map(|v| (v as f32 * 0.37).sin()).collect(),
            [3, inputs],
        ),
        &device,
    );
    let bits = |source: &mut dyn WeightSource, precision: Precision, int8: bool| -> Vec<u32> {
        let mut loader = Loader::<B>::new(source, &device, precision);
        loader.int8_weights = int8;
        let layer = loader.linear("layer", inputs, outputs, true).unwrap();
        let y = layer.forward(x.clone().cast(precision.dtype()));
        let y = y.cast(DType::F32).into_data().to_vec::<f32>().unwrap();
        y.iter().map(|v| v.to_bits()).collect()
    };
    for (precision, int8) in [
        (Precision::F32, false),
        (Precision::F16, false),
        (Precision::Bf16, false),
        (Precision::F32, true),
    ] {
        let mut synthetic = SyntheticWeights::new(11);
        assert!(synthetic
            .take_transposed("layer.weight", outputs, inputs, Init::FanIn(inputs))
            .unwrap()
            .is_some());
        let direct = bits(&mut synthetic, precision, int8);
        let transposed_here = bits(&mut TakeOnly(SyntheticWeights::new(11)), precision, int8);
        assert_eq!(direct, transposed_here, "{precision:?}, int8 {int8}");
        // Another seed is another layer: the comparison can fail.
        let other = bits(&mut TakeOnly(SyntheticWeights::new(12)), precision, int8);
        assert_ne!(direct, other, "{precision:?}, int8 {int8}");
    }
}
