//! Files in and out, below the networks: safetensors and GGUF weights (named, converted, kept in
//! their codes), NumPy arrays, PNG and JPEG pictures. Layers are built from them by
//! `nn::loader`; each family converts its own files' names.

pub mod bfl_names;
pub mod bounded_text;
pub mod component_file;
pub mod file_weights;
pub mod ggml_blocks;
pub mod gguf;
pub mod image;
pub mod kept_weights;
pub mod npy;
pub mod resample;
pub mod safetensors;
pub mod sharded;
pub mod synthetic_weights;
pub mod tensor_file;
pub mod weights;
