//! The CLIP byte-level BPE tokenizer, behaving like transformers' `CLIPTokenizer` as diffusers calls
//! it (`padding="max_length", max_length=77, truncation=True`): BOS/EOS, truncation and padding with
//! the pad token (EOS in SD1.5) around Hugging Face's `tokenizers` BPE, set up as transformers'
//! `CLIPTokenizerFast` is (NFC, whitespace collapsed, lower case, CLIP's pre-tokenizer regex,
//! byte-level, `</w>` word ends). SD repositories ship `vocab.json` and `merges.txt`, not a
//! `tokenizer.json`: the tokenizer is built from those.

use std::collections::HashMap;
use std::path::Path;

use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::replace::ReplacePattern;
use tokenizers::normalizers::{Lowercase, Replace, Sequence as Normalizers, NFC};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence as PreTokenizers;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior};

use crate::error::{DiffusionError, Result};
use crate::io::bounded_text::{read_bounded, MAX_CONFIG_BYTES, MAX_VOCABULARY_BYTES};

const BOS: &str = "<|startoftext|>";
const EOS: &str = "<|endoftext|>";

/// SD1.5's merges (openai/clip-vit-large-patch14), built in for synthetic models, which have no files.
const BUILTIN_MERGES: &str = include_str!("../../assets/clip-merges.txt");

pub struct Tokenizer {
    vocab: HashMap<String, u32>,
    bpe: tokenizers::Tokenizer,
    bos: u32,
    eos: u32,
    pad: u32,
    max_length: usize,
}

