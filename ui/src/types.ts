// The shapes the shell's commands return (see src-tauri/). History and result records keep the
// engine's snake_case names; the shell's own types are camelCase.

export type ErrorKind =
  | "noDevice" | "outOfMemory" | "network" | "diskFull" | "modelMissing" | "badModel"
  | "badInput" | "busy" | "notFound" | "cancelled" | "internal";

export interface UiError { kind: ErrorKind; message: string; hint: string }

export interface Settings {
  model: string;
  modelConfig: string | null;
  backend: string;
  /** Which of the backend's devices, by the number System lists (null: the best). */
  device: number | null;
  precision: string;
  /** The memory profile: full, balanced, low, minimal, cpu or auto. */
  memory: string;
  /** The GPU memory in GiB that the fit check and auto assume (null: what the GPU has free). */
  memoryLimitGib: number | null;
  submitEndpoint: string | null;
  updateEndpoint: string | null;
  /** CPU backend worker threads (null: one per physical core); applies at the next start. */
  cpuThreads: number | null;
}

export interface LiveSample {
  source: string; t: number; powerW: number | null;
  vramUsedBytes: number | null; vramTotalBytes: number | null;
}

export type JobEvent =
  | { event: "note"; text: string }
  | { event: "download"; file: string; fileDone: number; fileTotal: number; done: number; total: number }
  | { event: "loading"; model: string; backend: string }
  | { event: "loaded"; seconds: number; device: string; precision: string }
  | { event: "baseline"; seconds: number }
  | { event: "estimate"; seconds: number }
  | { event: "imageStarted"; index: number; total: number; warmup: boolean }
  /** `seconds` is null where the step was queued without its own device sync (timed images on a GPU). */
  | { event: "step"; index: number; total: number; step: number; steps: number; seconds: number | null; warmup: boolean }
  | { event: "imageFinished"; index: number; total: number; seconds: number; valid: boolean; warmup: boolean }
  /** GPU kernels being compiled (a first run on a GPU): totals since the job started. */
  | { event: "compiling"; compiled: number; cacheHits: number; seconds: number }
  | { event: "telemetry"; samples: LiveSample[] }
  | { event: "finished"; output: unknown }
  | { event: "failed"; error: UiError }
  | { event: "cancelled" };

export interface JobStatus {
  id: number; kind: "download" | "benchmark" | "generation";
  state: "running" | "finished" | "failed" | "cancelled";
  output?: unknown; error?: UiError; lastEvent: JobEvent | null; events: number; elapsedSeconds: number;
}

export interface BenchResult {
  run_id: string;
  created_at: string;
  valid: boolean;
  invalid_reasons: string[];
  /** memory_profile: absent in results from before profiles (they ran as full). */
  backend: { name: string; device: string; precision: string; memory_profile?: string | null };
  workload: { name: string; standard: boolean; steps: number; width: number; height: number; prompts: { prompt: string; seed: number }[] };
  scores: { score: number | null; images_per_minute: number };
  results: { seconds: number; image: { check: { valid: boolean; reason: string | null } } }[];
}

export interface ResultView {
  result: BenchResult;
  header: [string, string][];
  rows: [string, string, string][];
  imageColumns: string[];
  imageCells: string[][];
  images: (string | null)[];
}

export interface BenchmarkOutput extends ResultView { resultPath: string; historyWarning: string | null }

export interface ModelStatus {
  model: string; source: "hub" | "folder" | "checkpoint" | "synthetic"; ready: boolean;
  path: string | null; downloadBytes: number | null; problem: string | null; note: string | null;
}

export interface Generation {
  id: string; created_at: string; prompt: string; negative_prompt: string; steps: number;
  guidance: number; seed: number | null; width: number; height: number; scheduler: string;
  model: string; backend: string; device: string; precision: string; seconds: number;
  stages: { text_encoder: number; unet_loop: number; vae_decode: number };
  step_seconds: number[]; image_path: string | null;
  init_image?: { source: string; strength: number } | null;
}

export interface CreateOutput { generation: Generation; historyWarning: string | null }

export interface CreateRequest {
  prompt: string; negativePrompt: string; steps: number; guidance: number; seed: number;
  width: number; height: number; scheduler: string | null; backend: string | null;
  /** Image-to-image: the picked picture (PNG or JPEG bytes); the image gets its size. */
  initImage?: InitImageInput | null;
}

export interface InitImageInput { name: string; bytes: number[]; strength: number }

export interface RunSummary {
  id: string; kind: "benchmark" | "generation"; created_at: string; title: string; model: string;
  backend: string; device: string; precision: string; score: number | null;
  images_per_minute: number | null; seconds_per_image: number | null; valid: boolean; standard: boolean;
  /** null for runs from before memory profiles (they ran as full). */
  memory_profile?: string | null;
}

export interface HistoryFilter {
  kind?: "benchmark" | "generation"; backend?: string; text?: string;
  standard_only?: boolean; valid_only?: boolean; limit?: number;
}

export type HistoryRecord =
  | { kind: "benchmark"; run: BenchResult }
  | { kind: "generation"; run: Generation };

export interface Chart { svg: string | null; reason: string | null }
export interface Charts {
  labels: string[]; secondsPerImage: Chart; stageBreakdown: Chart; stepTimes: Chart; powerOverTime: Chart;
  /** Set when the runs did different work (workload, size, steps…), whose figures are not comparable: it says how. */
  warning: string | null;
  /** Set when the runs ran on different setups (precision, backend, device…): what the comparison is across. */
  note: string | null;
}

/** One device of a backend: its number (the Device setting), name, and the driver's description. */
export interface DeviceReport { index: number; name: string; description: string }
export interface BackendReport { backend: string; usable: boolean; detail: string; devices: DeviceReport[] }
/** A standard workload as the Benchmark screen lists it (the app's `workloads`). */
export interface WorkloadCard { name: string; label: string; run: string; description: string }

/** What a request may ask for (the app's `request_limits`). */
export interface RequestLimits {
  maxSide: number; sideMultiple: number; maxSteps: number; maxBatch: number; maxImages: number;
}

export interface SystemReport {
  appVersion: string;
  system: { os: string; os_version: string; cpu_model: string; cpu_logical_cores: number; ram_bytes: number; gpus: { name: string }[] };
  backends: BackendReport[];
  auto: { backend: string | null; device: string | null; index: number | null; precision: string | null; error: string | null };
  backendNames: string[]; precisions: string[]; memoryProfiles: string[]; dataDir: string; cacheDir: string;
  /** The CPU backend's worker threads in this process. */
  cpuThreads: number;
}

export interface CachedModel { repo: string; path: string; size_bytes: number; runnable: boolean; partial_bytes: number }
export interface KernelCacheInfo { dir: string; kernels: number; devices: number; totalBytes: number }
export interface CacheInfo { dir: string; models: CachedModel[]; totalBytes: number; kernels: KernelCacheInfo | null }
export interface Cleaned { removed: string[]; freedBytes: number }
export interface UpdateInfo { currentVersion: string; available: boolean; version: string | null; notes: string | null; date: string | null }
export interface SubmissionPreview { endpoint: string; payload: string }
export type Submitted = { outcome: "sent"; status: number; comparison?: string | null } | { outcome: "queued"; path: string; reason: string };
