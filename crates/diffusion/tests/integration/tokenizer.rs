//! Tokenizer parity with transformers' CLIPTokenizer on the full SD1.5 vocabulary.

use crate::common;

use sdbench_diffusion::models::tokenizer::Tokenizer;

#[test]
fn token_ids_match_transformers() {
    let folder = common::fixtures().join("clip-tokenizer");
    let tokenizer = Tokenizer::from_folder(&folder).unwrap();
    let builtin = Tokenizer::builtin_sd15();
    let cases: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(common::fixtures().join("tokenizer_cases.json")).unwrap(),
    )
    .unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let expected: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(
            tokenizer.encode(text).unwrap(),
            expected,
            "ids for {text:?}"
        );
        assert_eq!(
            builtin.encode(text).unwrap(),
            expected,
            "built-in ids for {text:?}"
        );
    }
}

#[test]
fn long_prompts_truncate_to_77_with_eos_last() {
    let tokenizer = Tokenizer::builtin_sd15();
    let ids = tokenizer.encode(&"castle ".repeat(200)).unwrap();
    assert_eq!(ids.len(), 77);
    assert_eq!(ids[0], 49406);
    assert_eq!(ids[76], 49407);
    assert!(ids[1..76].iter().all(|&id| id != 49407));
}

#[test]
fn missing_vocab_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("merges.txt"), "#version: 0.2\n").unwrap();
    let err = Tokenizer::from_folder(dir.path())
        .err()
        .expect("must fail")
        .to_string();
    assert!(err.contains("vocab.json"), "{err}");
}

/// A vocabulary that never ends (a device standing in for a damaged or hostile file) and a config
/// past its size bound are refused by name, not read until memory runs out.
#[cfg(unix)]
#[test]
fn an_endless_vocabulary_or_config_is_refused_at_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let clip = common::fixtures().join("clip-tokenizer");
    std::fs::copy(clip.join("merges.txt"), dir.path().join("merges.txt")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("vocab.json")).unwrap();
    let err = Tokenizer::from_folder(dir.path())
        .err()
        .expect("must fail")
        .to_string();
    assert!(
        err.contains("vocab.json") && err.contains("more than"),
        "{err}"
    );

    std::fs::remove_file(dir.path().join("vocab.json")).unwrap();
    std::fs::copy(clip.join("vocab.json"), dir.path().join("vocab.json")).unwrap();
    // A config past its bound (sparse: nothing is written).
    std::fs::File::create(dir.path().join("tokenizer_config.json"))
        .unwrap()
        .set_len(sdbench_diffusion::io::bounded_text::MAX_CONFIG_BYTES + 1)
        .unwrap();
    let err = Tokenizer::from_folder(dir.path())
        .err()
        .expect("must fail")
        .to_string();
    assert!(
        err.contains("tokenizer_config.json") && err.contains("more than"),
        "{err}"
    );
}
