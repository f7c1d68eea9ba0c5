//! A prompt as Qwen3 reads it: rendered with Qwen3's chat template, tokenized by the model's own
//! `tokenizer.json` (Hugging Face's `tokenizers` crate), cut or padded to a fixed length on the
//! right, as transformers' `padding="max_length", truncation=True` does.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::Qwen3Config;
use crate::error::{DiffusionError, Result};
use crate::io::bounded_text::{read_bounded, MAX_CONFIG_BYTES};
use crate::models::tokenizer::{guarded, read_tokenizer_json};

/// The tokens of one prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptTokens {
    /// `length` ids: the prompt's tokens, then padding.
    pub ids: Vec<u32>,
    /// How many of `ids` are the prompt's (the rest are padding and masked).
    pub real: usize,
    /// How many tokens the templated prompt had before it was cut to `length`.
    pub untruncated: usize,
}

impl PromptTokens {
    pub fn truncated(&self) -> bool {
        self.untruncated > self.real
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TokenizerConfig {
    pad_token: Option<Value>,
    padding_side: Option<String>,
    chat_template: Option<Value>,
}

pub struct QwenPrompt {
    tokenizer: tokenizers::Tokenizer,
    pad_id: u32,
    folder: PathBuf,
}

/// Qwen3's chat template rendered for one user message with the generation prompt, the case the
/// image pipelines use: with `thinking` (`enable_thinking=True`, Z-Image) the assistant's turn is
/// left open; without it (FLUX.2 klein) an empty thinking block closes it.
pub fn chat_text(prompt: &str, thinking: bool) -> String {
    let open = format!("<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n");
    match thinking {
        true => open,
        false => open + "<think>\n\n</think>\n\n",
    }
}

impl QwenPrompt {
    /// Reads `tokenizer.json` and `tokenizer_config.json` from a model's `tokenizer/` folder.
    pub fn load(folder: &Path) -> Result<Self> {
        let problem = |problem: String| DiffusionError::Tokenizer {
            path: folder.to_path_buf(),
            problem,
        };
        let tokenizer = read_tokenizer_json(folder)?;
        let config_path = folder.join("tokenizer_config.json");
        let config: TokenizerConfig = if config_path.is_file() {
            crate::models::config::read_json(&config_path)?
        } else {
            TokenizerConfig::default()
        };
        if let Some(side) = config.padding_side.as_deref() {
            if side != "right" {
                return Err(DiffusionError::unsupported(
                    &config_path,
                    format!("tokenizer padding_side `{side}` (supported: right)"),
                ));
            }
        }
        let template = match config.chat_template {
            Some(Value::String(text)) => Some(text),
            _ => {
                let path = folder.join("chat_template.jinja");
                (path.is_file())
                    .then(|| read_bounded(&path, MAX_CONFIG_BYTES))
                    .transpose()?
            }
        };
        if let Some(template) = template {
            // The engine renders the template's one case itself (`chat_text`): refuse a template
            // that is not Qwen's ChatML rather than condition the model on the wrong text.
            if !template.contains("<|im_start|>") || !template.contains("enable_thinking") {
                return Err(problem(
                    "has a chat template that is not Qwen3's (ChatML with enable_thinking)".into(),
                ));
            }
        }
        let pad_token = match &config.pad_token {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Object(o)) => o
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or("<|endoftext|>")
                .to_string(),
            _ => "<|endoftext|>".to_string(),
        };
        let pad_id = tokenizer
            .token_to_id(&pad_token)
            .ok_or_else(|| problem(format!("has no id for its pad token {pad_token}")))?;
        Ok(QwenPrompt {
            tokenizer,
            pad_id,
            folder: folder.to_path_buf(),
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.tokenizer.get_vocab_size(true)
    }

    /// An error naming the text encoder's config (`config_path`) when the tokenizer has ids its
    /// embedding table does not.
    pub fn check_fits(&self, config: &Qwen3Config, config_path: &Path) -> Result<()> {
        if self.vocab_size() > config.vocab_size {
            return Err(DiffusionError::config(
                config_path,
                format!(
                    "the tokenizer has {} tokens but the text encoder's vocab_size is {}",
                    self.vocab_size(),
                    config.vocab_size
                ),
            ));
        }
        Ok(())
    }

    /// The chat-templated prompt (thinking off) as `length` ids.
    pub fn encode(&self, prompt: &str, length: usize) -> Result<PromptTokens> {
        self.encode_chat(prompt, length, false)
    }

    /// The prompt in Qwen3's chat template (`thinking`: `enable_thinking`) as `length` ids.
    pub fn encode_chat(&self, prompt: &str, length: usize, thinking: bool) -> Result<PromptTokens> {
        let cannot = |e: String| DiffusionError::Tokenizer {
            path: self.folder.clone(),
            problem: format!("cannot tokenize the prompt: {e}"),
        };
        let encoding = guarded(|| self.tokenizer.encode(chat_text(prompt, thinking), true))
            .map_err(cannot)?
            .map_err(|e| cannot(e.to_string()))?;
        let mut ids = encoding.get_ids().to_vec();
        let untruncated = ids.len();
        ids.truncate(length);
        let real = ids.len();
        ids.resize(length, self.pad_id);
        Ok(PromptTokens {
            ids,
            real,
            untruncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As transformers renders scripts/qwen3_chat_template.jinja (Qwen3's template) for one user
    /// message with `add_generation_prompt=True` and each `enable_thinking`.
    #[test]
    fn the_chat_text_is_the_templates_with_and_without_thinking() {
        assert_eq!(
            chat_text("a cat", true),
            "<|im_start|>user\na cat<|im_end|>\n<|im_start|>assistant\n"
        );
        assert_eq!(
            chat_text("a cat", false),
            "<|im_start|>user\na cat<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        );
    }
}
