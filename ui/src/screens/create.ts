// The Create screen: a person's own prompt (and, for image-to-image, a picture to start from; for
// a model that takes them, pictures to condition on), the image with its timing, save as PNG
// (parameters inside), and a strip of this session's images.

import { api, attachJob, imageUrl, type JobHandle } from "../api";
import { fill, h } from "../dom";
import * as fmt from "../format";
import { ProgressTracker } from "../progress";
import { modelChoice } from "../modelchoice";
import type { CreateOutput, CreateRequest, Generation, GuidanceChoices, JobEvent, JobStatus, ModelDefaults } from "../types";
import { busy, notify, pickSavePath, showError } from "../ui";
import { boundFields, checkWhole } from "../validate";
import type { Screen } from "../main";

/** Seeds stay below 2^32 when drawn at random (any seed up to 2^53 − 1 can be typed). */
export function randomSeed(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0];
}

export const SIZE_PRESETS: [string, number, number][] = [
  ["512 × 512", 512, 512], ["512 × 768 (portrait)", 512, 768], ["768 × 512 (landscape)", 768, 512],
  ["768 × 768", 768, 768], ["1024 × 1024", 1024, 1024], ["832 × 1216 (portrait)", 832, 1216],
  ["1216 × 832 (landscape)", 1216, 832], ["256 × 256 (fast)", 256, 256],
];

/** A chosen model's family settings in the form (its standard workload's size, steps and
 * guidance), so its first image runs as the model is meant to run. */
export function applyDefaults(d: ModelDefaults): void {
  form.steps.value = String(d.steps);
  form.guidance.value = String(d.guidance);
  form.width.value = String(d.width);
  form.height.value = String(d.height);
  const preset = `${d.width}x${d.height}`;
  form.size.value = SIZE_PRESETS.some(([, w, hgt]) => `${w}x${hgt}` === preset) ? preset : "custom";
}

/** The fields that hold no number the request can carry (empty, or a fraction where a whole
 * number goes); null when it can be sent. The shell checks every rule on the values. */
export function checkRequest(r: CreateRequest): string | null {
  const whole = checkWhole("Width", r.width) ?? checkWhole("Height", r.height) ?? checkWhole("Steps", r.steps) ?? checkWhole("The seed", r.seed);
  if (whole) return whole;
  if (!Number.isFinite(r.guidance)) return "Guidance must be a number.";
  if (r.initImage && !Number.isFinite(r.initImage.strength)) return "Strength must be a number.";
  if (r.skipLayers?.some((b) => !Number.isInteger(b))) return "Skip-layer guidance blocks must be whole numbers separated by commas, such as 7,8,9.";
  return null;
}

/** A picked picture as the request carries it, with its size (the shell checks the size). */
export interface Picture { name: string; bytes: number[]; width: number; height: number }

const form = {
  prompt: h("textarea", { id: "create-prompt", rows: 3, placeholder: "a watercolor lighthouse at dawn" }),
  negative: h("textarea", { id: "create-negative", rows: 2, placeholder: "blurry, low quality" }),
  steps: h("input", { type: "number", id: "create-steps", min: 1, value: 30 }),
  guidance: h("input", { type: "number", id: "create-guidance", min: 0, max: 50, step: 0.5, value: 7.5 }),
  seed: h("input", { type: "number", id: "create-seed", min: 0, value: 0 }),
  randomSeed: h("input", { type: "checkbox", id: "create-random-seed", checked: true }),
  size: h("select", { id: "create-size" }),
  width: h("input", { type: "number", id: "create-width", value: 512 }),
  height: h("input", { type: "number", id: "create-height", value: 512 }),
  scheduler: h("select", { id: "create-scheduler" }, h("option", { value: "" }, "the model's own")),
  backend: h("select", { id: "create-backend" }, h("option", { value: "" }, "as in System")),
  picture: h("input", { type: "file", id: "create-init-image", accept: "image/png,image/jpeg" }),
  strength: h("input", { type: "number", id: "create-strength", min: 0.05, max: 1, step: 0.05, value: 0.8 }),
  references: h("input", { type: "file", id: "create-reference-images", accept: "image/png,image/jpeg", multiple: true }),
  cfgTruncation: h("input", { type: "number", id: "create-cfg-truncation", min: 0, max: 1, step: 0.05, placeholder: "none" }),
  cfgNormalization: h("input", { type: "number", id: "create-cfg-normalization", min: 0, step: 0.1, placeholder: "none" }),
  trueCfgScale: h("input", { type: "number", id: "create-true-cfg-scale", min: 1, step: 0.5, placeholder: "none" }),
  skipLayers: h("input", { type: "text", id: "create-skip-layers", placeholder: "none, e.g. 7,8,9" }),
  skipLayerScale: h("input", { type: "number", id: "create-skip-layer-scale", min: 0, step: 0.1, value: 2.8 }),
};

