//! The TypeScript declarations of every type that crosses to the window, generated from the Rust
//! types with ts-rs into `ui/src/generated/wire.ts`. ts-rs reads our serde attributes (tags,
//! renames, flattening, skipped fields), which is why it was chosen over specta: the commands stay
//! plain Tauri commands and nothing about how the types serialize changes. The test below fails
//! when the file is not what the types declare now; `SDBENCH_WRITE_TYPES=1` rewrites it:
//!
//! ```sh
//! source scripts/build-env && SDBENCH_WRITE_TYPES=1 cargo test "${test_build[@]}" --lib wire_types
//! ```

use std::collections::BTreeSet;

use ts_rs::TS;

/// One exported type: its TypeScript name, declaration and the names of the types it refers to.
struct Declared {
    name: String,
    decl: String,
    needs: Vec<String>,
}

fn declared<T: TS + 'static>() -> Declared {
    Declared {
        name: T::name(),
        decl: T::decl(),
        needs: T::dependencies().into_iter().map(|d| d.ts_name).collect(),
    }
}

/// Every type the window receives or sends, with everything they refer to.
fn wire_types() -> Vec<Declared> {
    use crate::commands::{benchmark, cache, create, history, system, updates};
    use sdbench_bench::{result, workload};
    use sdbench_session::{error, events, vram_report};
    vec![
        // Errors and job events.
        declared::<crate::errors::UiError>(),
        declared::<error::ErrorKind>(),
        declared::<crate::events::JobEvent>(),
        declared::<crate::events::JobNews>(),
        declared::<events::Event>(),
        declared::<events::LiveSample>(),
        declared::<sdbench_hub::DownloadProgress>(),
        declared::<vram_report::VramPhase>(),
        declared::<vram_report::VramReport>(),
        declared::<crate::jobs::JobStatus>(),
        declared::<crate::jobs::JobKind>(),
        declared::<crate::jobs::JobState>(),
        declared::<serde_json::Value>(),
        // Settings and the system.
        declared::<crate::settings::Settings>(),
        declared::<system::SystemReport>(),
        declared::<system::BackendReport>(),
        declared::<system::DeviceReport>(),
        declared::<system::AutoChoice>(),
        declared::<system::RequestLimits>(),
        declared::<sdbench_telemetry::SystemInfo>(),
        declared::<sdbench_telemetry::GpuInfo>(),
        // Benchmarks and their results.
        declared::<workload::WorkloadCard>(),
        declared::<benchmark::BenchmarkRequest>(),
        declared::<benchmark::CustomRun>(),
        declared::<benchmark::ModelStatus>(),
        declared::<crate::commands::models::LocalModelView>(),
        declared::<crate::commands::models::ModelDefaults>(),
        declared::<crate::commands::models::GuidanceChoices>(),
        declared::<benchmark::OwnWorkload>(),
        declared::<benchmark::Downloaded>(),
        declared::<benchmark::ResultView>(),
        declared::<benchmark::BenchmarkOutput>(),
        declared::<crate::commands::compare::ComparisonView>(),
        declared::<sdbench_bench::sweep::PointRow>(),
        declared::<benchmark::SubmissionPreview>(),
        declared::<benchmark::Submitted>(),
        declared::<result::BenchResult>(),
        declared::<result::AppInfo>(),
        declared::<result::BackendInfo>(),
        declared::<result::PlacementRecord>(),
        declared::<result::WorkloadInfo>(),
        declared::<workload::PromptSeed>(),
        declared::<result::ModelRecord>(),
        declared::<result::FileRecord>(),
        declared::<result::ImageResult>(),
        declared::<result::Stages>(),
        declared::<result::ImageRecord>(),
        declared::<sdbench_bench::checks::ImageCheck>(),
        declared::<result::Scores>(),
        declared::<sdbench_bench::stats::Stats>(),
        declared::<result::Vram>(),
        declared::<result::Power>(),
        declared::<result::ColdStart>(),
        declared::<result::KernelColdStart>(),
        declared::<result::Telemetry>(),
        declared::<result::Window>(),
        declared::<result::Quality>(),
        declared::<result::StepTiming>(),
        declared::<sdbench_telemetry::SourceInfo>(),
        declared::<sdbench_telemetry::Vendor>(),
        declared::<sdbench_telemetry::Unavailable>(),
        declared::<sdbench_telemetry::Sample>(),
        declared::<sdbench_telemetry::Reading>(),
        declared::<sdbench_telemetry::HardwareState>(),
        declared::<sdbench_telemetry::hardware::Spread>(),
        declared::<sdbench_telemetry::hardware::ThrottleShare>(),
        // Create.
        declared::<create::CreateRequest>(),
        declared::<create::InitImageInput>(),
        declared::<create::PictureInput>(),
        declared::<create::CreateOutput>(),
        declared::<sdbench_history::Generation>(),
        declared::<sdbench_history::InitImageRecord>(),
        declared::<sdbench_history::SkipLayerRecord>(),
        // History.
        declared::<sdbench_history::RunSummary>(),
        declared::<sdbench_history::RunKind>(),
        declared::<sdbench_history::Filter>(),
        declared::<sdbench_history::Record>(),
        declared::<history::Chart>(),
        declared::<history::Charts>(),
        declared::<history::PictureSection>(),
        declared::<history::PicturePair>(),
        // The cache and updates.
        declared::<cache::CacheInfo>(),
        declared::<cache::KernelCacheInfo>(),
        declared::<cache::Cleaned>(),
        declared::<sdbench_hub::CachedModel>(),
        declared::<updates::UpdateInfo>(),
    ]
}

/// The file's text: one `export type` per declaration. serde_json writes 64-bit integers as JSON
/// numbers, which the window reads as numbers (exact up to 2^53: byte counts and seeds stay
/// below), so ts-rs's `bigint` for them is `number` here.
fn wire_ts(types: &[Declared]) -> Result<String, String> {
    let listed: BTreeSet<&str> = types.iter().map(|t| t.name.as_str()).collect();
    let mut missing = BTreeSet::new();
    for t in types {
        for name in &t.needs {
            if !listed.contains(name.as_str()) {
                missing.insert(format!("{name} (used by {})", t.name));
            }
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "add these to wire_types(): {}",
            missing.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut text = String::from(
        "// Generated from the Rust types by src-tauri/wire_types.rs (ts-rs); do not edit.\n\
         // Rewrite: source scripts/build-env && SDBENCH_WRITE_TYPES=1 cargo test \"${test_build[@]}\" --lib wire_types\n",
    );
    for t in types {
        let decl = t.decl.replace("bigint", "number");
        text.push_str(&format!("\nexport {decl}\n"));
    }
    Ok(text)
}

mod tests {
    use super::*;

    #[test]
    fn wire_types_are_generated_and_current() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/src/generated/wire.ts");
        let text = wire_ts(&wire_types()).unwrap();
        if std::env::var_os("SDBENCH_WRITE_TYPES").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == text,
            "{} is not what the Rust types declare now: rewrite it with SDBENCH_WRITE_TYPES=1 (see src-tauri/wire_types.rs) and commit it",
            path.display()
        );
    }
}
