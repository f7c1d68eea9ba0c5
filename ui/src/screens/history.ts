// The History screen: every run with filters, a run's detail, runs compared side by side with
// the report's charts, delete and export.

import { api, imageElement } from "../api";
import { fill, h } from "../dom";
import * as fmt from "../format";
import type { HistoryFilter, RunSummary } from "../types";
import { busy, confirmDialog, definitionList, notify, pickSavePath, showError } from "../ui";
import type { Screen } from "../main";
import { chartFigure, renderResult } from "./result";

const filters = {
  kind: h("select", { id: "history-kind" },
    h("option", { value: "" }, "all runs"), h("option", { value: "benchmark" }, "benchmarks"), h("option", { value: "generation" }, "images")),
  text: h("input", { type: "search", id: "history-text", placeholder: "model, device or prompt" }),
  backend: h("input", { type: "text", id: "history-backend", placeholder: "backend", size: 8 }),
  standard: h("input", { type: "checkbox", id: "history-standard" }),
  valid: h("input", { type: "checkbox", id: "history-valid" }),
};
const list = h("tbody", { id: "history-rows" });
const detail = h("div", { class: "card", id: "history-detail", hidden: true });
const compareButton = h("button", { id: "history-compare", disabled: true }, "Compare");
const deleteButton = h("button", { id: "history-delete", disabled: true }, "Delete…");
const exportButton = h("button", { id: "history-export", disabled: true }, "Export…");
const count = h("span", { class: "muted", id: "history-count" });
let runs: RunSummary[] = [];
const selected = new Set<string>();

export function currentFilter(): HistoryFilter {
  const f: HistoryFilter = {};
  if (filters.kind.value) f.kind = filters.kind.value as HistoryFilter["kind"];
  if (filters.text.value.trim()) f.text = filters.text.value.trim();
  if (filters.backend.value.trim()) f.backend = filters.backend.value.trim();
  if (filters.standard.checked) f.standard_only = true;
  if (filters.valid.checked) f.valid_only = true;
  return f;
}

function updateButtons(): void {
  const chosen = runs.filter((r) => selected.has(r.id));
  compareButton.disabled = chosen.length < 2 || chosen.some((r) => r.kind !== "benchmark");
  compareButton.title = compareButton.disabled ? "Select two or more benchmark runs" : "";
  deleteButton.disabled = chosen.length === 0;
  exportButton.disabled = chosen.length === 0;
  count.textContent = `${fmt.count(runs.length, "run")}${chosen.length ? `, ${chosen.length} selected` : ""}`;
}

export async function refresh(): Promise<void> {
  try {
    runs = await api.historyList(currentFilter());
  } catch (e) {
    showError(e);
    return;
  }
  for (const id of [...selected]) if (!runs.some((r) => r.id === id)) selected.delete(id);
  fill(list, runs.length === 0
    ? h("tr", {}, h("td", { colspan: 8, class: "muted" }, "No runs yet. Run a benchmark or create an image."))
    : runs.map((r) => {
        const box = h("input", { type: "checkbox", "aria-label": `Select ${r.title}`, checked: selected.has(r.id) });
        box.addEventListener("change", () => {
          if (box.checked) selected.add(r.id);
          else selected.delete(r.id);
          updateButtons();
        });
        const open = h("button", { class: "link", "data-run": r.id }, r.kind === "benchmark" ? r.title : `“${r.title}”`);
        open.addEventListener("click", () => showDetail(r));
        return h("tr", { class: r.valid ? "" : "invalid-row" },
          h("td", {}, box),
          h("td", {}, fmt.when(r.created_at)),
          h("td", {}, r.kind === "benchmark" ? "benchmark" : "image"),
          h("td", {}, open),
          h("td", {}, `${r.device} (${r.backend}, ${r.precision}${profileNote(r.memory_profile)})`),
          h("td", { class: "num" }, r.score === null ? (r.kind === "benchmark" ? "invalid" : "—") : String(r.score)),
          h("td", { class: "num" }, fmt.fixed(r.seconds_per_image)),
          h("td", {}, r.standard ? "standard" : ""));
      }));
  updateButtons();
}

/** A profile other than full is named next to the precision: such runs compare only with their own. */
function profileNote(profile: string | null | undefined): string {
  return profile && profile !== "full" ? `, ${profile} memory` : "";
}

