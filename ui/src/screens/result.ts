// A benchmark result: score and every metric, validity, per-stage and per-image charts and times,
// the images, and save / report / submit. Used after a run and in the History screen.

import { api, imageElement } from "../api";
import { fill, h, svg } from "../dom";
import type { Chart, ResultView } from "../types";
import { busy, confirmDialog, notify, pickSavePath, showError } from "../ui";

export function chartFigure(title: string, chart: Chart, id: string): HTMLElement {
  return h("figure", { class: "chart", id },
    h("figcaption", {}, title),
    chart.svg ? svg(chart.svg) : h("p", { class: "muted" }, chart.reason ?? "No data"));
}

/** A throttled run's warning: which reasons held, for how much of the timed images. Older
 * results carry no hardware state. */
export function throttledNotice(r: ResultView["result"]): HTMLElement | string {
  const hardware = r.scores.hardware;
  if (!hardware?.throttled) return "";
  const reasons = hardware.throttle.map((t) => `${t.reason} ${Math.round(t.share * 100)}% of the time`).join(", ");
  return h("p", { class: "invalid", id: "result-throttled", role: "status" },
    `Throttled: ${reasons}. The device slowed itself during the timed images, so these figures are below its steady rate; the results service ranks such runs apart.`);
}

/** Renders `view` into `root`. */
export async function renderResult(root: HTMLElement, view: ResultView): Promise<void> {
  const r = view.result;
  const score = r.scores.score;
  // A profile other than full (the standard score's) is named beside the score.
  const profile = r.backend.memory_profile;
  const otherProfile = profile && profile !== "full" ? `${profile} memory profile, ` : "";
  const validity = r.valid
    ? h("p", { class: "valid", id: "result-validity" }, r.workload.standard ? "Valid standard run" : `Valid run (${otherProfile}not a standard score)`)
    : h("div", { class: "invalid", id: "result-validity", role: "alert" },
        h("strong", {}, "Invalid run: no score"),
        h("ul", {}, r.invalid_reasons.map((reason) => h("li", {}, reason))));
  const throttled = throttledNotice(r);
  const actions = h("div", { class: "actions" });
  const images = h("div", { class: "image-grid", id: "result-images" });
  const charts = h("div", { class: "charts" }, h("p", { class: "muted" }, "Drawing charts…"));
  fill(root,
    h("div", { class: "score-card" },
      h("div", { class: "score", id: "result-score", "aria-label": "Score" }, score === null ? "—" : String(score)),
      h("div", {}, h("div", { class: "muted" }, "score = 100 × images per minute"), validity, throttled),
      actions),
    h("table", { class: "metrics", id: "result-metrics" },
      h("caption", {}, "Every figure of this run"),
      h("tbody", {}, view.header.map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", { colspan: 2 }, v))),
        view.rows.map(([k, v, unit]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, v), h("td", { class: "unit" }, unit))))),
    charts,
    h("h3", {}, "Per image"),
    h("table", { class: "per-image" },
      h("thead", {}, h("tr", {}, h("th", {}, "#"), view.imageColumns.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, view.imageCells.map((cells, i) => h("tr", {}, h("td", {}, String(i + 1)), cells.map((c) => h("td", {}, c)))))),
    h("h3", {}, "Images"),
    images);

  const save = h("button", { id: "save-result" }, "Save result JSON…");
  save.addEventListener("click", () => busy(save, async () => {
    const path = await pickSavePath(`sdbench-${r.run_id.slice(0, 8)}.json`, "SD Bench result", ["json"]);
    if (path) notify(`Saved ${await api.saveResult(r.run_id, path)}`);
  }));
  const report = h("button", { id: "export-report" }, "Export report…");
  report.addEventListener("click", () => busy(report, async () => {
    const path = await pickSavePath(`sdbench-${r.run_id.slice(0, 8)}.html`, "Report (HTML or Markdown)", ["html", "md"]);
    if (path) notify(`Wrote ${await api.exportReport([r.run_id], path)}`);
  }));
  const submit = h("button", { id: "submit-result", disabled: !r.valid, title: r.valid ? "" : "Invalid runs cannot be submitted" }, "Submit…");
  submit.addEventListener("click", () => busy(submit, () => submitRun(r.run_id)));
  actions.append(save, report, submit);

  view.images.forEach((path, i) => {
    const prompt = r.workload.prompts[i % r.workload.prompts.length];
    const figure = h("figure", {}, h("figcaption", {}, `${i + 1}. ${prompt?.prompt ?? ""}`));
    images.append(figure);
    if (!path) {
      figure.prepend(h("div", { class: "missing" }, "image not kept"));
      return;
    }
    imageElement(path, `Benchmark image ${i + 1}: ${prompt?.prompt ?? ""}`)
      .then((img) => figure.prepend(img))
      .catch(showError);
  });

  try {
    const c = await api.runCharts([r.run_id]);
    fill(charts,
      chartFigure("Seconds per image", c.secondsPerImage, "chart-seconds"),
      chartFigure("Stage breakdown", c.stageBreakdown, "chart-stages"),
      chartFigure("Step times", c.stepTimes, "chart-steps"),
      chartFigure("Power over time", c.powerOverTime, "chart-power"));
  } catch (e) {
    fill(charts);
    showError(e);
  }
}

/** Shows exactly what would be sent and where, and sends it only when confirmed. */
export async function submitRun(runId: string): Promise<void> {
  const preview = await api.submissionPreview(runId);
  const body = h("div", {},
    h("p", {}, "This JSON will be sent to ", h("code", {}, preview.endpoint), ":"),
    h("pre", { class: "payload", tabindex: 0 }, preview.payload));
  if (!(await confirmDialog("Submit this result?", body, "Submit"))) return;
  const sent = await api.submit(runId);
  if (sent.outcome === "sent") notify(sent.comparison ? `Submitted: ${sent.comparison}` : `Submitted (HTTP ${sent.status}).`);
  else notify(`Not sent now (${sent.reason}); it is kept and sent with the next submission.`);
}
