//! transformers' `T5TokenizerFast` through the tokenizers library (`tokenizer.json`: SentencePiece
//! Unigram with Metaspace), as the pipelines call it: truncated to the sequence length with `</s>`
//! at the end, padded with `<pad>` to that length.

use std::path::Path;

use crate::error::{DiffusionError, Result};
use crate::models::tokenizer::{guarded, read_tokenizer_json};

pub struct T5Prompt {
    tokenizer: tokenizers::Tokenizer,
    eos_id: u32,
    pad_id: u32,
    folder: std::path::PathBuf,
}

/// A prompt as T5 reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct T5Tokens {
    /// `length` ids: the prompt's, `</s>`, then `<pad>`.
    pub ids: Vec<u32>,
    /// The prompt's own tokens before truncation (`</s>` not counted).
    pub untruncated: usize,
}

impl T5Prompt {
    /// Reads `tokenizer.json` from a model's T5 tokenizer folder (`tokenizer_3/`).
    pub fn load(folder: &Path) -> Result<Self> {
        let problem = |problem: String| DiffusionError::Tokenizer {
            path: folder.to_path_buf(),
            problem,
        };
        let tokenizer = read_tokenizer_json(folder)?;
        let id = |token: &str| {
            tokenizer
                .token_to_id(token)
                .ok_or_else(|| problem(format!("has no id for T5's {token} token")))
        };
        Ok(T5Prompt {
            eos_id: id("</s>")?,
            pad_id: id("<pad>")?,
            tokenizer,
            folder: folder.to_path_buf(),
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.tokenizer.get_vocab_size(true)
    }

    /// `prompt` as `length` ids (`length` >= 1): its tokens cut to `length - 1`, `</s>`, padding.
    pub fn encode(&self, prompt: &str, length: usize) -> Result<T5Tokens> {
        let cannot = |e: String| DiffusionError::Tokenizer {
            path: self.folder.clone(),
            problem: format!("cannot tokenize the prompt: {e}"),
        };
        if length == 0 {
            return Err(cannot("a sequence length of 0".into()));
        }
        let encoding = guarded(|| self.tokenizer.encode(prompt, false))
            .map_err(cannot)?
            .map_err(|e| cannot(e.to_string()))?;
        let mut ids = encoding.get_ids().to_vec();
        let untruncated = ids.len();
        ids.truncate(length - 1);
        ids.push(self.eos_id);
        ids.resize(length, self.pad_id);
        Ok(T5Tokens { ids, untruncated })
    }
}
