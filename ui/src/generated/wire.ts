// Generated from the Rust types by src-tauri/wire_types.rs (ts-rs); do not edit.
// Rewrite: source scripts/build-env && SDBENCH_WRITE_TYPES=1 cargo test "${test_build[@]}" --lib wire_types

export type UiError = { kind: ErrorKind, message: string, hint: string, };

export type ErrorKind = "noDevice" | "outOfMemory" | "network" | "diskFull" | "modelMissing" | "badModel" | "badInput" | "busy" | "notFound" | "cancelled" | "internal";

export type JobEvent = RunEvent | JobNews;

export type JobNews = { "event": "compiling", compiled: number, cacheHits: number, seconds: number, } | { "event": "finished", output: JsonValue, } | { "event": "failed", error: UiError, } | { "event": "cancelled" };

export type RunEvent = { "event": "note", text: string, } | { "event": "download" } & DownloadProgress | { "event": "loading", model: string, backend: string, } | { "event": "loaded", seconds: number, device: string, precision: string, } | { "event": "baseline", seconds: number, } | { "event": "imageStarted", index: number, total: number, warmup: boolean, } | { "event": "step", index: number, total: number, step: number, steps: number, seconds: number | null, warmup: boolean, } | { "event": "imageFinished", index: number, total: number, seconds: number, valid: boolean, warmup: boolean, } | { "event": "textEncoded", seconds: number, } | { "event": "decoded", seconds: number, } | { "event": "vram", phase: VramPhase, } | { "event": "estimate", seconds: number, } | { "event": "telemetry", samples: Array<LiveSample>, };

export type LiveSample = { source: string, 
/**
 * Seconds since the run's telemetry started.
 */
t: number, powerW: number | null, vramUsedBytes: number | null, vramTotalBytes: number | null, };

export type DownloadProgress = { file: string, fileDone: number, fileTotal: number, done: number, total: number, };

export type VramPhase = { 
/**
 * `load`, `text_encode`, `step` or `decode`.
 */
phase: string, 
/**
 * The step's number (from 1), for `step`.
 */
step?: number | null, in_use_bytes: number, reserved_bytes: number, };

export type VramReport = { 
/**
 * Which generation was measured.
 */
generation: string, phases: Array<VramPhase>, };

export type JobStatus = { id: number, kind: JobKind, 
/**
 * The latest progress event, for a view that attaches late.
 */
lastEvent: JobEvent | null, 
/**
 * Events sent so far.
 */
events: number, elapsedSeconds: number, } & ({ "state": "running" } | { "state": "finished", output: JsonValue, } | { "state": "failed", error: UiError, } | { "state": "cancelled" });

export type JobKind = "download" | "benchmark" | "generation";

export type JobState = { "state": "running" } | { "state": "finished", output: JsonValue, } | { "state": "failed", error: UiError, } | { "state": "cancelled" };

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]?: JsonValue } | null;

export type Settings = { 
/**
 * A Hub id, a diffusers folder or .safetensors checkpoint on this machine, or `synthetic`.
 */
model: string, 
/**
 * For a model file: a diffusers folder whose configs describe it (a checkpoint that is not
 * SD1.5-, SD2.1- or SDXL-base-shaped; a transformer file whose configs are not fetched).
 */
modelConfig: string | null, 
/**
 * For a model file: its text encoders as files of their own, in any order (the CLI's
 * `--text-encoder`, given once for each). Settings saved before this list read as one
 * `textEncoder` text, its files separated by `;`.
 */
textEncoders: Array<string>, 
/**
 * For a model file: its VAE file (the CLI's `--vae`).
 */
vae: string | null, 
/**
 * A `BackendRequest` name: auto, cuda, rocm, vulkan, metal, dx12, cpu…
 */
backend: string, 
/**
 * Which of the backend's devices, by the number System lists (none: the best).
 */
device: number | null, 
/**
 * auto, f32 or f16.
 */
precision: string, 
/**
 * The memory profile: full, balanced, low, minimal, cpu (see `MemoryProfile`) or auto.
 */
memory: string, 
/**
 * The device memory in GiB that the fit check and `auto` assume instead of what the GPU
 * has free (the CLI's `--memory-limit`): a smaller GPU's size, or one for a device that no
 * telemetry reads (whose size is otherwise unknown, so `auto` keeps full).
 */
memoryLimitGib: number | null, 
/**
 * Where results are submitted (none: submission is off).
 */
submitEndpoint: string | null, 
/**
 * Where to look for updates instead of the endpoint built into the app.
 */
updateEndpoint: string | null, 
/**
 * Worker threads of the CPU backend (none: one per physical core). The pool is built once
 * per process, so a change takes effect when the app next starts.
 */
cpuThreads: number | null, 
/**
 * Folders to look for models in besides the usual ones (the Hugging Face cache, ComfyUI's,
 * AUTOMATIC1111's, Forge's, InvokeAI's, stable-diffusion.cpp's): the model choice lists what
 * they hold, as `sdbench models --models-dir` does. Nothing is copied or moved.
 */
modelDirs: Array<string>, };

