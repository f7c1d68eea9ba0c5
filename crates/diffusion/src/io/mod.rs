//! Files in and out: safetensors and GGUF weights and the loader that puts them on a device,
//! NumPy arrays, PNG and JPEG pictures. (Single-file checkpoints' names are Stable Diffusion's:
//! models/sd/checkpoint.rs.)

pub mod component_file;
pub mod file_weights;
pub mod ggml_blocks;
pub mod gguf;
pub mod image;
pub mod npy;
pub mod resample;
pub mod safetensors;
pub mod sharded;
pub mod synthetic_weights;
pub mod tensor_file;
pub mod three_parts;
pub mod weights;
