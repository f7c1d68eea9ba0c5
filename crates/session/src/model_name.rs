//! What a person names as the model (a command-line argument or the app's setting): a local
//! diffusers folder, a single-file checkpoint, a Hub id, or `synthetic`.

use std::path::{Path, PathBuf};

use sdbench_diffusion::{CancelToken, ComponentFiles, ModelSource, Preset, PLAIN_SYNTHETIC};
use sdbench_hub::{HubError, HubSettings, RepoId, Resolved};

use crate::error::{Result, SessionError};
use crate::events::Event;
use crate::hub_components::engine_hub;

/// A parsed model name.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelName {
    /// A folder, a checkpoint file, or synthetic weights: nothing to fetch.
    Local(ModelSource),
    /// A Hub id, with a note when a renamed id was mapped to its successor.
    Hub { id: RepoId, note: Option<String> },
}

impl ModelName {
    /// An existing folder or file wins; `synthetic` is synthetic weights; anything else must be a
    /// Hub id. `config` (a diffusers folder whose configs describe the file) and `parts` (component
    /// files: `--text-encoder`, `--vae`) go with a model file only.
    pub fn parse(text: &str, config: Option<&Path>, parts: &ComponentFiles) -> Result<ModelName> {
        let bad = |problem: String| Err(SessionError::Model(problem));
        let path = PathBuf::from(text);
        if path.is_file() {
            if let Some(folder) = config {
                if !folder.is_dir() {
                    return bad(format!(
                        "the model config {} is not a folder (name a diffusers model folder whose configs describe the checkpoint)",
                        folder.display()
                    ));
                }
            }
            for (option, file) in parts.files() {
                if !file.is_file() {
                    return bad(format!(
                        "the {option} file {} does not exist (name a .safetensors or .gguf file)",
                        file.display()
                    ));
                }
            }
            return Ok(ModelName::Local(ModelSource::Checkpoint {
                file: path,
                config: config.map(Path::to_path_buf),
                parts: parts.clone(),
            }));
        }
        if let Some(folder) = config {
            return bad(format!(
                "the model config {} applies only to a single-file checkpoint (a .safetensors or .gguf file)",
                folder.display()
            ));
        }
        if !parts.is_empty() {
            return bad(format!(
                "--text-encoder and --vae go with a model file (a checkpoint or a transformer file); {text} is not one (a diffusers folder's components are its subfolders)"
            ));
        }
        if text == "synthetic" {
            return Ok(ModelName::Local(ModelSource::Synthetic(PLAIN_SYNTHETIC)));
        }
        if let Some(name) = text.strip_prefix("synthetic-") {
            return match Preset::named(name) {
                Some(preset) => Ok(ModelName::Local(ModelSource::Synthetic(preset))),
                None => bad(format!(
                    "unknown synthetic model `{text}`; choose synthetic ({}) or one of: {}",
                    PLAIN_SYNTHETIC.short_label(),
                    Preset::all()
                        .map(|p| format!("synthetic-{}", p.name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            };
        }
        if path.is_dir() {
            return Ok(ModelName::Local(ModelSource::Folder(path)));
        }
        let looks_like_path = text.starts_with(['.', '/', '~'])
            || text.contains('\\')
            || text.matches('/').count() != 1;
        match RepoId::parse(text) {
            Ok((id, note)) => Ok(ModelName::Hub { id, note }),
            Err(_) if looks_like_path => bad(format!(
                "model {} does not exist (name a diffusers model folder, a single-file .safetensors or .gguf checkpoint, a Hub id like stable-diffusion-v1-5/stable-diffusion-v1-5, or `synthetic`)",
                path.display()
            )),
            Err(e) => Err(e.into()),
        }
    }
}

impl ModelName {
    /// The model on this machine: a Hub id from the cache, or downloaded (with `Event::Download`
    /// progress, and a note when the Hub was not reachable and the cache served it). A download
    /// stops before the weights when `check` refuses the model its configs describe.
    pub fn resolve(
        &self,
        hub: &HubSettings,
        observer: &mut dyn FnMut(&Event),
        cancel: &CancelToken,
        check: &mut dyn FnMut(&ModelSource) -> Result<()>,
    ) -> Result<ModelSource> {
        match self {
            ModelName::Local(source) => with_configs(source.clone(), hub, observer, cancel),
            ModelName::Hub { id, .. } => {
                let resolved = fetch_from_hub(hub, id, "main", observer, cancel, check)?;
                Ok(ModelSource::Folder(resolved.path))
            }
        }
    }
}

/// A denoiser file kept apart from its repository (a ComfyUI transformer file) given without a
/// config folder gets its preset's: the repository's configs and tokenizer, from the cache or
/// fetched (a few hundred KB, no weights), with a note saying so. Any other source is returned as
/// it is.
pub fn with_configs(
    source: ModelSource,
    hub: &HubSettings,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
) -> Result<ModelSource> {
    let ModelSource::Checkpoint {
        file,
        config: None,
        parts,
    } = &source
    else {
        return Ok(source);
    };
    let Some(preset) = sdbench_diffusion::preset_for_denoiser_file(file)? else {
        return Ok(source);
    };
    let (repo, _) = RepoId::parse(preset.repository())?;
    let configs = engine_hub(hub.clone()).configs(
        &repo,
        "main",
        &mut |p| observer(&Event::Download(p.clone())),
        &|| cancel.is_cancelled(),
    );
    let resolved = match configs {
        Ok(resolved) => resolved,
        Err(HubError::Cancelled) => return Err(SessionError::Cancelled),
        Err(HubError::NotCached { reason, .. }) => {
            return Err(SessionError::Model(format!(
                "{} is read with {repo}'s configs and tokenizer (a few hundred KB, no weights), which this machine's Hugging Face cache does not hold, and the Hub cannot be reached ({reason}): connect once, or give --model-config naming a folder with them",
                file.display()
            )))
        }
        Err(e) => return Err(e.into()),
    };
    // A snapshot of configs alone has no text encoder or VAE: those come from the file itself
    // or from files of their own then.
    let missing = sdbench_diffusion::parts_lacking(preset, file, parts);
    if !missing.is_empty() {
        let (what, options) = sdbench_diffusion::describe_parts(&missing);
        return Err(SessionError::Model(format!(
            "{} is a {} transformer file: it needs {what} as well; give {options} naming those files (ComfyUI keeps them in models/text_encoders/ and models/vae/), or --model-config naming a diffusers folder that has them",
            file.display(),
            preset.long_label(),
        )));
    }
    let commit = &resolved.commit[..resolved.commit.len().min(10)];
    observer(&Event::note(format!(
        "reading {} with {} configs and tokenizer ({repo} at {commit})",
        file.display(),
        preset.long_label()
    )));
    Ok(ModelSource::Checkpoint {
        file: file.clone(),
        config: Some(resolved.path),
        parts: parts.clone(),
    })
}

/// What a person is told when a model arrives: its authors' licence and where to read it.
pub fn license_note(id: &RepoId, license: Option<&str>) -> String {
    let card = format!("https://huggingface.co/{id}");
    match license {
        Some(license) => format!(
            "{id} is under its authors' licence ({license}), not SD Bench's: read it at {card} before using the model"
        ),
        None => format!(
            "{id}'s model card names no licence: read {card} before using the model"
        ),
    }
}

/// `id` at `revision` from the cache or the Hub, with download progress and a note when the Hub
/// was not reachable and the cache served it. A download runs `check` on the model its configs
/// describe before it fetches the weights, and stops there with `check`'s error when it refuses
/// the model.
pub fn fetch_from_hub<E: From<SessionError>>(
    hub: &HubSettings,
    id: &RepoId,
    revision: &str,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
    check: &mut dyn FnMut(&ModelSource) -> std::result::Result<(), E>,
) -> std::result::Result<Resolved, E> {
    /// The Hub's errors apart from the check's.
    enum Fetch<E> {
        Hub(HubError),
        Check(E),
    }
    impl<E> From<HubError> for Fetch<E> {
        fn from(e: HubError) -> Self {
            Fetch::Hub(e)
        }
    }
    let resolved = engine_hub(hub.clone()).resolve_checked(
        id,
        revision,
        &mut |p| observer(&Event::Download(p.clone())),
        &|| cancel.is_cancelled(),
        &mut |configs: &Path| {
            check(&ModelSource::Folder(configs.to_path_buf())).map_err(Fetch::Check)
        },
    );
    match resolved {
        Ok(r) => {
            if let Some(reason) = &r.offline_reason {
                let commit = &r.commit[..r.commit.len().min(10)];
                observer(&Event::note(format!(
                    "the Hub is not reachable ({reason}); using the cached {id} at {commit}"
                )));
            }
            if r.downloaded_bytes > 0 {
                observer(&Event::note(license_note(id, r.license.as_deref())));
            }
            Ok(r)
        }
        Err(Fetch::Hub(HubError::Cancelled)) => Err(SessionError::Cancelled.into()),
        Err(Fetch::Hub(e)) => Err(SessionError::Hub(e).into()),
        Err(Fetch::Check(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_to_what_they_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("model.safetensors");
        std::fs::write(&file, b"x").unwrap();
        let folder = dir.path().to_str().unwrap();

        assert_eq!(
            ModelName::parse("synthetic", None, &Default::default()).unwrap(),
            ModelName::Local(ModelSource::Synthetic(Preset::SD15))
        );
        assert_eq!(
            ModelName::parse("synthetic-sdxl-base", None, &Default::default()).unwrap(),
            ModelName::Local(ModelSource::Synthetic(Preset::SDXL_BASE))
        );
        assert!(ModelName::parse("synthetic-sd9", None, &Default::default())
            .unwrap_err()
            .to_string()
            .contains("synthetic-sdxl-base"));
        assert_eq!(
            ModelName::parse(folder, None, &Default::default()).unwrap(),
            ModelName::Local(ModelSource::Folder(dir.path().into()))
        );
        assert_eq!(
            ModelName::parse(
                file.to_str().unwrap(),
                Some(dir.path()),
                &Default::default()
            )
            .unwrap(),
            ModelName::Local(ModelSource::Checkpoint {
                file: file.clone(),
                config: Some(dir.path().into()),
                parts: Default::default(),
            })
        );
        match ModelName::parse(
            "stable-diffusion-v1-5/stable-diffusion-v1-5",
            None,
            &Default::default(),
        )
        .unwrap()
        {
            ModelName::Hub { id, note } => {
                assert_eq!(id.as_str(), "stable-diffusion-v1-5/stable-diffusion-v1-5");
                assert!(note.is_none());
            }
            other => panic!("{other:?}"),
        }
        let renamed =
            ModelName::parse("runwayml/stable-diffusion-v1-5", None, &Default::default()).unwrap();
        assert!(matches!(renamed, ModelName::Hub { note: Some(_), .. }));
    }

    /// A file with FLUX.2 klein 4B's transformer tensor names and sizes where they tell the
    /// model apart (the embedder's width, the number of blocks, the modulation FLUX.2's blocks
    /// share), `double` double-stream blocks.
    fn klein_shaped(path: &Path, double: usize) {
        let mut names: Vec<String> = (0..double)
            .map(|i| format!("transformer_blocks.{i}.norm.weight"))
            .collect();
        names.push("double_stream_modulation_img.linear.weight".into());
        names.extend((0..20).map(|i| format!("single_transformer_blocks.{i}.norm.weight")));
        shaped_file(path, ("x_embedder.weight", &[3072, 128]), &names);
    }

    /// A file of `names`, each one value, beside an embedder of `shape` (the tensor that tells a
    /// model's width).
    fn shaped_file(path: &Path, (embedder, shape): (&str, &[usize]), names: &[String]) {
        let values = vec![0.0f32; shape.iter().product()];
        let one = [0.0f32];
        let mut tensors: Vec<(&str, Vec<usize>, &[f32])> =
            vec![(embedder, shape.to_vec(), &values)];
        tensors.extend(names.iter().map(|n| (n.as_str(), vec![1], &one[..])));
        sdbench_diffusion::io::safetensors::write_f32(path, &tensors).unwrap();
    }

    #[test]
    fn a_transformer_file_alone_is_read_with_its_presets_configs() {
        use sdbench_test_server::{FakeRepo, TestServer};
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../diffusion/tests/fixtures");
        let server = TestServer::start();
        server.add_repo(
            FakeRepo::from_folder(
                "black-forest-labs/FLUX.2-klein-4B",
                "0123456789abcdef0123456789abcdef01234567",
                &fixtures.join("tiny-flux2-klein"),
            )
            .unwrap(),
        );
        let dir = tempfile::tempdir().unwrap();
        let hub = HubSettings {
            cache_dir: dir.path().join("hub"),
            endpoint: server.url(),
            token: None,
            offline: false,
        };
        let file = dir.path().join("flux-2-klein-4b.safetensors");
        klein_shaped(&file, 5);
        let source = |parts: ComponentFiles| ModelSource::Checkpoint {
            file: file.clone(),
            config: None,
            parts,
        };
        let mut notes = Vec::new();
        let mut observe = |e: &Event| {
            if let Event::Note { text } = e {
                notes.push(text.clone())
            }
        };
        let cancel = CancelToken::new();

        let err = with_configs(source(Default::default()), &hub, &mut observe, &cancel)
            .unwrap_err()
            .to_string();
        assert!(err.contains("give --text-encoder and --vae"), "{err}");
        let parts = ComponentFiles {
            text_encoders: vec![file.clone()],
            vae: Some(file.clone()),
        };
        let completed = with_configs(source(parts.clone()), &hub, &mut observe, &cancel).unwrap();
        let ModelSource::Checkpoint {
            config: Some(folder),
            parts: kept,
            ..
        } = completed
        else {
            panic!("{completed:?}")
        };
        assert_eq!(kept, parts);
        assert!(folder.join("tokenizer/tokenizer.json").is_file());
        assert!(!folder
            .join("transformer/diffusion_pytorch_model.safetensors")
            .exists());
        assert!(
            notes
                .iter()
                .any(|n| n.contains("FLUX.2 [klein] 4B configs and tokenizer")),
            "{notes:?}"
        );
        let downloads = server.downloads();
        assert!(
            !downloads.iter().any(|(p, _)| p.ends_with(".safetensors")),
            "{downloads:?}"
        );

        // Offline with nothing cached: what to do.
        let empty = HubSettings {
            cache_dir: dir.path().join("empty"),
            offline: true,
            ..hub.clone()
        };
        let err = with_configs(source(parts.clone()), &empty, &mut |_| {}, &cancel)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--model-config"), "{err}");
        // A transformer of other sizes is refused by name; other files pass as they are.
        klein_shaped(&file, 6);
        let err = with_configs(source(parts), &hub, &mut |_| {}, &cancel)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("has 6 double- and 20 single-stream blocks"),
            "{err}"
        );
        let sd = ModelSource::Checkpoint {
            file: fixtures.join("tiny-sd.ldm.safetensors"),
            config: None,
            parts: Default::default(),
        };
        assert_eq!(
            with_configs(sd.clone(), &hub, &mut |_| {}, &cancel).unwrap(),
            sd
        );
    }

    /// A file of SD3.5 Medium's MMDiT names and sizes, holding `inside` besides.
    fn sd35_medium_shaped(path: &Path, inside: &[&str]) {
        let mut names = Vec::new();
        for i in 0..24 {
            let block = format!("model.diffusion_model.joint_blocks.{i}.x_block");
            names.push(format!("{block}.attn.ln_q.weight"));
            if i <= 12 {
                names.push(format!("{block}.attn2.qkv.weight"));
            }
        }
        names.extend(inside.iter().map(|n| n.to_string()));
        let embedder = (
            "model.diffusion_model.x_embedder.proj.weight",
            &[1536, 1][..],
        );
        shaped_file(path, embedder, &names);
    }

    /// Stability's single file of SD3.5 Medium's sizes gets its repository's configs and
    /// tokenizers; what it does not hold of the text encoders and VAE is asked for by name.
    #[test]
    fn an_sd3_single_file_is_read_with_its_presets_configs() {
        use sdbench_test_server::{FakeRepo, TestServer};
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../diffusion/tests/fixtures");
        let server = TestServer::start();
        server.add_repo(
            FakeRepo::from_folder(
                "stabilityai/stable-diffusion-3.5-medium",
                "0123456789abcdef0123456789abcdef01234567",
                &fixtures.join("tiny-sd3"),
            )
            .unwrap(),
        );
        let dir = tempfile::tempdir().unwrap();
        let hub = HubSettings {
            cache_dir: dir.path().join("hub"),
            endpoint: server.url(),
            token: None,
            offline: false,
        };
        let file = dir.path().join("sd3.5_medium.safetensors");
        let cancel = CancelToken::new();
        let source = |parts: ComponentFiles| ModelSource::Checkpoint {
            file: file.clone(),
            config: None,
            parts,
        };
        sd35_medium_shaped(&file, &[]);
        let err = with_configs(source(Default::default()), &hub, &mut |_| {}, &cancel)
            .unwrap_err()
            .to_string();
        for needle in [
            "Stable Diffusion 3.5 Medium",
            "text_encoder (a CLIP text encoder), text_encoder_2 (a CLIP text encoder), text_encoder_3 (a T5 encoder), vae (a VAE)",
            "give --text-encoder (once for each) and --vae",
        ] {
            assert!(err.contains(needle), "{needle}: {err}");
        }
        // The VAE and CLIP-L inside it: CLIP-G and T5 are asked for.
        sd35_medium_shaped(
            &file,
            &[
                "first_stage_model.decoder.conv_in.weight",
                "text_encoders.clip_l.transformer.text_model.final_layer_norm.weight",
            ],
        );
        let err = with_configs(source(Default::default()), &hub, &mut |_| {}, &cancel)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "needs text_encoder_2 (a CLIP text encoder), text_encoder_3 (a T5 encoder) as well"
            ) && err.contains("give --text-encoder (once for each) naming"),
            "{err}"
        );
        // Given two files (whatever their roles), the configs and tokenizers come.
        let parts = ComponentFiles {
            text_encoders: vec![file.clone(), file.clone()],
            vae: None,
        };
        let completed = with_configs(source(parts), &hub, &mut |_| {}, &cancel).unwrap();
        let ModelSource::Checkpoint {
            config: Some(folder),
            ..
        } = completed
        else {
            panic!("{completed:?}")
        };
        for needed in [
            "tokenizer_3/tokenizer.json",
            "tokenizer_2/vocab.json",
            "transformer/config.json",
        ] {
            assert!(folder.join(needed).is_file(), "{needed}");
        }
        assert!(!folder.join("text_encoder/model.safetensors").exists());
    }

    #[test]
    fn bad_names_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let err =
            ModelName::parse(missing.to_str().unwrap(), None, &Default::default()).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        let err = ModelName::parse("synthetic", Some(dir.path()), &Default::default()).unwrap_err();
        assert!(err.to_string().contains("only to a single-file"), "{err}");
        let file = dir.path().join("m.safetensors");
        std::fs::write(&file, b"x").unwrap();
        let err = ModelName::parse(file.to_str().unwrap(), Some(&missing), &Default::default())
            .unwrap_err();
        assert!(err.to_string().contains("is not a folder"), "{err}");
        let vae = |vae: &Path| ComponentFiles {
            text_encoders: Vec::new(),
            vae: Some(vae.to_path_buf()),
        };
        let err = ModelName::parse(file.to_str().unwrap(), None, &vae(&missing)).unwrap_err();
        assert!(
            err.to_string().contains("the --vae file")
                && err.to_string().contains("does not exist"),
            "{err}"
        );
        let err = ModelName::parse("synthetic", None, &vae(&file)).unwrap_err();
        assert!(err.to_string().contains("go with a model file"), "{err}");
        let err = ModelName::parse(dir.path().to_str().unwrap(), None, &vae(&file)).unwrap_err();
        assert!(err.to_string().contains("go with a model file"), "{err}");
        assert_eq!(
            ModelName::parse(file.to_str().unwrap(), None, &vae(&file)).unwrap(),
            ModelName::Local(ModelSource::Checkpoint {
                file: file.clone(),
                config: None,
                parts: vae(&file),
            })
        );
    }
}
