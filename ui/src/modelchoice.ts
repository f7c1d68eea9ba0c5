// The model choice the Create and Benchmark screens share: the models on this machine (the
// Hugging Face cache, a folder or file the setting names, each preset's synthetic weights) with
// their family, size and format, and "another folder or file…". Choosing one saves it as the model
// setting (System shows the same setting), so both screens and the CLI's defaults agree.

import { open } from "@tauri-apps/plugin-dialog";
import { api, asUiError } from "./api";
import { fill, h } from "./dom";
import * as fmt from "./format";
import type { LocalModelView, Settings } from "./types";

/** The "another model file" dialog: the files `--model` takes, a single-file checkpoint or a
 * transformer file, in safetensors or GGUF. */
export const MODEL_FILE_DIALOG = {
  directory: false, multiple: false, title: "A model file: a single-file checkpoint or a transformer file",
  filters: [{ name: "Model files (safetensors, GGUF)", extensions: ["safetensors", "gguf"] }],
};

/** The option values that open a dialog instead of naming a model. */
const PICK_FOLDER = "\u0000folder";
const PICK_FILE = "\u0000file";

/** How a model reads in the list: "FLUX.2 klein · black-forest-labs/FLUX.2-klein-4B · 15.6 GB". */
/** " · with a, b and c": the files a model file runs with, found beside it; "" for none. */
export function withFiles(files: string[]): string {
  if (files.length === 0) return "";
  const last = files[files.length - 1];
  return ` · with ${files.length === 1 ? last : `${files.slice(0, -1).join(", ")} and ${last}`}`;
}

export function modelLabel(m: LocalModelView): string {
  const name = m.synthetic ? m.name.replace(/^synthetic-/, "") : m.name;
  const parts = [m.family ?? "unknown family", name];
  if (m.sizeBytes !== null) parts.push(fmt.bytes(m.sizeBytes));
  if (m.problem) parts.push("cannot run");
  return parts.join(" · ");
}

export interface ModelChoice {
  element: HTMLElement;
  /** Lists the models again and selects the model setting. */
  refresh(): Promise<void>;
  /** The chosen model, when it is one the list knows. */
  chosen(): LocalModelView | null;
}

/** `onChosen` runs after a new choice is saved. */
export function modelChoice(id: string, onChosen: (m: LocalModelView | null) => void): ModelChoice {
  const select = h("select", { id, "aria-label": "Model" });
  const note = h("p", { class: "muted", id: `${id}-note` });
  let models: LocalModelView[] = [];
  let settings: Settings | null = null;

  const byName = (name: string) => models.find((m) => m.name === name) ?? null;

  function describe(): void {
    const m = byName(select.value);
    note.textContent = m === null
      ? ""
      : m.problem
        ? `SD Bench cannot run it: ${m.problem}`
        : `${m.format}${m.architecture ? ` · ${m.architecture}` : ""}${
          withFiles([...m.textEncoders, ...(m.vae ? [m.vae] : [])])}`;
  }

  async function refresh(): Promise<void> {
    try {
      [models, settings] = await Promise.all([api.localModels(), api.getSettings()]);
    } catch (e) {
      fill(select, h("option", { value: "" }, "the model in System > Settings"));
      note.textContent = `The models on this machine could not be listed: ${asUiError(e).message}`;
      return;
    }
    const current = settings.model;
    const option = (m: LocalModelView) =>
      h("option", { value: m.name, title: m.name, disabled: m.problem !== null }, modelLabel(m));
    const local = models.filter((m) => !m.synthetic);
    const synthetic = models.filter((m) => m.synthetic);
    const known = models.some((m) => m.name === current);
    fill(select,
      // A Hub id not downloaded yet (the default setting, say): the screen offers its download.
      known ? null : h("option", { value: current, title: current }, `${current} (not on this machine yet)`),
      h("optgroup", { label: "On this machine" }, local.length ? local.map(option) : h("option", { disabled: true }, "none yet")),
      h("optgroup", { label: "Synthetic weights (no download, not a standard score)" }, synthetic.map(option)),
      h("optgroup", { label: "Elsewhere" },
        h("option", { value: PICK_FOLDER }, "another diffusers folder…"),
        h("option", { value: PICK_FILE }, "another model file (.safetensors, .gguf)…")));
    select.value = current;
    describe();
  }

  async function choose(): Promise<void> {
    let name = select.value;
    if (name === PICK_FOLDER || name === PICK_FILE) {
      const picked = await open(name === PICK_FOLDER
        ? { directory: true, multiple: false, title: "A diffusers model folder" }
        : MODEL_FILE_DIALOG);
      if (typeof picked !== "string") {
        select.value = settings?.model ?? "";
        return;
      }
      name = picked;
    }
    const base = settings ?? (await api.getSettings());
    // A model file's parts found beside it come with it.
    const parts = byName(name);
    settings = await api.saveSettings({
      ...base, model: name, modelConfig: null, textEncoders: parts?.textEncoders ?? [], vae: parts?.vae ?? null,
    });
    await refresh();
    onChosen(byName(name));
  }

  select.addEventListener("change", () => {
    choose().catch((e) => {
      note.textContent = `Not chosen: ${asUiError(e).message}`;
      select.value = settings?.model ?? "";
    });
  });
  return {
    element: h("div", { class: "model-choice" }, h("label", {}, "Model ", select), note),
    refresh,
    chosen: () => byName(select.value),
  };
}