/** The skip-layer guidance blocks field: its numbers, or null when it is not a comma-separated
 * list of whole numbers (empty: none). */
export function skipLayerBlocks(text: string): number[] | null {
  const parts = text.split(",").map((p) => p.trim()).filter((p) => p !== "");
  if (!parts.every((p) => /^\d+$/.test(p))) return null;
  return parts.map(Number);
}

/** An optional number field: null when left empty. */
function optional(input: HTMLInputElement): number | null {
  return input.value === "" ? null : input.valueAsNumber;
}
const clearPicture = h("button", { id: "create-clear-image", hidden: true }, "Remove picture");
const pictureNote = h("span", { class: "muted", id: "create-picture-note" }, "none: text to image");
let picture: Picture | null = null;
const clearReferences = h("button", { id: "create-clear-references", hidden: true }, "Remove references");
const referencesNote = h("span", { class: "muted", id: "create-references-note" }, "none");
let references: Picture[] = [];
const generateButton = h("button", { class: "primary", id: "create-generate" }, "Generate");
const cancelButton = h("button", { id: "create-cancel", hidden: true }, "Cancel");
const reuseButton = h("button", { id: "create-reuse-seed", disabled: true }, "Reuse last seed");
const status = h("p", { class: "muted", id: "create-status", "aria-live": "polite" }, "");
const viewer = h("div", { class: "viewer", id: "create-viewer" }, h("p", { class: "muted" }, "Your image appears here."));
const strip = h("div", { class: "strip", id: "create-strip", "aria-label": "This session's images" });
let lastSeed: number | null = null;
let optionsLoaded = false;
/** The model whose family's settings the form last took: the saved model's are taken when the
 * screen opens with a model they were not taken for, and not again over the person's edits. */
let defaultsTakenFor: string | null = null;
const model = modelChoice("create-model", (m) => {
  showGuidanceChoices(m?.guidance ?? null);
  showReferencePictures(m?.referencePictures ?? null);
  defaultsTakenFor = m?.name ?? null;
  if (m?.defaults) {
    applyDefaults(m.defaults);
    notify(`${m.family}: ${m.defaults.width} × ${m.defaults.height}, ${m.defaults.steps} steps, guidance ${m.defaults.guidance}, as its standard workload runs it.`);
  }
});

/** A field with its label. */
const labelled = (label: string, input: HTMLElement) => h("label", {}, label, input);
/** The guidance options' rows, each shown only for a model whose family takes it (all of them
 * when the family is not known). */
const guidanceRows = {
  scale: h("div", { class: "row" }, labelled("CFG truncation", form.cfgTruncation), labelled("CFG normalization", form.cfgNormalization)),
  trueCfg: h("div", { class: "row" }, labelled("True CFG scale (with the negative prompt)", form.trueCfgScale)),
  skipLayers: h("div", { class: "row" }, labelled("Skip-layer guidance blocks", form.skipLayers), labelled("Skip-layer scale", form.skipLayerScale)),
};

