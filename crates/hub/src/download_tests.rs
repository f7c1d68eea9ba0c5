use super::*;

fn listing(paths: &[&str]) -> Listing {
    Listing {
        commit: "c".into(),
        files: paths
            .iter()
            .map(|p| RemoteFile {
                path: p.to_string(),
                size: 1,
                blob_id: p.replace('/', "-"),
                sha256: None,
            })
            .collect(),
        license: None,
    }
}

const SD: &[&str] = &[
    "model_index.json",
    "scheduler/scheduler_config.json",
    "text_encoder/config.json",
    "text_encoder/model.safetensors",
    "text_encoder/model.fp16.safetensors",
    "tokenizer/vocab.json",
    "tokenizer/merges.txt",
    "unet/config.json",
    "unet/diffusion_pytorch_model.safetensors",
    "unet/diffusion_pytorch_model.fp16.safetensors",
    "vae/config.json",
    "vae/diffusion_pytorch_model.fp16.safetensors",
];

#[test]
fn sdxl_repositories_bring_their_second_text_encoder_in_fp16() {
    let repo = RepoId::parse("stabilityai/stable-diffusion-xl-base-1.0")
        .unwrap()
        .0;
    let plain: Vec<String> = pipeline_files(&repo, &listing(SD))
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert!(!plain.iter().any(|p| p.contains("_2/")));
    assert!(!plain
        .iter()
        .any(|p| p == "unet/diffusion_pytorch_model.safetensors"));

    let mut xl = SD.to_vec();
    xl.extend([
        "text_encoder_2/config.json",
        "text_encoder_2/model.safetensors",
        "text_encoder_2/model.fp16.safetensors",
        "tokenizer_2/vocab.json",
        "tokenizer_2/merges.txt",
        "tokenizer_2/special_tokens_map.json",
    ]);
    let files: Vec<String> = pipeline_files(&repo, &listing(&xl))
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    for wanted in [
        "text_encoder_2/config.json",
        "text_encoder_2/model.fp16.safetensors",
        "tokenizer_2/vocab.json",
        "tokenizer_2/merges.txt",
        "tokenizer_2/special_tokens_map.json",
    ] {
        assert!(files.iter().any(|p| p == wanted), "{wanted} in {files:?}");
    }
    assert!(!files
        .iter()
        .any(|p| p == "text_encoder_2/model.safetensors"));

    // A second text encoder without its tokenizer is not a pipeline SD Bench can run.
    xl.retain(|p| *p != "tokenizer_2/merges.txt");
    let err = pipeline_files(&repo, &listing(&xl))
        .unwrap_err()
        .to_string();
    assert!(err.contains("tokenizer_2/merges.txt"), "{err}");
}

/// FLUX.2 klein's repository: a transformer instead of a UNet, a `tokenizer.json`, sharded
/// text encoder and transformer with their indexes.
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
    "tokenizer/vocab.json",
    "tokenizer/merges.txt",
    "transformer/config.json",
    "transformer/diffusion_pytorch_model.safetensors.index.json",
    "transformer/diffusion_pytorch_model-00001-of-00002.safetensors",
    "transformer/diffusion_pytorch_model-00002-of-00002.safetensors",
    "vae/config.json",
    "vae/diffusion_pytorch_model.safetensors",
    "flux-2-klein-4b.safetensors",
    "README.md",
];

#[test]
fn flux2_repositories_bring_their_shards_and_tokenizer_json() {
    let repo = RepoId::parse("black-forest-labs/FLUX.2-klein-4B")
        .unwrap()
        .0;
    let files: Vec<String> = pipeline_files(&repo, &listing(KLEIN))
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    for wanted in [
        "model_index.json",
        "tokenizer/tokenizer.json",
        "tokenizer/chat_template.jinja",
        "text_encoder/model.safetensors.index.json",
        "text_encoder/model-00001-of-00002.safetensors",
        "text_encoder/model-00002-of-00002.safetensors",
        "transformer/diffusion_pytorch_model-00002-of-00002.safetensors",
        "vae/diffusion_pytorch_model.safetensors",
    ] {
        assert!(files.iter().any(|p| p == wanted), "{wanted} in {files:?}");
    }
    // Not what the pipeline reads: the single-file original, the CLIP-style vocabulary.
    for unwanted in [
        "flux-2-klein-4b.safetensors",
        "tokenizer/vocab.json",
        "README.md",
    ] {
        assert!(!files.iter().any(|p| p == unwanted), "{unwanted}");
    }
    // An index without its shards is not a pipeline.
    let mut broken = KLEIN.to_vec();
    broken.retain(|p| !p.starts_with("transformer/diffusion_pytorch_model-"));
    let err = pipeline_files(&repo, &listing(&broken))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("transformer/diffusion_pytorch_model.safetensors.index.json"),
        "{err}"
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
    for config in crate::cache::TRANSFORMER_CONFIGS {
        write(config, "{}");
    }
    write("vae/diffusion_pytorch_model.safetensors", "x");
    write("transformer/diffusion_pytorch_model.safetensors", "x");
    write(
        "text_encoder/model.safetensors.index.json",
        r#"{"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}"#,
    );
    write("text_encoder/model-00001-of-00002.safetensors", "x");
    let missing = crate::cache::missing_pipeline_files(dir.path());
    assert_eq!(missing, ["text_encoder/model-00002-of-00002.safetensors"]);
    write("text_encoder/model-00002-of-00002.safetensors", "x");
    assert!(crate::cache::missing_pipeline_files(dir.path()).is_empty());
}

#[test]
fn the_licence_comes_from_the_card_else_the_tags() {
    let model = |json: &str| serde_json::from_str::<ApiModel>(json).unwrap().license();
    assert_eq!(
        model(r#"{"cardData": {"license": "apache-2.0"}, "tags": ["license:mit"]}"#).as_deref(),
        Some("apache-2.0")
    );
    assert_eq!(
        model(r#"{"cardData": {"license": ["mit", "apache-2.0"]}}"#).as_deref(),
        Some("mit or apache-2.0")
    );
    assert_eq!(
        model(r#"{"tags": ["diffusers", "license:openrail++"]}"#).as_deref(),
        Some("openrail++")
    );
    assert_eq!(model(r#"{"cardData": {"license": 3}}"#), None);
    assert_eq!(
        model(&format!(
            r#"{{"cardData": {{"license": "{}"}}}}"#,
            "x".repeat(65)
        )),
        None
    );
    assert_eq!(model("{}"), None);
}
