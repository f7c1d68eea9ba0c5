//! Model files and pictures come from strangers: every parser must answer any bytes with a value
//! or an error, never a panic, an overflow or an allocation its input's sizes do not justify.
//! Each parser here gets a seed corpus (valid files of its format, made in code below, so the
//! corpus is committed with the test) and mutations of it: bytes flipped, cut, repeated and
//! inserted, and integers (a header's length, a shape, an offset) set to the values that break
//! size arithmetic (0, 1, 2^31, 2^32, 2^63, 2^64 - 1). The run is bounded (`FUZZ_SECONDS` per
//! parser, default 3, and at most `FUZZ_INPUTS`, default 20,000) and deterministic for a seed
//! (`FUZZ_SEED`), so CI runs it in every test run; a longer run by hand:
//! `FUZZ_SECONDS=600 FUZZ_INPUTS=100000000 cargo test ... parsers_fuzz -- --nocapture`.

use std::io::Cursor;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::fuzz_checks;
use sdbench_diffusion::io::{gguf, npy, safetensors};

/// SplitMix64: a small deterministic generator for the mutations.
pub(crate) struct Mutator(pub(crate) u64);

impl Mutator {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One to four mutations of `input`.
    pub(crate) fn mutate(&mut self, input: &[u8]) -> Vec<u8> {
        const EDGES: [u64; 8] = [0, 1, 0x7fff_ffff, 1 << 31, 1 << 32, 1 << 63, u64::MAX, 100];
        let mut out = input.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(out.len() + 1);
            match self.below(7) {
                0 if !out.is_empty() => {
                    let i = at.min(out.len() - 1);
                    out[i] ^= 1 << self.below(8);
                }
                1 => out.truncate(at),
                2 => {
                    let len = self.below(16);
                    let end = (at + len).min(out.len());
                    let copy = out[at..end].to_vec();
                    out.splice(at..at, copy);
                }
                3 => {
                    let byte = self.next() as u8;
                    out.insert(at, byte);
                }
                4 if out.len() >= at + 8 => {
                    // A little-endian integer where a length or count may be.
                    let edge = EDGES[self.below(EDGES.len())];
                    out[at..at + 8].copy_from_slice(&edge.to_le_bytes());
                }
                5 => {
                    // A decimal number in a text header (a JSON shape or offset, a .npy shape).
                    let digits = out[at..].iter().take_while(|b| b.is_ascii_digit()).count();
                    let edge = EDGES[self.below(EDGES.len())].to_string();
                    out.splice(at..at + digits, edge.into_bytes());
                }
                _ => {
                    let other = self.below(out.len() + 1);
                    out.truncate(other.max(at));
                }
            }
        }
        out
    }
}

pub(crate) fn budget() -> (Duration, usize, u64) {
    let var = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    (
        Duration::from_secs(var("FUZZ_SECONDS", 3)),
        var("FUZZ_INPUTS", 20_000) as usize,
        var("FUZZ_SEED", 1),
    )
}

/// Feeds `parse` the seeds and mutations of them until the budget is spent; returns how many
/// inputs it tried and how many it accepted (a run that accepts none mutated nothing useful).
fn fuzz(what: &str, seeds: &[Vec<u8>], parse: impl Fn(&[u8]) -> bool) -> (usize, usize) {
    let (time, inputs, seed) = budget();
    let mut mutator = Mutator(seed);
    let started = Instant::now();
    let (mut tried, mut accepted) = (0, 0);
    for input in seeds {
        assert!(parse(input), "{what}: a seed is refused");
    }
    while tried < inputs && started.elapsed() < time {
        let base = &seeds[mutator.below(seeds.len())];
        let input = mutator.mutate(base);
        accepted += parse(&input) as usize;
        tried += 1;
    }
    eprintln!(
        "{what}: {tried} inputs in {:.1} s, {accepted} accepted, no panic",
        started.elapsed().as_secs_f64()
    );
    (tried, accepted)
}

fn safetensors_file(tensors: &[(&str, Vec<usize>)]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seed.safetensors");
    let data: Vec<Vec<f32>> = tensors
        .iter()
        .map(|(_, shape)| {
            (0..shape.iter().product::<usize>())
                .map(|i| i as f32)
                .collect()
        })
        .collect();
    let list: Vec<(&str, Vec<usize>, &[f32])> = tensors
        .iter()
        .zip(&data)
        .map(|((name, shape), d)| (*name, shape.clone(), d.as_slice()))
        .collect();
    safetensors::write_f32(&path, &list).unwrap();
    std::fs::read(path).unwrap()
}

