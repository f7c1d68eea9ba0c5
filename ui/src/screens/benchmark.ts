// The Benchmark screen: the model it needs (with a download), one button for the standard run, a
// quick custom run, live progress with power and VRAM, and the result.

import { api, attachJob, type JobHandle } from "../api";
import { fill, h } from "../dom";
import * as fmt from "../format";
import { drawLiveChart } from "../livechart";
import { modelChoice } from "../modelchoice";
import { ProgressTracker, type ProgressView } from "../progress";
import type { BenchmarkOutput, BenchmarkRequest, ComparisonView, JobEvent, JobStatus, ModelStatus, OwnWorkload, WorkloadCard } from "../types";
import { showError, notify } from "../ui";
import { boundFields, checkWhole } from "../validate";
import type { Screen } from "../main";
import { renderResult } from "./result";
import { isComparison, renderComparison } from "./comparison";

let job: JobHandle<unknown> | null = null;
/** The licence line of the model downloaded last, shown in the model card once it is here. */
let downloadedLicense: { model: string; note: string } | null = null;

/** The standard workloads, as the app lists them (main.ts sets them before the screen is built). */
let WORKLOADS: WorkloadCard[] = [];
export function setWorkloads(cards: WorkloadCard[]): void {
  WORKLOADS = cards;
}

const nextFrame = (f: () => void) =>
  typeof requestAnimationFrame === "function" ? requestAnimationFrame(f) : setTimeout(f, 16);

const model = h("div", { class: "card", id: "model-card" }, h("h2", {}, "Model"), h("p", { class: "muted" }, "Checking the model…"));
/** The model setting, chosen here as on Create; the workload follows it (`followModel`). */
const choice = modelChoice("bench-model", () => refreshModel());
const workloadSelect = h("select", { id: "workload", "aria-label": "Workload" });
const workloadDescription = h("p", { class: "muted", id: "workload-description" });
const runButton = h("button", { class: "primary big", id: "run-standard" }, "Run the standard benchmark");
// Empty: one pass of the prompts. Otherwise whole passes until this many seconds have passed, so a
// short workload is measured at the temperature a long session reaches.
const minDuration = h("input", { type: "number", id: "min-duration", min: 1, step: 1, placeholder: "one pass" });
const scoreQuality = h("input", { type: "checkbox", id: "bench-quality" });

function chosenWorkload(): WorkloadCard {
  return WORKLOADS.find((w) => w.name === workloadSelect.value) ?? WORKLOADS[0];
}
const quick = {
  steps: h("input", { type: "number", id: "quick-steps", min: 1, value: 4 }),
  width: h("input", { type: "number", id: "quick-width", value: 256 }),
  height: h("input", { type: "number", id: "quick-height", value: 256 }),
  images: h("input", { type: "number", id: "quick-images", min: 1, value: 2 }),
};
const quickButton = h("button", { id: "run-quick" }, "Run quick benchmark");
const compareButton = h("button", { id: "compare-backends" }, "Compare backends");
const compareQuick = h("input", { type: "checkbox", id: "compare-quick" });
const progress = h("div", { class: "card progress", id: "bench-progress", hidden: true });
const result = h("div", { id: "bench-result" });

function setRunning(running: boolean): void {
  runButton.disabled = running;
  quickButton.disabled = running;
  compareButton.disabled = running;
  workloadSelect.disabled = running;
  progress.hidden = !running && progress.hidden;
}

/** The model setting whose own workload the screen last switched to: once per setting, so a
 * workload chosen afterwards stays chosen. */
let followedModel: string | null = null;

/** Switches to the standard workload made for the model in the settings, saying why. */
function followModel(own: OwnWorkload): boolean {
  if (!WORKLOADS.some((w) => w.name === own.name)) return false;
  workloadSelect.value = own.name;
  workloadDescription.textContent = `${chosenWorkload().description} Chosen for the model in System > Settings: ${own.why}.`;
  return true;
}

