// Form checks shared by the screens: each returns the problem as a sentence, or null. The bounds
// come from the app (`request_limits`, the engine's own limits), never from numbers of our own.

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

/** A whole number from `min` to `max` (an emptied number field reads as NaN). */
export function checkWhole(name: string, value: number, min: number, max: number): string | null {
  return Number.isInteger(value) && value >= min && value <= max ? null : `${name} must be a whole number from ${min} to ${max}.`;
}

/** An image side: a multiple of the side step up to the largest side. */
export function checkSide(name: string, value: number): string | null {
  const { maxSide, sideMultiple: step } = limits();
  return Number.isInteger(value) && value >= step && value <= maxSide && value % step === 0 ? null : `${name} must be a multiple of ${step} from ${step} to ${maxSide}.`;
}

/** A step count. */
export function checkSteps(value: number): string | null {
  return checkWhole("Steps", value, 1, limits().maxSteps);
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
