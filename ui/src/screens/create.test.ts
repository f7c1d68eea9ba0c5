import { beforeEach, describe, expect, it, vi } from "vitest";
import { mockShell, settle, stream } from "../test-support";
import { setMessageArea } from "../ui";
import { checkRequest, createScreen, randomSeed, setPicture, setReferences, showGuidanceChoices, skipLayerBlocks } from "./create";
import type { CreateRequest } from "../types";

const base: CreateRequest = { prompt: "a lighthouse", negativePrompt: "", steps: 30, guidance: 7.5, seed: 1, width: 512, height: 512, scheduler: null, backend: null, referenceImages: [], skipLayers: [] };
const messages = document.createElement("div");
let root: HTMLElement;

beforeEach(() => {
  document.body.replaceChildren();
  setMessageArea(messages);
  if (!root) {
    root = document.createElement("section");
    createScreen.mount(root);
  }
  document.body.append(root, messages);
  URL.createObjectURL = vi.fn(() => "blob:png");
});

const generation = (seed: number) => ({
  generation: { id: `g${seed}`, created_at: "2026-11-22T10:00:00Z", prompt: "a lighthouse", negative_prompt: "", steps: 4, guidance: 7.5, seed, width: 64, height: 64, scheduler: "euler", model: "tiny", backend: "cpu", device: "CPU", precision: "f32", seconds: 1.25, stages: { text_encoder: 0.05, unet_loop: 1, vae_decode: 0.2 }, step_seconds: [0.25, 0.25, 0.25, 0.25], image_path: `/data/images/g${seed}.png` },
  historyWarning: null,
});

