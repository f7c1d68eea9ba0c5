// The System screen: devices and the chosen backend, precision, model source, the model cache,
// the submission endpoint, and updates.

import { api } from "../api";
import { fill, h } from "../dom";
import * as fmt from "../format";
import type { BackendReport, KernelCacheInfo, Settings, SystemReport } from "../types";
import { busy, confirmDialog, definitionList, notify, showError } from "../ui";
import type { Screen } from "../main";

const devices = h("div", { class: "card", id: "system-devices" }, h("p", { class: "muted" }, "Looking for devices…"));
const settingsForm = {
  backend: h("select", { id: "settings-backend" }),
  device: h("select", { id: "settings-device" }),
  precision: h("select", { id: "settings-precision" }),
  memory: h("select", { id: "settings-memory" }),
  memoryLimit: h("input", { type: "number", id: "settings-memory-limit", min: 0, step: "any", placeholder: "what the GPU has free" }),
  model: h("input", { type: "text", id: "settings-model", size: 48 }),
  modelConfig: h("input", { type: "text", id: "settings-model-config", size: 48, placeholder: "only for a model file whose configs are not built in" }),
  textEncoders: h("textarea", { id: "settings-text-encoders", rows: 2, cols: 48, placeholder: "only for a model file: one file per line" }),
  vae: h("input", { type: "text", id: "settings-vae", size: 48, placeholder: "only for a model file" }),
  submitEndpoint: h("input", { type: "url", id: "settings-submit", size: 48, placeholder: "https://…/api/v1/results" }),
  updateEndpoint: h("input", { type: "url", id: "settings-update", size: 48, placeholder: "the app's built-in endpoint" }),
  cpuThreads: h("input", { type: "number", id: "settings-cpu-threads", min: 1, max: 1024, step: 1, placeholder: "one per physical core" }),
  modelDirs: h("textarea", { id: "settings-model-dirs", rows: 2, cols: 48, placeholder: "one folder per line" }),
};
const cpuThreadsNow = h("span", { class: "help", id: "cpu-threads-now" });
const saveButton = h("button", { class: "primary", id: "settings-save" }, "Save settings");
const cache = h("div", { class: "card", id: "system-cache" });
const updates = h("div", { class: "card", id: "system-updates" });
let loaded: Settings | null = null;
let report: SystemReport | null = null;

/** The devices the chosen backend offers (auto: those of the backend auto picks). */
function devicesOf(backend: string): BackendReport["devices"] {
  const name = backend === "auto" ? report?.auto.backend : backend;
  return report?.backends.find((b) => b.backend === name)?.devices ?? [];
}

/** Lists the chosen backend's devices in the Device picker, keeping `keep` when it is among them. */
function fillDevicePicker(keep: number | null): void {
  const listed = devicesOf(settingsForm.backend.value);
  settingsForm.device.replaceChildren(h("option", { value: "" }, "the best one"),
    ...listed.map((d) => h("option", { value: String(d.index) }, `${d.index}: ${d.description}`)));
  // A saved number the backend does not list stays visible, so saving does not drop it unseen.
  if (keep !== null && !listed.some((d) => d.index === keep)) {
    settingsForm.device.append(h("option", { value: String(keep) }, `${keep}: not found on this machine`));
  }
  settingsForm.device.value = keep === null ? "" : String(keep);
}

/** A text area's lines, trimmed, without empty ones. */
function lines(area: HTMLTextAreaElement): string[] {
  return area.value.split("\n").map((l) => l.trim()).filter((l) => l !== "");
}

