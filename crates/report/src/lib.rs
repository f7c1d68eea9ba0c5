//! Pictures and documents of benchmark results: SVG charts drawn with plotters (so the desktop app's
//! screens and its exported reports show the same picture) and Markdown/HTML reports.

pub mod charts;
pub mod html;

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
}

pub type Result<T, E = ReportError> = std::result::Result<T, E>;

/// The Markdown report: the same summary `sdbench bench --format md` prints.
pub fn markdown(result: &BenchResult) -> String {
    summary::render(result, Format::Markdown)
}
