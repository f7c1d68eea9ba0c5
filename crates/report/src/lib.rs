//! Pictures and documents of benchmark results: SVG charts drawn with plotters (so the desktop app's
//! screens and its exported reports show the same picture) and Markdown/HTML reports.

pub mod charts;
pub mod html;
pub mod side_by_side;
pub mod sweep;

use sdbench_bench::result::BenchResult;
use sdbench_bench::summary::{self, Format};

/// One run in a chart, under the name its legend shows.
#[derive(Clone, Copy)]
pub struct Run<'a> {
    pub label: &'a str,
    pub result: &'a BenchResult,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("nothing to chart: {0}")]
    Empty(String),
    #[error("drawing the chart failed: {0}")]
    Draw(String),
    #[error("{0}")]
    Format(String),
}

pub type Result<T, E = ReportError> = std::result::Result<T, E>;

/// Why runs are not comparable, when they did different work (workload, model, size, steps,
/// batch or scheduler): the warning names each property that differs.
pub fn comparison_warning(runs: &[Run]) -> Option<String> {
    let results: Vec<&BenchResult> = runs.iter().map(|r| r.result).collect();
    sdbench_bench::comparison::comparison_warning(&results)
}

/// What the comparison is across, when the runs ran on different setups (precision, backend,
/// device, CPU threads).
pub fn comparison_note(runs: &[Run]) -> Option<String> {
    let results: Vec<&BenchResult> = runs.iter().map(|r| r.result).collect();
    sdbench_bench::comparison::comparison_note(&results)
}

/// The Markdown report: the same summary `sdbench bench --format md` prints.
pub fn markdown(result: &BenchResult) -> String {
    summary::render(result, Format::Markdown)
}

/// The report a file name asks for: `.md` is the Markdown report of one run; `.html` (or `.htm`) is
/// the HTML report of one run, or the comparison of several, with their pictures side by side
/// where `dirs` gives each run's image folder (empty: none).
pub fn for_file(runs: &[Run], dirs: &[&std::path::Path], path: &std::path::Path) -> Result<String> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match (extension.as_deref(), runs) {
        (_, []) => Err(ReportError::Format("no runs to report".into())),
        (Some("md"), [one]) => Ok(markdown(one.result)),
        (Some("md"), _) => Err(ReportError::Format(
            "a Markdown report holds one run; write a comparison as .html".into(),
        )),
        (Some("html" | "htm"), [one]) => Ok(html::report(one.result)),
        (Some("html" | "htm"), many) if dirs.len() == many.len() => {
            let pictures: Vec<side_by_side::Pictures> = many
                .iter()
                .zip(dirs)
                .map(|(&run, &dir)| side_by_side::Pictures { run, dir })
                .collect();
            Ok(html::comparison_with_pictures(&pictures))
        }
        (Some("html" | "htm"), many) => Ok(html::comparison(many)),
        _ => Err(ReportError::Format("name the report .html or .md".into())),
    }
}