async function refreshModel(): Promise<void> {
  try {
    const name = chosenWorkload().name;
    const status = await api.modelStatus(name);
    // The workload may have changed while the status was on its way.
    if (name !== chosenWorkload().name) return;
    if (status.ownWorkload && status.model !== followedModel) {
      followedModel = status.model;
      if (followModel(status.ownWorkload)) {
        await refreshModel();
        return;
      }
    }
    renderModel(status);
  } catch (e) {
    fill(model, h("p", { class: "invalid" }, "The model setting is not usable."));
    showError(e);
  }
}

function renderModel(status: ModelStatus): void {
  const where = status.source === "synthetic"
    ? "synthetic weights (timing only; never a standard score)"
    : status.path ?? "not downloaded yet";
  const parts: (Node | string | null)[] = [
    h("h2", {}, "Model"),
    choice.element,
    h("p", {}, h("strong", {}, status.model), " — ", where),
  ];
  if (status.note) parts.push(h("p", { class: "muted" }, status.note));
  const license = status.licenseNote ?? (downloadedLicense?.model === status.model ? downloadedLicense.note : null);
  if (status.ready && license) parts.push(h("p", { class: "muted", id: "model-license" }, license));
  if (!status.ready) {
    const size = status.downloadBytes !== null ? fmt.bytes(status.downloadBytes) : "size unknown";
    const download = h("button", { class: "primary", id: "download-model" }, `Download (${size})`);
    download.addEventListener("click", () => startDownload(download));
    // Without the model (offline, or before a long download), the same computation runs on
    // synthetic weights of the workload's architecture: a timing, never a standard score.
    const synthetic = h("button", { id: "run-synthetic", disabled: job !== null }, "Run on synthetic weights");
    synthetic.addEventListener("click", () => startSynthetic());
    parts.push(h("p", {}, "The model is not on this machine yet."),
      status.licenseNote ? h("p", { id: "model-license" }, status.licenseNote) : null,
      h("div", { class: "row" }, download, synthetic),
      h("p", { class: "muted" }, "A run on synthetic weights needs no download and measures the same work, but its images are noise and it is not a standard score."));
    if (status.problem) parts.push(h("p", { class: "muted" }, `The Hub did not answer: ${status.problem}`));
  }
  fill(model, ...parts);
  runButton.disabled = !status.ready || job !== null;
  quickButton.disabled = !status.ready || job !== null;
}

/** The chosen workload on synthetic weights of its architecture (no download). */
function startSynthetic(): void {
  const workload = chosenWorkload();
  followBenchmark(`Synthetic weights (${workload.name}'s architecture): timing only, not a standard score.`, null,
    (onEvent) => api.benchmark({ workload: workload.name, synthetic: true }, onEvent));
}

function startDownload(button: HTMLButtonElement): void {
  button.disabled = true;
  const workload = chosenWorkload().name;
  followDownload((onEvent) => api.download(onEvent, workload));
}

/** Shows a download's progress under the model until it ends; `subscribe` starts or joins it. */
function followDownload(subscribe: (onEvent: (e: JobEvent) => void) => JobHandle<unknown>): void {
  const bar = h("progress", { max: 1, value: 0, id: "download-progress" });
  const label = h("span", { class: "muted" }, "Starting…");
  const cancel = h("button", { id: "cancel-download" }, "Cancel");
  model.append(h("div", { class: "download" }, bar, label, cancel));
  const started = performance.now() / 1000;
  let first: number | null = null;
  workloadSelect.disabled = true;
  const handle = subscribe((e: JobEvent) => {
    if (e.event !== "download") return;
    first ??= e.done;
    bar.value = e.total > 0 ? e.done / e.total : 0;
    const rate = (e.done - first) / Math.max(performance.now() / 1000 - started, 1e-3);
    const eta = rate > 0 ? (e.total - e.done) / rate : null;
    label.textContent = `${fmt.bytes(e.done)} of ${fmt.bytes(e.total)} · ${fmt.bytes(rate)}/s · ${fmt.duration(eta)} left · ${e.file}`;
  });
  job = handle;
  cancel.addEventListener("click", () => handle.cancel().catch(showError));
  handle.done
    .then((out) => {
      const done = out as { model?: string; licenseNote?: string };
      if (done.model && done.licenseNote) downloadedLicense = { model: done.model, note: done.licenseNote };
      notify("The model is downloaded.");
    })
    .catch((e) => showError(e))
    .finally(() => {
      job = null;
      workloadSelect.disabled = false;
      refreshModel();
    });
}

