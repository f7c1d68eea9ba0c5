//! "Check for updates" through tauri-plugin-updater, against the endpoint in the settings or the
//! one built into the app's config.

use serde::Serialize;
use tauri::State;
use tauri_plugin_updater::{Updater, UpdaterBuilder};

use crate::errors::{ErrorKind, UiError, UiResult};
use crate::settings::check_endpoint;
use crate::state::AppState;

/// The app's handle to the updater plugin, managed by the real app once the plugin is set up
/// (commands stay free of the runtime type, so tests run them on the mock runtime).
pub struct Updates {
    builder: Box<dyn Fn() -> UpdaterBuilder + Send + Sync>,
    restart: Box<dyn Fn() + Send + Sync>,
    pub current_version: String,
}

impl Updates {
    pub fn new(
        builder: impl Fn() -> UpdaterBuilder + Send + Sync + 'static,
        restart: impl Fn() + Send + Sync + 'static,
        current_version: String,
    ) -> Self {
        Updates {
            builder: Box::new(builder),
            restart: Box::new(restart),
            current_version,
        }
    }

    fn updater(&self, state: &AppState) -> UiResult<Updater> {
        let mut builder = (self.builder)();
        if let Some(endpoint) = state.settings().update_endpoint {
            check_endpoint("update endpoint", &endpoint)?;
            let url = endpoint.parse().map_err(|e| {
                UiError::bad_input(
                    format!("The update endpoint {endpoint} is not a valid address: {e}"),
                    "Correct it in System.",
                )
            })?;
            builder = builder.endpoints(vec![url]).map_err(update_error)?;
        }
        builder.build().map_err(update_error)
    }
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct UpdateInfo {
    pub current_version: String,
    pub available: bool,
    pub version: Option<String>,
    pub notes: Option<String>,
    pub date: Option<String>,
}

fn update_error(e: tauri_plugin_updater::Error) -> UiError {
    UiError::new(
        ErrorKind::Network,
        format!("Checking for updates failed: {e}"),
        "Check the internet connection and the update endpoint in System, then try again.",
    )
}

/// Asks the update endpoint whether a newer version exists.
#[tauri::command]
pub async fn check_for_update(
    updates: State<'_, Updates>,
    state: State<'_, AppState>,
) -> UiResult<UpdateInfo> {
    let updater = updates.updater(state.inner())?;
    let update = updater.check().await.map_err(update_error)?;
    let current_version = updates.current_version.clone();
    Ok(match update {
        Some(u) => UpdateInfo {
            current_version,
            available: true,
            version: Some(u.version.clone()),
            notes: u.body.clone(),
            date: u.date.map(|d| d.to_string()),
        },
        None => UpdateInfo {
            current_version,
            available: false,
            version: None,
            notes: None,
            date: None,
        },
    })
}

/// Downloads the update, checks its signature against the public key in the app's config,
/// installs it and restarts the app.
#[tauri::command]
pub async fn install_update(
    updates: State<'_, Updates>,
    state: State<'_, AppState>,
) -> UiResult<()> {
    if state.jobs.running().is_some() {
        return Err(UiError::new(
            ErrorKind::Busy,
            "A job is running",
            "Wait for it to finish or cancel it before updating.",
        ));
    }
    let updater = updates.updater(state.inner())?;
    let Some(update) = updater.check().await.map_err(update_error)? else {
        return Err(UiError::not_found("There is no newer version"));
    };
    update
        .download_and_install(|_, _| {}, || {})
        .await
        .map_err(update_error)?;
    (updates.restart)();
    Ok(())
}
