//! The app's settings, kept as JSON in the data folder: backend, precision, model, endpoints.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use sdbench_bench::{ModelChoice, Workload};
use sdbench_diffusion::limits;
use sdbench_diffusion::{BackendRequest, ComponentFiles, DeviceRequest, MemoryProfile, Precision};
use sdbench_generate::ModelSetup;
use sdbench_hub::DEFAULT_MODEL;
use sdbench_session::device_memory::{memory_limit_bytes, MemoryChoice, MAX_MEMORY_LIMIT_GIB};
use sdbench_session::ModelName;

use crate::errors::{ErrorKind, UiError, UiResult};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default, rename_all = "camelCase")]
pub struct Settings {
    /// A Hub id, a diffusers folder or .safetensors checkpoint on this machine, or `synthetic`.
    pub model: String,
    /// For a model file: a diffusers folder whose configs describe it (a checkpoint that is not
    /// SD1.5-, SD2.1- or SDXL-base-shaped; a transformer file whose configs are not fetched).
    pub model_config: Option<String>,
    /// For a model file: its text encoders as files of their own, in any order (the CLI's
    /// `--text-encoder`, given once for each). Settings saved before this list read as one
    /// `textEncoder` text, its files separated by `;`.
    #[serde(alias = "textEncoder", deserialize_with = "one_or_several_files")]
    pub text_encoders: Vec<String>,
    /// For a model file: its VAE file (the CLI's `--vae`).
    pub vae: Option<String>,
    /// A `BackendRequest` name: auto, cuda, rocm, vulkan, metal, dx12, cpu…
    pub backend: String,
    /// Which of the backend's devices, by the number System lists (none: the best).
    pub device: Option<usize>,
    /// auto, f32 or f16.
    pub precision: String,
    /// The memory profile: full, balanced, low, minimal, cpu (see `MemoryProfile`) or auto.
    pub memory: String,
    /// The device memory in GiB that the fit check and `auto` assume instead of what the GPU
    /// has free (the CLI's `--memory-limit`): a smaller GPU's size, or one for a device that no
    /// telemetry reads (whose size is otherwise unknown, so `auto` keeps full).
    pub memory_limit_gib: Option<f64>,
    /// Where results are submitted (none: submission is off).
    pub submit_endpoint: Option<String>,
    /// Where to look for updates instead of the endpoint built into the app.
    pub update_endpoint: Option<String>,
    /// Worker threads of the CPU backend (none: one per physical core). The pool is built once
    /// per process, so a change takes effect when the app next starts.
    pub cpu_threads: Option<usize>,
    /// Folders to look for models in besides the usual ones (the Hugging Face cache, ComfyUI's,
    /// AUTOMATIC1111's, Forge's, InvokeAI's, stable-diffusion.cpp's): the model choice lists what
    /// they hold, as `sdbench models --models-dir` does. Nothing is copied or moved.
    pub model_dirs: Vec<String>,
}

/// The text encoder files as saved: a list, or the one text of earlier versions (files
/// separated by `;`, or null).
fn one_or_several_files<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Saved {
        Several(Vec<String>),
        Text(Option<String>),
    }
    Ok(match Saved::deserialize(d)? {
        Saved::Several(files) => files,
        Saved::Text(text) => text
            .unwrap_or_default()
            .split(';')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect(),
    })
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            model: DEFAULT_MODEL.into(),
            model_config: None,
            text_encoders: Vec::new(),
            vae: None,
            backend: "auto".into(),
            device: None,
            precision: "auto".into(),
            memory: "full".into(),
            memory_limit_gib: None,
            submit_endpoint: None,
            update_endpoint: None,
            cpu_threads: None,
            model_dirs: Vec::new(),
        }
    }
}

/// The most CPU threads a setting may ask for.
pub const MAX_CPU_THREADS: usize = 1024;