export type SystemReport = { appVersion: string, system: SystemInfo, backends: Array<BackendReport>, auto: AutoChoice, backendNames: Array<string>, precisions: Array<string>, memoryProfiles: Array<string>, dataDir: string, cacheDir: string, 
/**
 * The CPU backend's worker threads in this process (a changed setting applies at the next
 * start).
 */
cpuThreads: number, };

export type BackendReport = { backend: string, usable: boolean, detail: string, devices: Array<DeviceReport>, };

export type DeviceReport = { index: number, name: string, 
/**
 * Name, class, memory, driver and PCI bus on one line.
 */
description: string, };

export type AutoChoice = { backend: string | null, device: string | null, 
/**
 * The device's number among its backend's.
 */
index: number | null, 
/**
 * None on a GPU: f16 where the device supports it, which only the initialised device tells.
 */
precision: string | null, 
/**
 * Why nothing could be chosen.
 */
error: string | null, };

export type RequestLimits = { maxSide: number, sideMultiple: number, maxSteps: number, maxBatch: number, maxImages: number, };

export type SystemInfo = { os: string, os_version: string, kernel: string, arch: string, cpu_model: string, cpu_physical_cores: number | null, cpu_logical_cores: number, ram_bytes: number, gpus: Array<GpuInfo>, };

export type GpuInfo = { name: string, vendor: string, driver: string | null, vram_bytes: number | null, pci_bus: string | null, };

export type WorkloadCard = { name: string, label: string, run: string, description: string, };

export type BenchmarkRequest = { 
/**
 * A standard workload's name (none: sd15-512-30).
 */
workload?: string | null, 
/**
 * None: the workload as published.
 */
custom?: CustomRun | null, 
/**
 * Seconds of idle power sampling before the run (default 1).
 */
baselineSeconds?: number | null, 
/**
 * Time whole passes of the prompts until this many seconds have passed (none: one pass).
 */
minDurationSeconds?: number | null, 
/**
 * Score every picture with CLIP after the timed region (openai/clip-vit-large-patch14,
 * fetched into the cache once).
 */
quality?: boolean | null, 
/**
 * Synthetic weights of the workload's architecture instead of the model setting's model: the
 * same computation with no download (offline, say); never a standard score.
 */
synthetic?: boolean | null, };

export type CustomRun = { steps?: number | null, width?: number | null, height?: number | null, images?: number | null, };

export type ModelStatus = { 
/**
 * The model setting.
 */
model: string, 
/**
 * hub, folder, checkpoint or synthetic.
 */
source: string, 
/**
 * Whether a run can start without downloading.
 */
ready: boolean, 
/**
 * Where it is on disk, when it is.
 */
path: string | null, 
/**
 * For a Hub model that is not cached: the bytes a download fetches (when the Hub answered).
 */
downloadBytes: number | null, 
/**
 * Why the download size is unknown (no network…).
 */
problem: string | null, 
/**
 * For a Hub model that is not cached, when the Hub answered: its licence (its authors', from
 * its card) and where to read it, shown before the download.
 */
licenseNote: string | null, 
/**
 * E.g. a renamed Hub id.
 */
note: string | null, 
/**
 * The standard workload made for the model the setting names, where that is not the one
 * asked about (a FLUX.2 folder set while SD1.5's workload is chosen): the screen switches to
 * it. None for the untouched default, which stands for each workload's own model.
 */
ownWorkload: OwnWorkload | null, };