function renderProgress(v: ProgressView, tracker: ProgressTracker, cancel: HTMLButtonElement): void {
  const image = v.images === 0 ? "—" : v.warmup ? "warm-up" : `${v.image} / ${v.images}`;
  fill(progress,
    h("h2", {}, "Running"),
    h("p", { id: "bench-phase" }, v.phase),
    h("progress", { max: 1, value: v.fraction, "aria-label": "Benchmark progress" }),
    h("dl", { class: "pairs inline" },
      h("dt", {}, "image"), h("dd", { id: "bench-image" }, image),
      h("dt", {}, "step"), h("dd", { id: "bench-step" }, v.steps === 0 ? "—" : `${v.step} / ${v.steps}`),
      h("dt", {}, "it/s"), h("dd", {}, fmt.fixed(v.itPerSecond)),
      h("dt", {}, "elapsed"), h("dd", {}, fmt.duration(v.elapsedSeconds)),
      h("dt", {}, "ETA"), h("dd", {}, fmt.duration(v.etaSeconds))),
    v.download ? h("p", { class: "muted" }, `Downloading ${fmt.bytes(v.download.done)} of ${fmt.bytes(v.download.total)}`) : null,
    v.notes.map((n) => h("p", { class: "note" }, n)),
    drawLiveChart(tracker.telemetry()),
    cancel);
}

/** The quick run's fields, or the first problem with them (an emptied field must never fall back
 * to the full standard run, and a fraction is the person's mistake, not an internal error). */
export function quickSettings(): { steps: number; width: number; height: number; images: number } | string {
  const q = { steps: quick.steps.valueAsNumber, width: quick.width.valueAsNumber, height: quick.height.valueAsNumber, images: quick.images.valueAsNumber };
  return checkWhole("Steps", q.steps) ?? checkWhole("Width", q.width) ?? checkWhole("Height", q.height) ?? checkWhole("Images", q.images) ?? q;
}

/** The chosen workload once on every backend this machine can use (with the quick run's
 * settings where asked), ranked. */
function startCompare(): void {
  const workload = chosenWorkload();
  const settings = compareQuick.checked ? quickSettings() : null;
  if (typeof settings === "string") {
    showError({ kind: "badInput", message: `Quick run: ${settings}`, hint: "Correct the field and run again." });
    return;
  }
  const request: BenchmarkRequest = settings ? { workload: workload.name, custom: settings } : { workload: workload.name };
  const intro = `Comparing backends: ${workload.name}${settings ? " with the quick run's settings" : ""}, once on each backend this machine can use.`;
  followBenchmark(intro, null, (onEvent) => api.compareBackends(request, onEvent));
}

function startBenchmark(custom: boolean): void {
  const workload = chosenWorkload();
  const settings = custom ? quickSettings() : null;
  if (typeof settings === "string") {
    showError({ kind: "badInput", message: `Quick run: ${settings}`, hint: "Correct the field and run again." });
    return;
  }
  const minimum = minDuration.value.trim() === "" ? null : minDuration.valueAsNumber;
  if (minimum !== null && !(minimum > 0)) {
    showError({ kind: "badInput", message: "Minimum duration: give a number of seconds above 0, or leave it empty for one pass of the prompts.", hint: "Correct the field and run again." });
    return;
  }
  const request: BenchmarkRequest = settings ? { workload: workload.name, custom: settings } : { workload: workload.name };
  if (minimum !== null) request.minDurationSeconds = minimum;
  if (scoreQuality.checked) request.quality = true;
  const intro = custom ? "Quick run: not a standard score." : `Standard run (${workload.name}): ${workload.run}, after a warm-up image.`;
  followBenchmark(intro, null, (onEvent) => api.benchmark(request, onEvent));
}

