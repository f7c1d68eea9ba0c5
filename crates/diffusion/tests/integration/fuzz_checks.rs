//! What each fuzzed parser must do with any bytes: answer with a value or an error (never a panic,
//! an overflow or an allocation its input does not justify), and keep what it accepts inside the
//! input. One function per parser, returning whether the input was accepted. The mutation fuzzers
//! in this test binary (`parsers_fuzz`) call them, and so do the coverage-guided targets under
//! `fuzz/` (cargo-fuzz), which include this file, so both check the same things.

use std::io::Cursor;
use std::path::Path;

use serde_json::{Map, Value};

use sdbench_diffusion::families::flux2::transformer::Flux2TransformerConfig;
use sdbench_diffusion::families::sd::checkpoint::{diffusers_name, Component, Kind, Layout};
use sdbench_diffusion::families::sd::unet::config::UNetConfig;
use sdbench_diffusion::families::zimage::transformer::ZImageTransformerConfig;
use sdbench_diffusion::io::{gguf, image, npy, safetensors};
use sdbench_diffusion::models::config::{parse_json, ClipConfig, VaeConfig};
use sdbench_diffusion::models::qwen3::prompt::QwenPrompt;
use sdbench_diffusion::models::qwen3::Qwen3Config;
use sdbench_diffusion::models::tokenizer::Tokenizer;
use sdbench_diffusion::scheduler::flow_match::FlowMatchConfig;
use sdbench_diffusion::{scheduler, SchedulerKind};

/// A safetensors header; what it accepts lies inside the file.
pub fn safetensors_header(bytes: &[u8]) -> bool {
    let path = Path::new("fuzz.safetensors");
    match safetensors::read_header(&mut Cursor::new(bytes), bytes.len() as u64, path) {
        Ok((start, tensors)) => {
            let data = bytes.len() as u64 - start;
            assert!(tensors.values().all(|t| {
                let range = t.data_range();
                range.start <= range.end && range.end <= data
            }));
            true
        }
        Err(_) => false,
    }
}

/// A GGUF file: its header, and the block decoders of every tensor it accepts (one value per
/// element, from bytes inside the file).
pub fn gguf_file(bytes: &[u8]) -> bool {
    let path = Path::new("fuzz.gguf");
    match gguf::read_header(&mut Cursor::new(bytes), bytes.len() as u64, path) {
        Ok((_, tensors)) => {
            for tensor in tensors.values() {
                let range = tensor.data_range();
                assert!(range.start <= range.end && range.end <= bytes.len() as u64);
                let stored = safetensors::Stored {
                    dtype: tensor.dtype,
                    bytes: bytes[range.start as usize..range.end as usize].to_vec(),
                };
                if !matches!(tensor.dtype, safetensors::StDtype::Other(_)) {
                    let count: usize = tensor.shape.iter().product();
                    assert_eq!(stored.to_f32().len(), count);
                }
            }
            true
        }
        Err(_) => false,
    }
}

/// `.npy` latents: one value per element of the shape.
pub fn npy_latents(bytes: &[u8]) -> bool {
    match npy::parse_f32(bytes, Path::new("fuzz.npy")) {
        Ok(array) => {
            assert_eq!(array.data.len(), array.shape.iter().product::<usize>());
            true
        }
        Err(_) => false,
    }
}

/// A PNG or JPEG picture: three bytes per pixel.
pub fn picture(bytes: &[u8]) -> bool {
    match image::decode_image(bytes) {
        Ok(p) => {
            assert_eq!(p.pixels.len(), p.width * p.height * 3);
            true
        }
        Err(_) => false,
    }
}

/// A JSON config read as every config the engine reads (text encoders, UNet, VAE, transformers,
/// schedulers), each checked as loading checks it; a scheduler config that passes also builds
/// its schedule for a few steps, as a generation would.
pub fn config_json(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let path = Path::new("config.json");
    // Whether the text parses as a `T` that `check` then accepts.
    fn read_as<T: serde::de::DeserializeOwned>(text: &str, check: impl FnOnce(T) -> bool) -> bool {
        parse_json::<T>(text, Path::new("config.json")).is_ok_and(check)
    }
    let scheduler = |map: Map<String, Value>| {
        let class = map.get("_class_name").and_then(Value::as_str);
        match class.map(|c| SchedulerKind::from_class_name(c, &map, path)) {
            Some(Ok(kind)) => scheduler::build::<burn::Dispatch>(kind, &map, 4, path).is_ok(),
            _ => false,
        }
    };
    // Every reading, not the first that accepts: each must answer.
    [
        read_as(text, |c: ClipConfig| c.validate(path).is_ok()),
        read_as(text, |c: VaeConfig| c.validate(path).is_ok()),
        read_as(text, |c: UNetConfig| c.plan(path).is_ok()),
        read_as(text, |c: Qwen3Config| c.validate(path).is_ok()),
        read_as(text, |c: Flux2TransformerConfig| c.validate(path).is_ok()),
        read_as(text, |c: ZImageTransformerConfig| c.validate(path).is_ok()),
        read_as(text, |c: FlowMatchConfig| c.validate(path).is_ok()),
        read_as(text, scheduler),
    ]
    .contains(&true)
}

/// Tensor names, one per line, converted as a single-file checkpoint's are for every component of
/// an SD1.x, SD2.x and SDXL layout.
pub fn checkpoint_names(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let layouts = [
        (Kind::Sd1, vec![2, 2, 2, 2], 12),
        (Kind::Sd2, vec![2, 2, 2, 2], 23),
        (Kind::Sdxl, vec![2, 2, 2], 12),
    ];
    let mut converted = 0;
    for line in text.lines() {
        for (kind, blocks, layers) in &layouts {
            let layout = Layout {
                unet_layers_per_block: blocks.clone(),
                vae_blocks: 4,
                kind: *kind,
                text_encoder_layers: *layers,
            };
            for component in [
                Component::TextEncoder,
                Component::TextEncoder2,
                Component::UNet,
                Component::Vae,
            ] {
                converted += diffusers_name(component, line, &layout).is_some() as usize;
            }
        }
    }
    converted > 0
}

/// A tokenizer folder's files, given as one input split at 0xFF bytes (which UTF-8 text never
/// holds): CLIP's `vocab.json`, `merges.txt` and `tokenizer_config.json`, and Qwen's
/// `tokenizer.json`. Each tokenizer that loads encodes a prompt.
pub fn tokenizer_files(bytes: &[u8]) -> bool {
    const FILES: [&str; 4] = [
        "vocab.json",
        "merges.txt",
        "tokenizer_config.json",
        "tokenizer.json",
    ];
    // One folder per process (and thread), rewritten for each input.
    let folder = std::env::temp_dir().join(format!(
        "sdbench-fuzz-tokenizer-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&folder).unwrap();
    let mut parts = bytes.split(|&b| b == 0xFF);
    for file in FILES {
        let path = folder.join(file);
        match parts.next() {
            Some(part) => std::fs::write(&path, part).unwrap(),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    tokenizer_folder(&folder)
}

/// What a pipeline does with a tokenizer folder: loads CLIP's and Qwen's tokenizers from it and
/// encodes a prompt with each that loads; whether either did.
pub fn tokenizer_folder(folder: &Path) -> bool {
    let prompt = "a photo of a cat, 東京 🚀 <|im_end|> </w> !!";
    let clip = Tokenizer::from_folder(folder).is_ok_and(|t| t.encode(prompt).is_ok());
    let qwen = QwenPrompt::load(folder).is_ok_and(|t| t.encode(prompt, 64).is_ok());
    clip || qwen
}
