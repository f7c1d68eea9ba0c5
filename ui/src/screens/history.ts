// The History screen: every run with filters, a run's detail, runs compared side by side with
// the report's charts, delete and export.

import { api, imageElement } from "../api";
import { fill, h } from "../dom";
import * as fmt from "../format";
import type { HistoryFilter, PictureSection, RunSummary } from "../types";
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
/** Runs of one model only (chosen among the listed runs' models; applied here, not in the query). */
const modelFilter = h("select", { id: "history-model" }, h("option", { value: "" }, "all models"));
const list = h("tbody", { id: "history-rows" });
const detail = h("div", { class: "card", id: "history-detail", hidden: true });
const compareButton = h("button", { id: "history-compare", disabled: true }, "Compare");
const deleteButton = h("button", { id: "history-delete", disabled: true }, "Delete…");
const exportButton = h("button", { id: "history-export", disabled: true }, "Export…");
const count = h("span", { class: "muted", id: "history-count" });
let runs: RunSummary[] = [];
const selected = new Set<string>();

/** The columns a click on the header sorts by, and how each compares two runs. */
type SortKey = "when" | "kind" | "model" | "run" | "backend" | "device" | "score" | "seconds";
const byText = (f: (r: RunSummary) => string) => (a: RunSummary, b: RunSummary) => f(a).localeCompare(f(b));
const byNumber = (f: (r: RunSummary) => number | null) => (a: RunSummary, b: RunSummary) =>
  (f(a) ?? -Infinity) - (f(b) ?? -Infinity);
const comparators: Record<SortKey, (a: RunSummary, b: RunSummary) => number> = {
  when: byText((r) => r.created_at),
  kind: byText((r) => r.kind),
  model: byText((r) => shortModel(r.model)),
  run: byText((r) => r.title),
  backend: byText((r) => `${r.backend} ${r.precision}`),
  device: byText((r) => r.device),
  score: byNumber((r) => r.score),
  seconds: byNumber((r) => r.seconds_per_image),
};
let sort: { key: SortKey; descending: boolean } = { key: "when", descending: true };

/** A model as the list shows it: a Hub id as it is, a file or folder by its last name (the whole
 * path is the cell's tooltip). */
export function shortModel(model: string): string {
  const local = model.startsWith("/") || model.startsWith("~") || /^[A-Za-z]:[\\/]/.test(model);
  if (!local) return model;
  const parts = model.split(/[\\/]/).filter((p) => p !== "");
  // A Hub cache snapshot's folder is named by its commit: show the repository instead.
  const snapshot = parts.lastIndexOf("snapshots");
  if (snapshot > 0 && parts[snapshot - 1].startsWith("models--")) {
    return parts[snapshot - 1].slice("models--".length).replace("--", "/");
  }
  return parts[parts.length - 1] ?? model;
}

/** The runs the table shows: the model filter applied, in the chosen order. */
function shown(): RunSummary[] {
  const model = modelFilter.value;
  const list = runs.filter((r) => !model || r.model === model);
  const compare = comparators[sort.key];
  return list.sort((a, b) => (sort.descending ? -compare(a, b) : compare(a, b)));
}

/** The model filter lists the models of the runs the query returned, keeping the choice. */
function fillModelFilter(): void {
  const chosen = modelFilter.value;
  const models = [...new Set(runs.map((r) => r.model))].sort((a, b) => shortModel(a).localeCompare(shortModel(b)));
  fill(modelFilter, h("option", { value: "" }, "all models"),
    models.map((m) => h("option", { value: m, title: m }, shortModel(m))));
  modelFilter.value = models.includes(chosen) ? chosen : "";
}

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
  const listed = shown().length;
  compareButton.disabled = chosen.length < 2 || chosen.some((r) => r.kind !== "benchmark");
  compareButton.title = compareButton.disabled ? "Select two or more benchmark runs" : "";
  deleteButton.disabled = chosen.length === 0;
  exportButton.disabled = chosen.length === 0;
  count.textContent = `${fmt.count(listed, "run")}${chosen.length ? `, ${chosen.length} selected` : ""}`;
}

export async function refresh(): Promise<void> {
  try {
    runs = await api.historyList(currentFilter());
  } catch (e) {
    showError(e);
    return;
  }
  fillModelFilter();
  render();
}

