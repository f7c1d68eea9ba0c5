use super::*;

fn network(folder: &str) -> WantedComponent {
    WantedComponent {
        folder: folder.into(),
        needs: vec!["config.json".into()],
        weights: true,
    }
}

fn small(folder: &str, needs: &[&str]) -> WantedComponent {
    WantedComponent {
        folder: folder.into(),
        needs: needs.iter().map(|n| n.to_string()).collect(),
        weights: false,
    }
}

fn clip_pipeline() -> Vec<WantedComponent> {
    vec![
        network("text_encoder"),
        small("tokenizer", &["vocab.json", "merges.txt"]),
        network("unet"),
        network("vae"),
        small("scheduler", &["scheduler_config.json"]),
    ]
}

fn planned(paths: &[&str], wanted: &[WantedComponent]) -> Vec<String> {
    plan(paths, wanted)
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect()
}

/// stable-diffusion-v1-5's files, as its repository lists them.
const SD15: &[&str] = &[
    ".gitattributes",
    "README.md",
    "feature_extractor/preprocessor_config.json",
    "model_index.json",
    "safety_checker/config.json",
    "safety_checker/model.fp16.safetensors",
    "safety_checker/model.safetensors",
    "safety_checker/pytorch_model.bin",
    "scheduler/scheduler_config.json",
    "text_encoder/config.json",
    "text_encoder/model.fp16.safetensors",
    "text_encoder/model.safetensors",
    "text_encoder/pytorch_model.bin",
    "tokenizer/merges.txt",
    "tokenizer/special_tokens_map.json",
    "tokenizer/tokenizer_config.json",
    "tokenizer/vocab.json",
    "unet/config.json",
    "unet/diffusion_pytorch_model.bin",
    "unet/diffusion_pytorch_model.fp16.safetensors",
    "unet/diffusion_pytorch_model.non_ema.bin",
    "unet/diffusion_pytorch_model.non_ema.safetensors",
    "unet/diffusion_pytorch_model.safetensors",
    "v1-5-pruned-emaonly.ckpt",
    "v1-5-pruned-emaonly.safetensors",
    "vae/config.json",
    "vae/diffusion_pytorch_model.bin",
    "vae/diffusion_pytorch_model.fp16.safetensors",
    "vae/diffusion_pytorch_model.safetensors",
];

#[test]
fn a_network_brings_its_config_and_fp16_weights_and_a_tokenizer_its_whole_folder() {
    let files = planned(SD15, &clip_pipeline());
    assert_eq!(
        files,
        [
            "model_index.json",
            "tokenizer/merges.txt",
            "tokenizer/special_tokens_map.json",
            "tokenizer/tokenizer_config.json",
            "tokenizer/vocab.json",
            "scheduler/scheduler_config.json",
            "text_encoder/config.json",
            "unet/config.json",
            "vae/config.json",
            "text_encoder/model.fp16.safetensors",
            "unet/diffusion_pytorch_model.fp16.safetensors",
            "vae/diffusion_pytorch_model.fp16.safetensors",
        ]
    );
    // Weights come last, after everything that says what the pipeline is.
    let plan = plan(SD15, &clip_pipeline()).unwrap();
    let first = plan.iter().position(|f| f.weights).unwrap();
    assert!(plan[first..].iter().all(|f| f.weights));
    assert!(plan[first..]
        .iter()
        .all(|f| f.path.ends_with(".safetensors")));

    // Without fp16 variants, the plain files.
    let plain: Vec<&str> = SD15
        .iter()
        .copied()
        .filter(|p| !p.contains(".fp16."))
        .collect();
    let files = planned(&plain, &clip_pipeline());
    for wanted in [
        "text_encoder/model.safetensors",
        "unet/diffusion_pytorch_model.safetensors",
        "vae/diffusion_pytorch_model.safetensors",
    ] {
        assert!(files.iter().any(|f| f == wanted), "{wanted} in {files:?}");
    }
    assert!(!files
        .iter()
        .any(|f| f.contains("non_ema") || f.ends_with(".bin")));
}

