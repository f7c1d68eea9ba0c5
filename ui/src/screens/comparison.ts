// "Compare backends": the chosen run on every usable backend, as `sdbench sweep` tables it, with
// the fastest named and each backend's megapixels per second charted.

import { fill, h } from "../dom";
import type { ComparisonView } from "../types";
import { chartFigure } from "./result";

/** Renders `view` into `root`. */
export function renderComparison(root: HTMLElement, view: ComparisonView): void {
  const setupColumns = 6;
  const rows = view.rows.map((row) => {
    const cells = row.setup.map((c) => h("td", {}, c));
    const figures = row.figures
      ? row.figures.map((c) => h("td", { class: "num" }, c))
      : [h("td", { colspan: view.columns.length - setupColumns, class: "muted" }, `skipped: ${row.skipped ?? "did not run"}`)];
    return h("tr", { class: row.fastest ? "fastest" : "" }, cells, figures);
  });
  fill(root,
    h("h3", {}, "Backends compared"),
    h("p", { id: "compare-fastest" }, view.fastest.replace(/^fastest: /, "Fastest: ")),
    h("table", { class: "metrics", id: "compare-table" },
      h("thead", {}, h("tr", {}, view.columns.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows)),
    chartFigure("Megapixels per second", view.chart, "compare-chart"),
    h("p", { class: "muted" }, `Sweep file: ${view.sweepPath}. Each backend's run is in History.`));
}

/** Whether a finished job's output is a comparison rather than one benchmark's result. */
export function isComparison(output: unknown): output is ComparisonView {
  return typeof output === "object" && output !== null && "sweepId" in output;
}
