// Form checks shared by the screens: each returns the problem as a sentence, or null.

/** A whole number from `min` to `max` (an emptied number field reads as NaN). */
export function checkWhole(name: string, value: number, min: number, max: number): string | null {
  return Number.isInteger(value) && value >= min && value <= max ? null : `${name} must be a whole number from ${min} to ${max}.`;
}

/** An image side: a multiple of 8 from 8 to 2048. */
export function checkSide(name: string, value: number): string | null {
  return Number.isInteger(value) && value >= 8 && value <= 2048 && value % 8 === 0 ? null : `${name} must be a multiple of 8 from 8 to 2048.`;
}