export type LocalModelView = { 
/**
 * What the model setting takes: a Hub id, a path, or `synthetic-<preset>`.
 */
name: string, 
/**
 * The model family ("Stable Diffusion", "FLUX.2 klein", "Z-Image") and the architecture its
 * configs describe ("sdxl"); none when they could not be read.
 */
family: string | null, architecture: string | null, 
/**
 * Where it is and in what form ("diffusers folder (Hugging Face cache)", "single file
 * (ComfyUI), GGUF Q8_0+F16", ...).
 */
format: string, synthetic: boolean, sizeBytes: number | null, 
/**
 * Why SD Bench cannot run it; none when it can.
 */
problem: string | null, defaults: ModelDefaults | null, 
/**
 * None when the family is not known.
 */
guidance: GuidanceChoices | null, 
/**
 * Whether its family conditions images on reference pictures; none when it is not known.
 */
referencePictures: boolean | null, 
/**
 * A model file's text encoder and VAE files found beside it, which choosing it saves as the
 * text encoder and VAE settings.
 */
textEncoders: Array<string>, vae: string | null, };

export type ModelDefaults = { width: number, height: number, steps: number, guidance: number, };

export type GuidanceChoices = { 
/**
 * CFG truncation and normalization.
 */
truncationAndNormalization: boolean, skipLayerGuidance: boolean, trueCfg: boolean, };

export type OwnWorkload = { name: string, why: string, };

export type Downloaded = { model: string, path: string, files: number, bytes: number, downloadedBytes: number, 
/**
 * The model's licence (its authors', from its card) and where to read it.
 */
licenseNote: string, };

export type ResultView = { result: BenchResult, 
/**
 * (what, value): workload, model, backend…
 */
header: Array<[string, string]>, 
/**
 * (metric, value, unit): score, images per minute, power…
 */
rows: Array<[string, string, string]>, imageColumns: Array<string>, imageCells: Array<Array<string>>, 
/**
 * The run's images on disk, in order (None where the file is gone).
 */
images: Array<string | null>, };

export type BenchmarkOutput = { resultPath: string, 
/**
 * Set when the run could not be added to the history (the result file is still saved).
 */
historyWarning: string | null, result: BenchResult, 
/**
 * (what, value): workload, model, backend…
 */
header: Array<[string, string]>, 
/**
 * (metric, value, unit): score, images per minute, power…
 */
rows: Array<[string, string, string]>, imageColumns: Array<string>, imageCells: Array<Array<string>>, 
/**
 * The run's images on disk, in order (None where the file is gone).
 */
images: Array<string | null>, };

export type ComparisonView = { sweepId: string, columns: Array<string>, rows: Array<PointRow>, 
/**
 * "fastest: …".
 */
fastest: string, 
/**
 * Each point's megapixels per second (SVG), or why there is no chart.
 */
chart: Chart, 
/**
 * The sweep file, beside the runs' folders.
 */
sweepPath: string, 
/**
 * Set when the points could not be added to the history (the sweep file is still saved).
 */
historyWarning: string | null, };

export type PointRow = { setup: Array<string>, figures: Array<string> | null, skipped: string | null, fastest: boolean, };

export type SubmissionPreview = { endpoint: string, 
/**
 * Exactly the JSON that would be sent.
 */
payload: string, };

export type Submitted = { "outcome": "sent", status: number, 
/**
 * The results service's comparison with the runs of the same GPU, and the run's page;
 * absent from an endpoint that is not an SD Bench results service.
 */
comparison: string | null, } | { "outcome": "queued", path: string, reason: string, };

export type BenchResult = { schema_version: number, run_id: string, 
/**
 * RFC 3339, UTC.
 */
created_at: string, app: AppInfo, system: SystemInfo, backend: BackendInfo, workload: WorkloadInfo, results: Array<ImageResult>, scores: Scores, cold_start: ColdStart, telemetry: Telemetry, valid: boolean, invalid_reasons: Array<string>, 
/**
 * How the per-step times were measured (absent in older results, whose images each carry
 * per-step times taken with a device sync after every step).
 */
step_timing?: StepTiming | null, 
/**
 * The allocator's memory after each phase of one synced generation (GPU backends; absent on
 * the CPU and in older results).
 */
vram_report?: VramReport | null, 
/**
 * The sweep this run is a point of (`sdbench sweep`), where it is one.
 */
sweep_id?: string | null, };

export type AppInfo = { name: string, version: string, commit: string | null, };