#[test]
fn safetensors_headers_from_strangers() {
    let seeds = vec![
        safetensors_file(&[("w", vec![2, 3])]),
        safetensors_file(&[
            ("a.weight", vec![4]),
            ("b.bias", vec![1, 1, 2]),
            ("c", vec![]),
        ]),
    ];
    let (tried, accepted) = fuzz(
        "safetensors header",
        &seeds,
        fuzz_checks::safetensors_header,
    );
    assert!(tried > seeds.len() && accepted > 0 && accepted < tried);
}

fn npy_file(shape: &[usize]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seed.npy");
    let data: Vec<f32> = (0..shape.iter().product::<usize>())
        .map(|i| i as f32)
        .collect();
    npy::write_f32(&path, shape, &data).unwrap();
    std::fs::read(path).unwrap()
}

#[test]
fn npy_latents_from_strangers() {
    let seeds = vec![npy_file(&[1, 4, 2, 2]), npy_file(&[3]), npy_file(&[])];
    let (tried, accepted) = fuzz(".npy latents", &seeds, fuzz_checks::npy_latents);
    assert!(tried > seeds.len() && accepted > 0 && accepted < tried);
}

#[test]
fn pictures_from_strangers() {
    // The committed pictures the parity tests read: a PNG and a JPEG with EXIF orientation.
    let seeds: Vec<Vec<u8>> = ["tiny-sd.init.png", "oriented-6.jpg"]
        .iter()
        .map(|name| std::fs::read(crate::common::fixtures().join(name)).unwrap())
        .collect();
    let (tried, accepted) = fuzz("PNG and JPEG pictures", &seeds, fuzz_checks::picture);
    assert!(tried > seeds.len() && accepted > 0);
}

#[test]
fn gguf_files_from_strangers() {
    // A file of every ggml type SD Bench decodes (gguf-py's), and a small one with metadata.
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("seed.gguf");
    gguf::write_f32(
        &small,
        &[("general.architecture", "sd1")],
        &[
            ("a.weight", vec![2, 3], &[1.0; 6]),
            ("b", vec![4], &[2.0; 4]),
        ],
    )
    .unwrap();
    let seeds = vec![
        std::fs::read(crate::common::fixtures().join("weight-formats/ggml-blocks.gguf")).unwrap(),
        std::fs::read(small).unwrap(),
    ];
    let (tried, accepted) = fuzz("GGUF header and blocks", &seeds, fuzz_checks::gguf_file);
    assert!(tried > seeds.len() && accepted > 0 && accepted < tried);
}

/// The GGUF fuzzer's finding, in both formats: a shape with an empty dimension has no data, but
/// its other dimensions' product overflows wherever it is computed without the zero first.
#[test]
fn an_empty_tensor_with_an_overflowing_shape_is_refused() {
    let huge = 1u64 << 40;
    let header =
        format!(r#"{{"w":{{"dtype":"F32","shape":[0,{huge},{huge}],"data_offsets":[0,0]}}}}"#);
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    let refused = safetensors::read_header(
        &mut Cursor::new(&bytes),
        bytes.len() as u64,
        Path::new("empty.safetensors"),
    );
    let message = refused.expect_err("refused").to_string();
    assert!(message.contains("more than 2^64"), "{message}");
}

/// The coverage-guided fuzz targets' committed seed corpora (`fuzz/corpus/<target>/`, with any
/// input a run found and kept there) through the same checks, in every test run.
#[test]
fn the_fuzz_corpora_pass_their_checks() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    type Check = fn(&[u8]) -> bool;
    let targets: [(&str, Check); 7] = [
        ("safetensors_header", fuzz_checks::safetensors_header),
        ("gguf_file", fuzz_checks::gguf_file),
        ("npy_latents", fuzz_checks::npy_latents),
        ("picture", fuzz_checks::picture),
        ("config_json", fuzz_checks::config_json),
        ("checkpoint_names", fuzz_checks::checkpoint_names),
        ("tokenizer_files", fuzz_checks::tokenizer_files),
    ];
    for (target, check) in targets {
        let dir = corpus.join(target);
        let inputs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        let accepted = inputs
            .iter()
            .filter(|path| {
                let bytes = std::fs::read(path).unwrap();
                std::panic::catch_unwind(|| check(&bytes))
                    .unwrap_or_else(|_| panic!("{target}: {} fails its check", path.display()))
            })
            .count();
        // Each corpus starts from valid seeds, which its parser accepts.
        assert!(
            accepted > 0,
            "{target}: none of {} inputs accepted",
            inputs.len()
        );
    }
}
