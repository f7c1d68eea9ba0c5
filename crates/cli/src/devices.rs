//! `sdbench devices`: what each backend found.

use sdbench_diffusion::device::{probe_all, select};
use sdbench_diffusion::BackendRequest;

#[derive(clap::Args)]
pub struct DevicesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: DevicesArgs) -> anyhow::Result<()> {
    let statuses = probe_all();
    let auto = select(BackendRequest::Auto);
    if args.json {
        let list: Vec<_> = statuses
            .iter()
            .map(|s| {
                serde_json::json!({
                    "backend": s.kind.name(),
                    "usable": s.usable,
                    "detail": s.detail,
                    "devices": s.devices,
                })
            })
            .collect();
        let auto = match &auto {
            Ok(d) => {
                serde_json::json!({"backend": d.kind.name(), "device": d.name, "precision": d.default_precision().name()})
            }
            Err(e) => serde_json::json!({"error": e.to_string()}),
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"backends": list, "auto": auto}))?
        );
        return Ok(());
    }
    println!("{:<8} {:<7} DETAIL", "BACKEND", "USABLE");
    for s in &statuses {
        println!(
            "{:<8} {:<7} {}",
            s.kind.name(),
            if s.usable { "yes" } else { "no" },
            s.detail
        );
        for d in &s.devices {
            println!("{:<16} - {d}", "");
        }
    }
    match auto {
        Ok(d) => println!(
            "\nauto selects: {} on {} ({})",
            d.kind.name(),
            d.name,
            d.default_precision().name()
        ),
        Err(e) => println!("\nauto selects nothing: {e}"),
    }
    Ok(())
}
