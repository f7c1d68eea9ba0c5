import { beforeEach, describe, expect, it, vi } from "vitest";
import { mockShell, settle } from "../test-support";
import { setMessageArea } from "../ui";
import { historyScreen, shortModel } from "./history";
import type { RunSummary } from "../types";

const SVG = '<svg xmlns="http://www.w3.org/2000/svg"><rect width="5" height="5"/></svg>';

const run = (id: string, kind: "benchmark" | "generation", extra: Partial<RunSummary> = {}): RunSummary => ({
  id, kind, created_at: "2026-11-22T10:00:00Z", title: kind === "benchmark" ? "sd15-512-30" : "a lighthouse",
  model: "sd15", backend: "cuda", device: "NVIDIA H100", precision: "f16", score: kind === "benchmark" ? 1200 : null,
  images_per_minute: 12, seconds_per_image: 5, valid: true, standard: kind === "benchmark", memory_profile: "full", sweep_id: null, ...extra,
});

let root: HTMLElement;
const messages = document.createElement("div");

beforeEach(() => {
  document.body.replaceChildren();
  setMessageArea(messages);
  if (!root) {
    root = document.createElement("section");
    historyScreen.mount(root);
  }
  document.body.append(root, messages);
  URL.createObjectURL = vi.fn(() => "blob:x");
});

const rows = () => [...root.querySelectorAll("#history-rows tr")];
const check = (i: number) => {
  const box = rows()[i].querySelector<HTMLInputElement>("input[type=checkbox]")!;
  box.checked = true;
  box.dispatchEvent(new Event("change"));
};