export type BackendInfo = { 
/**
 * cpu, cuda, rocm, vulkan, metal or dx12.
 */
name: string, device: string, 
/**
 * f16, bf16 or f32.
 */
precision: string, 
/**
 * A software implementation of a GPU API (e.g. Mesa lavapipe).
 */
software: boolean, 
/**
 * The CPU backend's worker threads (`--threads`); absent on a GPU. Runs on the CPU compare
 * only at the same count.
 */
threads?: number | null, 
/**
 * The device's number among the backend's (`--device N`); absent in older results.
 */
device_index?: number | null, 
/**
 * Driver name and version as the backend's API reports them.
 */
driver?: string | null, 
/**
 * Device memory as the backend's API reports it (CUDA, HIP).
 */
device_memory_bytes?: number | null, 
/**
 * The card's PCI bus id: which of `system.gpus` ran, and whose telemetry was read.
 */
pci_bus?: string | null, 
/**
 * The memory profile (`full`, `balanced`, `low`, `minimal`, `cpu`); absent in older results, which ran
 * as `full` does. Only `full` runs of a standard workload are standard.
 */
memory_profile?: string | null, 
/**
 * Where each component ran and how (what the profile chose).
 */
placement?: PlacementRecord | null, };

export type PlacementRecord = { 
/**
 * `device` or `cpu`.
 */
text_encoders: string, 
/**
 * `device` or `cpu`.
 */
vae: string, 
/**
 * Classifier-free guidance: `batched` (one doubled batch) or `sequential`.
 */
cfg: string, 
/**
 * Tiled VAE decoding (and encoding) above the VAE's tile size was on; whether this run's
 * size tiled is `vae_decode_tiles`.
 */
vae_tiling: boolean, 
/**
 * Tiles each image's VAE decode took at the workload's size (1: one piece), from tiling
 * or from the device's largest buffer; absent in older results.
 */
vae_decode_tiles?: number | null, 
/**
 * The VAE's precision: the run's, or f32 where the VAE overflows in f16 (SDXL's own VAE in an
 * f16 run, as diffusers upcasts it) or runs on the CPU; absent in older results.
 */
vae_precision?: string | null, 
/**
 * The UNet's weight storage: f16, bf16 or f32 (the run's precision), or int8 (W8A16: dequantized
 * to the run's precision layer by layer).
 */
unet_weights: string, 
/**
 * Unused pooled memory handed back between denoising and decoding.
 */
release_between_stages: boolean, 
/**
 * The UNet's weights in host memory while the VAE decodes.
 */
unet_offload: boolean, 
/**
 * Tiled decoding and encoding in tiles of half the VAE's own (diffusers') side.
 */
small_vae_tiles: boolean, };

export type WorkloadInfo = { 
/**
 * `sd15-512-30` or `custom`.
 */
name: string, version: number, 
/**
 * The unmodified standard workload on real weights: the only runs whose score is comparable.
 */
standard: boolean, model: ModelRecord, width: number, height: number, steps: number, scheduler: string, guidance: number, negative_prompt: string, prompts: Array<PromptSeed>, 
/**
 * Images per generation, made together (absent in older results: 1).
 */
batch: number, 
/**
 * `--min-duration`: the timed images went on in whole passes of the prompts until this
 * many seconds had passed (absent: one pass).
 */
min_duration_seconds?: number | null, };

export type PromptSeed = { prompt: string, seed: number, };

export type ModelRecord = { 
/**
 * Hub id, local folder path, or `synthetic`.
 */
id: string, 
/**
 * The Hub commit, for Hub models.
 */
revision: string | null, 
/**
 * hub, folder, checkpoint or synthetic.
 */
source: string, synthetic: boolean, 
/**
 * The model's configs are SD1.5's (a fine-tune's weights differ, its cost does not); only
 * such runs can be standard `sd15-512-30` runs.
 */
sd15_architecture: boolean, 
/**
 * The model family: sd1, sd2, sdxl, flux2-klein, zimage, sd35-medium, sd35-large or
 * sd3-medium (absent in results from before SDXL).
 */
family?: string | null, 
/**
 * The built-in preset whose configs the model's equal (sd15, sd21, sdxl-base), if any: a
 * standard run's model matches its workload's preset.
 */
preset?: string | null, 
/**
 * The weight files read, with their sha256.
 */
files: Array<FileRecord>, 
/**
 * The weights' stored types other than plain floats, when any (`F8_E4M3`, `Q4_K+Q6_K`): an
 * FP8 or GGUF file, dequantized as it loads. Such runs are never standard, and compare only
 * with runs of the same types; absent for F32/F16/BF16 weights.
 */
quantization?: string | null, };