const referencesRow = h("div", { class: "row" }, labelled("Reference pictures", form.references), clearReferences);

/** Shows the reference pictures' row for a model whose family takes them (and one of unknown
 * family), and drops picked pictures for one that does not. */
export function showReferencePictures(takes: boolean | null): void {
  referencesRow.hidden = takes === false;
  referencesNote.hidden = takes === false;
  if (takes === false && references.length) setReferences([]);
}

/** Shows the rows of the guidance options `choices` allows, and empties the hidden ones so that a
 * request never carries an option its model refuses. */
export function showGuidanceChoices(choices: GuidanceChoices | null): void {
  const shown = {
    scale: choices?.truncationAndNormalization ?? true,
    trueCfg: choices?.trueCfg ?? true,
    skipLayers: choices?.skipLayerGuidance ?? true,
  };
  for (const key of ["scale", "trueCfg", "skipLayers"] as const) {
    guidanceRows[key].hidden = !shown[key];
  }
  if (!shown.scale) form.cfgTruncation.value = form.cfgNormalization.value = "";
  if (!shown.trueCfg) form.trueCfgScale.value = "";
  if (!shown.skipLayers) form.skipLayers.value = "";
}

function request(): CreateRequest {
  return {
    prompt: form.prompt.value,
    negativePrompt: form.negative.value,
    steps: form.steps.valueAsNumber,
    guidance: form.guidance.valueAsNumber,
    seed: form.randomSeed.checked ? randomSeed() : form.seed.valueAsNumber,
    width: form.width.valueAsNumber,
    height: form.height.valueAsNumber,
    scheduler: form.scheduler.value || null,
    backend: form.backend.value || null,
    initImage: picture ? { name: picture.name, bytes: picture.bytes, strength: form.strength.valueAsNumber } : null,
    referenceImages: references.map((p) => ({ name: p.name, bytes: p.bytes })),
    cfgTruncation: optional(form.cfgTruncation),
    cfgNormalization: optional(form.cfgNormalization),
    trueCfgScale: optional(form.trueCfgScale),
    // A list that does not parse goes as [NaN], which `checkRequest` refuses before sending.
    skipLayers: skipLayerBlocks(form.skipLayers.value) ?? [Number.NaN],
    skipLayerScale: optional(form.skipLayerScale),
  };
}

/** Image-to-image makes an image of the picture's size: the size fields follow the picture. */
export function setPicture(p: Picture | null): void {
  picture = p;
  for (const input of [form.size, form.width, form.height]) input.disabled = p !== null;
  form.strength.disabled = p === null;
  clearPicture.hidden = p === null;
  if (p) {
    form.width.value = String(p.width);
    form.height.value = String(p.height);
    form.size.value = "custom";
    pictureNote.textContent = `${p.name}, ${p.width} × ${p.height}`;
  } else {
    form.picture.value = "";
    pictureNote.textContent = "none: text to image";
  }
}

/** Reference pictures: the image is conditioned on them (the shell refuses them for models that
 * do not take them, and checks their sizes and number). The size fields stay the person's. */
export function setReferences(ps: Picture[]): void {
  references = ps;
  clearReferences.hidden = ps.length === 0;
  if (ps.length === 0) form.references.value = "";
  referencesNote.textContent = ps.length ? ps.map((p) => `${p.name}, ${p.width} × ${p.height}`).join("; ") : "none";
}

/** A picked file as a `Picture`, or null (with the error shown) when it is not one. */
async function readPicture(file: File): Promise<Picture | null> {
  try {
    const bitmap = await createImageBitmap(file);
    const { width, height } = bitmap;
    bitmap.close();
    return { name: file.name, bytes: Array.from(new Uint8Array(await file.arrayBuffer())), width, height };
  } catch {
    showError({ kind: "badInput", message: `${file.name} is not a picture this app can read`, hint: "Pick a PNG or JPEG picture." });
    return null;
  }
}