impl Settings {
    /// Reads the file; a missing file gives the defaults, a damaged one an error naming it.
    pub fn load(path: &Path) -> UiResult<Settings> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                UiError::new(
                    ErrorKind::BadInput,
                    format!("The settings file {} is damaged: {e}", path.display()),
                    "Delete it (SD Bench starts again with default settings) or fix it by hand.",
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(e) => Err(UiError::from(e)),
        }
    }

    /// Checks every field, then writes the file atomically.
    pub fn save(&self, path: &Path) -> UiResult<()> {
        self.validate()?;
        let text = serde_json::to_vec_pretty(self).map_err(|e| UiError::internal(e.to_string()))?;
        sdbench_bench::result::write_atomically(path, &text).map_err(UiError::from)
    }

    pub fn validate(&self) -> UiResult<()> {
        self.device_request()?;
        self.precision()?;
        self.model_name()?;
        self.memory_limit()?;
        if let Some(n) = self.cpu_threads {
            if n == 0 || n > MAX_CPU_THREADS {
                return Err(UiError::bad_input(
                    format!("{n} CPU threads is out of range"),
                    format!(
                        "Use 1 to {MAX_CPU_THREADS}, or leave it empty for one per physical core."
                    ),
                ));
            }
        }
        for dir in &self.model_dirs {
            if !Path::new(dir).is_dir() {
                return Err(UiError::bad_input(
                    format!("Model folder {dir} is not a folder on this machine"),
                    "Name a folder that holds model files, or remove the line.",
                ));
            }
        }
        for (what, endpoint) in [
            ("submission endpoint", &self.submit_endpoint),
            ("update endpoint", &self.update_endpoint),
        ] {
            if let Some(url) = endpoint {
                check_endpoint(what, url)?;
            }
        }
        Ok(())
    }

    pub fn backend_request(&self) -> UiResult<BackendRequest> {
        BackendRequest::from_name(&self.backend).map_err(|e| {
            UiError::bad_input(
                e.to_string(),
                format!("Choose one of: {}.", BackendRequest::NAMES.join(", ")),
            )
        })
    }

    /// The backend and device number; whether that device exists is found when a run selects it.
    /// The `cpu` memory profile runs on the CPU backend.
    pub fn device_request(&self) -> UiResult<DeviceRequest> {
        self.for_memory_profile(
            DeviceRequest {
                backend: self.backend_request()?,
                index: self.device,
            },
            &self.backend,
        )
    }

    /// `request` (the backend named `backend_name`) as the memory profile needs it: the `cpu`
    /// profile runs on the CPU backend, and refuses another backend named for it.
    pub fn for_memory_profile(
        &self,
        mut request: DeviceRequest,
        backend_name: &str,
    ) -> UiResult<DeviceRequest> {
        if self.memory_profile()?.needs_cpu_backend() {
            match request.backend {
                BackendRequest::Auto | BackendRequest::Cpu => request.backend = BackendRequest::Cpu,
                _ => {
                    return Err(UiError::bad_input(
                        format!(
                            "The cpu memory profile runs everything on the CPU, but the backend is {backend_name}"
                        ),
                        "Set the backend to auto or cpu, or choose another memory profile.",
                    ))
                }
            }
        }
        Ok(request)
    }

    /// The Create screen's model setup: the settings' model, memory and precision on the
    /// backend `backend` names (None or empty: the settings' backend and device), held to the
    /// memory profile.
    pub fn model_setup(&self, backend: Option<&str>) -> UiResult<ModelSetup> {
        let device = match backend.filter(|name| !name.is_empty()) {
            Some(name) => {
                let request = BackendRequest::from_name(name)
                    .map_err(|e| UiError::bad_input(e.to_string(), "Choose a listed backend."))?;
                self.for_memory_profile(DeviceRequest::from(request), name)?
            }
            None => self.device_request()?,
        };
        Ok(ModelSetup {
            label: self.model.clone(),
            model: self.model_name()?,
            device,
            memory: MemoryChoice {
                profile: self.memory_profile()?,
                auto: self.memory_auto(),
                limit: self.memory_limit()?,
            },
            precision: self.precision()?,
        })
    }

    /// The profile chosen; `full` stands in for `auto` until a run resolves it from the device's
    /// memory (`memory_auto`).
    pub fn memory_profile(&self) -> UiResult<MemoryProfile> {
        if self.memory_auto() {
            return Ok(MemoryProfile::Full);
        }
        MemoryProfile::from_name(&self.memory).ok_or_else(|| {
            UiError::bad_input(
                format!("Unknown memory profile {:?}", self.memory),
                format!("Choose one of: {}, auto.", MemoryProfile::NAMES.join(", ")),
            )
        })
    }

    /// The memory limit in bytes (`None`: the device's own figure).
    pub fn memory_limit(&self) -> UiResult<Option<u64>> {
        let Some(gib) = self.memory_limit_gib else {
            return Ok(None);
        };
        memory_limit_bytes(gib).map(Some).ok_or_else(|| {
            UiError::bad_input(
                format!("A device memory of {gib} GiB is out of range"),
                format!(
                    "Give the GPU's memory in GiB, more than 0 and at most {MAX_MEMORY_LIMIT_GIB}, or leave it empty for what the GPU has free."
                ),
            )
        })
    }

    /// `auto`: each run picks the fastest profile that fits the device (`choose_auto`).
    pub fn memory_auto(&self) -> bool {
        self.memory == "auto"
    }

    /// `None`: f16 where the device supports it.
    pub fn precision(&self) -> UiResult<Option<Precision>> {
        limits::precision_choice(&self.precision).map_err(|_| {
            UiError::bad_input(
                format!("Unknown precision {:?}", self.precision),
                format!("Choose {}.", limits::PRECISION_CHOICES.join(", ")),
            )
        })
    }

    pub fn model_name(&self) -> UiResult<ModelName> {
        let model = self.model.trim();
        if model.is_empty() {
            return Err(UiError::bad_input(
                "No model is set",
                format!("Enter a Hub id such as {DEFAULT_MODEL}, or choose a model folder."),
            ));
        }
        let path = |setting: &Option<String>| {
            setting
                .as_deref()
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(PathBuf::from)
        };
        let parts = ComponentFiles {
            text_encoders: self
                .text_encoders
                .iter()
                .map(|f| f.trim())
                .filter(|c| !c.is_empty())
                .map(PathBuf::from)
                .collect(),
            vae: path(&self.vae),
        };
        let config = path(&self.model_config);
        ModelName::parse(model, config.as_deref(), &parts).map_err(|e| {
            UiError::bad_input(
                e.to_string(),
                "Choose an existing model folder or .safetensors file, or enter a Hub id.",
            )
        })
    }

    /// Whether the model setting is the untouched default, which stands for each workload's own
    /// model.
    pub fn model_is_default(&self) -> bool {
        self.model.trim() == DEFAULT_MODEL
            && self.model_config.is_none()
            && self.text_encoders.is_empty()
            && self.vae.is_none()
    }

    /// The model a benchmark of `workload` runs: the setting, except that the untouched default
    /// stands for each workload's own model (SDXL's workload runs SDXL base, not SD1.5).
    pub fn model_name_for(&self, workload: &Workload) -> UiResult<ModelName> {
        if self.model_is_default() {
            return ModelName::parse(workload.preset.repository(), None, &Default::default())
                .map_err(|e| UiError::internal(e.to_string()));
        }
        self.model_name()
    }

    /// The model as the benchmark runner takes it. A Hub model that is not cached is downloaded
    /// (the Benchmark screen offers the download first); it never falls back to synthetic weights.
    pub fn model_choice_for(&self, workload: &Workload) -> UiResult<ModelChoice> {
        Ok(ModelChoice::from_name(
            self.model_name_for(workload)?,
            "main",
            false,
        ))
    }
}

