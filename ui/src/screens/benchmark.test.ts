import { beforeEach, describe, expect, it, vi } from "vitest";
import { mockShell, settle, stream } from "../test-support";
import { setMessageArea } from "../ui";
import { benchmarkScreen, setWorkloads } from "./benchmark";
import type { BenchResult, BenchmarkOutput, ComparisonView, JobEvent } from "../types";

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="5" height="5"/></svg>';

export function output(valid = true): BenchmarkOutput {
  // Only the fields the screens read; the rest of a result is the report's rows below.
  const result = {
      run_id: "run-1234abcd", created_at: "2026-11-22T10:00:00Z", valid,
      invalid_reasons: valid ? [] : ["image 2: 384 pixel values are NaN or infinite"],
      backend: { name: "cuda", device: "NVIDIA H100", precision: "f16" },
      workload: { name: "sd15-512-30", standard: true, steps: 30, width: 512, height: 512, prompts: [{ prompt: "a lighthouse", seed: 1 }] },
      scores: { score: valid ? 1234 : null, images_per_minute: 12.34 },
      results: [{ seconds: 4.8, image: { valid: true, reason: null } }],
  } as unknown as BenchResult;
  return {
    result,
    header: [["workload", "sd15-512-30 v1 (standard)"]],
    rows: [["score", valid ? "1234" : "none (invalid run)", ""], ["images per minute", "12.340", "img/min"], ["power (avg)", "301.2", "W"]],
    imageColumns: ["seed", "seconds"],
    imageCells: [["1", "4.800"]],
    images: ["/data/runs/run-1234abcd/result-1.png"],
    resultPath: "/data/runs/run-1234abcd/result.json",
    historyWarning: null,
  };
}

const charts = { labels: ["NVIDIA H100 f16"], secondsPerImage: { svg: SVG, reason: null }, stageBreakdown: { svg: SVG, reason: null }, stepTimes: { svg: SVG, reason: null }, powerOverTime: { svg: null, reason: "no power source" } };

const running: JobEvent[] = [
  { event: "loading", model: "sd15", backend: "cuda" },
  { event: "imageStarted", index: 0, total: 5, warmup: true },
  { event: "step", index: 0, total: 5, step: 30, steps: 30, seconds: 0.1, warmup: true },
  { event: "imageStarted", index: 2, total: 5, warmup: false },
  { event: "step", index: 2, total: 5, step: 7, steps: 30, seconds: 0.1, warmup: false },
  { event: "telemetry", samples: [{ source: "nvml:0", t: 3, powerW: 280, vramUsedBytes: 4 * 2 ** 30, vramTotalBytes: null }] },
];

// What the app's `workloads` lists (main.ts sets it before the screen is built).
setWorkloads([
  { name: "sd15-512-30", label: "SD1.5 · 512×512 · 30 steps", run: "5 images, 512x512, 30 steps", description: "Stable Diffusion 1.5, 512×512, 30 steps." },
  { name: "sdxl-1024-20", label: "SDXL · 1024×1024 · 20 steps", run: "5 images, 1024x1024, 20 steps", description: "Stable Diffusion XL base 1.0, 1024×1024, 20 steps." },
  { name: "flux2-klein-1024-4", label: "FLUX.2 klein · 1024×1024 · 4 steps", run: "16 images, 1024x1024, 4 steps", description: "FLUX.2 [klein] 4B, 1024×1024, 4 steps of flow_euler, guidance 1 (step-distilled: no guidance; MLPerf Client 2.0's settings)." },
]);

let root: HTMLElement;
let messages: HTMLElement;

beforeEach(() => {
  document.body.replaceChildren();
  messages = document.createElement("div");
  setMessageArea(messages);
  if (!root) {
    root = document.createElement("section");
    benchmarkScreen.mount(root);
  }
  document.body.append(root, messages);
  URL.createObjectURL = vi.fn(() => "blob:image");
});

/// Picks `workload` in the screen's list.
async function choose(workload: string) {
  const select = root.querySelector<HTMLSelectElement>("#workload")!;
  select.value = workload;
  select.dispatchEvent(new Event("change"));
  await settle();
  return select;
}

/// Runs the chosen standard workload, checks what is asked for and shown, cancels it and goes
/// back to SD1.5 for the next test.
async function runThenCancel(calls: { cmd: string; args: Record<string, unknown> }[], workload: string, progress: string) {
  root.querySelector<HTMLButtonElement>("#run-standard")!.click();
  await settle();
  const bench = calls.find((c) => c.cmd === "start_benchmark")!.args;
  expect(bench.request).toEqual({ workload });
  expect(root.querySelector("#bench-progress")!.textContent).toContain(progress);
  stream(bench, [{ event: "cancelled" }]);
  await settle(40);
  await choose("sd15-512-30");
}