async function pick(): Promise<void> {
  const file = form.picture.files?.[0];
  setPicture(file ? await readPicture(file) : null);
}

async function pickReferences(): Promise<void> {
  const read = await Promise.all(Array.from(form.references.files ?? []).map(readPicture));
  setReferences(read.every((p) => p !== null) ? (read as Picture[]) : []);
}

async function show(g: Generation, url: string): Promise<void> {
  const save = h("button", { id: "create-save" }, "Save PNG…");
  save.addEventListener("click", () => busy(save, async () => {
    const path = await pickSavePath(`sdbench-${g.seed ?? "image"}.png`, "PNG image", ["png"]);
    if (path) notify(`Saved ${await api.saveImage(g.id, path)}`);
  }));
  const rate = g.stages.unet_loop > 0 ? g.step_seconds.length / g.stages.unet_loop : null;
  fill(viewer,
    h("img", { src: url, alt: g.prompt, id: "create-image" }),
    h("dl", { class: "pairs inline", id: "create-timing" },
      h("dt", {}, "total"), h("dd", {}, `${fmt.fixed(g.seconds)} s`),
      h("dt", {}, "text encoder"), h("dd", {}, `${fmt.fixed(g.stages.text_encoder)} s`),
      h("dt", {}, "Denoising"), h("dd", {}, `${fmt.fixed(g.stages.unet_loop)} s (${fmt.fixed(rate)} it/s)`),
      h("dt", {}, "VAE"), h("dd", {}, `${fmt.fixed(g.stages.vae_decode)} s`),
      h("dt", {}, "seed"), h("dd", {}, String(g.seed)),
      ...(g.init_image ? [h("dt", {}, "from"), h("dd", {}, `${g.init_image.source} (strength ${g.init_image.strength})`)] : []),
      ...(g.reference_images?.length ? [h("dt", {}, "references"), h("dd", {}, g.reference_images.join(", "))] : []),
      ...guidanceOptions(g),
      h("dt", {}, "on"), h("dd", {}, `${g.device} (${g.backend}, ${g.precision})`)),
    save);
}

/** The generation's guidance options, where it had any. */
function guidanceOptions(g: Generation): HTMLElement[] {
  return fmt.guidanceOptions(g).flatMap(([label, value]) => [h("dt", {}, label), h("dd", {}, value)]);
}

async function generate(): Promise<void> {
  const r = request();
  const problem = checkRequest(r);
  if (problem) {
    showError({ kind: "badInput", message: problem, hint: "Correct the form and try again." });
    return;
  }
  await followGeneration("Starting…", (onEvent) => api.generate(r, onEvent));
}

/** Shows a generation's progress, then its image; `subscribe` starts or joins it. */
async function followGeneration(intro: string, subscribe: (onEvent: (e: JobEvent) => void) => JobHandle<CreateOutput>): Promise<void> {
  generateButton.disabled = true;
  cancelButton.hidden = false;
  cancelButton.disabled = false;
  const tracker = new ProgressTracker();
  status.textContent = intro;
  const handle = subscribe((e) => {
    const v = tracker.update(e);
    status.textContent = v.steps > 0 ? `Step ${v.step} / ${v.steps} · ${fmt.fixed(v.itPerSecond)} it/s` : v.phase;
  });
  const onCancel = () => {
    cancelButton.disabled = true;
    handle.cancel().catch(showError);
  };
  cancelButton.addEventListener("click", onCancel);
  try {
    const out = await handle.done;
    const g = out.generation;
    lastSeed = g.seed;
    reuseButton.disabled = lastSeed === null;
    status.textContent = `Done in ${fmt.fixed(g.seconds)} s.`;
    if (out.historyWarning) notify(`Not added to the history: ${out.historyWarning}`);
    if (g.image_path) {
      const url = await imageUrl(g.image_path);
      await show(g, url);
      const thumb = h("button", { class: "thumb", title: g.prompt, "aria-label": `Show: ${g.prompt}` }, h("img", { src: url, alt: "" }));
      thumb.addEventListener("click", () => show(g, url));
      strip.prepend(thumb);
    }
  } catch (e) {
    status.textContent = "";
    showError(e);
  } finally {
    cancelButton.removeEventListener("click", onCancel);
    cancelButton.hidden = true;
    generateButton.disabled = false;
  }
}

