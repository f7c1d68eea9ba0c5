//! Ctrl-C cancels the running job cleanly (a second Ctrl-C exits at once).

use std::sync::OnceLock;

use sdbench_diffusion::CancelToken;

/// The process-wide cancel token, armed on first use.
pub fn token() -> CancelToken {
    static TOKEN: OnceLock<CancelToken> = OnceLock::new();
    TOKEN
        .get_or_init(|| {
            let token = CancelToken::new();
            let handler = token.clone();
            let _ = ctrlc::set_handler(move || {
                if handler.is_cancelled() {
                    std::process::exit(130);
                }
                eprintln!("\ncancelling (Ctrl-C again to quit at once)…");
                handler.cancel();
            });
            token
        })
        .clone()
}
