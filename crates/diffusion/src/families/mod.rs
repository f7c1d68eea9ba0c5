//! The model families, one folder each: a family's descriptor (its components, presets,
//! workloads and files), its pipeline and the networks only it runs. Families build on
//! `pipeline/` and the shared networks in `models/`, never on each other; the registry
//! (`engine/registry.rs`) lists them.

pub mod flux1;
pub mod flux2;
pub mod sd;
pub mod sd3;
pub mod zimage;
