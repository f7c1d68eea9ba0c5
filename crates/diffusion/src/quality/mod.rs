//! How good the pictures are, measured by a model as the field measures it (the CLIP score).

pub mod clip_score;
