// What the progress panel shows, computed from a job's events: image i of n, step j of m, speed,
// elapsed time of the timed part, and the time left.

import type { JobEvent, LiveSample } from "./types";

/** A run estimated to take longer than this suggests the quick benchmark. */
const QUICK_RUN_HINT_SECONDS = 600;

function formatMinutes(seconds: number): string {
  const minutes = Math.round(seconds / 60);
  return minutes >= 120 ? `${(minutes / 60).toFixed(1)} hours` : `${minutes} minutes`;
}

function imagePhase(warmup: boolean, index: number, total: number): string {
  return warmup ? "Warm-up image (untimed)" : `Image ${index} of ${total}`;
}

/** Steps averaged for the it/s figure. */
const RECENT_STEPS = 8;

export interface ProgressView {
  phase: string;
  image: number;
  images: number;
  warmup: boolean;
  step: number;
  steps: number;
  itPerSecond: number | null;
  elapsedSeconds: number;
  etaSeconds: number | null;
  /** 0..1 over the whole run (warm-up and timed images). */
  fraction: number;
  download: { done: number; total: number; file: string } | null;
  notes: string[];
}

export class ProgressTracker {
  private view: ProgressView = {
    phase: "Starting…", image: 0, images: 0, warmup: false, step: 0, steps: 0,
    itPerSecond: null, elapsedSeconds: 0, etaSeconds: null, fraction: 0, download: null, notes: [],
  };
  private recent: number[] = [];
  /** Seconds of each timed image so far. */
  private readonly images: number[] = [];
  private timedStart: number | null = null;
  private readonly samples: LiveSample[] = [];

  /** `now` in seconds (injectable for tests). */
  constructor(private readonly now: () => number = () => performance.now() / 1000) {}

  update(e: JobEvent): ProgressView {
    const v = this.view;
    switch (e.event) {
      case "note":
        v.notes.push(e.text);
        break;
      case "download":
        v.phase = "Downloading the model…";
        v.download = { done: e.done, total: e.total, file: e.file };
        v.fraction = e.total > 0 ? e.done / e.total : 0;
        break;
      case "loading":
        v.phase = `Loading ${e.model} on ${e.backend}…`;
        v.download = null;
        break;
      case "loaded":
        v.phase = `Loaded in ${e.seconds.toFixed(1)} s on ${e.device} (${e.precision})`;
        break;
      case "baseline":
        v.phase = "Idle power measured";
        break;
      case "compiling": {
        const why = e.cacheHits === 0 ? "first run on this GPU" : "new shapes";
        v.phase = `Compiling GPU kernels (${why}): ${e.compiled} compiled in ${Math.round(e.seconds)} s` +
          `, ${e.cacheHits} from the cache`;
        break;
      }
      case "estimate":
        v.etaSeconds = e.seconds;
        if (e.seconds > QUICK_RUN_HINT_SECONDS) {
          v.notes.push(`This run will take about ${formatMinutes(e.seconds)} on this device (estimated from ` +
            "the warm-up). For a quick look, cancel it and run the quick benchmark instead.");
        }
        break;
      case "imageStarted":
        v.image = e.index;
        v.images = e.total;
        v.warmup = e.warmup;
        v.step = 0;
        v.phase = imagePhase(e.warmup, e.index, e.total);
        if (!e.warmup && e.index === 1) this.timedStart = this.now();
        break;
      case "step": {
        // A step that ended after compiling: back to the image's own phase.
        v.phase = imagePhase(e.warmup, e.index, e.total);
        v.step = e.step;
        v.steps = e.steps;
        const done = (e.warmup ? 0 : e.index) * e.steps + e.step;
        v.fraction = done / ((e.total + 1) * e.steps);
        // A queued step has no time of its own: the estimate then comes from whole images.
        if (e.seconds === null) break;
        this.recent.push(e.seconds);
        if (this.recent.length > RECENT_STEPS) this.recent.shift();
        const mean = this.recent.reduce((a, b) => a + b, 0) / this.recent.length;
        v.itPerSecond = mean > 0 ? 1 / mean : null;
        // Steps left: this image's, then every later timed image's.
        const left = (e.steps - e.step) + (e.warmup ? e.total : e.total - e.index) * e.steps;
        v.etaSeconds = mean > 0 ? left * mean : null;
        break;
      }
      case "imageFinished":
        if (!e.warmup && e.seconds > 0) {
          this.images.push(e.seconds);
          const mean = this.images.reduce((a, b) => a + b, 0) / this.images.length;
          v.etaSeconds = (e.total - e.index) * mean;
        }
        if (!e.warmup && e.index === e.total) {
          v.fraction = 1;
          v.etaSeconds = 0;
          v.phase = "Finishing…";
        }
        break;
      case "telemetry":
        this.samples.push(...e.samples);
        break;
      default:
        break;
    }
    v.elapsedSeconds = this.timedStart === null ? 0 : this.now() - this.timedStart;
    return { ...v, notes: [...v.notes] };
  }

  /** Every live telemetry sample so far. */
  telemetry(): LiveSample[] {
    return this.samples;
  }
}
