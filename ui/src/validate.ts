// Form helpers shared by the screens: the browser's bounds on number fields from the app's limits
// (`request_limits`), and the one check made before sending (a field that holds no whole number).
// Every rule on the values is checked by the shell, whose message is shown as it comes.

import type { RequestLimits } from "./types";

let loaded: RequestLimits | null = null;

/** Keeps the limits the app reported: main.ts sets them before any screen is built. */
export function setLimits(limits: RequestLimits): void {
  loaded = limits;
}

/** The app's request limits. */
export function limits(): RequestLimits {
  if (!loaded) throw new Error("the request limits were not loaded from the app");
  return loaded;
}

/** Reads a number field: the problem when it is empty or not a whole number, else null. What
 * the number may be (a side's multiple, the step bounds…) is the engine's rule, and its message
 * comes back from the shell unchanged; this only catches what cannot be sent at all. */
export function checkWhole(name: string, value: number): string | null {
  return Number.isInteger(value) ? null : `${name} must be a whole number.`;
}

/** Sets the browser's own bounds on number fields: steps, image sides, and (optionally) an image count. */
export function boundFields(fields: { steps: HTMLInputElement; width: HTMLInputElement; height: HTMLInputElement; images?: HTMLInputElement }): void {
  const l = limits();
  fields.steps.max = String(l.maxSteps);
  for (const side of [fields.width, fields.height]) {
    side.min = side.step = String(l.sideMultiple);
    side.max = String(l.maxSide);
  }
  if (fields.images) fields.images.max = String(l.maxImages);
}