export type FileRecord = { path: string, bytes: number, sha256: string, 
/**
 * Parameters stored per element type (`F16`, `Q8_0`, ...); absent in older results.
 */
weight_types?: { [key in string]?: number }, };

export type ImageResult = { 
/**
 * Index into `workload.prompts`.
 */
prompt_index: number, seed: number, 
/**
 * This image's place in its batch (from 0; absent in older results: 0).
 */
batch_index: number, 
/**
 * Which pass over the prompts made it (from 0): a run with a minimum duration repeats its
 * prompts in whole passes until it has passed (absent in older results: 0).
 */
pass: number, 
/**
 * `--quality`: the picture's CLIP score against its prompt (first-pass images only).
 */
clip_score?: number | null, 
/**
 * Text encoder + denoising loop + VAE decode, bounded by device syncs; with a batch, the
 * generation's seconds divided by the batch size (so the mean is the time per image).
 */
seconds: number, 
/**
 * The generation's stage seconds, divided by the batch size like `seconds`.
 */
stages: Stages, 
/**
 * The generation's step seconds (each step serves the whole batch); empty where the steps
 * were queued without per-step syncs (see `step_timing`).
 */
step_seconds: Array<number>, 
/**
 * steps / UNet-loop seconds of the generation (a step serves the whole batch).
 */
steps_per_second: number, image: ImageRecord, };

export type Stages = { text_encoder: number, unet_loop: number, vae_decode: number, };

export type ImageRecord = { 
/**
 * File name beside the result JSON, once saved.
 */
file: string | null, 
/**
 * sha256 of the 8-bit RGB pixels, row-major (independent of PNG encoding and metadata).
 */
sha256: string, 
/**
 * 64-bit DCT perceptual hash, 16 hex digits: close images differ in few bits.
 */
phash: string, 
/**
 * Standard deviation of the 8-bit values.
 */
pixel_stdev: number, valid: boolean, reason: string | null, };

export type ImageCheck = { 
/**
 * sha256 of the 8-bit RGB pixels, row-major (independent of PNG encoding and metadata).
 */
sha256: string, 
/**
 * 64-bit DCT perceptual hash, 16 hex digits: close images differ in few bits.
 */
phash: string, 
/**
 * Standard deviation of the 8-bit values.
 */
pixel_stdev: number, valid: boolean, reason: string | null, };

export type Scores = { 
/**
 * round(100 x images per minute); absent for invalid runs.
 */
score: number | null, images_per_minute: number, seconds_per_image: Stats, 
/**
 * Median over images of steps / UNet-loop seconds.
 */
steps_per_second: number, 
/**
 * The largest of the allocator's peak and the device's used memory; absent when neither is known.
 */
vram_peak_bytes: number | null, vram: Vram, power: Power, 
/**
 * A throttle reason held for a meaningful share of the timed samples (`hardware`); never
 * for want of readings.
 */
throttled: boolean, 
/**
 * Every throttle reason seen in the timed samples, however briefly.
 */
throttle_reasons: Array<string>, 
/**
 * Clocks, temperature and throttling over the timed region, or why they are unknown (absent
 * from results made before they were recorded).
 */
hardware: HardwareState, 
/**
 * `--quality`: the CLIP score of the pictures (absent without it).
 */
quality?: Quality | null, };

export type Stats = { mean: number, median: number, 
/**
 * Sample standard deviation (n - 1); 0 for a single value.
 */
stdev: number, min: number, max: number, };

export type Vram = { 
/**
 * Peak bytes the backend's allocator reserved from the device, sampled after every step.
 */
allocator_peak_bytes: number | null, 
/**
 * Peak device memory in use (all processes) from telemetry.
 */
device_used_peak_bytes: number | null, device_source: string | null, 
/**
 * Why a figure is missing.
 */
reason: string | null, };

export type Power = { available: boolean, reason: string | null, 
/**
 * The telemetry source id and what it reads.
 */
source: string | null, method: string | null, avg_w: number | null, min_w: number | null, max_w: number | null, 
/**
 * Average power during the idle baseline before the run.
 */
idle_w: number | null, energy_j_per_image: number | null, images_per_minute_per_watt: number | null, };