/// An endpoint must be https, except on this machine (a local test server).
pub fn check_endpoint(what: &str, url: &str) -> UiResult<()> {
    let hint = "Enter an https:// address (http:// only for 127.0.0.1 or localhost).";
    let rest = if let Some(rest) = url.strip_prefix("https://") {
        rest
    } else if let Some(rest) = url.strip_prefix("http://") {
        let host = rest.split(['/', '?']).next().unwrap_or("");
        let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
        if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
            return Err(UiError::bad_input(
                format!("The {what} {url} is not encrypted"),
                hint,
            ));
        }
        rest
    } else {
        return Err(UiError::bad_input(
            format!("The {what} {url:?} is not a web address"),
            hint,
        ));
    };
    if rest.is_empty() || rest.starts_with('/') || rest.contains(char::is_whitespace) {
        return Err(UiError::bad_input(
            format!("The {what} {url:?} has no host"),
            hint,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip_and_a_missing_file_is_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        assert_eq!(Settings::load(&path).unwrap(), Settings::default());
        let s = Settings {
            backend: "cpu".into(),
            device: Some(0),
            submit_endpoint: Some("https://example.org/api/results".into()),
            cpu_threads: Some(2),
            memory: "auto".into(),
            memory_limit_gib: Some(6.0),
            ..Settings::default()
        };
        s.save(&path).unwrap();
        assert_eq!(Settings::load(&path).unwrap(), s);
        assert_eq!(s.memory_limit().unwrap(), Some(6 << 30));
    }

    #[test]
    fn bad_values_are_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        for change in [
            |s: &mut Settings| s.backend = "tpu".into(),
            |s: &mut Settings| s.precision = "f8".into(),
            |s: &mut Settings| s.memory = "tiny".into(),
            |s: &mut Settings| {
                s.memory = "cpu".into();
                s.backend = "vulkan".into()
            },
            |s: &mut Settings| s.model = "/no/such/folder".into(),
            |s: &mut Settings| s.model = "  ".into(),
            |s: &mut Settings| s.submit_endpoint = Some("http://example.org/x".into()),
            |s: &mut Settings| s.update_endpoint = Some("ftp://example.org".into()),
            |s: &mut Settings| s.update_endpoint = Some("https://".into()),
            |s: &mut Settings| s.cpu_threads = Some(0),
            |s: &mut Settings| s.cpu_threads = Some(MAX_CPU_THREADS + 1),
            |s: &mut Settings| s.memory_limit_gib = Some(0.0),
            |s: &mut Settings| s.memory_limit_gib = Some(-4.0),
            |s: &mut Settings| s.memory_limit_gib = Some(MAX_MEMORY_LIMIT_GIB * 2.0),
        ] {
            let mut s = Settings::default();
            change(&mut s);
            let e = s.save(&path).unwrap_err();
            assert_eq!(e.kind, ErrorKind::BadInput, "{e:?}");
            assert!(!path.exists());
        }
        // The cpu profile runs on the CPU backend.
        let cpu = Settings {
            memory: "cpu".into(),
            ..Settings::default()
        };
        assert_eq!(cpu.device_request().unwrap().backend, BackendRequest::Cpu);
        // A backend the Create screen names is held to the profile too.
        let named = |backend| cpu.model_setup(backend).map(|setup| setup.device.backend);
        assert_eq!(named(Some("auto")).unwrap(), BackendRequest::Cpu);
        assert_eq!(named(Some("")).unwrap(), BackendRequest::Cpu);
        let e = named(Some("vulkan")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadInput);
        assert!(e.message.contains("but the backend is vulkan"), "{e:?}");
        let e = named(Some("warp-drive")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadInput);
        assert!(e.message.contains("warp-drive"), "{e:?}");
        check_endpoint("x", "http://127.0.0.1:8080/latest.json").unwrap();
        check_endpoint("x", "http://localhost/latest.json").unwrap();
    }

    #[test]
    fn the_default_model_stands_for_each_workloads_own() {
        let hub_id = |name: ModelName| match name {
            ModelName::Hub { id, .. } => id.to_string(),
            other => panic!("{other:?}"),
        };
        let s = Settings::default();
        for workload in [
            Workload::standard(),
            Workload::named("sdxl-1024-20").unwrap(),
        ] {
            assert_eq!(
                hub_id(s.model_name_for(&workload).unwrap()),
                workload.preset.repository()
            );
        }
        let chosen = Settings {
            model: "someone/my-sd15".into(),
            ..Settings::default()
        };
        assert_eq!(
            hub_id(
                chosen
                    .model_name_for(&Workload::named("sdxl-1024-20").unwrap())
                    .unwrap()
            ),
            "someone/my-sd15"
        );
    }

    /// The text encoder and VAE settings go with a model file, as the CLI's options do; older
    /// settings files without them still load.
    #[test]
    fn component_files_go_with_a_model_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("transformer.safetensors");
        std::fs::write(&file, b"x").unwrap();
        let vae = dir.path().join("vae.safetensors");
        std::fs::write(&vae, b"x").unwrap();
        let with_files = Settings {
            model: file.display().to_string(),
            text_encoders: vec![format!(" {} ", vae.display()), file.display().to_string()],
            vae: Some(format!("  {}  ", vae.display())),
            ..Settings::default()
        };
        match with_files.model_name().unwrap() {
            ModelName::Local(sdbench_diffusion::ModelSource::Checkpoint { parts, .. }) => {
                assert_eq!(parts.text_encoders, [vae.clone(), file.clone()]);
                assert_eq!(parts.vae.as_deref(), Some(vae.as_path()));
            }
            other => panic!("{other:?}"),
        }
        let on_a_hub_id = Settings {
            vae: Some(vae.display().to_string()),
            ..Settings::default()
        };
        assert!(!on_a_hub_id.model_is_default());
        let e = on_a_hub_id.model_name().unwrap_err();
        assert!(e.message.contains("go with a model file"), "{e:?}");
        let old: Settings = serde_json::from_str(r#"{"model": "synthetic"}"#).unwrap();
        assert_eq!((old.text_encoders.len(), old.vae), (0, None));
        // The single text setting of earlier versions: one file, or several separated by `;`.
        let earlier = |json: &str| {
            serde_json::from_str::<Settings>(json)
                .unwrap()
                .text_encoders
        };
        assert_eq!(
            earlier(r#"{"textEncoder": "a.safetensors; b.gguf;"}"#),
            ["a.safetensors", "b.gguf"]
        );
        assert!(earlier(r#"{"textEncoder": null}"#).is_empty());
        let saved = serde_json::to_string(&with_files).unwrap();
        assert!(saved.contains(r#""textEncoders":["#), "{saved}");
        assert_eq!(
            serde_json::from_str::<Settings>(&saved).unwrap(),
            with_files
        );
    }

    #[test]
    fn a_damaged_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, b"{ not json").unwrap();
        let e = Settings::load(&path).unwrap_err();
        assert!(e.message.contains("settings.json"), "{e:?}");
    }
}
