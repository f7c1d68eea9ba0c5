import { beforeEach, describe, expect, it } from "vitest";
import { mockShell, settle } from "../test-support";
import { setMessageArea } from "../ui";
import { fillForm, systemScreen } from "./system";
import type { Settings } from "../types";

const settings: Settings = { model: "stable-diffusion-v1-5/stable-diffusion-v1-5", modelConfig: null, textEncoders: [], vae: null, backend: "auto", device: null, precision: "auto", memory: "full", memoryLimitGib: null, submitEndpoint: null, updateEndpoint: null, cpuThreads: null, modelDirs: [] };
const system = {
  appVersion: "0.1.0",
  system: { os: "Linux", os_version: "12", cpu_model: "Test CPU", cpu_logical_cores: 2, ram_bytes: 24e9, gpus: [] },
  backends: [{ backend: "cuda", usable: false, detail: "no NVIDIA driver", devices: [] }, { backend: "cpu", usable: true, detail: "2 threads", devices: [{ index: 0, name: "Test CPU", description: "Test CPU (burn flex)" }] },
    { backend: "vulkan", usable: true, detail: "2 adapter(s)", devices: [
      { index: 0, name: "GPU A", description: "GPU A (discrete GPU, PCI 0000:01:00.0)" },
      { index: 1, name: "GPU B", description: "GPU B (discrete GPU, PCI 0000:41:00.0)" }] }],
  auto: { backend: "cpu", device: "Test CPU", index: 0, precision: "f32", error: null },
  backendNames: ["auto", "cuda", "vulkan", "cpu"], precisions: ["auto", "f32", "f16"], memoryProfiles: ["full", "balanced", "low", "minimal", "cpu", "auto"], dataDir: "/data", cacheDir: "/hub",
  cpuThreads: 2,
};
const messages = document.createElement("div");
let root: HTMLElement;
let mounted = false;

function handlers(extra: Record<string, (a: Record<string, unknown>) => unknown> = {}) {
  return mockShell({
    get_settings: () => settings,
    system_info: () => system,
    cache_info: () => ({ dir: "/hub", totalBytes: 4_300_000_000, models: [{ repo: "stable-diffusion-v1-5/stable-diffusion-v1-5", path: "/hub/m", size_bytes: 4_300_000_000, runnable: true, partial_bytes: 0 }],
      kernels: { dir: "/cache/kernels", kernels: 181, devices: 1, totalBytes: 52_000_000 } }),
    ...extra,
  });
}

beforeEach(async () => {
  document.body.replaceChildren();
  setMessageArea(messages);
  document.body.append(messages);
  if (!mounted) {
    handlers();
    root = document.createElement("section");
    systemScreen.mount(root);
    mounted = true;
  }
  document.body.append(root);
});