const ready = { model: "stable-diffusion-v1-5/stable-diffusion-v1-5", source: "hub", ready: true, path: "/hub/snap", downloadBytes: null, problem: null, note: null };

describe("Benchmark screen", () => {
  it("switches once to the workload made for the model in the settings, and says why", async () => {
    const asked: unknown[] = [];
    mockShell({
      model_status: (a) => {
        asked.push(a.workload);
        const own = a.workload === "flux2-klein-1024-4" ? null : { name: "flux2-klein-1024-4", why: "the standard workload for /m's architecture (flux2-klein)" };
        return { ...ready, model: "/m", source: "folder", ownWorkload: own };
      },
    });
    benchmarkScreen.show?.();
    await settle(40);
    const select = root.querySelector<HTMLSelectElement>("#workload")!;
    expect(select.value).toBe("flux2-klein-1024-4");
    expect(root.querySelector("#workload-description")!.textContent).toContain("architecture (flux2-klein)");
    expect(asked.slice(-2)).toEqual(["sd15-512-30", "flux2-klein-1024-4"]);
    // A workload chosen afterwards stays chosen.
    select.value = "sd15-512-30";
    select.dispatchEvent(new Event("change"));
    await settle(40);
    expect(select.value).toBe("sd15-512-30");
  });

  it("shows live progress, then the score, every metric, charts and images", async () => {
    let args: Record<string, unknown> = {};
    mockShell({
      model_status: () => ready,
      start_benchmark: (a) => {
        args = a;
        stream(a, running);
        return 1;
      },
      run_charts: () => charts,
      read_image: () => new ArrayBuffer(4),
    });
    benchmarkScreen.show?.();
    await settle();
    const run = root.querySelector<HTMLButtonElement>("#run-standard")!;
    expect(run.disabled).toBe(false);
    run.click();
    await settle(60);
    expect(args.request).toEqual({ workload: "sd15-512-30" });
    expect(run.disabled).toBe(true);
    expect(root.querySelector("#bench-image")!.textContent).toBe("2 / 5");
    expect(root.querySelector("#bench-step")!.textContent).toBe("7 / 30");
    expect(root.querySelector(".live-chart")!.textContent).toContain("power 280 W");

    stream(args, [{ event: "finished", output: output() }]);
    await settle(60);
    expect(root.querySelector("#bench-progress")!.hasAttribute("hidden")).toBe(true);
    expect(root.querySelector("#result-score")!.textContent).toBe("1234");
    expect(root.querySelector("#result-metrics")!.textContent).toContain("301.2");
    expect(root.querySelector("#result-validity")!.textContent).toContain("Valid standard run");
    expect(root.querySelectorAll("#bench-result figure.chart svg")).toHaveLength(3);
    expect(root.querySelector("#chart-power")!.textContent).toContain("no power source");
    const img = root.querySelector<HTMLImageElement>("#result-images img")!;
    expect(img.src).toBe("blob:image");
    // The object URL is released once the picture has loaded.
    URL.revokeObjectURL = vi.fn();
    img.dispatchEvent(new Event("load"));
    expect(URL.revokeObjectURL).toHaveBeenCalledWith("blob:image");
    expect(run.disabled).toBe(false);
  });

  it("a reloaded window joins the running benchmark: its progress from the latest event, then the result", async () => {
    let args: Record<string, unknown> = {};
    let cancelled: unknown = null;
    mockShell({
      model_status: () => ready,
      attach_job: (a) => {
        args = a;
        stream(a, running.slice(4));
        return { id: 7, kind: "benchmark", state: "running", lastEvent: running[3], events: 4, elapsedSeconds: 12 };
      },
      cancel_job: (a) => (cancelled = a.id),
      run_charts: () => charts,
      read_image: () => new ArrayBuffer(4),
    });
    benchmarkScreen.show?.();
    benchmarkScreen.reattach?.({ id: 7, kind: "benchmark", state: "running", lastEvent: running[3], events: 4, elapsedSeconds: 12 });
    await settle(60);
    expect(args.id).toBe(7);
    expect(root.querySelector("#bench-progress")!.hasAttribute("hidden")).toBe(false);
    expect(root.querySelector("#bench-phase")!.textContent).toBe("Image 2 of 5");
    expect(root.querySelector("#bench-step")!.textContent).toBe("7 / 30");
    expect(root.querySelector<HTMLButtonElement>("#run-standard")!.disabled).toBe(true);
    root.querySelector<HTMLButtonElement>("#cancel-benchmark")!.click();
    await settle();
    expect(cancelled).toBe(7);
    stream(args, [{ event: "finished", output: output() }]);
    await settle(60);
    expect(root.querySelector("#result-score")!.textContent).toBe("1234");
    expect(root.querySelector<HTMLButtonElement>("#run-standard")!.disabled).toBe(false);
  });

  it("a job that ended while the window reloaded shows how it ended", async () => {
    mockShell({
      model_status: () => ready,
      attach_job: () => ({ id: 8, kind: "benchmark", state: "failed", error: { kind: "noDevice", message: "the GPU was lost", hint: "Check the driver" }, lastEvent: null, events: 9, elapsedSeconds: 30 }),
    });
    benchmarkScreen.reattach?.({ id: 8, kind: "benchmark", state: "running", lastEvent: null, events: 9, elapsedSeconds: 30 });
    await settle(60);
    expect(messages.querySelector("[role=alert]")!.textContent).toContain("the GPU was lost");
    expect(root.querySelector("#bench-progress")!.hasAttribute("hidden")).toBe(true);
  });

  it("a quick run sends its values; an invalid run shows why and cannot be submitted", async () => {
    let args: Record<string, unknown> = {};
    mockShell({
      model_status: () => ready,
      start_benchmark: (a) => {
        args = a;
        stream(a, [{ event: "finished", output: output(false) }]);
        return 2;
      },
      run_charts: () => charts,
      read_image: () => new ArrayBuffer(4),
    });
    benchmarkScreen.show?.();
    await settle();
    root.querySelector<HTMLInputElement>("#quick-steps")!.value = "3";
    root.querySelector<HTMLButtonElement>("#run-quick")!.click();
    await settle(60);
    expect(args.request).toEqual({ workload: "sd15-512-30", custom: { steps: 3, width: 256, height: 256, images: 2 } });
    expect(root.querySelector("#result-score")!.textContent).toBe("—");
    expect(root.querySelector("#result-validity")!.textContent).toContain("NaN");
    expect(root.querySelector<HTMLButtonElement>("#submit-result")!.disabled).toBe(true);
  });

  it("names a memory profile other than full beside the score", async () => {
    const low = output();
    low.result.backend.memory_profile = "low";
    low.result.workload.standard = false;
    mockShell({
      model_status: () => ready,
      start_benchmark: (a) => {
        stream(a, [{ event: "finished", output: low }]);
        return 3;
      },
      run_charts: () => charts,
      read_image: () => new ArrayBuffer(4),
    });
    benchmarkScreen.show?.();
    await settle();
    root.querySelector<HTMLButtonElement>("#run-standard")!.click();
    await settle(60);
    expect(root.querySelector("#result-validity")!.textContent).toBe("Valid run (low memory profile, not a standard score)");
  });

  it("sends a minimum duration when one is given, and refuses one that is not above 0", async () => {
    const requests: unknown[] = [];
    mockShell({
      model_status: () => ready,
      start_benchmark: (a) => {
        requests.push(a.request);
        stream(a, [{ event: "finished", output: output() }]);
        return 5;
      },
      run_charts: () => charts,
      read_image: () => new ArrayBuffer(4),
    });
    benchmarkScreen.show?.();
    await settle();
    const minimum = root.querySelector<HTMLInputElement>("#min-duration")!;
    minimum.value = "60";
    root.querySelector<HTMLButtonElement>("#run-standard")!.click();
    await settle(60);
    expect(requests).toEqual([{ workload: "sd15-512-30", minDurationSeconds: 60 }]);
    root.querySelector<HTMLInputElement>("#bench-quality")!.checked = true;
    root.querySelector<HTMLButtonElement>("#run-standard")!.click();
    await settle(60);
    expect(requests[1]).toEqual({ workload: "sd15-512-30", minDurationSeconds: 60, quality: true });
    root.querySelector<HTMLInputElement>("#bench-quality")!.checked = false;
    minimum.value = "-5";
    root.querySelector<HTMLButtonElement>("#run-standard")!.click();
    await settle(60);
    expect(requests).toHaveLength(2);
    expect(messages.querySelector("[role=alert]")!.textContent).toContain("Minimum duration: give a number of seconds above 0");
    minimum.value = "";
  });

  it("compares backends: sends the quick settings when asked, then shows the ranked table and chart", async () => {
    let args: Record<string, unknown> = {};
    const comparison: ComparisonView = {
      sweepId: "sweep-1", columns: ["backend", "device", "precision", "memory", "size", "batch", "img/min", "MP/s", "s/image", "peak VRAM", "W"],
      rows: [
        { setup: ["vulkan", "NVIDIA H100", "f16", "full", "256x256", "1"], figures: ["120.00", "0.131", "0.500", "2.00 GiB", "300.0"], skipped: null, fastest: true },
        { setup: ["cpu", "", "auto", "full", "256x256", "1"], figures: null, skipped: "does not fit: out of host memory", fastest: false },
      ],
      fastest: "fastest: vulkan auto full 256x256 batch 1 (0.131 megapixels/s)",
      chart: { svg: SVG, reason: null }, sweepPath: "/data/runs/sweep-1/sweep.json", historyWarning: null,
    };
    mockShell({
      model_status: () => ready,
      start_compare_backends: (a) => {
        args = a;
        stream(a, [{ event: "finished", output: comparison }]);
        return 9;
      },
    });
    benchmarkScreen.show?.();
    await settle();
    root.querySelector<HTMLInputElement>("#compare-quick")!.checked = true;
    root.querySelector<HTMLInputElement>("#quick-steps")!.value = "2";
    root.querySelector<HTMLButtonElement>("#compare-backends")!.click();
    await settle(60);
    expect(args.request).toEqual({ workload: "sd15-512-30", custom: { steps: 2, width: 256, height: 256, images: 2 } });
    expect(root.querySelector("#compare-fastest")!.textContent).toBe("Fastest: vulkan auto full 256x256 batch 1 (0.131 megapixels/s)");
    const rows = root.querySelectorAll("#compare-table tbody tr");
    expect(rows).toHaveLength(2);
    expect(rows[0].className).toBe("fastest");
    expect(rows[1].textContent).toContain("skipped: does not fit: out of host memory");
    expect(root.querySelector("#compare-chart svg")).not.toBeNull();
    expect(root.querySelector<HTMLButtonElement>("#compare-backends")!.disabled).toBe(false);
    root.querySelector<HTMLInputElement>("#compare-quick")!.checked = false;
  });

  it("warns of a throttled run beside the score, and says nothing of a steady one", async () => {
    const hot = output();
    hot.result.scores.hardware = {
      source: "nvml:0", samples: 40, gpu_clock_mhz: null, gpu_clock_max_mhz: 1980, gpu_clock_median_share: null,
      mem_clock_mhz: null, temperature_peak_c: 88, throttle: [{ reason: "sw_thermal", share: 0.25 }, { reason: "power_cap", share: 0.01 }],
      throttle_samples: 40, throttled: true, unavailable: [],
    };
    const outputs = [output(), hot];
    mockShell({
      model_status: () => ready,
      start_benchmark: (a) => {
        stream(a, [{ event: "finished", output: outputs.shift()! }]);
        return 4;
      },
      run_charts: () => charts,
      read_image: () => new ArrayBuffer(4),
    });
    benchmarkScreen.show?.();
    await settle();
    root.querySelector<HTMLButtonElement>("#run-standard")!.click();
    await settle(60);
    expect(root.querySelector("#result-throttled")).toBeNull();
    root.querySelector<HTMLButtonElement>("#run-standard")!.click();
    await settle(60);
    expect(root.querySelector("#result-throttled")!.textContent).toBe(
      "Throttled: sw_thermal 25% of the time, power_cap 1% of the time. The device slowed itself during the timed images, so these figures are below its steady rate; the results service ranks such runs apart.");
  });

  it("refuses an emptied or fractional quick-run field with a message, and starts nothing", async () => {
    let started = 0;
    mockShell({ model_status: () => ready, start_benchmark: () => ++started });
    benchmarkScreen.show?.();
    await settle();
    const steps = root.querySelector<HTMLInputElement>("#quick-steps")!;
    const width = root.querySelector<HTMLInputElement>("#quick-width")!;
    steps.value = "";
    root.querySelector<HTMLButtonElement>("#run-quick")!.click();
    await settle();
    expect(messages.querySelector("[role=alert]")!.textContent).toContain("Steps must be a whole number.");
    steps.value = "4";
    width.value = "256.5";
    root.querySelector<HTMLButtonElement>("#run-quick")!.click();
    await settle();
    expect(messages.querySelector("[role=alert]")!.textContent).toContain("Width must be a whole number.");
    expect(started).toBe(0);
    width.value = "256";
  });

  it("bounds the quick-run fields by the app's limits", () => {
    const field = (id: string) => root.querySelector<HTMLInputElement>(`#quick-${id}`)!;
    expect([field("steps").max, field("width").max, field("width").step, field("height").min, field("images").max])
      .toEqual(["1000", "2048", "8", "8", "1000"]);
  });

  it("offers the download with its size, shows progress, and cancels", async () => {
    let status = { ...ready, ready: false, path: null, downloadBytes: 4_265_000_000 };
    let args: Record<string, unknown> = {};
    const calls = mockShell({
      model_status: () => status,
      start_download: (a) => {
        args = a;
        stream(a, [{ event: "download", file: "unet/diffusion_pytorch_model.fp16.safetensors", fileDone: 1, fileTotal: 2, done: 1_000_000_000, total: 4_265_000_000 }]);
        return 5;
      },
      cancel_job: () => true,
    });
    benchmarkScreen.show?.();
    await settle();
    expect(root.querySelector<HTMLButtonElement>("#run-standard")!.disabled).toBe(true);
    const download = root.querySelector<HTMLButtonElement>("#download-model")!;
    expect(download.textContent).toBe("Download (4.26 GB)");
    download.click();
    await settle(40);
    expect(root.querySelector<HTMLProgressElement>("#download-progress")!.value).toBeCloseTo(1 / 4.265, 3);
    expect(root.querySelector("#model-card")!.textContent).toContain("1.00 GB of 4.26 GB");
    root.querySelector<HTMLButtonElement>("#cancel-download")!.click();
    await settle();
    expect(calls.some((c) => c.cmd === "cancel_job" && c.args.id === 5)).toBe(true);
    status = { ...status };
    stream(args, [{ event: "cancelled" }]);
    await settle(40);
    expect(messages.textContent).toContain("Cancelled: nothing was saved.");
  });

  it("the SDXL workload asks for its own model, downloads it and runs it", async () => {
    const sdxl = { ...ready, model: "stabilityai/stable-diffusion-xl-base-1.0", ready: false, path: null, downloadBytes: 6_940_000_000 };
    const calls = mockShell({
      model_status: (a) => (a.workload === "sdxl-1024-20" ? sdxl : ready),
      start_download: () => 8,
      start_benchmark: () => 9,
    });
    benchmarkScreen.show?.();
    await settle();
    const select = await choose("sdxl-1024-20");
    expect([...select.options].map((o) => o.value)).toEqual(["sd15-512-30", "sdxl-1024-20", "flux2-klein-1024-4"]);
    expect(root.querySelector("#workload-description")!.textContent).toContain("1024×1024");
    expect(root.querySelector("#model-card")!.textContent).toContain("stabilityai/stable-diffusion-xl-base-1.0");
    expect(root.querySelector<HTMLButtonElement>("#run-standard")!.disabled).toBe(true);
    root.querySelector<HTMLButtonElement>("#download-model")!.click();
    await settle();
    expect(calls.find((c) => c.cmd === "start_download")!.args.workload).toBe("sdxl-1024-20");
    expect(select.disabled).toBe(true);

    sdxl.ready = true;
    const download = calls.find((c) => c.cmd === "start_download")!.args;
    stream(download, [{ event: "finished", output: { path: "/hub/xl", bytes: 1 } }]);
    await settle(40);
    expect(select.disabled).toBe(false);
    await runThenCancel(calls, "sdxl-1024-20", "1024x1024, 20 steps");
  });

  it("the FLUX.2 klein workload names its own model and runs as itself", async () => {
    const klein = { ...ready, model: "black-forest-labs/FLUX.2-klein-4B", path: "/hub/klein" };
    const calls = mockShell({
      model_status: (a) => (a.workload === "flux2-klein-1024-4" ? klein : ready),
      start_benchmark: () => 10,
    });
    benchmarkScreen.show?.();
    await settle();
    await choose("flux2-klein-1024-4");
    expect(root.querySelector("#workload-description")!.textContent).toContain("step-distilled");
    expect(root.querySelector("#model-card")!.textContent).toContain("black-forest-labs/FLUX.2-klein-4B");
    expect(root.querySelector<HTMLButtonElement>("#run-standard")!.disabled).toBe(false);
    await runThenCancel(calls, "flux2-klein-1024-4", "1024x1024, 4 steps");
  });

  it("shows a failed run's message and next step", async () => {
    mockShell({
      model_status: () => ready,
      start_benchmark: (a) => {
        stream(a, [{ event: "failed", error: { kind: "noDevice", message: "the cuda backend is unavailable: no NVIDIA driver", hint: "Choose another backend in System" } }]);
        return 6;
      },
    });
    benchmarkScreen.show?.();
    await settle();
    root.querySelector<HTMLButtonElement>("#run-standard")!.click();
    await settle(60);
    const alert = messages.querySelector("[role=alert]")!;
    expect(alert.textContent).toContain("no NVIDIA driver");
    expect(alert.textContent).toContain("Choose another backend");
  });

  it("lists the models on this machine, and runs on synthetic weights without the model", async () => {
    const settings = { model: "stable-diffusion-v1-5/stable-diffusion-v1-5", modelConfig: null, textEncoders: [], vae: null, backend: "auto", device: null, precision: "auto", memory: "full", memoryLimitGib: null, submitEndpoint: null, updateEndpoint: null, cpuThreads: null, modelDirs: [] };
    let saved: Record<string, unknown> | null = null;
    let request: Record<string, unknown> = {};
    const calls = mockShell({
      model_status: () => ({ ...ready, ready: false, path: null, problem: null, downloadBytes: 2e9, licenseNote: "stable-diffusion-v1-5/stable-diffusion-v1-5 is under its authors' licence (creativeml-openrail-m), not SD Bench's: read it at https://huggingface.co/stable-diffusion-v1-5/stable-diffusion-v1-5 before using the model", ownWorkload: null }),
      get_settings: () => settings,
      save_settings: (a) => (saved = a.settings as Record<string, unknown>),
      local_models: () => [
        { name: "synthetic-sd15", family: "Stable Diffusion", architecture: "sd1", format: "synthetic weights", synthetic: true, sizeBytes: null, problem: null, defaults: { width: 512, height: 512, steps: 30, guidance: 7.5 }, guidance: null, referencePictures: null, textEncoders: [], vae: null },
        { name: "synthetic-flux2-klein", family: "FLUX.2 klein", architecture: "flux2-klein", format: "synthetic weights", synthetic: true, sizeBytes: null, problem: null, defaults: { width: 1024, height: 1024, steps: 4, guidance: 1 }, guidance: null, referencePictures: null, textEncoders: [], vae: null },
      ],
      start_benchmark: (a) => {
        request = a.request as Record<string, unknown>;
        stream(a, [{ event: "failed", error: { kind: "cancelled", message: "cancelled", hint: "" } }]);
        return 7;
      },
      "plugin:dialog|open": () => null,
    });
    benchmarkScreen.show?.();
    await settle(40);
    const model = root.querySelector<HTMLSelectElement>("#bench-model")!;
    expect([...model.options].map((o) => o.textContent)).toEqual([
      "stable-diffusion-v1-5/stable-diffusion-v1-5 (not on this machine yet)", "none yet",
      "Stable Diffusion · sd15", "FLUX.2 klein · flux2-klein",
      "another diffusers folder…", "another model file (.safetensors, .gguf)…",
    ]);
    expect(model.value).toBe("stable-diffusion-v1-5/stable-diffusion-v1-5");
    // The licence is shown before the download.
    expect(root.querySelector("#model-license")!.textContent).toContain("(creativeml-openrail-m)");
    // Without the model: the standard run waits, a synthetic one is offered.
    expect(root.querySelector<HTMLButtonElement>("#run-standard")!.disabled).toBe(true);
    root.querySelector<HTMLButtonElement>("#run-synthetic")!.click();
    await settle(40);
    expect(request).toEqual({ workload: "sd15-512-30", synthetic: true });

    // Choosing a model saves it as the setting.
    model.value = "synthetic-flux2-klein";
    model.dispatchEvent(new Event("change"));
    await settle(40);
    expect(saved).toMatchObject({ model: "synthetic-flux2-klein", modelConfig: null, textEncoders: [], vae: null });
    // Another model file: the dialog offers the .safetensors and .gguf files --model takes.
    const file = [...model.options].find((o) => o.textContent?.startsWith("another model file"))!;
    model.value = file.value;
    model.dispatchEvent(new Event("change"));
    await settle(40);
    const dialog = calls.find((c) => c.cmd === "plugin:dialog|open");
    expect(JSON.stringify(dialog?.args)).toContain('"extensions":["safetensors","gguf"]');
    expect(calls.filter((c) => c.cmd === "model_status").length).toBeGreaterThan(1);
  });
});