/// FLUX.2 klein's repository: sharded networks with their indexes, a tokenizer.json.
const KLEIN: &[&str] = &[
    "model_index.json",
    "scheduler/scheduler_config.json",
    "text_encoder/config.json",
    "text_encoder/generation_config.json",
    "text_encoder/model.safetensors.index.json",
    "text_encoder/model-00001-of-00002.safetensors",
    "text_encoder/model-00002-of-00002.safetensors",
    "tokenizer/tokenizer.json",
    "tokenizer/tokenizer_config.json",
    "tokenizer/chat_template.jinja",
    "transformer/config.json",
    "transformer/diffusion_pytorch_model.safetensors.index.json",
    "transformer/diffusion_pytorch_model-00001-of-00002.safetensors",
    "transformer/diffusion_pytorch_model-00002-of-00002.safetensors",
    "vae/config.json",
    "vae/diffusion_pytorch_model.safetensors",
    "flux-2-klein-4b.safetensors",
    "README.md",
];

fn qwen_pipeline() -> Vec<WantedComponent> {
    vec![
        network("text_encoder"),
        small("tokenizer", &["tokenizer.json"]),
        network("transformer"),
        network("vae"),
        small("scheduler", &["scheduler_config.json"]),
    ]
}

#[test]
fn shards_come_with_their_index_and_nothing_at_the_root_but_model_index() {
    let files = planned(KLEIN, &qwen_pipeline());
    for wanted in [
        "tokenizer/chat_template.jinja",
        "text_encoder/model.safetensors.index.json",
        "text_encoder/model-00001-of-00002.safetensors",
        "text_encoder/model-00002-of-00002.safetensors",
        "transformer/diffusion_pytorch_model.safetensors.index.json",
        "transformer/diffusion_pytorch_model-00002-of-00002.safetensors",
    ] {
        assert!(files.iter().any(|f| f == wanted), "{wanted} in {files:?}");
    }
    // A network's folder gives its config and weights only (as diffusers fetches it).
    for unwanted in [
        "text_encoder/generation_config.json",
        "flux-2-klein-4b.safetensors",
        "README.md",
    ] {
        assert!(!files.iter().any(|f| f == unwanted), "{unwanted}");
    }
    // An index without its shards is no weights.
    let broken: Vec<&str> = KLEIN
        .iter()
        .copied()
        .filter(|p| !p.starts_with("transformer/diffusion_pytorch_model-"))
        .collect();
    let missing = plan(&broken, &qwen_pipeline()).unwrap_err();
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(
        missing[0].starts_with("safetensors weights in transformer/"),
        "{missing:?}"
    );
}

#[test]
fn what_a_repository_lacks_is_named() {
    // A tokenizer without its merges, a network with only pickled weights.
    let paths: Vec<&str> = SD15
        .iter()
        .copied()
        .filter(|p| *p != "tokenizer/merges.txt" && !p.starts_with("vae/diffusion_pytorch_model."))
        .chain(["vae/diffusion_pytorch_model.bin"])
        .collect();
    let missing = plan(&paths, &clip_pipeline()).unwrap_err();
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert_eq!(missing[0], "tokenizer/merges.txt");
    assert!(
        missing[1].contains("vae/") && missing[1].contains(".bin"),
        "{missing:?}"
    );
    // A component whose folder is not there at all.
    let mut wanted = clip_pipeline();
    wanted.push(small("tokenizer_2", &[]));
    let missing = plan(SD15, &wanted).unwrap_err();
    assert_eq!(missing, ["tokenizer_2/ folder"]);
    let no_index: Vec<&str> = SD15.iter().copied().filter(|p| *p != MODEL_INDEX).collect();
    assert_eq!(
        plan(&no_index, &clip_pipeline()).unwrap_err(),
        [MODEL_INDEX]
    );
}

