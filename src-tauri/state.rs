//! What the app keeps while it runs: where its files are, the settings, the jobs, and the model
//! loaded for the Create screen (kept between images so the second one starts at once).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use sdbench_generate::Generator;
use sdbench_history::History;
use sdbench_hub::HubSettings;

use crate::errors::{UiError, UiResult};
use crate::jobs::Jobs;
use crate::settings::Settings;

/// The app's files, all under one data folder (shared with the `sdbench` CLI, so both see one
/// history).
#[derive(Debug, Clone)]
pub struct Paths {
    pub data_dir: PathBuf,
    pub history: PathBuf,
    pub settings: PathBuf,
    /// `{runs}/{run id}/result.json` and its images.
    pub runs: PathBuf,
    /// Create-screen images, `{images}/{id}.png`.
    pub images: PathBuf,
    pub outbox: PathBuf,
}

impl Paths {
    pub fn under(data_dir: &Path) -> Paths {
        Paths {
            data_dir: data_dir.to_path_buf(),
            history: data_dir.join("history.sqlite"),
            settings: data_dir.join("settings.json"),
            runs: data_dir.join("runs"),
            images: data_dir.join("images"),
            outbox: data_dir.join("outbox"),
        }
    }
}

/// Cheap to clone: a command hands a clone to the thread that does its work.
#[derive(Clone)]
pub struct AppState {
    pub paths: Paths,
    pub hub: HubSettings,
    settings: Arc<Mutex<Settings>>,
    pub jobs: Jobs,
    /// The Create screen's model, kept between images.
    generator: Arc<Mutex<Generator>>,
    /// What the person should hear when the window opens (e.g. a damaged settings file set aside).
    pub startup_notes: Vec<String>,
    /// Where compiled GPU kernels are kept (`None`: not kept), shown and cleaned with the models.
    pub kernel_cache: Option<PathBuf>,
}

impl AppState {
    /// The state over `data_dir` (created if missing) with the model cache `hub`.
    pub fn new(data_dir: &Path, hub: HubSettings) -> UiResult<AppState> {
        let paths = Paths::under(data_dir);
        for dir in [&paths.data_dir, &paths.runs, &paths.images] {
            std::fs::create_dir_all(dir).map_err(|e| {
                UiError::from(std::io::Error::new(
                    e.kind(),
                    format!("cannot create {}: {e}", dir.display()),
                ))
            })?;
        }
        let mut startup_notes = Vec::new();
        let settings = match Settings::load(&paths.settings) {
            Ok(settings) => settings,
            Err(e) if paths.settings.is_file() => {
                // Keep the damaged file for the person to look at; start with the defaults.
                let aside = paths.settings.with_extension("damaged.json");
                std::fs::rename(&paths.settings, &aside)?;
                startup_notes.push(format!(
                    "{} It was moved to {} and SD Bench started with default settings.",
                    e.message,
                    aside.display()
                ));
                Settings::default()
            }
            Err(e) => return Err(e),
        };
        Ok(AppState {
            startup_notes,
            paths,
            hub,
            settings: Arc::new(Mutex::new(settings)),
            jobs: Jobs::default(),
            generator: Arc::new(Mutex::new(Generator::default())),
            kernel_cache: sdbench_diffusion::kernel_cache::default_dir(),
        })
    }

    /// The state a person's app uses: `SDBENCH_DATA_DIR` or the platform data folder, and the
    /// Hugging Face cache the environment names.
    pub fn from_env() -> UiResult<AppState> {
        AppState::new(&sdbench_bench::submit::data_dir(), HubSettings::from_env())
    }

    pub fn settings(&self) -> Settings {
        self.settings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Validates and saves `settings`. (The Create screen reloads its model when the model,
    /// backend or precision it was loaded with no longer match.)
    pub fn set_settings(&self, settings: Settings) -> UiResult<()> {
        settings.save(&self.paths.settings)?;
        let mut current = self.settings.lock().unwrap_or_else(|p| p.into_inner());
        *current = settings;
        Ok(())
    }

    pub fn history(&self) -> UiResult<History> {
        Ok(History::open(&self.paths.history)?)
    }

    pub fn generator(&self) -> MutexGuard<'_, Generator> {
        self.generator.lock().unwrap_or_else(|p| p.into_inner())
    }
}
