//! Files in and out: safetensors weights and the loader that puts them on a device, single-file
//! checkpoints' names, NumPy arrays, PNG and JPEG pictures.

pub mod checkpoint;
pub mod image;
pub mod npy;
pub mod resample;
pub mod safetensors;
pub mod sharded;
pub mod weights;