/** The form's settings; throws a bad-input error for a thread count that is not a whole number. */
export function formSettings(): Settings {
  const text = (input: HTMLInputElement) => (input.value.trim() === "" ? null : input.value.trim());
  const threads = text(settingsForm.cpuThreads);
  const cpuThreads = threads === null ? null : Number(threads);
  if (cpuThreads !== null && (!Number.isInteger(cpuThreads) || cpuThreads < 1)) {
    throw { kind: "badInput", message: `CPU threads “${threads}” is not a whole number of 1 or more`, hint: "Enter a whole number, or leave it empty for one per physical core." };
  }
  const limit = text(settingsForm.memoryLimit);
  const memoryLimitGib = limit === null ? null : Number(limit);
  if (memoryLimitGib !== null && !(Number.isFinite(memoryLimitGib) && memoryLimitGib > 0)) {
    throw { kind: "badInput", message: `GPU memory “${limit}” is not a size in GiB`, hint: "Enter the GPU's memory in GiB (such as 8), or leave it empty for what the GPU has free." };
  }
  return {
    model: settingsForm.model.value.trim(),
    modelConfig: text(settingsForm.modelConfig),
    textEncoders: lines(settingsForm.textEncoders),
    vae: text(settingsForm.vae),
    backend: settingsForm.backend.value,
    device: settingsForm.device.value === "" ? null : Number(settingsForm.device.value),
    precision: settingsForm.precision.value,
    memory: settingsForm.memory.value,
    memoryLimitGib,
    submitEndpoint: text(settingsForm.submitEndpoint),
    updateEndpoint: text(settingsForm.updateEndpoint),
    cpuThreads,
    modelDirs: lines(settingsForm.modelDirs),
  };
}

/** Shows saved settings in the form. */
export function fillForm(s: Settings): void {
  loaded = s;
  settingsForm.backend.value = s.backend;
  fillDevicePicker(s.device);
  settingsForm.precision.value = s.precision;
  settingsForm.memory.value = s.memory;
  settingsForm.memoryLimit.value = s.memoryLimitGib === null ? "" : String(s.memoryLimitGib);
  settingsForm.model.value = s.model;
  settingsForm.modelConfig.value = s.modelConfig ?? "";
  settingsForm.textEncoders.value = s.textEncoders.join("\n");
  settingsForm.vae.value = s.vae ?? "";
  settingsForm.submitEndpoint.value = s.submitEndpoint ?? "";
  settingsForm.updateEndpoint.value = s.updateEndpoint ?? "";
  settingsForm.modelDirs.value = s.modelDirs.join("\n");
  settingsForm.cpuThreads.value = s.cpuThreads === null ? "" : String(s.cpuThreads);
}

async function loadDevices(): Promise<void> {
  try {
    report = await api.systemInfo();
    if (settingsForm.backend.options.length === 0) {
      for (const name of report.backendNames) settingsForm.backend.append(h("option", { value: name }, name));
      for (const name of report.precisions) settingsForm.precision.append(h("option", { value: name }, name));
      for (const name of report.memoryProfiles) settingsForm.memory.append(h("option", { value: name }, name));
      if (loaded) fillForm(loaded);
    }
    const chosen = settingsForm.device.value;
    fillDevicePicker(chosen === "" ? null : Number(chosen));
    cpuThreadsNow.textContent = `the CPU backend's worker threads; a change applies when SD Bench next starts (now ${report.cpuThreads})`;
    const s = report.system;
    const auto = report.auto.error
      ? `nothing usable: ${report.auto.error}`
      : `${report.auto.backend} device ${report.auto.index ?? 0}, ${report.auto.device} (${report.auto.precision ?? "f16 where the device supports it"})`;
    fill(devices,
      h("h2", {}, "This machine"),
      definitionList([
        ["system", fmt.osLabel(s.os, s.os_version)], ["CPU", `${s.cpu_model} (${s.cpu_logical_cores} threads)`],
        ["memory", fmt.bytes(s.ram_bytes)], ["GPUs", s.gpus.map((g) => g.name).join(", ") || "none found"],
        ["auto selects", auto], ["SD Bench", report.appVersion], ["data folder", report.dataDir],
      ]),
      h("table", { class: "backends", id: "system-backends" },
        h("thead", {}, h("tr", {}, h("th", {}, "backend"), h("th", {}, "usable"), h("th", {}, "detail"))),
        h("tbody", {}, report.backends.map((b) => h("tr", {},
          h("td", {}, b.backend), h("td", { class: b.usable ? "valid" : "muted" }, b.usable ? "yes" : "no"),
          h("td", {}, b.detail, b.devices.length ? h("ul", {}, b.devices.map((d) => h("li", {}, `${d.index}: ${d.description}`))) : null))))));
  } catch (e) {
    showError(e);
  }
}

