// Typed calls to the shell's commands. Long jobs take a Channel and resolve to a job id; `runJob`
// turns that into a promise of the job's end while passing progress to a callback.

import { Channel, invoke } from "@tauri-apps/api/core";
import type * as T from "./types";

export function isUiError(e: unknown): e is T.UiError {
  return typeof e === "object" && e !== null && "message" in e && "hint" in e && "kind" in e;
}

/** Any thrown value as a UiError (the shell always sends one; anything else is a bug). */
export function asUiError(e: unknown): T.UiError {
  if (isUiError(e)) return e;
  return { kind: "internal", message: String(e), hint: "This is a bug in SD Bench; please report it." };
}

export interface JobHandle<O> {
  id: Promise<number>;
  /** Resolves with the output; rejects with a UiError (kind "cancelled" when cancelled). */
  done: Promise<O>;
  cancel(): Promise<void>;
}

/** A channel whose events go to `onEvent` until the job's last one settles `done`. */
function follow<O>(onEvent: (e: T.JobEvent) => void) {
  const channel = new Channel<T.JobEvent>();
  let settle!: { resolve: (o: O) => void; reject: (e: T.UiError) => void };
  const done = new Promise<O>((resolve, reject) => (settle = { resolve, reject }));
  channel.onmessage = (e) => {
    if (e.event === "finished") settle.resolve(e.output as O);
    else if (e.event === "failed") settle.reject(e.error);
    else if (e.event === "cancelled") settle.reject(CANCELLED);
    else onEvent(e);
  };
  return { channel, done, settle };
}

const CANCELLED: T.UiError = { kind: "cancelled", message: "Cancelled", hint: "Nothing was saved." };

function handle<O>(id: Promise<number>, done: Promise<O>): JobHandle<O> {
  return { id, done, cancel: async () => { await invoke("cancel_job", { id: await id }); } };
}

/** Starts a job command and follows it through its channel. */
export function runJob<O>(
  command: string,
  args: Record<string, unknown>,
  onEvent: (e: T.JobEvent) => void,
): JobHandle<O> {
  const f = follow<O>(onEvent);
  const id = invoke<number>(command, { ...args, onEvent: f.channel });
  id.catch((e) => f.settle.reject(asUiError(e)));
  return handle(id, f.done);
}

/** Follows a job this window did not start (a reloaded window's running job) from now on; the
 * status holds its latest event, or how it ended if it ended meanwhile. */
export function attachJob<O>(id: number, onEvent: (e: T.JobEvent) => void): { job: JobHandle<O>; status: Promise<T.JobStatus> } {
  const f = follow<O>(onEvent);
  const status = invoke<T.JobStatus>("attach_job", { id, onEvent: f.channel });
  status.then((s) => {
    if (s.state === "finished") f.settle.resolve(s.output as O);
    else if (s.state === "failed") f.settle.reject(s.error ?? asUiError("the job failed"));
    else if (s.state === "cancelled") f.settle.reject(CANCELLED);
  }, (e) => f.settle.reject(asUiError(e)));
  return { job: handle(Promise.resolve(id), f.done), status };
}

export const api = {
  systemInfo: () => invoke<T.SystemReport>("system_info"),
  getSettings: () => invoke<T.Settings>("get_settings"),
  requestLimits: () => invoke<T.RequestLimits>("request_limits"),
  workloads: () => invoke<T.WorkloadCard[]>("workloads"),
  saveSettings: (settings: T.Settings) => invoke<T.Settings>("save_settings", { settings }),
  startupNotes: () => invoke<string[]>("startup_notes"),
  /** The model a benchmark of `workload` runs, and whether it is on this machine. */
  modelStatus: (workload: string) => invoke<T.ModelStatus>("model_status", { workload }),
  download: (onEvent: (e: T.JobEvent) => void, workload: string) =>
    runJob<{ path: string; bytes: number }>("start_download", { workload }, onEvent),
  benchmark: (request: T.BenchmarkRequest, onEvent: (e: T.JobEvent) => void) =>
    runJob<T.BenchmarkOutput>("start_benchmark", { request }, onEvent),
  /** The run `request` asks for, once on every usable backend, ranked. */
  compareBackends: (request: T.BenchmarkRequest, onEvent: (e: T.JobEvent) => void) =>
    runJob<T.ComparisonView>("start_compare_backends", { request }, onEvent),
  benchmarkView: (runId: string) => invoke<T.ResultView>("benchmark_view", { runId }),
  saveResult: (runId: string, path: string) => invoke<string>("save_result", { runId, path }),
  exportReport: (runIds: string[], path: string) => invoke<string>("export_report", { runIds, path }),
  submissionPreview: (runId: string) => invoke<T.SubmissionPreview>("submission_preview", { runId }),
  submit: (runId: string) => invoke<T.Submitted>("submit_result", { runId }),
  schedulers: () => invoke<string[]>("schedulers"),
  generate: (request: T.CreateRequest, onEvent: (e: T.JobEvent) => void) =>
    runJob<T.CreateOutput>("start_generation", { request }, onEvent),
  saveImage: (id: string, path: string) => invoke<string>("save_image", { id, path }),
  readImage: (path: string) => invoke<ArrayBuffer>("read_image", { path }),
  runningJob: () => invoke<T.JobStatus | null>("running_job"),
  historyList: (filter: T.HistoryFilter) => invoke<T.RunSummary[]>("history_list", { filter }),
  historyGet: (id: string) => invoke<T.HistoryRecord>("history_get", { id }),
  historyDelete: (ids: string[]) => invoke<number>("history_delete", { ids }),
  historyExport: (ids: string[], path: string) => invoke<number>("history_export", { ids, path }),
  runCharts: (ids: string[]) => invoke<T.Charts>("run_charts", { ids }),
  cacheInfo: () => invoke<T.CacheInfo>("cache_info"),
  /** The models on this machine (cache, the setting's folder or file, synthetic weights). */
  localModels: () => invoke<T.LocalModelView[]>("local_models"),
  cleanCache: (models: string[]) => invoke<T.Cleaned>("clean_cache", { models }),
  cleanKernelCache: () => invoke<T.Cleaned>("clean_kernel_cache"),
  checkForUpdate: () => invoke<T.UpdateInfo>("check_for_update"),
  installUpdate: () => invoke<void>("install_update"),
};

/** An object URL for a PNG the app made (revoke it when the image is replaced). */
export async function imageUrl(path: string): Promise<string> {
  const bytes = await api.readImage(path);
  return URL.createObjectURL(new Blob([bytes], { type: "image/png" }));
}

/** An <img> of a PNG the app made, shown once: its object URL is released when the picture has
 * loaded (or failed to), so views that are redrawn do not keep every past image's bytes. */
export async function imageElement(path: string, alt: string): Promise<HTMLImageElement> {
  const url = await imageUrl(path);
  const img = document.createElement("img");
  const release = () => URL.revokeObjectURL(url);
  img.addEventListener("load", release, { once: true });
  img.addEventListener("error", release, { once: true });
  img.alt = alt;
  img.src = url;
  return img;
}
