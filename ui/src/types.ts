// The shapes the shell's commands take and return. Every one is generated from the Rust types
// (src-tauri/wire_types.rs writes ./generated/wire.ts; a Rust test fails when it is stale): the
// window never holds a hand-written copy. History and result records keep the engine's snake_case
// names; the shell's own types are camelCase.

import type * as W from "./generated/wire";

export type {
  UiError, ErrorKind, Settings, LiveSample, JobEvent, RunEvent, JobNews, JobStatus, BenchResult,
  ResultView, BenchmarkOutput, BenchmarkRequest, CustomRun, ModelStatus, OwnWorkload, Generation, CreateOutput,
  CreateRequest, InitImageInput, RunSummary, HistoryRecord, Chart, Charts, DeviceReport,
  BackendReport,
  WorkloadCard, RequestLimits, SystemReport, CachedModel, KernelCacheInfo, CacheInfo, Cleaned,
  UpdateInfo, SubmissionPreview, Submitted, LocalModelView, ModelDefaults, GuidanceChoices,
  ComparisonView, PointRow, PictureSection, PicturePair,
} from "./generated/wire";

/** Which runs the history lists: the shell fills in what is left out (every field has a default). */
export type HistoryFilter = Partial<W.HistoryFilter>;