async function loadCache(): Promise<void> {
  try {
    const info = await api.cacheInfo();
    const rows = info.models.map((m) => {
      const box = h("input", { type: "checkbox", value: m.repo, "aria-label": `Select ${m.repo}` });
      const state = m.partial_bytes > 0 ? `partial download (${fmt.bytes(m.partial_bytes)})` : m.runnable ? "ready" : "not an SD pipeline";
      return h("tr", {}, h("td", {}, box), h("td", {}, m.repo), h("td", { class: "num" }, fmt.bytes(m.size_bytes)), h("td", {}, state));
    });
    const clean = h("button", { id: "cache-clean", disabled: info.models.length === 0 }, "Clean up model cache…");
    clean.addEventListener("click", () => busy(clean, async () => {
      const boxes = [...cache.querySelectorAll<HTMLInputElement>("tbody input[type=checkbox]")];
      const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
      const models = chosen.length > 0 ? chosen : info.models.map((m) => m.repo);
      const size = info.models.filter((m) => models.includes(m.repo)).reduce((a, m) => a + m.size_bytes, 0);
      const ok = await confirmDialog("Remove cached models?",
        `Remove ${models.join(", ")} (${fmt.bytes(size)}) from ${info.dir}? A later run downloads them again.`, "Remove");
      if (!ok) return;
      const cleaned = await api.cleanCache(models);
      notify(`Freed ${fmt.bytes(cleaned.freedBytes)} (${cleaned.freedBytes} bytes) by removing ${cleaned.removed.join(", ")}.`);
      await loadCache();
    }));
    fill(cache,
      h("h2", {}, "Model cache"),
      h("p", {}, h("code", {}, info.dir), " · ", h("span", { id: "cache-total" }, fmt.bytes(info.totalBytes))),
      info.models.length === 0
        ? h("p", { class: "muted", id: "cache-empty" }, "No models are cached.")
        : h("table", {}, h("tbody", {}, rows)),
      h("p", { class: "muted" }, "With none selected, every model is removed."),
      clean,
      kernelCache(info.kernels));
  } catch (e) {
    showError(e);
  }
}

// The compiled GPU kernels: where, how many, how big, and removing them.
function kernelCache(kernels: KernelCacheInfo | null): HTMLElement {
  if (kernels === null) {
    return h("p", { class: "muted", id: "kernels-off" },
      "Compiled GPU kernels are not kept (SDBENCH_KERNEL_CACHE=off): every run compiles them.");
  }
  const clean = h("button", { id: "kernels-clean", disabled: kernels.totalBytes === 0 }, "Remove compiled GPU kernels…");
  clean.addEventListener("click", () => busy(clean, async () => {
    const ok = await confirmDialog("Remove compiled GPU kernels?",
      `Remove ${fmt.bytes(kernels.totalBytes)} of compiled GPU kernels from ${kernels.dir}? The next run on each GPU compiles them again, which can take minutes.`, "Remove");
    if (!ok) return;
    const cleaned = await api.cleanKernelCache();
    notify(`Freed ${fmt.bytes(cleaned.freedBytes)} (${cleaned.freedBytes} bytes) by removing the compiled GPU kernels.`);
    await loadCache();
  }));
  const devices = kernels.devices === 1 ? "1 device" : `${kernels.devices} devices`;
  return h("div", { id: "kernels" },
    h("h3", {}, "Compiled GPU kernels"),
    h("p", {}, h("code", {}, kernels.dir), " · ",
      h("span", { id: "kernels-total" }, `${kernels.kernels} kernels for ${devices}, ${fmt.bytes(kernels.totalBytes)}`)),
    h("p", { class: "muted" }, "Kept so that a run after the first on a GPU starts at once."),
    clean);
}

