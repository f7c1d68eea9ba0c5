// The app's frame: a tab bar for the four screens and the message area.

import "./styles.css";
import { h } from "./dom";
import { api } from "./api";
import type { JobStatus } from "./types";
import { notify, setMessageArea, showError } from "./ui";
import { setLimits } from "./validate";
import { benchmarkScreen } from "./screens/benchmark";
import { createScreen } from "./screens/create";
import { historyScreen } from "./screens/history";
import { systemScreen } from "./screens/system";
import { setWorkloads } from "./screens/benchmark";

export interface Screen {
  id: string;
  title: string;
  /** Builds the screen into `root` once. */
  mount(root: HTMLElement): void;
  /** Called each time the screen is shown (refresh lists…). */
  show?(): void;
  /** Follows a job of the screen's kind that was running when the window (re)loaded. */
  reattach?(job: JobStatus): void;
}

const screens: Screen[] = [benchmarkScreen, createScreen, historyScreen, systemScreen];

async function start(): Promise<void> {
  const app = document.getElementById("app");
  if (!app) return;
  const tabs = h("nav", { class: "tabs", role: "tablist", "aria-label": "Screens" });
  const main = h("main", {});
  const messageArea = h("div", { class: "messages", "aria-live": "polite" });
  setMessageArea(messageArea);
  app.append(h("header", {}, h("h1", {}, "SD Bench"), tabs), messageArea, main);
  // The forms check against the app's own limits, so they are needed before any screen is built
  // (a failure shows in the message area just set up).
  setLimits(await api.requestLimits());
  setWorkloads(await api.workloads());

  const panels = new Map<string, HTMLElement>();
  const buttons: HTMLButtonElement[] = [];
  const select = (screen: Screen, focus = false) => {
    for (const b of buttons) {
      const on = b.dataset.screen === screen.id;
      b.setAttribute("aria-selected", String(on));
      b.tabIndex = on ? 0 : -1;
      if (on && focus) b.focus();
    }
    for (const [id, panel] of panels) panel.hidden = id !== screen.id;
    screen.show?.();
  };
  screens.forEach((screen, i) => {
    const button = h("button", {
      role: "tab", id: `tab-${screen.id}`, "data-screen": screen.id,
      "aria-controls": `panel-${screen.id}`, title: `${screen.title} (Alt+${i + 1})`,
    }, screen.title);
    button.addEventListener("click", () => select(screen));
    buttons.push(button);
    tabs.append(button);
    const panel = h("section", { role: "tabpanel", id: `panel-${screen.id}`, "aria-labelledby": `tab-${screen.id}`, hidden: true });
    screen.mount(panel);
    panels.set(screen.id, panel);
    main.append(panel);
  });
  // Arrow keys move between tabs; Alt+1…4 jump to a screen.
  tabs.addEventListener("keydown", (e) => {
    const at = buttons.findIndex((b) => b === document.activeElement);
    if (at < 0 || (e.key !== "ArrowRight" && e.key !== "ArrowLeft")) return;
    const next = (at + (e.key === "ArrowRight" ? 1 : screens.length - 1)) % screens.length;
    select(screens[next], true);
    e.preventDefault();
  });
  window.addEventListener("keydown", (e) => {
    const n = Number(e.key);
    if (e.altKey && n >= 1 && n <= screens.length) {
      select(screens[n - 1], true);
      e.preventDefault();
    }
  });
  select(screens[0]);
  // A reloaded window follows the job it had started (its progress, then its result).
  api.runningJob().then((job) => {
    if (!job) return;
    const screen = job.kind === "generation" ? createScreen : benchmarkScreen;
    select(screen);
    screen.reattach?.(job);
  }).catch(showError);
  api.startupNotes().then((notes) => notes.forEach(notify)).catch(showError);
}

start().catch(showError);
