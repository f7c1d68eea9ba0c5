//! A device allocation that fails is an error from the next sync, and the device keeps working.
//! cubecl unwrapped the failure on its device thread, which only logged the panic: the tensor's
//! memory was never bound and reads returned memory nothing had written (vendor/cubecl-wgpu's
//! README). Forced here by a tensor beyond the device's largest buffer (128 MiB on lavapipe).

use burn::tensor::{DType, Tensor};
use sdbench_diffusion::pipeline::B;

use crate::common;

#[test]
fn a_failed_device_allocation_is_an_error_and_the_device_recovers() {
    let Some(device) = common::vulkan_device() else {
        return;
    };
    let largest = device
        .max_buffer_bytes()
        .expect("a wgpu device reports its largest buffer");
    let elements = (largest / 4 + 1024) as usize;
    let too_big = Tensor::<B, 1>::ones([elements], (&device.device, DType::F32));
    let _unwritten = (too_big * 2.0).sum();
    let error = device
        .sync()
        .expect_err("an allocation beyond the largest buffer succeeded")
        .to_string();
    let bytes = elements * 4;
    assert!(
        error.contains(&format!("can't allocate buffer of size: {bytes}")),
        "the sync's error should be the failed allocation of {bytes} bytes: {error}"
    );

    // The error was reported once, and the device computes again.
    let values: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let small = Tensor::<B, 1>::from_floats(values.as_slice(), &device.device);
    let sum = small.sum().into_data().to_vec::<f32>().unwrap()[0];
    device
        .sync()
        .expect("the device recovers after a failed allocation");
    assert_eq!(sum, 499_500.0);
}

/// `sdbench timing --ops` on a layer the device cannot hold says so, as a generation does, and
/// is an out-of-memory error (not the allocator's raw message).
#[test]
fn an_op_timing_case_beyond_the_largest_buffer_is_explained() {
    use sdbench_diffusion::op_timing::{time_case, OpCase};
    use sdbench_diffusion::{DiffusionError, Precision};
    let Some(device) = common::vulkan_device() else {
        return;
    };
    let largest = device
        .max_buffer_bytes()
        .expect("a wgpu device reports its largest buffer");
    // An f32 weight one column over the largest buffer.
    let inputs = 1024;
    let outputs = (largest / 4 / inputs as u64 + 1) as usize;
    let case = OpCase::Linear {
        rows: 8,
        inputs,
        outputs,
    };
    let error = time_case(&device, Precision::F32, case, None, 1)
        .expect_err("a layer beyond the largest buffer was timed");
    assert!(
        matches!(error, DiffusionError::OutOfMemory { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("the device cannot hold"),
        "{error}"
    );
}
