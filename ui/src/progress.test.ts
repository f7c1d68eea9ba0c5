import { describe, expect, it } from "vitest";
import { ProgressTracker } from "./progress";
import * as fmt from "./format";

describe("ProgressTracker", () => {
  it("counts images and steps, speed, elapsed and ETA from the events", () => {
    let now = 100;
    const t = new ProgressTracker(() => now);
    t.update({ event: "imageStarted", index: 0, total: 5, warmup: true });
    let v = t.update({ event: "step", index: 0, total: 5, step: 1, steps: 30, seconds: 1, warmup: true });
    expect(v.warmup).toBe(true);
    // Warm-up: 29 steps left in it, then 5 timed images of 30.
    expect(v.etaSeconds).toBeCloseTo(29 + 150);
    expect(v.elapsedSeconds).toBe(0);

    t.update({ event: "imageStarted", index: 1, total: 5, warmup: false });
    now = 110;
    for (let s = 1; s <= 10; s++) {
      v = t.update({ event: "step", index: 1, total: 5, step: s, steps: 30, seconds: 0.5, warmup: false });
    }
    expect(v.image).toBe(1);
    expect(v.step).toBe(10);
    expect(v.itPerSecond).toBeCloseTo(2); // the last 8 steps took 0.5 s each
    expect(v.etaSeconds).toBeCloseTo((20 + 4 * 30) * 0.5);
    expect(v.elapsedSeconds).toBe(10);
    expect(v.fraction).toBeCloseTo(40 / 180);
    v = t.update({ event: "imageFinished", index: 5, total: 5, seconds: 15, valid: true, warmup: false });
    expect(v.fraction).toBe(1);
  });

  it("takes a queued image's steps for progress only, and estimates from whole images", () => {
    const t = new ProgressTracker(() => 0);
    t.update({ event: "step", index: 0, total: 5, step: 30, steps: 30, seconds: 0.5, warmup: true });
    t.update({ event: "imageStarted", index: 1, total: 5, warmup: false });
    let v = t.update({ event: "step", index: 1, total: 5, step: 30, steps: 30, seconds: null, warmup: false });
    expect(v.step).toBe(30);
    expect(v.fraction).toBeCloseTo(60 / 180);
    expect(v.itPerSecond).toBeCloseTo(2); // the warm-up's, untouched by a step without a time
    v = t.update({ event: "imageFinished", index: 1, total: 5, seconds: 12, valid: true, warmup: false });
    expect(v.etaSeconds).toBeCloseTo(4 * 12);
    t.update({ event: "imageFinished", index: 2, total: 5, seconds: 14, valid: true, warmup: false });
    v = t.update({ event: "step", index: 3, total: 5, step: 30, steps: 30, seconds: null, warmup: false });
    expect(v.etaSeconds).toBeCloseTo(3 * 13);
  });

  it("keeps notes, download progress and telemetry", () => {
    const t = new ProgressTracker(() => 0);
    t.update({ event: "note", text: "offline: using the cache" });
    const v = t.update({ event: "download", file: "unet.safetensors", fileDone: 5, fileTotal: 10, done: 50, total: 200 });
    expect(v.notes).toEqual(["offline: using the cache"]);
    expect(v.fraction).toBeCloseTo(0.25);
    t.update({ event: "telemetry", samples: [{ source: "nvml:0", t: 1, powerW: 250, vramUsedBytes: 3e9, vramTotalBytes: 8e9 }] });
    expect(t.telemetry()).toHaveLength(1);
  });

  it("says when GPU kernels compile, and goes back to the image when its step ends", () => {
    const t = new ProgressTracker(() => 0);
    t.update({ event: "imageStarted", index: 0, total: 5, warmup: true });
    let v = t.update({ event: "compiling", compiled: 120, cacheHits: 0, seconds: 44.4 });
    expect(v.phase).toBe("Compiling GPU kernels (first run on this GPU): 120 compiled in 44 s, 0 from the cache");
    v = t.update({ event: "compiling", compiled: 3, cacheHits: 200, seconds: 1 });
    expect(v.phase).toContain("(new shapes)");
    v = t.update({ event: "step", index: 0, total: 5, step: 1, steps: 30, seconds: 50, warmup: true });
    expect(v.phase).toBe("Warm-up image (untimed)");
    expect(v.step).toBe(1);
  });

  it("shows the early estimate, and suggests the quick run only for a long one", () => {
    const t = new ProgressTracker(() => 0);
    let v = t.update({ event: "estimate", seconds: 120 });
    expect(v.etaSeconds).toBe(120);
    expect(v.notes).toEqual([]);
    v = t.update({ event: "estimate", seconds: 3 * 3600 });
    expect(v.etaSeconds).toBe(3 * 3600);
    expect(v.notes).toHaveLength(1);
    expect(v.notes[0]).toContain("about 3.0 hours");
    expect(v.notes[0]).toContain("quick benchmark");
  });
});

describe("format", () => {
  it("formats bytes, durations and numbers", () => {
    expect(fmt.bytes(999)).toBe("999 B");
    expect(fmt.bytes(2_500_000_000)).toBe("2.50 GB");
    expect(fmt.bytes(null)).toBe("—");
    expect(fmt.duration(75)).toBe("1:15");
    expect(fmt.duration(3725)).toBe("1:02:05");
    expect(fmt.duration(null)).toBe("—");
    expect(fmt.fixed(1.23456)).toBe("1.23");
    expect(fmt.fixed(Number.NaN)).toBe("—");
    expect(fmt.count(1, "run")).toBe("1 run");
    expect(fmt.count(0, "run")).toBe("0 runs");
  });
});