function mountUpdates(): void {
  const check = h("button", { id: "update-check" }, "Check for updates");
  const result = h("p", { id: "update-result", "aria-live": "polite" });
  check.addEventListener("click", () => busy(check, async () => {
    result.textContent = "Checking…";
    try {
      const info = await api.checkForUpdate();
      if (!info.available) {
        result.textContent = `SD Bench ${info.currentVersion} is up to date.`;
        return;
      }
      const install = h("button", { class: "primary", id: "update-install" }, `Install ${info.version} and restart`);
      install.addEventListener("click", () => busy(install, () => api.installUpdate()));
      fill(result, `Version ${info.version} is available (you have ${info.currentVersion}). `, info.notes ?? "", " ", install);
    } catch (e) {
      result.textContent = "";
      throw e;
    }
  }));
  updates.append(h("h2", {}, "Updates"), check, result);
}

export const systemScreen: Screen = {
  id: "system",
  title: "System",
  mount(root) {
    const field = (label: string, input: HTMLElement, help: string) => h("label", {}, label, input, h("span", { class: "help" }, help));
    settingsForm.backend.addEventListener("change", () => fillDevicePicker(null));
    saveButton.addEventListener("click", () => busy(saveButton, async () => {
      fillForm(await api.saveSettings(formSettings()));
      notify("Settings saved.");
    }));
    mountUpdates();
    root.append(
      devices,
      h("div", { class: "card form", id: "system-settings" },
        h("h2", {}, "Settings"),
        field("Backend", settingsForm.backend, "auto picks the best usable device"),
        field("Device", settingsForm.device, "on a machine with several GPUs, which one runs (numbered as listed above)"),
        field("Precision", settingsForm.precision, "auto is f16 where the device supports it; bf16 runs on CUDA, ROCm and the CPU"),
        field("Memory profile", settingsForm.memory,
          "full: everything on the GPU (the standard score's); balanced: text encoders on the CPU; low: also sequential guidance, the UNet or transformer off the GPU while decoding, tiled VAE, for small GPUs; minimal: also 8-bit UNet or transformer weights and smaller attention chunks, for the smallest; cpu: everything on the CPU; auto: the fastest that fits the GPU's memory"),
        field("GPU memory (GiB)", settingsForm.memoryLimit,
          "what the memory check and auto assume the GPU holds; empty: what it has free (read on NVIDIA and AMD; other GPUs are not checked unless this is set)"),
        field("Model", settingsForm.model, "a Hub id, a diffusers folder or .safetensors file on this machine, or synthetic"),
        field("Model config", settingsForm.modelConfig, "a diffusers folder describing a model file; a checkpoint or transformer file of a built-in model's sizes needs none (its repository's configs are fetched once, without weights)"),
        field("Text encoder files", settingsForm.textEncoders, "a model file's text encoders as files of their own, as ComfyUI keeps them in models/text_encoders/ (CLIP, T5 or Qwen3), one per line in any order: each file's role is found from its tensors"),
        field("VAE file", settingsForm.vae, "a model file's VAE as a file of its own (ComfyUI's models/vae/), replacing a checkpoint's own"),
        field("Model folders", settingsForm.modelDirs,
          "more folders whose models Create and Benchmark list; the Hugging Face cache and ComfyUI's, AUTOMATIC1111's, Forge's, InvokeAI's and stable-diffusion.cpp's usual folders are searched anyway (nothing is copied or moved)"),
        field("Submission endpoint", settingsForm.submitEndpoint, "where Submit sends results: an SD Bench results service's …/api/v1/results (sdbench-server; there is no public one yet)"),
        field("Update endpoint", settingsForm.updateEndpoint, "leave empty for the built-in one"),
        h("label", {}, "CPU threads", settingsForm.cpuThreads, cpuThreadsNow),
        saveButton),
      cache,
      updates);
    api.getSettings().then(fillForm).catch(showError);
  },
  show() {
    loadDevices();
    loadCache();
  },
};