export type ColdStart = { 
/**
 * Finding (and downloading) the model.
 */
resolve_seconds: number, downloaded_bytes: number, 
/**
 * Reading weights onto the device.
 */
load_seconds: number, 
/**
 * The untimed first image (kernel compilation, autotuning).
 */
warmup_seconds: number, 
/**
 * GPU kernels compiled, read from the kernel cache and tuned, where the backend counts them
 * (CUDA and wgpu); absent elsewhere and in results from before they were counted.
 */
kernels?: KernelColdStart | null, };

export type KernelColdStart = { 
/**
 * Kernels compiled, and the seconds until each could run: on CUDA code generation, NVRTC
 * and loading the module (the whole cost); on wgpu code generation and creating the pipeline,
 * after which a driver may still compile at first use (lavapipe does: most of its cost),
 * which only `warmup_seconds` holds.
 */
compiled: number, compile_seconds: number, 
/**
 * Kernels read from the kernel cache instead, and the seconds that took (on wgpu the driver
 * still builds the pipeline from the stored shader; its own cache, Mesa's say, may keep that).
 */
cache_hits: number, cache_load_seconds: number, 
/**
 * Autotune keys tuned (their seconds include compiling the candidates, also counted above)
 * and choices read from the cache instead.
 */
tuned: number, tune_seconds: number, tune_cache_hits: number, 
/**
 * Kernels compiled during the timed images: each one's cost is inside the timed figures.
 */
compiled_while_timed: number, 
/**
 * `on`, `off` (not kept between runs), or `unwritable` (kept in memory only: one warning).
 */
cache: string, };

export type Telemetry = { interval_ms: number, sources: Array<SourceInfo>, unavailable: Array<Unavailable>, 
/**
 * Seconds on the samples' clock.
 */
baseline: Window, timed: Window, samples: Array<Sample>, };

export type Window = { start: number, end: number, };

export type Quality = { 
/**
 * The CLIP model, as given (a Hub id or a folder).
 */
clip_model: string, 
/**
 * The mean of the first pass's pictures' CLIP scores.
 */
clip_score_mean: number, 
/**
 * When scoring began on the samples' clock: after the timed region and its telemetry.
 */
started_at: number, seconds: number, 
/**
 * Why the score says nothing of the model, where it does not (synthetic weights).
 */
note: string | null, };

export type StepTiming = { 
/**
 * `every_step`: the backend runs each operation as it is called (the CPU), so the scored
 * images' steps are timed one by one at no cost. `diagnostic_image`: the scored images were
 * timed with device syncs only at stage edges (the host queues every step, as applications
 * do); `step_seconds` come from one extra image of prompt 1, after the timed region, with a
 * sync after every step.
 */
method: string, 
/**
 * The diagnostic image's step seconds (empty for `every_step`: see each image's).
 */
step_seconds: Array<number>, 
/**
 * The diagnostic image's denoising loop over timed image 1's (same prompt and seed): what a
 * sync after every step costs on this device.
 */
sync_cost_ratio?: number | null, };

export type SourceInfo = { 
/**
 * E.g. "nvml:0", "amdgpu:card1", "i915:card0", "rapl:package".
 */
id: string, vendor: Vendor, 
/**
 * The device it measures (GPU name, or "CPU package").
 */
device: string, 
/**
 * Where the numbers come from, for the report ("NVML nvmlDeviceGetTotalEnergyConsumption", a sysfs path…).
 */
method: string, 
/**
 * PCI bus id of the GPU, when known.
 */
pci_bus: string | null, };

export type Vendor = "nvidia" | "amd" | "intel" | "apple" | "cpu";

export type Unavailable = { vendor: Vendor, device: string, reason: string, };

export type Sample = { t: number, source: string, 
/**
 * Instantaneous (or driver-averaged) board/package power.
 */
power_w: number | null, 
/**
 * A monotonic energy counter (wrap-arounds already unfolded).
 */
energy_j: number | null, vram_used_bytes: number | null, vram_total_bytes: number | null, 
/**
 * The core clock: a GPU's graphics (shader) clock, a CPU package's mean core frequency.
 */
gpu_clock_mhz: number | null, 
/**
 * The core clock's maximum (NVML's max graphics clock, amdgpu's top `pp_dpm_sclk` level,
 * the CPU's largest `cpuinfo_max_freq`).
 */
gpu_clock_max_mhz?: number | null, mem_clock_mhz: number | null, temperature_c: number | null, utilization_pct: number | null, 
/**
 * Active reasons the clocks are held down (power cap, thermal…); empty when none.
 */
throttle?: Array<string>, 
/**
 * Whether the source read its throttle reasons this time (an empty `throttle` then means
 * none held, not that none could be known).
 */
throttle_read?: boolean, };