/** Draws the rows of the runs listed, filtered by model and sorted. */
function render(): void {
  const visible = shown();
  for (const id of [...selected]) if (!visible.some((r) => r.id === id)) selected.delete(id);
  fill(list, visible.length === 0
    ? h("tr", {}, h("td", { colspan: COLUMNS.length, class: "muted" }, runs.length === 0
      ? "No runs yet. Run a benchmark or create an image." : "No runs of this model match."))
    : visible.map((r) => {
        const box = h("input", { type: "checkbox", "aria-label": `Select ${r.title}`, checked: selected.has(r.id) });
        box.addEventListener("change", () => {
          if (box.checked) selected.add(r.id);
          else selected.delete(r.id);
          updateButtons();
        });
        // A long prompt is cut in the text, not by CSS: WebKit's WebDriver reads an overflow-clipped
        // button as not displayed.
        const title = r.title.length > 48 ? `${r.title.slice(0, 47)}…` : r.title;
        const open = h("button", { class: "link", "data-run": r.id, title: r.title }, r.kind === "benchmark" ? title : `“${title}”`);
        open.addEventListener("click", () => showDetail(r));
        return h("tr", { class: r.valid ? "" : "invalid-row" },
          h("td", {}, box),
          h("td", { class: "nowrap" }, fmt.when(r.created_at)),
          h("td", {}, r.kind === "benchmark" ? "benchmark" : "image"),
          h("td", { title: r.model }, h("span", { class: "cut" }, shortModel(r.model))),
          h("td", {}, open),
          h("td", { class: "nowrap" }, `${r.backend}, ${r.precision}${profileNote(r.memory_profile)}`),
          h("td", { title: r.device }, h("span", { class: "cut" }, r.device)),
          h("td", { class: "num" }, r.score === null ? (r.kind === "benchmark" ? "invalid" : "—") : String(r.score)),
          h("td", { class: "num" }, fmt.fixed(r.seconds_per_image)),
          h("td", {}, r.standard ? "standard" : ""));
      }));
  for (const [key, cell] of headers) {
    cell.setAttribute("aria-sort", sort.key === key ? (sort.descending ? "descending" : "ascending") : "none");
  }
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
        ...fmt.guidanceOptions(g),
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

/** The first run's images beside another run's: each pair, their difference picture, mean
 * absolute difference and PSNR, or why a pair cannot be compared. */
function pictureSection(section: PictureSection): HTMLElement {
  const img = (src: string | null, alt: string) => (src ? h("img", { src, alt, class: "pair-picture" }) : "");
  return h("section", { class: "pictures" },
    h("h3", {}, `Images side by side: ${section.first} against ${section.other}`),
    h("table", { class: "pictures" },
      h("thead", {}, h("tr", {}, ["prompt · seed", section.first, section.other, "difference", "mean abs. diff.", "PSNR (dB)"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, section.pairs.map((p) => h("tr", { class: "pair" },
        h("td", {}, `${p.prompt} · ${p.seed}`),
        p.first && p.other
          ? [h("td", {}, img(p.first, section.first)), h("td", {}, img(p.other, section.other))]
          : [],
        p.difference
          ? [h("td", {}, img(p.difference, "difference")), h("td", { class: "num" }, (p.meanAbsDifference ?? 0).toFixed(2)), h("td", { class: "num" }, p.psnr ?? "")]
          : h("td", { colspan: p.first ? 3 : 5, class: "muted" }, p.problem ?? ""))))));
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
    charts.pictures.map(pictureSection),
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

/** The table's columns: header text and the key a click on it sorts by (none: not sortable). */
const COLUMNS: [string, SortKey | null][] = [
  ["", null], ["when", "when"], ["kind", "kind"], ["model", "model"], ["run", "run"], ["backend", "backend"],
  ["device", "device"], ["score", "score"], ["s/image", "seconds"], ["", null],
];
const headers = new Map<SortKey, HTMLElement>();

/** A column header; a sortable one sorts by its column on click, again for the other order. */
function header(label: string, key: SortKey | null): HTMLElement {
  if (!key) return h("th", { scope: "col" }, label);
  const button = h("button", { class: "link sort", "data-sort": key }, label);
  button.addEventListener("click", () => {
    sort = { key, descending: sort.key === key ? !sort.descending : key === "when" || key === "score" };
    render();
  });
  const cell = h("th", { scope: "col", "aria-sort": "none" }, button);
  headers.set(key, cell);
  return cell;
}

export const historyScreen: Screen = {
  id: "history",
  title: "History",
  mount(root) {
    for (const input of Object.values(filters)) input.addEventListener("input", () => refresh());
    modelFilter.addEventListener("input", () => render());
    compareButton.addEventListener("click", () => busy(compareButton, compare));
    deleteButton.addEventListener("click", () => busy(deleteButton, remove));
    exportButton.addEventListener("click", () => busy(exportButton, exportRuns));
    root.append(
      h("div", { class: "card" },
        h("div", { class: "row filters" },
          h("label", {}, "Show", filters.kind), h("label", {}, "Search", filters.text), h("label", {}, "Model", modelFilter), h("label", {}, "Backend", filters.backend),
          h("label", { class: "check" }, filters.standard, "standard only"), h("label", { class: "check" }, filters.valid, "valid only")),
        h("div", { class: "row" }, compareButton, deleteButton, exportButton, count),
        h("table", { class: "runs" },
          h("thead", {}, h("tr", {}, COLUMNS.map(([label, key]) => header(label, key)))),
          list)),
      detail);
  },
  show() {
    refresh();
  },
};
