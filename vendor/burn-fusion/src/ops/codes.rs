//! (SD Bench) `ModuleOps::dequantize_codes` (declared in vendor/burn-backend) as one operation of
//! the fusion stream, run by the inner backend: without it the fused backends ran the op's
//! composed default, a dozen tensor ops per matrix, and never reached burn-cubecl's kernel. Like
//! burn-vision's ops it is a custom operation, which the stream runs as it is, never fused.

use crate::{
    Fusion, FusionBackend,
    stream::{OperationStreams, execution::Operation},
};
use burn_backend::{
    DType, Shape,
    ops::codes::CodeLayout,
    tensor::{FloatTensor, IntTensor},
};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn_std::FloatDType;
use std::marker::PhantomData;

/// The operation's name in the stream.
const NAME: &str = "sdbench_dequantize_codes";

#[derive(Debug)]
struct DequantizeCodes<B: FusionBackend> {
    desc: CustomOpIr,
    has_offsets: bool,
    layout: CodeLayout,
    dtype: FloatDType,
    _b: PhantomData<B>,
}

impl<B: FusionBackend> Operation<B::FusionRuntime> for DequantizeCodes<B> {
    fn execute(&self, handles: &mut HandleContainer<B::Handle>) {
        // Inputs in order: packed, scales, then offsets and the table where present.
        let inputs = &self.desc.inputs;
        let packed = handles.get_int_tensor::<B>(&inputs[0]);
        let scales = handles.get_float_tensor::<B>(&inputs[1]);
        let mut rest = inputs[2..].iter();
        let offsets = self.has_offsets.then(|| rest.next()).flatten();
        let offsets = offsets.map(|ir| handles.get_float_tensor::<B>(ir));
        let table = rest.next().map(|ir| handles.get_float_tensor::<B>(ir));
        let output = B::dequantize_codes(packed, scales, offsets, table, self.layout, self.dtype);
        handles.register_float_tensor::<B>(&self.desc.outputs[0].id, output);
    }
}

/// See [ModuleOps::dequantize_codes](burn_backend::ops::ModuleOps::dequantize_codes).
pub(crate) fn dequantize_codes<B: FusionBackend>(
    packed: IntTensor<Fusion<B>>,
    scales: FloatTensor<Fusion<B>>,
    offsets: Option<FloatTensor<Fusion<B>>>,
    table: Option<FloatTensor<Fusion<B>>>,
    layout: CodeLayout,
    dtype: FloatDType,
) -> FloatTensor<Fusion<B>> {
    let client = packed.client.clone();
    let mut streams = OperationStreams::with_inputs([&packed, &scales]);
    for tensor in offsets.iter().chain(table.iter()) {
        streams.tensor(tensor);
    }
    let has_offsets = offsets.is_some();
    let inputs: Vec<TensorIr> = [packed, scales]
        .into_iter()
        .chain(offsets)
        .chain(table)
        .map(|tensor| tensor.into_ir())
        .collect();
    let output = TensorIr::uninit(
        client.create_empty_handle(),
        Shape::from(vec![layout.rows, layout.cols]),
        DType::from(dtype),
    );
    let desc = CustomOpIr::new(NAME, &inputs, &[output]);
    client
        .register(
            streams,
            OperationIr::Custom(desc.clone()),
            DequantizeCodes::<B> {
                desc,
                has_offsets,
                layout,
                dtype,
                _b: PhantomData,
            },
        )
        .output()
}