#[test]
fn weight_names_are_read_as_diffusers_reads_them() {
    assert!(is_variant_file("model.fp16.safetensors"));
    assert!(is_variant_file(
        "diffusion_pytorch_model.fp16-00001-of-00003.safetensors"
    ));
    assert!(!is_variant_file(
        "diffusion_pytorch_model.fp16-0001-of-00003.safetensors"
    ));
    assert!(!is_variant_file(
        "diffusion_pytorch_model.non_ema.safetensors"
    ));
    assert!(!is_variant_file("unet.fp16.safetensors"));
    assert!(is_variant_index("model.safetensors.index.fp16.json"));
    assert!(is_legacy_variant_file(
        "diffusion_pytorch_model-00001-of-00002.fp16.safetensors"
    ));
    assert!(is_legacy_variant_file("anything-00001-of-00002.fp16.bin"));
    assert!(!is_legacy_variant_file("model-00001-of-00002.safetensors"));
    assert!(is_legacy_variant_index("model.safetensors.fp16.index.json"));
    assert!(is_plain_file("model.safetensors"));
    assert!(is_plain_file("model-00002-of-00002.safetensors"));
    assert!(is_plain_file("weights.pb"));
    assert!(!is_plain_file("model.fp16.safetensors"));
    assert!(!is_plain_file("flux-2-klein-4b.safetensors"));
    assert!(is_plain_index(
        "diffusion_pytorch_model.safetensors.index.json"
    ));
    assert!(is_ignored("unet/diffusion_pytorch_model.bin"));
    assert!(is_ignored("text_encoder/pytorch_model.bin.index.json"));
    assert!(is_ignored("text_encoder/flax_model.msgpack"));
    assert!(!is_ignored("tokenizer/robin"));
    assert!(!is_ignored("unet/diffusion_pytorch_model.safetensors"));
    // The old shard names, with an fp16 variant of the new kind beside them: the new ones.
    let names = [
        "model-00001-of-00002.fp16.safetensors",
        "model.fp16-00001-of-00001.safetensors",
        "model.safetensors.index.fp16.json",
        "model.safetensors",
    ];
    assert_eq!(
        chosen_weights(&names),
        [
            "model.fp16-00001-of-00001.safetensors",
            "model.safetensors.index.fp16.json"
        ]
    );
    assert_eq!(
        chosen_weights(&names[..1]),
        ["model-00001-of-00002.fp16.safetensors"]
    );
}

#[test]
fn a_sharded_folder_is_complete_only_with_every_shard_its_index_names() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    for config in [
        "model_index.json",
        "scheduler/scheduler_config.json",
        "text_encoder/config.json",
        "tokenizer/tokenizer.json",
        "transformer/config.json",
        "vae/config.json",
    ] {
        write(config, "{}");
    }
    write("vae/diffusion_pytorch_model.safetensors", "x");
    write("transformer/diffusion_pytorch_model.safetensors", "x");
    assert!(missing_in(dir.path(), &qwen_pipeline(), false).is_empty());
    assert_eq!(
        missing_in(dir.path(), &qwen_pipeline(), true),
        ["text_encoder/diffusion_pytorch_model.safetensors or model.safetensors (or an fp16 variant, or a shard index and its shards)"]
    );
    write(
        "text_encoder/model.safetensors.index.json",
        r#"{"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}"#,
    );
    write("text_encoder/model-00001-of-00002.safetensors", "x");
    assert_eq!(
        missing_in(dir.path(), &qwen_pipeline(), true),
        ["text_encoder/model-00002-of-00002.safetensors"]
    );
    write("text_encoder/model-00002-of-00002.safetensors", "x");
    assert!(missing_in(dir.path(), &qwen_pipeline(), true).is_empty());
    // An index naming a file outside its folder is not read.
    write(
        "text_encoder/model.safetensors.index.json",
        r#"{"weight_map": {"a": "../vae/diffusion_pytorch_model.safetensors"}}"#,
    );
    assert_eq!(
        missing_in(dir.path(), &qwen_pipeline(), true),
        ["text_encoder/model.safetensors.index.json (unreadable)"]
    );
    // A tokenizer's needed file gone.
    std::fs::remove_file(dir.path().join("tokenizer/tokenizer.json")).unwrap();
    assert!(missing_in(dir.path(), &qwen_pipeline(), false)
        .contains(&"tokenizer/tokenizer.json".to_string()));
}

#[test]
fn model_index_is_read_with_bounds() {
    assert!(parse_index(br#"{"_class_name": "X"}"#).is_ok());
    assert!(parse_index(b"[1]")
        .unwrap_err()
        .contains("not a JSON object"));
    assert!(parse_index(b"{").unwrap_err().contains("not JSON"));
    let huge = vec![b' '; (MAX_INDEX_BYTES + 1) as usize];
    assert!(parse_index(&huge).unwrap_err().contains("bytes"));
}
