// Shared pieces of the screens: the message area, confirmations, and save dialogs.

import { save } from "@tauri-apps/plugin-dialog";
import { asUiError } from "./api";
import { fill, h } from "./dom";

let messages: HTMLElement | null = null;

/** The live region messages appear in (created by main.ts). */
export function setMessageArea(el: HTMLElement): void {
  messages = el;
}

/** Shows an error with its next step; a cancelled job is not an error. */
export function showError(e: unknown): void {
  const error = asUiError(e);
  if (error.kind === "cancelled") {
    notify("Cancelled: nothing was saved.");
    return;
  }
  show("error", error.message, error.hint);
}

export function notify(text: string): void {
  show("info", text, "");
}

function show(kind: "error" | "info", text: string, hint: string): void {
  if (!messages) return;
  const close = h("button", { class: "link", "aria-label": "Dismiss" }, "×");
  const item = h("div", { class: `message ${kind}`, role: kind === "error" ? "alert" : "status" },
    h("div", {}, h("strong", {}, text), hint ? h("div", { class: "hint" }, hint) : null),
    close);
  close.addEventListener("click", () => item.remove());
  messages.prepend(item);
  while (messages.children.length > 4) messages.lastElementChild?.remove();
  if (kind === "info") setTimeout(() => item.remove(), 8000);
}

/** A modal question; resolves true when confirmed. `body` may be text or an element. */
export function confirmDialog(title: string, body: string | Node, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const ok = h("button", { class: "primary", value: "ok", id: "dialog-confirm" }, confirmLabel);
    const cancel = h("button", { value: "cancel", id: "dialog-cancel" }, "Cancel");
    const dialog = h("dialog", { class: "confirm", "aria-labelledby": "dialog-title" },
      h("h2", { id: "dialog-title" }, title),
      h("div", { class: "dialog-body" }, body),
      h("div", { class: "actions" }, cancel, ok));
    const finish = (answer: boolean) => {
      if (typeof dialog.close === "function") dialog.close();
      dialog.remove();
      resolve(answer);
    };
    ok.addEventListener("click", () => finish(true));
    cancel.addEventListener("click", () => finish(false));
    dialog.addEventListener("cancel", (e) => {
      e.preventDefault();
      finish(false);
    });
    document.body.append(dialog);
    if (typeof dialog.showModal === "function") dialog.showModal();
    else dialog.setAttribute("open", "");
    cancel.focus();
  });
}

/** Asks where to save; null when the person cancels. */
export async function pickSavePath(defaultPath: string, name: string, extensions: string[]): Promise<string | null> {
  const path = await save({ defaultPath, filters: [{ name, extensions }] });
  return path ?? null;
}

/** Disables `button` while `work` runs; errors are shown. */
export async function busy<T>(button: HTMLButtonElement, work: () => Promise<T>): Promise<T | undefined> {
  button.disabled = true;
  try {
    return await work();
  } catch (e) {
    showError(e);
    return undefined;
  } finally {
    button.disabled = false;
  }
}

/** A <dl> of label/value pairs. */
export function definitionList(pairs: [string, string | Node][], id?: string): HTMLDListElement {
  const dl = h("dl", { class: "pairs", id });
  for (const [k, v] of pairs) dl.append(h("dt", {}, k), h("dd", {}, v));
  return dl;
}

export { fill };
