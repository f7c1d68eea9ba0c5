//! A `T5EncoderModel` component folder's weights (one file or shards), read under the names the
//! encoder loads.

use std::path::{Path, PathBuf};

use super::{embedding_name, TIED_EMBEDDING};
use crate::error::Result;
use crate::io::sharded::{component_parameters, component_weights};
use crate::io::weights::{Precision, WeightSource};

/// The tensors a `T5EncoderModel` file holds that the encoder does not read: the tied copy of
/// the embeddings when `embedding` (`embedding_name`) is the shared one.
pub fn unread(embedding: &str) -> Vec<&'static str> {
    match embedding == TIED_EMBEDDING {
        true => Vec::new(),
        false => vec![TIED_EMBEDDING],
    }
}

/// The encoder's weights in `folder` (`model.safetensors`, its `.fp16` variant or shards), the
/// name its embeddings are stored under, and the files read.
pub fn folder_weights(
    folder: &Path,
    precision: Precision,
) -> Result<(Box<dyn WeightSource>, &'static str, Vec<PathBuf>)> {
    let stored = |name: &str| {
        component_parameters(folder, "model", precision, |n| n == name).is_ok_and(|count| count > 0)
    };
    let embedding = embedding_name(stored);
    let (weights, files) = component_weights(folder, "model", precision, &unread(embedding))?;
    Ok((weights, embedding, files))
}
