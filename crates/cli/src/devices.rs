//! `sdbench devices`: what each backend found, numbered as `--device N` takes them.

use sdbench_diffusion::device::{probe_all, select};
use sdbench_diffusion::{BackendRequest, DeviceInfo};

#[derive(clap::Args)]
pub struct DevicesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

fn device_json(d: &DeviceInfo) -> serde_json::Value {
    serde_json::json!({
        "index": d.index,
        "name": d.name,
        "class": d.class,
        "driver": d.driver,
        "memory_bytes": d.memory_bytes,
        "pci_bus": d.pci_bus,
        "software": d.software,
    })
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
                    "devices": s.devices.iter().map(device_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        let auto = match &auto {
            Ok(d) => serde_json::json!({
                "backend": d.kind.name(),
                "device": d.info.name,
                "index": d.info.index,
                "precision": d.default_precision().name(),
            }),
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
            println!("{:<16} {}: {}", "", d.index, d.describe());
        }
    }
    match auto {
        Ok(d) => println!(
            "\nauto selects: {} device {}, {} ({}); pick another with --backend NAME --device N",
            d.kind.name(),
            d.info.index,
            d.info.name,
            d.default_precision().name()
        ),
        Err(e) => println!("\nauto selects nothing: {e}"),
    }
    Ok(())
}
