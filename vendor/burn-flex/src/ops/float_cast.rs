//! (SD Bench) Casts between f32, f16 and bf16, each value converted directly and correctly rounded,
//! in chunks on the worker threads. Upstream's `float_cast` goes through an f64 copy of the tensor
//! on one thread, and `half`'s f64 -> bf16 (and, without F16C, f64 -> f16) conversion drops the
//! f64's low 32 mantissa bits before rounding: an f32 whose only bits past a tie are its lowest
//! three rounded to even instead of up (about one value in 10^4 for bf16, 46.62501 to 46.5).

use alloc::vec::Vec;

use burn_backend::DType;
use burn_std::{Bytes, bf16, f16};

use crate::{FlexTensor, Layout};

/// Values converted per task.
const CHUNK: usize = 1 << 16;

/// `tensor` (contiguous) in `target`, for the pairs among f32, f16 and bf16; `None` for others.
pub fn cast_between_floats(tensor: &FlexTensor, target: DType) -> Option<FlexTensor> {
    let bytes = match (tensor.dtype(), target) {
        (DType::F32, DType::F16) => convert(tensor.storage::<f32>(), f16::from_f32),
        (DType::F32, DType::BF16) => convert(tensor.storage::<f32>(), bf16::from_f32),
        (DType::F16, DType::F32) => convert(tensor.storage::<f16>(), f16::to_f32),
        (DType::BF16, DType::F32) => convert(tensor.storage::<bf16>(), bf16::to_f32),
        // Both are exact in f32, so one rounding.
        (DType::F16, DType::BF16) => {
            convert(tensor.storage::<f16>(), |v: f16| bf16::from_f32(v.to_f32()))
        }
        (DType::BF16, DType::F16) => convert(tensor.storage::<bf16>(), |v: bf16| {
            f16::from_f32(v.to_f32())
        }),
        _ => return None,
    };
    let shape = tensor.layout().shape().clone();
    Some(FlexTensor::new(bytes, Layout::contiguous(shape), target))
}

fn convert<S, T>(source: &[S], f: impl Fn(S) -> T + Sync) -> Bytes
where
    S: Copy + Sync,
    T: Copy + Default + Send + Sync + bytemuck::Pod,
{
    let mut out: Vec<T> = alloc::vec![T::default(); source.len()];
    let task = |(out, source): (&mut [T], &[S])| {
        for (o, &s) in out.iter_mut().zip(source) {
            *o = f(s);
        }
    };
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(CHUNK)
            .zip(source.par_chunks(CHUNK))
            .for_each(task);
    }
    #[cfg(not(feature = "rayon"))]
    out.chunks_mut(CHUNK)
        .zip(source.chunks(CHUNK))
        .for_each(task);
    Bytes::from_elems(out)
}
