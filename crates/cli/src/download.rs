//! `sdbench download`: fetch a model into the Hugging Face cache.

use anyhow::Context;
use sdbench_hub::{HubSettings, RepoId, DEFAULT_MODEL};
use sdbench_session::hub_components::engine_hub;

use crate::progress::{human_bytes, DownloadBar};

#[derive(clap::Args, Debug)]
pub struct DownloadArgs {
    /// Hub model id.
    #[arg(long, default_value = DEFAULT_MODEL)]
    model: String,
    /// Branch or commit.
    #[arg(long, default_value = "main")]
    revision: String,
}

pub fn run(args: DownloadArgs) -> anyhow::Result<()> {
    let (id, note) = RepoId::parse(&args.model)?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    let settings = HubSettings::from_env();
    let hub = engine_hub(settings.clone());
    let cancel = crate::interrupt::token();
    let mut bar = DownloadBar::new();
    let result = hub.download(&id, &args.revision, &mut |p| bar.update(p), &|| {
        cancel.is_cancelled()
    });
    bar.finish();
    let snapshot = result.with_context(|| format!("downloading {id} failed"))?;
    let total: u64 = snapshot.files.iter().map(|f| f.size).sum();
    println!(
        "{id} @ {} ready: {} files, {} ({} downloaded now)\n{}",
        &snapshot.commit[..snapshot.commit.len().min(10)],
        snapshot.files.len(),
        human_bytes(total),
        human_bytes(snapshot.downloaded_bytes),
        snapshot.path.display()
    );
    eprintln!(
        "note: {}",
        sdbench_session::model_name::license_note(&id, snapshot.license.as_deref())
    );
    Ok(())
}