impl Tokenizer {
    /// Reads `vocab.json`, `merges.txt` and, when present, the special tokens and
    /// `model_max_length` from `special_tokens_map.json` / `tokenizer_config.json`.
    pub fn from_folder(folder: &Path) -> Result<Self> {
        let bad = |problem: String| DiffusionError::Tokenizer {
            path: folder.to_path_buf(),
            problem,
        };
        let vocab_path = folder.join("vocab.json");
        let merges_path = folder.join("merges.txt");
        let vocab_text = read_bounded(&vocab_path, MAX_VOCABULARY_BYTES)?;
        let vocab: HashMap<String, u32> = serde_json::from_str(&vocab_text)
            .map_err(|e| bad(format!("vocab.json is not a JSON map of token to id: {e}")))?;
        let merges_text = read_bounded(&merges_path, MAX_VOCABULARY_BYTES)?;
        let merges = parse_merges(&merges_text).map_err(bad)?;

        let mut special = SpecialTokens::default();
        for file in ["tokenizer_config.json", "special_tokens_map.json"] {
            let path = folder.join(file);
            if path.is_file() {
                let text = read_bounded(&path, MAX_CONFIG_BYTES)?;
                let json: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| DiffusionError::config(&path, e.to_string()))?;
                special.update(&json);
            }
        }
        Self::build(vocab, merges, special).map_err(bad)
    }

    /// SD1.5's tokenizer from the built-in merges list; the vocabulary follows from it exactly as
    /// CLIP builds it (bytes, bytes with `</w>`, one token per merge, then BOS and EOS).
    pub fn builtin_sd15() -> Self {
        let merges = parse_merges(BUILTIN_MERGES).expect("built-in merges parse");
        // CLIP lists the byte symbols printable bytes first, then the rest (as bytes_to_unicode
        // builds them), not in byte order.
        let map = bytes_to_unicode();
        let mut order: Vec<usize> = (0..256).filter(|&b| map[b] as u32 == b as u32).collect();
        order.extend((0..256).filter(|&b| map[b] as u32 != b as u32));
        let byte_chars: Vec<char> = order.iter().map(|&b| map[b]).collect();
        let mut tokens: Vec<String> = byte_chars.iter().map(|c| c.to_string()).collect();
        tokens.extend(byte_chars.iter().map(|c| format!("{c}</w>")));
        tokens.extend(merges.iter().map(|(a, b)| format!("{a}{b}")));
        tokens.push(BOS.into());
        tokens.push(EOS.into());
        let vocab = tokens
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, i as u32))
            .collect();
        Self::build(vocab, merges, SpecialTokens::default())
            .expect("built-in tokenizer is complete")
    }

    fn build(
        vocab: HashMap<String, u32>,
        merges: Vec<(String, String)>,
        special: SpecialTokens,
    ) -> std::result::Result<Self, String> {
        let id = |token: &str, role: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| format!("the {role} token `{token}` is not in vocab.json"))
        };
        let bos = id(&special.bos, "BOS")?;
        let eos = id(&special.eos, "EOS")?;
        let pad = id(&special.pad, "pad")?;
        let mut model = BPE::builder()
            .vocab_and_merges(
                vocab
                    .iter()
                    .map(|(t, &id)| (t.clone(), id))
                    .collect::<tokenizers::models::bpe::Vocab>(),
                merges,
            )
            .end_of_word_suffix("</w>".into());
        if vocab.contains_key(&special.unk) {
            model = model.unk_token(special.unk.clone());
        }
        let model = model
            .build()
            .map_err(|e| format!("the merges do not fit the vocabulary: {e}"))?;
        let mut bpe = tokenizers::Tokenizer::new(model);
        let fixed = |e: tokenizers::Error| format!("CLIP's tokenizer setup: {e}");
        bpe.with_normalizer(Some(Normalizers::new(vec![
            NFC.into(),
            Replace::new(ReplacePattern::Regex(r"\s+".into()), " ")
                .map_err(fixed)?
                .into(),
            Lowercase.into(),
        ])));
        bpe.with_pre_tokenizer(Some(PreTokenizers::new(vec![
            Split::new(
                SplitPattern::Regex(
                    r"'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+".into(),
                ),
                SplitDelimiterBehavior::Removed,
                true,
            )
            .map_err(fixed)?
            .into(),
            ByteLevel::new(false, false, false).into(),
        ])));
        // Written in a prompt, the special tokens are themselves (as CLIP's pattern matches them).
        bpe.add_special_tokens(&[
            AddedToken::from(special.bos.clone(), true),
            AddedToken::from(special.eos.clone(), true),
        ]);
        Ok(Tokenizer {
            vocab,
            bpe,
            bos,
            eos,
            pad,
            max_length: special.max_length,
        })
    }

    pub fn max_length(&self) -> usize {
        self.max_length
    }

    pub fn eos(&self) -> u32 {
        self.eos
    }

    /// The same tokenizer padding with "!" (SD2.x's, and SDXL's second tokenizer).
    pub fn padding_with_exclamation(mut self) -> Self {
        if let Some(&id) = self.vocab.get("!") {
            self.pad = id;
        }
        self
    }

    /// Where the end-of-text token of an `encode` row is (the pooled output is read there).
    pub fn eos_position(&self, ids: &[u32]) -> usize {
        ids.iter()
            .position(|&id| id == self.eos)
            .unwrap_or(ids.len().saturating_sub(1))
    }

    /// Token ids of `text` without BOS/EOS.
    pub fn encode_raw(&self, text: &str) -> Result<Vec<u32>> {
        let cannot =
            |e: String| DiffusionError::Request(format!("the prompt cannot be tokenized: {e}"));
        let encoding = guarded(|| self.bpe.encode(text, false))
            .map_err(cannot)?
            .map_err(|e| cannot(e.to_string()))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// `[BOS] ids [EOS]`, however long (what transformers' tokenizer gives without truncation).
    pub fn encode_unpadded(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = vec![self.bos];
        ids.extend(self.encode_raw(text)?);
        ids.push(self.eos);
        Ok(ids)
    }

    /// `[BOS] ids[..max-2] [EOS] [pad]...`, exactly `max_length` ids.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = Vec::with_capacity(self.max_length);
        ids.push(self.bos);
        let raw = self.encode_raw(text)?;
        ids.extend(raw.into_iter().take(self.max_length.saturating_sub(2)));
        ids.push(self.eos);
        ids.resize(self.max_length, self.pad);
        Ok(ids)
    }
}

struct SpecialTokens {
    bos: String,
    eos: String,
    pad: String,
    unk: String,
    max_length: usize,
}

impl Default for SpecialTokens {
    fn default() -> Self {
        SpecialTokens {
            bos: BOS.into(),
            eos: EOS.into(),
            pad: EOS.into(),
            unk: EOS.into(),
            max_length: 77,
        }
    }
}

impl SpecialTokens {
    /// Reads `bos_token`, `eos_token`, `pad_token`, `unk_token` (a string or `{"content": ...}`) and
    /// `model_max_length` where present.
    fn update(&mut self, json: &serde_json::Value) {
        let token = |key: &str| {
            let v = json.get(key)?;
            v.as_str()
                .or_else(|| v.get("content").and_then(|c| c.as_str()))
                .map(str::to_string)
        };
        if let Some(t) = token("bos_token") {
            self.bos = t;
        }
        if let Some(t) = token("eos_token") {
            self.eos = t;
        }
        if let Some(t) = token("pad_token") {
            self.pad = t;
        }
        if let Some(t) = token("unk_token") {
            self.unk = t;
        }
        // Some configs hold a huge sentinel (1e30) here; CLIP's text encoder takes 77.
        if let Some(n) = json.get("model_max_length").and_then(|v| v.as_u64()) {
            if (2..=4096).contains(&n) {
                self.max_length = n as usize;
            }
        }
    }
}

