//! SD Bench's desktop shell: Tauri commands over the benchmark crates, a job registry for long
//! work, and the app's settings and data folder. No model or metric code lives here.

pub mod commands;
pub mod errors;
pub mod events;
pub mod jobs;
pub mod settings;
pub mod state;
#[cfg(test)]
mod wire_types;

use tauri::{Builder, Runtime};

use crate::state::AppState;

/// Registers the app's state and every command on `builder` (the real app, or Tauri's mock
/// runtime in tests).
pub fn with_commands<R: Runtime>(builder: Builder<R>, state: AppState) -> Builder<R> {
    builder
        .manage(state)
        .invoke_handler(tauri::generate_handler![
            commands::system::system_info,
            commands::system::get_settings,
            commands::system::request_limits,
            commands::system::save_settings,
            commands::system::startup_notes,
            commands::jobs::cancel_job,
            commands::jobs::job_status,
            commands::jobs::running_job,
            commands::jobs::attach_job,
            commands::benchmark::workloads,
            commands::benchmark::model_status,
            commands::benchmark::start_download,
            commands::benchmark::start_benchmark,
            commands::compare::start_compare_backends,
            commands::benchmark::benchmark_view,
            commands::benchmark::save_result,
            commands::benchmark::export_report,
            commands::benchmark::submission_preview,
            commands::benchmark::submit_result,
            commands::create::schedulers,
            commands::create::start_generation,
            commands::create::save_image,
            commands::create::read_image,
            commands::history::history_list,
            commands::history::history_get,
            commands::history::history_delete,
            commands::history::history_export,
            commands::history::run_charts,
            commands::cache::cache_info,
            commands::models::local_models,
            commands::cache::clean_cache,
            commands::cache::clean_kernel_cache,
            commands::updates::check_for_update,
            commands::updates::install_update,
        ])
}

/// Starts the desktop app.
pub fn run() {
    sdbench_diffusion::device::quiet_vulkan_without_desktop_session();
    let mut context = tauri::generate_context!();
    allow_local_update_endpoints(&mut context);
    // Windows draws the window with Edge WebView2: without it the app would fail with no word.
    #[cfg(windows)]
    if let Err(e) = tauri::webview_version() {
        eprintln!("SD Bench: WebView2 is not available: {e}");
        tell_startup_failure(
            context,
            webview2_missing_text(),
            Some(("Open the download page", WEBVIEW2_DOWNLOAD)),
        );
    }
    let state = match AppState::from_env() {
        Ok(state) => state,
        Err(e) => tell_startup_failure(context, format!("{}\n\n{}", e.message, e.hint), None),
    };
    // Before anything runs on the CPU backend's pool, which is built once per process.
    if let Err(e) = sdbench_diffusion::device::set_cpu_threads(state.settings().cpu_threads) {
        eprintln!("SD Bench: the CPU thread setting was not applied: {e}");
    }
    let app = with_commands(Builder::default(), state)
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_updater::Builder::new().build())
        .setup(|app| {
            use tauri::Manager;
            use tauri_plugin_updater::UpdaterExt;
            let handle = app.handle().clone();
            let restart = app.handle().clone();
            app.manage(commands::updates::Updates::new(
                move || handle.updater_builder(),
                move || restart.restart(),
                app.package_info().version.to_string(),
            ));
            Ok(())
        })
        .run(context);
    if let Err(e) = app {
        eprintln!("SD Bench stopped: {e}");
        std::process::exit(1);
    }
}

/// A double-clicked app has no terminal: when SD Bench cannot start (say its data folder cannot
/// be created), it says why in a message box as well as on stderr, and exits with status 1 once
/// the box is closed. `link` adds a button that opens a web page (label, address).
fn tell_startup_failure(
    mut context: tauri::Context<tauri::Wry>,
    text: String,
    link: Option<(&'static str, &'static str)>,
) -> ! {
    eprintln!("SD Bench cannot start: {text}");
    // No main window: its page would call commands that need the state that failed.
    context.config_mut().app.windows.clear();
    let shown = Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .setup(move |app| {
            use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
            let handle = app.handle().clone();
            let mut dialog = app
                .dialog()
                .message(text)
                .title(STARTUP_FAILURE_TITLE)
                .kind(MessageDialogKind::Error);
            if let Some((label, _)) = link {
                dialog = dialog.buttons(MessageDialogButtons::OkCancelCustom(
                    label.into(),
                    "Close".into(),
                ));
            }
            dialog.show(move |chosen| {
                if let (true, Some((_, address))) = (chosen, link) {
                    open_in_browser(address);
                }
                handle.exit(1)
            });
            Ok(())
        })
        .run(context);
    if let Err(e) = shown {
        eprintln!("SD Bench could not show that message: {e}");
    }
    std::process::exit(1);
}

/// Microsoft's WebView2 page, with the Evergreen installer.
#[cfg_attr(not(windows), allow(dead_code))]
const WEBVIEW2_DOWNLOAD: &str = "https://developer.microsoft.com/microsoft-edge/webview2/";

/// What the app says on a Windows machine without WebView2.
#[cfg_attr(not(windows), allow(dead_code))]
fn webview2_missing_text() -> String {
    format!(
        "SD Bench needs the Microsoft Edge WebView2 Runtime to show its window, and this computer \
         does not have it.\n\nInstall the \"Evergreen Bootstrapper\" from {WEBVIEW2_DOWNLOAD} \
         and start SD Bench again. (The sdbench command-line tool works without it.)"
    )
}

/// Opens an address in the default browser, without waiting for it.
fn open_in_browser(address: &str) {
    let opener = if cfg!(windows) {
        "explorer"
    } else if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener).arg(address).spawn() {
        eprintln!("SD Bench could not open {address}: {e}");
    }
}

/// The title of the startup failure's message box (the end-to-end test finds it by this).
const STARTUP_FAILURE_TITLE: &str = "SD Bench cannot start";

/// The updater refuses plain http unless its config allows it. SD Bench checks every update
/// endpoint itself (`settings::check_endpoint`: https, or http only on this machine, for a local
/// test server), so the plugin may accept http.
fn allow_local_update_endpoints<R: Runtime>(context: &mut tauri::Context<R>) {
    if let Some(serde_json::Value::Object(updater)) =
        context.config_mut().plugins.0.get_mut("updater")
    {
        updater.insert(
            "dangerousInsecureTransportProtocol".into(),
            serde_json::Value::Bool(true),
        );
    }
}