describe("History screen", () => {
  it("lists runs, filters through the shell, and compares two benchmarks with charts", async () => {
    const runs = [run("b1", "benchmark"), run("b2", "benchmark", { valid: false, score: null }), run("g1", "generation")];
    const calls = mockShell({
      history_list: () => runs,
      run_charts: (a) => ({ labels: (a.ids as string[]).map((id) => `label ${id}`), secondsPerImage: { svg: SVG, reason: null }, stageBreakdown: { svg: SVG, reason: null }, stepTimes: { svg: SVG, reason: null }, powerOverTime: { svg: null, reason: "no power source" }, warning: "These runs did different work (workload: sd15-512-30 v1 / sdxl-1024-20 v1; size: 512x512 / 1024x1024): their figures and scores are not comparable.", note: "Compared across device: NVIDIA H100 / CPU (2 threads).",
        pictures: [{ first: "label b1", other: "label b2", pairs: [
          { prompt: "a lighthouse", seed: 42, first: "data:image/png;base64,AA==", other: "data:image/png;base64,AQ==", difference: "data:image/png;base64,Ag==", meanAbsDifference: 1.234, psnr: "41.2", problem: null },
          { prompt: "a red fox", seed: 7, first: null, other: null, difference: null, meanAbsDifference: null, psnr: null, problem: "label b2 has no image of this prompt and seed" },
        ] }] }),
    });
    historyScreen.show?.();
    await settle();
    expect(rows()).toHaveLength(3);
    expect(root.querySelector("#history-count")!.textContent).toBe("3 runs");
    expect(rows()[1].textContent).toContain("invalid");
    expect(rows()[2].textContent).toContain("“a lighthouse”");

    const kind = root.querySelector<HTMLSelectElement>("#history-kind")!;
    kind.value = "benchmark";
    kind.dispatchEvent(new Event("input"));
    const text = root.querySelector<HTMLInputElement>("#history-text")!;
    text.value = " H100 ";
    text.dispatchEvent(new Event("input"));
    await settle();
    expect(calls.filter((c) => c.cmd === "history_list").pop()!.args.filter).toEqual({ kind: "benchmark", text: "H100" });

    const compare = root.querySelector<HTMLButtonElement>("#history-compare")!;
    check(0);
    expect(compare.disabled).toBe(true);
    check(2);
    expect(compare.disabled).toBe(true); // an image is not a benchmark
    rows()[2].querySelector<HTMLInputElement>("input")!.checked = false;
    rows()[2].querySelector<HTMLInputElement>("input")!.dispatchEvent(new Event("change"));
    check(1);
    expect(compare.disabled).toBe(false);
    compare.click();
    await settle();
    expect(calls.find((c) => c.cmd === "run_charts")!.args.ids).toEqual(["b1", "b2"]);
    expect(root.querySelectorAll("#compare-charts svg")).toHaveLength(3);
    expect(root.querySelector("#history-detail")!.textContent).toContain("label b2");
    expect(root.querySelector("#compare-warning")!.textContent).toContain("not comparable");
    expect(root.querySelector("#compare-note")!.textContent).toBe("Compared across device: NVIDIA H100 / CPU (2 threads).");
    const pairs = root.querySelectorAll("table.pictures tr.pair");
    expect(pairs).toHaveLength(2);
    expect(pairs[0].querySelectorAll("img")).toHaveLength(3);
    expect(pairs[0].textContent).toContain("a lighthouse · 421.2341.2");
    expect(pairs[1].textContent).toBe("a red fox · 7label b2 has no image of this prompt and seed");
    kind.value = "";
    text.value = "";
  });

  it("shows a generated image's detail, and deletes after confirming", async () => {
    let runs = [run("g1", "generation")];
    const calls = mockShell({
      history_list: () => runs,
      history_get: () => ({ kind: "generation", run: { id: "g1", created_at: "2026-11-22T10:00:00Z", prompt: "a lighthouse", negative_prompt: "", steps: 30, guidance: 7.5, seed: 42, width: 512, height: 512, scheduler: "euler", model: "sd15", backend: "cpu", device: "CPU", precision: "f32", seconds: 12.5, stages: { text_encoder: 0.1, unet_loop: 12, vae_decode: 0.4 }, step_seconds: [], image_path: "/data/images/g1.png" } }),
      read_image: () => new ArrayBuffer(3),
      history_delete: (a) => {
        runs = [];
        return (a.ids as string[]).length;
      },
    });
    historyScreen.show?.();
    await settle();
    expect(root.querySelector("#history-count")!.textContent).toBe("1 run");
    rows()[0].querySelector<HTMLButtonElement>("button[data-run=g1]")!.click();
    await settle();
    expect(root.querySelector("#history-generation")!.textContent).toContain("42");
    expect(root.querySelector<HTMLImageElement>("#history-detail img")!.src).toBe("blob:x");

    check(0);
    root.querySelector<HTMLButtonElement>("#history-delete")!.click();
    await settle();
    const dialog = document.querySelector("dialog")!;
    expect(dialog.textContent).toContain("Delete 1 run from");
    document.querySelector<HTMLButtonElement>("#dialog-confirm")!.click();
    await settle();
    expect(calls.find((c) => c.cmd === "history_delete")!.args.ids).toEqual(["g1"]);
    expect(rows()[0].textContent).toContain("No runs yet");
    expect(messages.textContent).toContain("Deleted 1 run.");
  });

  it("shows each run's model, sorts by a column, and filters by model", async () => {
    const runs = [
      run("a", "benchmark", { model: "stable-diffusion-v1-5/stable-diffusion-v1-5", score: 300, created_at: "2026-11-22T10:00:00Z" }),
      run("b", "benchmark", { model: "/home/me/models/my-finetune.safetensors", score: 900, created_at: "2026-11-22T11:00:00Z" }),
      run("c", "generation", { model: "/home/me/.cache/huggingface/hub/models--Tongyi-MAI--Z-Image-Turbo/snapshots/0123abcd", created_at: "2026-11-22T12:00:00Z" }),
    ];
    mockShell({ history_list: () => runs });
    historyScreen.show?.();
    await settle();
    const cells = (column: number) => rows().map((r) => r.children[column].textContent);
    // Newest first; the model column names each model shortly, its whole name in the tooltip.
    expect(cells(3)).toEqual(["Tongyi-MAI/Z-Image-Turbo", "my-finetune.safetensors", "stable-diffusion-v1-5/stable-diffusion-v1-5"]);
    expect(rows()[1].children[3].getAttribute("title")).toBe("/home/me/models/my-finetune.safetensors");
    expect(cells(5)[0]).toBe("cuda, f16");
    expect(cells(6)[0]).toBe("NVIDIA H100");

    const byScore = root.querySelector<HTMLButtonElement>("button[data-sort=score]")!;
    byScore.click();
    expect(rows().map((r) => r.querySelector("button[data-run]")!.getAttribute("data-run"))).toEqual(["b", "a", "c"]);
    expect(byScore.parentElement!.getAttribute("aria-sort")).toBe("descending");
    byScore.click();
    expect(rows().map((r) => r.querySelector("button[data-run]")!.getAttribute("data-run"))).toEqual(["c", "a", "b"]);

    const model = root.querySelector<HTMLSelectElement>("#history-model")!;
    expect([...model.options].map((o) => o.textContent)).toEqual(["all models", "my-finetune.safetensors", "stable-diffusion-v1-5/stable-diffusion-v1-5", "Tongyi-MAI/Z-Image-Turbo"]);
    model.value = "/home/me/models/my-finetune.safetensors";
    model.dispatchEvent(new Event("input"));
    expect(rows()).toHaveLength(1);
    expect(root.querySelector("#history-count")!.textContent).toBe("1 run");
    model.value = "";
    model.dispatchEvent(new Event("input"));
    root.querySelector<HTMLButtonElement>("button[data-sort=when]")!.click();
  });

  it("names a model by its Hub id or its file", () => {
    expect(shortModel("org/model")).toBe("org/model");
    expect(shortModel("C:\\models\\x.safetensors")).toBe("x.safetensors");
    expect(shortModel("synthetic")).toBe("synthetic");
  });
});