/** Shows a benchmark's live progress, then its result; `subscribe` starts or joins it, and `last`
 * is the latest event of a run joined part-way. */
function followBenchmark(intro: string, last: JobEvent | null, subscribe: (onEvent: (e: JobEvent) => void) => JobHandle<BenchmarkOutput | ComparisonView>): void {
  const tracker = new ProgressTracker();
  const cancel = h("button", { id: "cancel-benchmark" }, "Cancel");
  progress.hidden = false;
  fill(result);
  setRunning(true);
  let pending: ProgressView | null = null;
  // Steps can come fast: draw at most once per animation frame.
  const draw = () => {
    if (pending) renderProgress(pending, tracker, cancel);
    pending = null;
  };
  let view = tracker.update({ event: "note", text: intro });
  if (last) view = tracker.update(last);
  renderProgress(view, tracker, cancel);
  const handle = subscribe((e) => {
    if (pending === null) nextFrame(draw);
    pending = tracker.update(e);
  });
  job = handle;
  cancel.addEventListener("click", () => {
    cancel.disabled = true;
    cancel.textContent = "Cancelling…";
    handle.cancel().catch(showError);
  });
  handle.done
    .then(async (output: BenchmarkOutput | ComparisonView) => {
      progress.hidden = true;
      if (output.historyWarning) notify(`Not added to the history: ${output.historyWarning}`);
      if (isComparison(output)) renderComparison(result, output);
      else await renderResult(result, output);
    })
    .catch((e) => {
      progress.hidden = true;
      showError(e);
    })
    .finally(() => {
      job = null;
      setRunning(false);
      refreshModel();
    });
}

/** Joins the benchmark or download a reloaded window had started. */
function reattach(running: JobStatus): void {
  if (running.kind === "download") {
    followDownload((onEvent) => attachJob<unknown>(running.id, onEvent).job);
  } else if (running.kind === "benchmark") {
    followBenchmark("Joined the benchmark that was running when the window reloaded.", running.lastEvent,
      (onEvent) => attachJob<BenchmarkOutput | ComparisonView>(running.id, onEvent).job);
  }
}

export const benchmarkScreen: Screen = {
  id: "benchmark",
  title: "Benchmark",
  reattach,
  mount(root) {
    boundFields(quick);
    workloadSelect.append(...WORKLOADS.map((w) => h("option", { value: w.name }, w.label)));
    workloadDescription.textContent = WORKLOADS[0]?.description ?? "";
    runButton.addEventListener("click", () => startBenchmark(false));
    quickButton.addEventListener("click", () => startBenchmark(true));
    compareButton.addEventListener("click", startCompare);
    workloadSelect.addEventListener("change", () => {
      workloadDescription.textContent = chosenWorkload().description;
      refreshModel();
    });
    const field = (label: string, input: HTMLInputElement) => h("label", {}, label, input);
    root.append(
      model,
      h("div", { class: "card" },
        h("h2", {}, "Standard benchmark"),
        h("label", {}, "Workload ", workloadSelect),
        workloadDescription,
        h("label", { class: "muted" }, "Time at least ", minDuration, " seconds (whole passes of the prompts; the result records it)"),
        h("label", { class: "muted" }, scoreQuality, " Score the pictures with CLIP after the timed images (openai/clip-vit-large-patch14, 1.7 GB, downloaded once)"),
        runButton,
        h("details", {},
          h("summary", {}, "Quick run (custom, not a standard score)"),
          h("div", { class: "row" }, field("Steps", quick.steps), field("Width", quick.width), field("Height", quick.height), field("Images", quick.images), quickButton))),
      h("div", { class: "card", id: "compare-card" },
        h("h2", {}, "Compare backends"),
        h("p", { class: "muted" }, "Runs the chosen workload once on every backend this machine can use (the same prompts and seeds, in the precision and memory profile of System), and ranks them by megapixels per second."),
        h("label", {}, compareQuick, " with the quick run's settings"),
        compareButton),
      progress,
      result);
  },
  show() {
    if (job === null) refreshModel();
    choice.refresh();
  },
};