async function showDetail(r: RunSummary): Promise<void> {
  detail.hidden = false;
  fill(detail, h("p", { class: "muted" }, "Loading…"));
  try {
    if (r.kind === "benchmark") {
      const view = await api.benchmarkView(r.id);
      const body = h("div", {});
      fill(detail, h("h2", {}, `${r.title} · ${fmt.when(r.created_at)}`), body);
      await renderResult(body, view);
      return;
    }
    const record = await api.historyGet(r.id);
    if (record.kind !== "generation") return;
    const g = record.run;
    const image = h("div", { class: "viewer" });
    fill(detail, h("h2", {}, "Generated image"), image,
      definitionList([
        ["prompt", g.prompt], ["negative prompt", g.negative_prompt || "—"],
        ["steps / guidance / scheduler", `${g.steps} / ${g.guidance} / ${g.scheduler}`],
        ["seed", g.seed === null ? "given latents" : String(g.seed)], ["size", `${g.width}×${g.height}`],
        ["model", g.model], ["on", `${g.device} (${g.backend}, ${g.precision})`],
        ["seconds", `${fmt.fixed(g.seconds)} (text encoder ${fmt.fixed(g.stages.text_encoder)}, denoising ${fmt.fixed(g.stages.unet_loop)}, VAE ${fmt.fixed(g.stages.vae_decode)})`],
        ...(g.cfg_truncation != null ? [["CFG truncation", String(g.cfg_truncation)] as [string, string]] : []),
        ...(g.cfg_normalization != null ? [["CFG normalization", String(g.cfg_normalization)] as [string, string]] : []),
        ["file", g.image_path ?? "not kept"],
      ], "history-generation"));
    if (g.image_path) {
      imageElement(g.image_path, g.prompt)
        .then((img) => image.append(img))
        .catch(() => image.append(h("p", { class: "muted" }, "The image file is no longer on disk.")));
    }
  } catch (e) {
    detail.hidden = true;
    showError(e);
  }
}

async function compare(): Promise<void> {
  const ids = runs.filter((r) => selected.has(r.id)).map((r) => r.id);
  const charts = await api.runCharts(ids);
  const report = h("button", { id: "compare-report" }, "Export comparison…");
  report.addEventListener("click", () => busy(report, async () => {
    const path = await pickSavePath("sdbench-comparison.html", "HTML report", ["html"]);
    if (path) notify(`Wrote ${await api.exportReport(ids, path)}`);
  }));
  detail.hidden = false;
  fill(detail,
    h("h2", {}, `Comparing ${ids.length} runs`),
    charts.warning ? h("p", { class: "invalid", id: "compare-warning" }, charts.warning) : null,
    charts.note ? h("p", { id: "compare-note" }, charts.note) : null,
    h("ol", { class: "legend-list" }, charts.labels.map((l) => h("li", {}, l))),
    h("div", { class: "charts", id: "compare-charts" },
      chartFigure("Seconds per image", charts.secondsPerImage, "compare-seconds"),
      chartFigure("Stage breakdown", charts.stageBreakdown, "compare-stages"),
      chartFigure("Step times", charts.stepTimes, "compare-steps"),
      chartFigure("Power over time", charts.powerOverTime, "compare-power")),
    report);
}

async function remove(): Promise<void> {
  const ids = [...selected];
  const ok = await confirmDialog("Delete runs?", `Delete ${fmt.count(ids.length, "run")} from the history, with the images SD Bench kept for them? Files you saved elsewhere stay.`, "Delete");
  if (!ok) return;
  const deleted = await api.historyDelete(ids);
  selected.clear();
  detail.hidden = true;
  notify(`Deleted ${fmt.count(deleted, "run")}.`);
  await refresh();
}

async function exportRuns(): Promise<void> {
  const path = await pickSavePath("sdbench-history.json", "SD Bench history export", ["json"]);
  if (!path) return;
  const n = await api.historyExport([...selected], path);
  notify(`Exported ${fmt.count(n, "run")} to ${path}`);
}

export const historyScreen: Screen = {
  id: "history",
  title: "History",
  mount(root) {
    for (const input of Object.values(filters)) input.addEventListener("input", () => refresh());
    compareButton.addEventListener("click", () => busy(compareButton, compare));
    deleteButton.addEventListener("click", () => busy(deleteButton, remove));
    exportButton.addEventListener("click", () => busy(exportButton, exportRuns));
    root.append(
      h("div", { class: "card" },
        h("div", { class: "row filters" },
          h("label", {}, "Show", filters.kind), h("label", {}, "Search", filters.text), h("label", {}, "Backend", filters.backend),
          h("label", { class: "check" }, filters.standard, "standard only"), h("label", { class: "check" }, filters.valid, "valid only")),
        h("div", { class: "row" }, compareButton, deleteButton, exportButton, count),
        h("table", { class: "runs" },
          h("thead", {}, h("tr", {}, ["", "when", "kind", "run", "device", "score", "s/image", ""].map((c) => h("th", { scope: "col" }, c)))),
          list)),
      detail);
  },
  show() {
    refresh();
  },
};