async function loadOptions(): Promise<void> {
  if (optionsLoaded) return;
  try {
    for (const name of await api.schedulers()) form.scheduler.append(h("option", { value: name }, name));
    const system = await api.systemInfo();
    for (const b of system.backends.filter((b) => b.usable)) form.backend.append(h("option", { value: b.backend }, b.backend));
    optionsLoaded = true;
  } catch (e) {
    showError(e);
  }
}

export const createScreen: Screen = {
  id: "create",
  title: "Create",
  reattach(running: JobStatus) {
    if (running.kind !== "generation") return;
    followGeneration("Joined the generation that was running when the window reloaded.",
      (onEvent) => attachJob<CreateOutput>(running.id, onEvent).job);
  },
  mount(root) {
    boundFields(form);
    for (const [label, w, hgt] of SIZE_PRESETS) form.size.append(h("option", { value: `${w}x${hgt}` }, label));
    form.size.append(h("option", { value: "custom" }, "custom"));
    form.size.addEventListener("change", () => {
      const [w, hgt] = form.size.value.split("x").map(Number);
      if (w && hgt) {
        form.width.value = String(w);
        form.height.value = String(hgt);
      }
    });
    const custom = () => (form.size.value = "custom");
    form.width.addEventListener("input", custom);
    form.height.addEventListener("input", custom);
    form.randomSeed.addEventListener("change", () => (form.seed.disabled = form.randomSeed.checked));
    form.seed.disabled = true;
    reuseButton.addEventListener("click", () => {
      if (lastSeed === null) return;
      form.randomSeed.checked = false;
      form.seed.disabled = false;
      form.seed.value = String(lastSeed);
    });
    generateButton.addEventListener("click", generate);
    form.picture.addEventListener("change", () => { pick(); });
    clearPicture.addEventListener("click", () => setPicture(null));
    form.references.addEventListener("change", () => { pickReferences(); });
    clearReferences.addEventListener("click", () => setReferences([]));
    form.strength.disabled = true;
    form.prompt.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) generate();
    });
    const field = labelled;
    root.append(h("div", { class: "create" },
      h("div", { class: "card form" },
        h("h2", {}, "Create"),
        model.element,
        field("Prompt", form.prompt),
        field("Negative prompt", form.negative),
        h("div", { class: "row" }, field("Steps", form.steps), field("Guidance", form.guidance)),
        h("div", { class: "row" }, field("Size", form.size), field("Width", form.width), field("Height", form.height)),
        h("div", { class: "row" }, field("Seed", form.seed), h("label", { class: "check" }, form.randomSeed, "random"), reuseButton),
        h("div", { class: "row" }, field("Scheduler", form.scheduler), field("Backend", form.backend)),
        h("div", { class: "row" }, field("Start from a picture", form.picture), field("Strength", form.strength), clearPicture),
        pictureNote,
        referencesRow,
        referencesNote,
        guidanceRows.scale,
        guidanceRows.trueCfg,
        guidanceRows.skipLayers,
        h("div", { class: "row" }, generateButton, cancelButton, h("span", { class: "muted" }, "Ctrl+Enter")),
        status),
      h("div", { class: "card" }, viewer, strip)));
  },
  show() {
    loadOptions();
    model.refresh().then(() => {
      const m = model.chosen();
      showGuidanceChoices(m?.guidance ?? null);
      showReferencePictures(m?.referencePictures ?? null);
      if (m?.defaults && m.name !== defaultsTakenFor) applyDefaults(m.defaults);
      defaultsTakenFor = m?.name ?? defaultsTakenFor;
    });
  },
};
