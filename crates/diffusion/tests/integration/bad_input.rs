//! Every kind of bad model folder or request gets an error that names what is wrong.

use crate::common;

use std::path::{Path, PathBuf};

use common::assert_mentions;
use sdbench_diffusion::device::select;
use sdbench_diffusion::io::image::RgbImage;
use sdbench_diffusion::{
    BackendRequest, CancelToken, GenerateRequest, InitImage, InitialNoise, LoadOptions,
    ModelSource, Pipeline, Precision, SchedulerKind,
};

/// A writable copy of the tiny pipeline (fp32 files only, so damage to them is what gets loaded).
fn tiny_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    common::copy_tree(&common::fixtures().join("tiny-sd"), &model);
    for sub in ["unet", "vae", "text_encoder"] {
        for entry in std::fs::read_dir(model.join(sub)).unwrap() {
            let p = entry.unwrap().path();
            if p.to_string_lossy().contains(".fp16.") {
                std::fs::remove_file(p).unwrap();
            }
        }
    }
    (dir, model)
}

fn load_err(folder: &Path) -> String {
    let device = select(BackendRequest::Cpu).unwrap();
    match Pipeline::load(
        &ModelSource::Folder(folder.to_path_buf()),
        device,
        Some(Precision::F32),
    ) {
        Ok(_) => panic!("loading {} should fail", folder.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn missing_and_empty_folders() {
    let dir = tempfile::tempdir().unwrap();
    assert_mentions(&load_err(&dir.path().join("nope")), &["does not exist"]);
    assert_mentions(&load_err(dir.path()), &["model_index.json is missing"]);
    let (_keep, model) = tiny_copy();
    std::fs::remove_dir_all(model.join("vae")).unwrap();
    assert_mentions(&load_err(&model), &["vae/"]);
}

#[test]
fn missing_weights_file() {
    let (_keep, model) = tiny_copy();
    std::fs::remove_file(model.join("unet/diffusion_pytorch_model.safetensors")).unwrap();
    assert_mentions(
        &load_err(&model),
        &[
            "unet",
            "no weights file",
            "diffusion_pytorch_model.safetensors",
        ],
    );
}

#[test]
fn truncated_weights_file() {
    let (_keep, model) = tiny_copy();
    let path = model.join("unet/diffusion_pytorch_model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 1000]).unwrap();
    assert_mentions(
        &load_err(&model),
        &["diffusion_pytorch_model.safetensors", "truncated"],
    );
    std::fs::write(&path, &bytes[..4]).unwrap();
    assert_mentions(&load_err(&model), &["truncated"]);
}

#[test]
fn garbage_weights_file() {
    let (_keep, model) = tiny_copy();
    let path = model.join("vae/diffusion_pytorch_model.safetensors");
    std::fs::write(
        &path,
        b"this is not a safetensors file, just some text that is long enough",
    )
    .unwrap();
    assert_mentions(&load_err(&model), &["vae", "not a safetensors file"]);
}

use common::{read_tensors, write_tensors, Tensors};

#[test]
fn missing_unexpected_and_misshapen_tensors_are_named() {
    let (_keep, model) = tiny_copy();
    let path = model.join("vae/diffusion_pytorch_model.safetensors");
    let tensors = read_tensors(&path, "");
    let write = |list: &Tensors| write_tensors(&path, list);

    let without: Vec<_> = tensors
        .iter()
        .filter(|t| t.0 != "decoder.conv_out.weight")
        .cloned()
        .collect();
    write(&without);
    assert_mentions(&load_err(&model), &["decoder.conv_out.weight", "missing"]);

    let mut extra = tensors.clone();
    extra.push(("decoder.surprise.weight".into(), vec![2], vec![0.0, 1.0]));
    write(&extra);
    assert_mentions(
        &load_err(&model),
        &["decoder.surprise.weight", "not part of the model"],
    );

    let misshapen: Vec<_> = tensors
        .iter()
        .map(|(n, s, d)| {
            if n == "decoder.conv_in.bias" {
                (n.clone(), vec![s[0] - 1], d[1..].to_vec())
            } else {
                (n.clone(), s.clone(), d.clone())
            }
        })
        .collect();
    write(&misshapen);
    assert_mentions(&load_err(&model), &["decoder.conv_in.bias", "shape"]);
}

#[test]
fn a_numeric_overflow_is_counted_and_refused_by_require_finite() {
    let (_keep, model) = tiny_copy();
    let path = model.join("vae/diffusion_pytorch_model.safetensors");
    let mut tensors = read_tensors(&path, "");
    for (name, _, values) in &mut tensors {
        if name == "decoder.conv_out.bias" {
            values[1] = f32::INFINITY; // the green channel overflows everywhere
        }
    }
    write_tensors(&path, &tensors);
    let device = select(BackendRequest::Cpu).unwrap();
    let pipe = Pipeline::load(&ModelSource::Folder(model), device, Some(Precision::F32)).unwrap();
    let request = GenerateRequest {
        width: 24,
        height: 16,
        steps: 1,
        ..GenerateRequest::new("a cat")
    };
    let out = pipe
        .generate(&request, &mut |_| {}, &CancelToken::new())
        .unwrap();
    // The image comes back (a benchmark records it as invalid); the count says what is wrong.
    assert_eq!(out.non_finite(), 24 * 16);
    assert_mentions(
        &pipe.require_finite(&out).unwrap_err().to_string(),
        &["384 NaN or infinite values", "--precision f32"],
    );
}

#[test]
fn invalid_config_json() {
    let (_keep, model) = tiny_copy();
    std::fs::write(model.join("unet/config.json"), "{ not json").unwrap();
    assert_mentions(&load_err(&model), &["unet", "config.json"]);
    let (_keep2, model) = tiny_copy();
    std::fs::write(
        model.join("vae/config.json"),
        r#"{"block_out_channels": "wide"}"#,
    )
    .unwrap();
    assert_mentions(
        &load_err(&model),
        &["vae", "config.json", "block_out_channels"],
    );
}

#[test]
fn unsupported_architecture_is_named() {
    let (_keep, model) = tiny_copy();
    let path = model.join("unet/config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    config["down_block_types"][0] = "SimpleCrossAttnDownBlock2D".into();
    std::fs::write(&path, config.to_string()).unwrap();
    assert_mentions(&load_err(&model), &["SimpleCrossAttnDownBlock2D"]);
}

#[test]
fn bad_requests() {
    let device = select(BackendRequest::Cpu).unwrap();
    let pipe = Pipeline::load(
        &ModelSource::Folder(common::fixtures().join("tiny-sd")),
        device,
        Some(Precision::F32),
    )
    .unwrap();
    let base = GenerateRequest {
        width: 24,
        height: 16,
        steps: 2,
        ..GenerateRequest::new("a cat")
    };
    let err = |r: GenerateRequest| pipe.validate(&r).unwrap_err().to_string();
    assert_mentions(
        &err(GenerateRequest {
            width: 30,
            ..base.clone()
        }),
        &["width", "multiple of 8"],
    );
    assert_mentions(
        &err(GenerateRequest {
            height: 0,
            ..base.clone()
        }),
        &["height"],
    );
    assert_mentions(
        &err(GenerateRequest {
            steps: 0,
            ..base.clone()
        }),
        &["steps"],
    );
    let wrong = InitialNoise::Latents {
        shape: vec![1, 4, 9, 9],
        data: vec![0.0; 324],
        step_seed: 0,
    };
    assert_mentions(
        &err(GenerateRequest {
            noise: wrong,
            ..base.clone()
        }),
        &["latents", "[1, 4, 8, 12]"],
    );
    assert_mentions(
        &err(GenerateRequest {
            batch: 0,
            ..base.clone()
        }),
        &["batch", "from 1 to 64"],
    );
    assert!(SchedulerKind::from_name("karras_magic").is_err());
    assert!(pipe.validate(&base).is_ok());

    // Image-to-image needs the encoder, which text-to-image loading leaves out.
    let picture = |width, height| RgbImage {
        width,
        height,
        pixels: vec![128; width * height * 3],
    };
    let img2img = |width, height, strength| GenerateRequest {
        init_image: Some(InitImage {
            image: picture(width, height),
            strength,
        }),
        ..base.clone()
    };
    assert_mentions(&err(img2img(24, 16, 0.5)), &["VAE encoder"]);
    let device = select(BackendRequest::Cpu).unwrap();
    let pipe = Pipeline::load_with(
        &ModelSource::Folder(common::fixtures().join("tiny-sd")),
        device,
        Some(Precision::F32),
        LoadOptions {
            vae_encoder: true,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let err = |r: GenerateRequest| pipe.validate(&r).unwrap_err().to_string();
    assert_mentions(
        &err(img2img(32, 16, 0.5)),
        &["init image is 32x16", "24x16"],
    );
    for strength in [0.0, -0.5, 1.5, f64::NAN] {
        assert_mentions(&err(img2img(24, 16, strength)), &["strength", "at most 1"]);
    }
    // 2 steps x 0.4 strength runs no step.
    assert_mentions(
        &err(img2img(24, 16, 0.4)),
        &["strength 0.4 with 2 steps", "--strength"],
    );
    assert!(pipe.validate(&img2img(24, 16, 0.5)).is_ok());
    assert!(pipe.validate(&img2img(24, 16, 1.0)).is_ok());
}

/// SDXL folders: a missing second text encoder or tokenizer, a UNet without SDXL's added
/// conditions, an unknown added-condition type, and pipelines SD Bench does not run.
#[test]
fn broken_sdxl_folders_and_other_pipelines_are_named() {
    let copy = || {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model");
        common::copy_tree(&common::fixtures().join("tiny-sdxl"), &model);
        (dir, model)
    };
    let edit_json = |path: PathBuf, change: &dyn Fn(&mut serde_json::Value)| {
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        change(&mut json);
        std::fs::write(&path, json.to_string()).unwrap();
    };

    let (_keep, model) = copy();
    std::fs::remove_dir_all(model.join("text_encoder_2")).unwrap();
    assert_mentions(&load_err(&model), &["text_encoder_2/", "SDXL"]);

    let (_keep, model) = copy();
    std::fs::remove_dir_all(model.join("tokenizer_2")).unwrap();
    assert_mentions(&load_err(&model), &["tokenizer_2/"]);

    let (_keep, model) = copy();
    edit_json(model.join("unet/config.json"), &|j| {
        j["addition_embed_type"] = serde_json::Value::Null
    });
    assert_mentions(&load_err(&model), &["text_time", "two text encoders"]);

    let (_keep, model) = copy();
    edit_json(model.join("unet/config.json"), &|j| {
        j["addition_embed_type"] = "image".into()
    });
    assert_mentions(&load_err(&model), &["addition_embed_type", "image"]);

    let (_keep, model) = copy();
    edit_json(model.join("model_index.json"), &|j| {
        j["_class_name"] = "QwenImagePipeline".into()
    });
    assert_mentions(
        &load_err(&model),
        &["QwenImagePipeline", "StableDiffusionXLPipeline"],
    );

    // An SD1.x UNet that expects SDXL's added conditions in a one-encoder pipeline.
    let (_keep, model) = tiny_copy();
    edit_json(model.join("unet/config.json"), &|j| {
        j["addition_embed_type"] = "text_time".into();
        j["addition_time_embed_dim"] = 8.into();
        j["projection_class_embeddings_input_dim"] = 80.into();
    });
    assert_mentions(&load_err(&model), &["text_time", "one text encoder"]);
}