export type Reading = { 
/**
 * Instantaneous (or driver-averaged) board/package power.
 */
power_w: number | null, 
/**
 * A monotonic energy counter (wrap-arounds already unfolded).
 */
energy_j: number | null, vram_used_bytes: number | null, vram_total_bytes: number | null, 
/**
 * The core clock: a GPU's graphics (shader) clock, a CPU package's mean core frequency.
 */
gpu_clock_mhz: number | null, 
/**
 * The core clock's maximum (NVML's max graphics clock, amdgpu's top `pp_dpm_sclk` level,
 * the CPU's largest `cpuinfo_max_freq`).
 */
gpu_clock_max_mhz?: number | null, mem_clock_mhz: number | null, temperature_c: number | null, utilization_pct: number | null, 
/**
 * Active reasons the clocks are held down (power cap, thermal…); empty when none.
 */
throttle?: Array<string>, 
/**
 * Whether the source read its throttle reasons this time (an empty `throttle` then means
 * none held, not that none could be known).
 */
throttle_read?: boolean, };

export type HardwareState = { 
/**
 * The telemetry source read ("nvml:0"), none where there is none.
 */
source: string | null, 
/**
 * Readings of it in the window.
 */
samples: number, 
/**
 * The core clock, MHz.
 */
gpu_clock_mhz: Spread | null, 
/**
 * Its maximum, MHz, and the median's share of it (0 to 1).
 */
gpu_clock_max_mhz: number | null, gpu_clock_median_share: number | null, 
/**
 * The memory clock, MHz.
 */
mem_clock_mhz: Spread | null, temperature_peak_c: number | null, 
/**
 * Each throttle reason seen, most held first.
 */
throttle: Array<ThrottleShare>, 
/**
 * Readings that read their throttle reasons (the shares' denominator); 0 where none could.
 */
throttle_samples: number, 
/**
 * Whether a reason held for `THROTTLED_SHARE` of the samples or more.
 */
throttled: boolean, 
/**
 * Each figure that could not be read, and why.
 */
unavailable: Array<string>, };

export type Spread = { min: number, median: number, max: number, };

export type ThrottleShare = { reason: string, share: number, };

export type CreateRequest = { prompt: string, negativePrompt: string, steps: number, guidance: number, seed: number, width: number, height: number, 
/**
 * None: the model's own scheduler.
 */
scheduler?: string | null, 
/**
 * None: the backend in the settings.
 */
backend?: string | null, 
/**
 * Image-to-image: the picked picture (its size is the image's size).
 */
initImage?: InitImageInput | null, 
/**
 * Pictures to condition the image on (models that take them; the others refuse them).
 */
referenceImages: Array<PictureInput>, 
/**
 * Steps past this fraction of the schedule run unguided (models whose guidance takes it; the
 * others refuse it).
 */
cfgTruncation?: number | null, 
/**
 * Each guided prediction's norm capped at this many times the unguided one's.
 */
cfgNormalization?: number | null, 
/**
 * True classifier-free guidance at this scale (models that read the guidance scale as an
 * input of their own; the others refuse it).
 */
trueCfgScale?: number | null, 
/**
 * Skip-layer guidance over these denoiser blocks (none: off), at `skip_layer_scale` (none:
 * diffusers' 2.8) over diffusers' default steps.
 */
skipLayers: Array<number>, skipLayerScale?: number | null, };

export type InitImageInput = { name: string, bytes: Array<number>, strength: number, };

export type PictureInput = { name: string, bytes: Array<number>, };

export type CreateOutput = { generation: Generation, 
/**
 * Set when the image could not be added to the history (the PNG is still saved).
 */
historyWarning: string | null, };