describe("System screen", () => {
  it("lists the backends and saves the settings the form holds", async () => {
    let saved: unknown = null;
    handlers({ save_settings: (a) => (saved = a.settings) });
    systemScreen.show?.();
    await settle();
    expect(root.querySelector("#system-backends")!.textContent).toContain("no NVIDIA driver");
    expect(root.querySelector("#system-devices")!.textContent).toContain("cpu device 0, Test CPU (f32)");
    const backend = root.querySelector<HTMLSelectElement>("#settings-backend")!;
    expect(backend.value).toBe("auto");
    backend.value = "cpu";
    const memory = root.querySelector<HTMLSelectElement>("#settings-memory")!;
    expect([...memory.options].map((o) => o.value)).toEqual(["full", "balanced", "low", "minimal", "cpu", "auto"]);
    expect(memory.value).toBe("full");
    memory.value = "low";
    root.querySelector<HTMLInputElement>("#settings-submit")!.value = " https://example.org/results ";
    root.querySelector<HTMLButtonElement>("#settings-save")!.click();
    await settle();
    expect(saved).toEqual({ ...settings, backend: "cpu", memory: "low", submitEndpoint: "https://example.org/results" });
  });

  it("offers the chosen backend's devices by number and saves the one picked", async () => {
    let saved: Settings | null = null;
    handlers({ save_settings: (a) => (saved = a.settings as Settings) });
    systemScreen.show?.();
    await settle();
    expect(root.querySelector("#system-backends")!.textContent).toContain("1: GPU B (discrete GPU, PCI 0000:41:00.0)");
    const backend = root.querySelector<HTMLSelectElement>("#settings-backend")!;
    const device = root.querySelector<HTMLSelectElement>("#settings-device")!;
    backend.value = "vulkan";
    backend.dispatchEvent(new Event("change"));
    expect([...device.options].map((o) => o.textContent)).toEqual([
      "the best one", "0: GPU A (discrete GPU, PCI 0000:01:00.0)", "1: GPU B (discrete GPU, PCI 0000:41:00.0)"]);
    device.value = "1";
    root.querySelector<HTMLButtonElement>("#settings-save")!.click();
    await settle();
    expect(saved).toMatchObject({ backend: "vulkan", device: 1 });
    // Another backend starts from its best device.
    backend.value = "cpu";
    backend.dispatchEvent(new Event("change"));
    expect(device.value).toBe("");
    expect([...device.options].map((o) => o.value)).toEqual(["", "0"]);
  });

  it("keeps a saved device number this machine does not list, and says so", async () => {
    handlers();
    systemScreen.show?.();
    await settle();
    fillForm({ ...settings, backend: "vulkan", device: 3 });
    const device = root.querySelector<HTMLSelectElement>("#settings-device")!;
    expect(device.value).toBe("3");
    expect(device.selectedOptions[0].textContent).toBe("3: not found on this machine");
  });

  it("saves a CPU thread count and refuses one that is not a whole number", async () => {
    let saved: Settings | null = null;
    handlers({ save_settings: (a) => (saved = a.settings as Settings) });
    systemScreen.show?.();
    await settle();
    expect(root.querySelector("#cpu-threads-now")!.textContent).toContain("now 2");
    const threads = root.querySelector<HTMLInputElement>("#settings-cpu-threads")!;
    threads.value = "2.5";
    root.querySelector<HTMLButtonElement>("#settings-save")!.click();
    await settle();
    expect(saved).toBeNull();
    expect(messages.querySelector("[role=alert]")!.textContent).toContain("whole number");
    threads.value = "3";
    root.querySelector<HTMLButtonElement>("#settings-save")!.click();
    await settle();
    expect(saved!.cpuThreads).toBe(3);
    threads.value = "";
  });

  it("saves model folders one per line, blank lines dropped", async () => {
    let saved: Settings | null = null;
    handlers({ save_settings: (a) => (saved = a.settings as Settings) });
    systemScreen.show?.();
    await settle();
    const dirs = root.querySelector<HTMLTextAreaElement>("#settings-model-dirs")!;
    dirs.value = " /data/models \n\n/mnt/comfy/models\n";
    root.querySelector<HTMLButtonElement>("#settings-save")!.click();
    await settle();
    expect(saved!.modelDirs).toEqual(["/data/models", "/mnt/comfy/models"]);
    dirs.value = "";
  });

  it("saves a model file's text encoder and VAE files, empty ones as none", async () => {
    let saved: Settings | null = null;
    handlers({ save_settings: (a) => (saved = a.settings as Settings) });
    systemScreen.show?.();
    await settle();
    const textEncoders = root.querySelector<HTMLTextAreaElement>("#settings-text-encoders")!;
    const vae = root.querySelector<HTMLInputElement>("#settings-vae")!;
    textEncoders.value = " /comfy/models/text_encoders/clip_l.safetensors \n\n/comfy/models/text_encoders/t5xxl_fp16.safetensors\n";
    vae.value = "";
    root.querySelector<HTMLButtonElement>("#settings-save")!.click();
    await settle();
    expect(saved!.textEncoders).toEqual(["/comfy/models/text_encoders/clip_l.safetensors", "/comfy/models/text_encoders/t5xxl_fp16.safetensors"]);
    expect(saved!.vae).toBeNull();
    textEncoders.value = "";
  });

  it("saves the GPU memory the check assumes and refuses one that is not a size", async () => {
    let saved: Settings | null = null;
    handlers({ save_settings: (a) => (saved = a.settings as Settings) });
    const limit = root.querySelector<HTMLInputElement>("#settings-memory-limit")!;
    expect(limit.value).toBe("");
    for (const bad of ["0", "-2"]) {
      limit.value = bad;
      root.querySelector<HTMLButtonElement>("#settings-save")!.click();
      await settle();
      expect(saved).toBeNull();
      expect(messages.querySelector("[role=alert]")!.textContent).toContain("not a size in GiB");
    }
    limit.value = "7.5";
    root.querySelector<HTMLButtonElement>("#settings-save")!.click();
    await settle();
    expect(saved!.memoryLimitGib).toBe(7.5);
    limit.value = "";
    root.querySelector<HTMLButtonElement>("#settings-save")!.click();
    await settle();
    expect(saved!.memoryLimitGib).toBeNull();
  });

  it("names a GPU's auto precision by rule (the device is not initialised to show it)", async () => {
    handlers({ system_info: () => ({ ...system, auto: { backend: "vulkan", device: "Test GPU", index: 0, precision: null, error: null } }) });
    systemScreen.show?.();
    await settle();
    expect(root.querySelector("#system-devices")!.textContent).toContain("vulkan device 0, Test GPU (f16 where the device supports it)");
  });

  it("shows a refused setting's reason", async () => {
    handlers({ save_settings: () => { throw { kind: "badInput", message: "model /x does not exist", hint: "Choose an existing model folder" }; } });
    root.querySelector<HTMLButtonElement>("#settings-save")!.click();
    await settle();
    expect(messages.querySelector("[role=alert]")!.textContent).toContain("does not exist");
  });

  it("cleans the cache after confirming and says how much was freed", async () => {
    let cleaned: unknown = null;
    handlers({ clean_cache: (a) => { cleaned = a.models; return { removed: a.models, freedBytes: 4_300_000_000 }; } });
    systemScreen.show?.();
    await settle();
    expect(root.querySelector("#cache-total")!.textContent).toBe("4.30 GB");
    root.querySelector<HTMLButtonElement>("#cache-clean")!.click();
    await settle();
    document.querySelector<HTMLButtonElement>("#dialog-cancel")!.click();
    await settle();
    expect(cleaned).toBeNull();
    root.querySelector<HTMLButtonElement>("#cache-clean")!.click();
    await settle();
    document.querySelector<HTMLButtonElement>("#dialog-confirm")!.click();
    await settle();
    expect(cleaned).toEqual(["stable-diffusion-v1-5/stable-diffusion-v1-5"]);
    expect(messages.textContent).toContain("Freed 4.30 GB (4300000000 bytes)");
  });

  it("shows the compiled GPU kernels and removes them after confirming", async () => {
    let cleaned = false;
    handlers({ clean_kernel_cache: () => { cleaned = true; return { removed: ["compiled GPU kernels"], freedBytes: 52_000_000 }; } });
    systemScreen.show?.();
    await settle();
    expect(root.querySelector("#kernels-total")!.textContent).toBe("181 kernels for 1 device, 52.0 MB");
    root.querySelector<HTMLButtonElement>("#kernels-clean")!.click();
    await settle();
    document.querySelector<HTMLButtonElement>("#dialog-cancel")!.click();
    await settle();
    expect(cleaned).toBe(false);
    root.querySelector<HTMLButtonElement>("#kernels-clean")!.click();
    await settle();
    expect(document.querySelector("dialog, [role=dialog]")?.textContent ?? "").toContain("compiles them again");
    document.querySelector<HTMLButtonElement>("#dialog-confirm")!.click();
    await settle();
    expect(cleaned).toBe(true);
    expect(messages.textContent).toContain("Freed 52.0 MB (52000000 bytes) by removing the compiled GPU kernels");
  });

  it("says when compiled GPU kernels are not kept", async () => {
    handlers({ cache_info: () => ({ dir: "/hub", totalBytes: 0, models: [], kernels: null }) });
    systemScreen.show?.();
    await settle();
    expect(root.querySelector("#kernels-off")!.textContent).toContain("not kept");
    expect(root.querySelector("#kernels-clean")).toBeNull();
  });

  it("checks for updates", async () => {
    handlers({ check_for_update: () => ({ currentVersion: "0.1.0", available: true, version: "0.2.0", notes: "Faster", date: null }) });
    root.querySelector<HTMLButtonElement>("#update-check")!.click();
    await settle();
    expect(root.querySelector("#update-result")!.textContent).toContain("Version 0.2.0 is available");
    expect(root.querySelector("#update-install")).not.toBeNull();
  });
});