describe("Create screen", () => {
  it("sends what it can carry and leaves the rules to the shell", () => {
    expect(checkRequest(base)).toBeNull();
    expect(checkRequest({ ...base, width: Number.NaN })).toBe("Width must be a whole number.");
    expect(checkRequest({ ...base, seed: 1.5 })).toBe("The seed must be a whole number.");
    expect(checkRequest({ ...base, guidance: Number.NaN })).toContain("Guidance");
    expect(checkRequest({ ...base, skipLayers: [7, Number.NaN] })).toContain("Skip-layer guidance blocks");
    expect(skipLayerBlocks(" 7, 8 ,9 ")).toEqual([7, 8, 9]);
    expect(skipLayerBlocks("")).toEqual([]);
    expect(skipLayerBlocks("7;8")).toBeNull();
    expect(skipLayerBlocks("-1")).toBeNull();
    // The shell's rules, not the form's: sent, and refused there with the engine's words.
    expect(checkRequest({ ...base, width: 500 })).toBeNull();
    expect(checkRequest({ ...base, prompt: " " })).toBeNull();
    const seed = randomSeed();
    expect(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32).toBe(true);
  });

  it("generates, shows the image with its timing, keeps a strip, and reuses the seed", async () => {
    const requests: CreateRequest[] = [];
    mockShell({
      schedulers: () => ["euler", "ddim"],
      system_info: () => ({ backends: [{ backend: "cpu", usable: true }, { backend: "cuda", usable: false }] }),
      start_generation: (a) => {
        const r = a.request as CreateRequest;
        requests.push(r);
        stream(a, [
          { event: "step", index: 1, total: 1, step: 1, steps: 4, seconds: 0.25, warmup: false },
          { event: "finished", output: generation(r.seed) },
        ]);
        return requests.length;
      },
      read_image: () => new ArrayBuffer(8),
    });
    createScreen.show?.();
    await settle();
    expect([...root.querySelectorAll("#create-backend option")].map((o) => o.textContent)).toEqual(["as in System", "cpu"]);
    root.querySelector<HTMLTextAreaElement>("#create-prompt")!.value = "a lighthouse";
    const size = root.querySelector<HTMLSelectElement>("#create-size")!;
    size.value = "512x768";
    size.dispatchEvent(new Event("change"));
    root.querySelector<HTMLButtonElement>("#create-generate")!.click();
    await settle(40);
    expect(requests[0]).toMatchObject({ prompt: "a lighthouse", width: 512, height: 768, steps: 30, scheduler: null });
    expect(root.querySelector<HTMLImageElement>("#create-image")!.src).toBe("blob:png");
    expect(root.querySelector("#create-timing")!.textContent).toContain("4.00 it/s");
    expect(root.querySelectorAll("#create-strip .thumb")).toHaveLength(1);

    root.querySelector<HTMLButtonElement>("#create-reuse-seed")!.click();
    root.querySelector<HTMLButtonElement>("#create-generate")!.click();
    await settle(40);
    expect(requests[1].seed).toBe(requests[0].seed);
    expect(root.querySelectorAll("#create-strip .thumb")).toHaveLength(2);
  });

  it("a reloaded window joins the running generation and shows its image", async () => {
    mockShell({
      attach_job: (a) => {
        stream(a, [
          { event: "step", index: 1, total: 1, step: 3, steps: 4, seconds: 0.25, warmup: false },
          { event: "finished", output: generation(77) },
        ]);
        return { id: 3, kind: "generation", state: "running", lastEvent: null, events: 2, elapsedSeconds: 1 };
      },
      read_image: () => new ArrayBuffer(8),
    });
    createScreen.reattach?.({ id: 3, kind: "generation", state: "running", lastEvent: null, events: 2, elapsedSeconds: 1 });
    await settle(40);
    expect(root.querySelector("#create-timing")!.textContent).toContain("77");
    expect(root.querySelector<HTMLButtonElement>("#create-generate")!.disabled).toBe(false);
  });

  it("sends any strength that is a number: its bounds are the shell's", () => {
    const picture = { name: "barn.png", bytes: [1, 2, 3], strength: 0.5 };
    expect(checkRequest({ ...base, initImage: picture })).toBeNull();
    expect(checkRequest({ ...base, initImage: { ...picture, strength: Number.NaN } })).toContain("Strength");
    expect(checkRequest({ ...base, initImage: { ...picture, strength: 1.2 } })).toBeNull();
  });

  it("sends a picked picture with its strength, at the picture's size", async () => {
    const requests: CreateRequest[] = [];
    mockShell({
      start_generation: (a) => {
        requests.push(a.request as CreateRequest);
        stream(a, [{ event: "finished", output: generation(7) }]);
        return 1;
      },
      read_image: () => new ArrayBuffer(8),
    });
    root.querySelector<HTMLTextAreaElement>("#create-prompt")!.value = "a barn at night";
    setPicture({ name: "barn.png", bytes: [137, 80], width: 24, height: 16 });
    const width = root.querySelector<HTMLInputElement>("#create-width")!;
    expect(width.value).toBe("24");
    expect(width.disabled).toBe(true);
    expect(root.querySelector<HTMLInputElement>("#create-strength")!.disabled).toBe(false);
    expect(root.querySelector("#create-picture-note")!.textContent).toContain("barn.png, 24 × 16");
    root.querySelector<HTMLButtonElement>("#create-generate")!.click();
    await settle(40);
    expect(requests[0]).toMatchObject({ width: 24, height: 16, initImage: { name: "barn.png", bytes: [137, 80], strength: 0.8 } });

    root.querySelector<HTMLButtonElement>("#create-clear-image")!.click();
    expect(width.disabled).toBe(false);
    expect(root.querySelector<HTMLInputElement>("#create-strength")!.disabled).toBe(true);
  });

  it("sends reference pictures with the size the fields hold, and clears them", async () => {
    const requests: CreateRequest[] = [];
    mockShell({
      start_generation: (a) => {
        requests.push(a.request as CreateRequest);
        const out = generation(8);
        stream(a, [{ event: "finished", output: { ...out, generation: { ...out.generation, reference_images: ["cat.png", "hat.jpg"] } } }]);
        return 1;
      },
      read_image: () => new ArrayBuffer(8),
    });
    root.querySelector<HTMLTextAreaElement>("#create-prompt")!.value = "the cat wearing the hat";
    setReferences([
      { name: "cat.png", bytes: [137, 80], width: 96, height: 64 },
      { name: "hat.jpg", bytes: [255, 216], width: 64, height: 64 },
    ]);
    const width = root.querySelector<HTMLInputElement>("#create-width")!;
    expect(width.disabled).toBe(false);
    expect(root.querySelector("#create-references-note")!.textContent).toBe("cat.png, 96 × 64; hat.jpg, 64 × 64");
    root.querySelector<HTMLButtonElement>("#create-generate")!.click();
    await settle(40);
    expect(requests[0]).toMatchObject({
      width: width.valueAsNumber,
      initImage: null,
      referenceImages: [{ name: "cat.png", bytes: [137, 80] }, { name: "hat.jpg", bytes: [255, 216] }],
    });
    expect(root.querySelector("#create-timing")!.textContent).toContain("cat.png, hat.jpg");

    root.querySelector<HTMLButtonElement>("#create-clear-references")!.click();
    expect(root.querySelector("#create-references-note")!.textContent).toBe("none");
    root.querySelector<HTMLButtonElement>("#create-generate")!.click();
    await settle(40);
    expect(requests[1].referenceImages).toEqual([]);
  });

  it("sends the guidance options when given, and null or none when left empty", async () => {
    const requests: CreateRequest[] = [];
    mockShell({
      start_generation: (a) => {
        requests.push(a.request as CreateRequest);
        const out = generation(9);
        stream(a, [{ event: "finished", output: { ...out, generation: { ...out.generation, cfg_truncation: 0.3, cfg_normalization: 1 } } }]);
        return 1;
      },
      read_image: () => new ArrayBuffer(8),
    });
    root.querySelector<HTMLTextAreaElement>("#create-prompt")!.value = "a fox";
    root.querySelector<HTMLButtonElement>("#create-generate")!.click();
    await settle(40);
    expect(requests[0]).toMatchObject({ cfgTruncation: null, cfgNormalization: null, trueCfgScale: null, skipLayers: [], skipLayerScale: 2.8 });
    root.querySelector<HTMLInputElement>("#create-cfg-truncation")!.value = "0.3";
    root.querySelector<HTMLInputElement>("#create-cfg-normalization")!.value = "1";
    root.querySelector<HTMLInputElement>("#create-true-cfg-scale")!.value = "4";
    root.querySelector<HTMLInputElement>("#create-skip-layers")!.value = "7, 8,9";
    root.querySelector<HTMLButtonElement>("#create-generate")!.click();
    await settle(40);
    expect(requests[1]).toMatchObject({ cfgTruncation: 0.3, cfgNormalization: 1, trueCfgScale: 4, skipLayers: [7, 8, 9] });
    root.querySelector<HTMLInputElement>("#create-true-cfg-scale")!.value = "";
    root.querySelector<HTMLInputElement>("#create-skip-layers")!.value = "";
    const timing = root.querySelector("#create-timing")!.textContent;
    expect(timing).toContain("CFG truncation0.3");
    expect(timing).toContain("CFG normalization1");
    root.querySelector<HTMLInputElement>("#create-cfg-truncation")!.value = "";
    root.querySelector<HTMLInputElement>("#create-cfg-normalization")!.value = "";
  });

  it("shows the shell's refusal of a bad size as the engine words it", async () => {
    const refusal = { kind: "badInput", message: "width must be a multiple of 8 from 8 to 2048 pixels (got 500)", hint: "Correct the value and try again." };
    const calls = mockShell({ start_generation: () => { throw refusal; } });
    root.querySelector<HTMLInputElement>("#create-width")!.value = "500";
    root.querySelector<HTMLButtonElement>("#create-generate")!.click();
    await settle();
    expect(calls.map((c) => c.cmd)).toEqual(["start_generation"]);
    expect(messages.querySelector("[role=alert]")!.textContent).toContain(refusal.message);
  });

  it("refuses an emptied field without calling the shell", async () => {
    const calls = mockShell({});
    root.querySelector<HTMLInputElement>("#create-width")!.value = "";
    root.querySelector<HTMLButtonElement>("#create-generate")!.click();
    await settle();
    expect(calls).toHaveLength(0);
    expect(messages.querySelector("[role=alert]")!.textContent).toContain("Width must be a whole number.");
    root.querySelector<HTMLInputElement>("#create-width")!.value = "512";
  });

  it("chooses a model on this machine and takes its family's settings", async () => {
    const settings = { model: "stable-diffusion-v1-5/stable-diffusion-v1-5", modelConfig: null, textEncoders: [], vae: null, backend: "auto", device: null, precision: "auto", memory: "full", memoryLimitGib: null, submitEndpoint: null, updateEndpoint: null, cpuThreads: null, modelDirs: [] };
    let current = settings;
    mockShell({
      schedulers: () => [],
      system_info: () => ({ backends: [] }),
      get_settings: () => current,
      save_settings: (a) => (current = a.settings as typeof settings),
      local_models: () => [
        { name: "black-forest-labs/FLUX.2-klein-4B", family: "FLUX.2 klein", architecture: "flux2-klein", format: "diffusers folder (Hugging Face cache)", synthetic: false, sizeBytes: 15.6e9, problem: null, defaults: { width: 1024, height: 1024, steps: 4, guidance: 1 }, guidance: { truncationAndNormalization: false, skipLayerGuidance: false, trueCfg: false }, referencePictures: true, textEncoders: [], vae: null },
        { name: "/comfy/models/diffusion_models/flux-2-klein-4b.safetensors", family: "FLUX.2 klein", architecture: "flux2-klein", format: "single file (ComfyUI), safetensors BF16", synthetic: false, sizeBytes: 7.75e9, problem: null, defaults: { width: 1024, height: 1024, steps: 4, guidance: 1 }, guidance: { truncationAndNormalization: false, skipLayerGuidance: false, trueCfg: false }, referencePictures: true, textEncoders: ["/comfy/models/text_encoders/qwen_3_4b.safetensors"], vae: "/comfy/models/vae/flux2-vae.safetensors" },
        { name: "/models/broken", family: null, architecture: null, format: "diffusers folder", synthetic: false, sizeBytes: 10, problem: "has no model_index.json", defaults: null, guidance: null, referencePictures: null, textEncoders: [], vae: null },
        { name: "synthetic-sd15", family: "Stable Diffusion", architecture: "sd1", format: "synthetic weights", synthetic: true, sizeBytes: null, problem: null, defaults: { width: 512, height: 512, steps: 30, guidance: 7.5 }, guidance: { truncationAndNormalization: false, skipLayerGuidance: false, trueCfg: false }, referencePictures: false, textEncoders: [], vae: null },
      ],
    });
    createScreen.show?.();
    await settle(40);
    const model = root.querySelector<HTMLSelectElement>("#create-model")!;
    const klein = [...model.options].find((o) => o.value === "black-forest-labs/FLUX.2-klein-4B")!;
    expect(klein.textContent).toBe("FLUX.2 klein · black-forest-labs/FLUX.2-klein-4B · 15.6 GB");
    expect([...model.options].find((o) => o.value === "/models/broken")!.disabled).toBe(true);
    model.value = klein.value;
    model.dispatchEvent(new Event("change"));
    await settle(40);
    expect(current.model).toBe("black-forest-labs/FLUX.2-klein-4B");
    expect(model.value).toBe("black-forest-labs/FLUX.2-klein-4B");
    expect(root.querySelector<HTMLInputElement>("#create-steps")!.value).toBe("4");
    expect(root.querySelector<HTMLInputElement>("#create-width")!.value).toBe("1024");
    expect(root.querySelector<HTMLSelectElement>("#create-size")!.value).toBe("1024x1024");
    expect(root.querySelector<HTMLInputElement>("#create-guidance")!.value).toBe("1");
    // Only the guidance options klein's family takes are offered: none.
    for (const id of ["#create-cfg-truncation", "#create-true-cfg-scale", "#create-skip-layers"]) {
      expect(root.querySelector(id)!.closest<HTMLElement>(".row")!.hidden, id).toBe(true);
    }
    expect(root.querySelector("#create-model-note")!.textContent).toContain("Hugging Face cache");
    expect(current.textEncoders).toEqual([]);
    // A ComfyUI transformer file brings the text encoder and VAE files found beside it.
    model.value = "/comfy/models/diffusion_models/flux-2-klein-4b.safetensors";
    model.dispatchEvent(new Event("change"));
    await settle(40);
    expect(current).toMatchObject({
      model: "/comfy/models/diffusion_models/flux-2-klein-4b.safetensors",
      textEncoders: ["/comfy/models/text_encoders/qwen_3_4b.safetensors"],
      vae: "/comfy/models/vae/flux2-vae.safetensors",
    });
    expect(root.querySelector("#create-model-note")!.textContent).toContain("with /comfy/models/text_encoders/qwen_3_4b.safetensors and");
    const referencesRow = () => root.querySelector("#create-reference-images")!.closest<HTMLElement>(".row")!;
    expect(referencesRow().hidden).toBe(false);
    // Back to SD1.5's settings for the other tests: it takes no reference pictures.
    model.value = "synthetic-sd15";
    model.dispatchEvent(new Event("change"));
    await settle(40);
    expect(root.querySelector<HTMLInputElement>("#create-steps")!.value).toBe("30");
    expect(referencesRow().hidden).toBe(true);
  });

  it("takes the saved model's family settings when the screen opens, once", async () => {
    const settings = { model: "synthetic-flux2-klein", modelConfig: null, textEncoders: [], vae: null, backend: "auto", device: null, precision: "auto", memory: "full", memoryLimitGib: null, submitEndpoint: null, updateEndpoint: null, cpuThreads: null, modelDirs: [] };
    mockShell({
      schedulers: () => [],
      system_info: () => ({ backends: [] }),
      get_settings: () => settings,
      local_models: () => [
        { name: "synthetic-flux2-klein", family: "FLUX.2 klein", architecture: "flux2-klein", format: "synthetic weights", synthetic: true, sizeBytes: null, problem: null, defaults: { width: 1024, height: 1024, steps: 4, guidance: 1 }, guidance: { truncationAndNormalization: false, skipLayerGuidance: false, trueCfg: false }, referencePictures: true, textEncoders: [], vae: null },
      ],
    });
    const steps = root.querySelector<HTMLInputElement>("#create-steps")!;
    steps.value = "30";
    createScreen.show?.();
    await settle(40);
    expect(steps.value).toBe("4");
    expect(root.querySelector("#create-true-cfg-scale")!.closest<HTMLElement>(".row")!.hidden).toBe(true);
    // The person's edit stands when the screen opens again with the same model.
    steps.value = "7";
    createScreen.show?.();
    await settle(40);
    expect(steps.value).toBe("7");
  });

  it("offers each guidance option only for a model that takes it, and drops a hidden one's value", () => {
    const row = (id: string) => root.querySelector(id)!.closest<HTMLElement>(".row")!;
    root.querySelector<HTMLInputElement>("#create-true-cfg-scale")!.value = "4";
    root.querySelector<HTMLInputElement>("#create-skip-layers")!.value = "7";
    showGuidanceChoices({ truncationAndNormalization: false, skipLayerGuidance: false, trueCfg: true });
    expect([row("#create-cfg-truncation").hidden, row("#create-true-cfg-scale").hidden, row("#create-skip-layers").hidden]).toEqual([true, false, true]);
    expect(root.querySelector<HTMLInputElement>("#create-true-cfg-scale")!.value).toBe("4");
    expect(root.querySelector<HTMLInputElement>("#create-skip-layers")!.value).toBe("");
    showGuidanceChoices({ truncationAndNormalization: false, skipLayerGuidance: true, trueCfg: false });
    expect([row("#create-true-cfg-scale").hidden, row("#create-skip-layers").hidden]).toEqual([true, false]);
    expect(root.querySelector<HTMLInputElement>("#create-true-cfg-scale")!.value).toBe("");
    // A model whose family is not known: every option, the engine refuses what it does not take.
    showGuidanceChoices(null);
    expect([row("#create-cfg-truncation").hidden, row("#create-true-cfg-scale").hidden, row("#create-skip-layers").hidden]).toEqual([false, false, false]);
  });
});