fn parse_merges(text: &str) -> std::result::Result<Vec<(String, String)>, String> {
    let mut merges = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("#version") || line.trim().is_empty() {
            continue;
        }
        let mut parts = line.split(' ');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), None) if !a.is_empty() && !b.is_empty() => {
                merges.push((a.to_string(), b.to_string()))
            }
            _ => {
                return Err(format!(
                    "merges.txt line {} is not two symbols: {line:?}",
                    n + 1
                ))
            }
        }
    }
    Ok(merges)
}

/// GPT-2's reversible byte-to-character map: printable bytes map to themselves, the rest to 256+n.
fn bytes_to_unicode() -> [char; 256] {
    let mut printable: Vec<u32> = (b'!' as u32..=b'~' as u32).collect();
    printable.extend(0xA1..=0xAC);
    printable.extend(0xAE..=0xFF);
    let mut map = ['\0'; 256];
    let mut extra = 0;
    for b in 0..256u32 {
        map[b as usize] = if printable.contains(&b) {
            char::from_u32(b).unwrap()
        } else {
            extra += 1;
            char::from_u32(255 + extra).unwrap()
        };
    }
    map
}

thread_local! {
    /// Whether this thread is inside `guarded`.
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A tokenizers-library `tokenizer.json` is a few MB (Qwen's 11, T5's 2.4); a larger one is not
/// read (files come from strangers).
const MAX_TOKENIZER_JSON_BYTES: u64 = 64 << 20;

/// Reads `folder/tokenizer.json` (one tokenizers-library file: Qwen's, T5's), bounded in size,
/// its JSON syntax checked before the library parses it. Errors name the folder and what to do.
pub(crate) fn read_tokenizer_json(folder: &Path) -> Result<tokenizers::Tokenizer> {
    let problem = |problem: String| DiffusionError::Tokenizer {
        path: folder.to_path_buf(),
        problem,
    };
    let file = folder.join("tokenizer.json");
    let size = std::fs::metadata(&file)
        .ok()
        .filter(|m| m.is_file())
        .ok_or_else(|| {
            problem(format!(
                "has no tokenizer.json ({} is missing): download the model again",
                file.display()
            ))
        })?
        .len();
    if size > MAX_TOKENIZER_JSON_BYTES {
        return Err(problem(format!(
            "has a tokenizer.json of {size} bytes, more than any tokenizer's ({MAX_TOKENIZER_JSON_BYTES})"
        )));
    }
    let text = read_bounded(&file, MAX_TOKENIZER_JSON_BYTES)?;
    // Its syntax first: the tokenizers library panics on some syntax errors.
    serde_json::from_str::<serde::de::IgnoredAny>(&text)
        .map_err(|e| problem(format!("tokenizer.json is not JSON: {e}")))?;
    let cannot = |e: String| problem(format!("tokenizer.json cannot be read: {e}"));
    guarded(|| text.parse::<tokenizers::Tokenizer>())
        .map_err(cannot)?
        .map_err(|e| cannot(e.to_string()))
}

/// Calls into the tokenizers library, which panics on some files it should refuse (a syntax error
/// inside a `tokenizer.json`'s decoder, found by fuzzing; upstream pull requests 2152, 2154 and
/// 2156 fix others): such a panic becomes an error naming it instead of ending the run. The
/// panic hook in place (the default prints the message) is wrapped once so that it stays silent
/// for these caught panics, and only for them.
pub(crate) fn guarded<T>(call: impl FnOnce() -> T) -> std::result::Result<T, String> {
    static QUIET_HOOK: std::sync::Once = std::sync::Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    GUARDED.with(|g| g.set(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call));
    GUARDED.with(|g| g.set(false));
    result.map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("the tokenizers library failed on it ({message})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_map_is_a_bijection_onto_printable_chars() {
        let map = bytes_to_unicode();
        let mut seen: Vec<char> = map.to_vec();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 256);
        assert_eq!(map[b'a' as usize], 'a');
        assert_eq!(map[b' ' as usize], 'Ġ');
    }

    #[test]
    fn builtin_vocabulary_has_clip_size_and_ids() {
        let t = Tokenizer::builtin_sd15();
        assert_eq!(t.vocab.len(), 49408);
        assert_eq!((t.bos, t.eos, t.pad), (49406, 49407, 49407));
        assert_eq!(
            &t.encode("a photograph").unwrap()[..4],
            &[49406, 320, 8853, 49407]
        );
    }

    #[test]
    fn bad_merges_line_is_reported() {
        assert!(parse_merges("#version: 0.2\na b c\n")
            .unwrap_err()
            .contains("line 2"));
    }
}