export type Generation = { id: string, 
/**
 * RFC 3339, UTC.
 */
created_at: string, prompt: string, negative_prompt: string, steps: number, guidance: number, 
/**
 * `None` when the run started from given latents.
 */
seed: number | null, width: number, height: number, scheduler: string, model: string, backend: string, device: string, precision: string, seconds: number, stages: Stages, step_seconds: Array<number>, 
/**
 * The saved PNG, when it was saved.
 */
image_path: string | null, 
/**
 * Image-to-image: the picture it started from and the strength.
 */
init_image?: InitImageRecord | null, 
/**
 * The pictures the image was conditioned on (FLUX.2 klein's reference pictures), as named.
 */
reference_images?: Array<string>, 
/**
 * Z-Image's guidance options (`cfg_truncation`, `cfg_normalization`), where given.
 */
cfg_truncation?: number | null, cfg_normalization?: number | null, 
/**
 * True classifier-free guidance's scale (`--true-cfg-scale`), where given.
 */
true_cfg_scale?: number | null, 
/**
 * Skip-layer guidance, where given.
 */
skip_layer_guidance?: SkipLayerRecord | null, 
/**
 * Images made together in one run, and this one's place among them (from 0); the timings
 * are the whole run's.
 */
batch?: number, batch_index?: number, 
/**
 * The memory profile the pipeline was loaded with; absent in older records.
 */
memory_profile?: string | null, 
/**
 * The device allocator's memory after each phase (`generate --vram-report`).
 */
vram_report?: VramReport | null, 
/**
 * `generate --quality`: the picture's CLIP score against its prompt.
 */
clip_score?: number | null, };

export type InitImageRecord = { 
/**
 * What the person picked: a path, or a file name in the app.
 */
source: string, strength: number, };

export type SkipLayerRecord = { layers: Array<number>, scale: number, start: number, stop: number, };

export type RunSummary = { id: string, kind: RunKind, created_at: string, 
/**
 * The workload name for a benchmark, the prompt for a generation.
 */
title: string, model: string, backend: string, device: string, precision: string, score: number | null, images_per_minute: number | null, seconds_per_image: number | null, valid: boolean, standard: boolean, 
/**
 * The memory profile it ran with (`None` for runs from before profiles, which ran as
 * `full`).
 */
memory_profile: string | null, 
/**
 * The sweep the run is a point of, where it is one.
 */
sweep_id: string | null, };

export type RunKind = "benchmark" | "generation";

export type HistoryFilter = { kind: RunKind | null, backend: string | null, 
/**
 * Case-insensitive, in the title, model or device.
 */
text: string | null, standard_only: boolean, valid_only: boolean, 
/**
 * Only the points of this sweep.
 */
sweep: string | null, 
/**
 * RFC 3339 bounds on `created_at`, inclusive.
 */
since: string | null, until: string | null, 
/**
 * At most this many (all when unset).
 */
limit: number | null, };

export type HistoryRecord = { "kind": "benchmark", "run": BenchResult } | { "kind": "generation", "run": Generation };

export type Chart = { svg: string | null, reason: string | null, };

export type Charts = { labels: Array<string>, 
/**
 * Set when the runs did different work (workload, size, steps…), whose figures are not
 * comparable: it says how.
 */
warning: string | null, 
/**
 * Set when the runs ran on different setups (precision, backend, device…): what the
 * comparison is across.
 */
note: string | null, secondsPerImage: Chart, stageBreakdown: Chart, stepTimes: Chart, powerOverTime: Chart, 
/**
 * The first run's images beside each other run's (none for one run).
 */
pictures: Array<PictureSection>, };

export type PictureSection = { first: string, other: string, pairs: Array<PicturePair>, };

export type PicturePair = { prompt: string, seed: number, first: string | null, other: string | null, difference: string | null, meanAbsDifference: number | null, 
/**
 * dB, or "identical".
 */
psnr: string | null, problem: string | null, };

export type CacheInfo = { dir: string, models: Array<CachedModel>, totalBytes: number, 
/**
 * The compiled GPU kernels (`None`: SD Bench keeps none, `SDBENCH_KERNEL_CACHE=off`).
 */
kernels: KernelCacheInfo | null, };

export type KernelCacheInfo = { dir: string, kernels: number, 
/**
 * Devices (per SD Bench build) with kernels compiled.
 */
devices: number, totalBytes: number, };

export type Cleaned = { removed: Array<string>, freedBytes: number, };

export type CachedModel = { repo: string, path: string, 
/**
 * Bytes on disk: blobs (partial downloads included) and any copied snapshot files.
 */
size_bytes: number, 
/**
 * Snapshot commits present.
 */
snapshots: Array<string>, 
/**
 * Whether a snapshot holds a complete pipeline SD Bench can run.
 */
runnable: boolean, 
/**
 * Bytes in unfinished downloads.
 */
partial_bytes: number, };

export type UpdateInfo = { currentVersion: string, available: boolean, version: string | null, notes: string | null, date: string | null, };
