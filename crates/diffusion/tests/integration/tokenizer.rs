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
