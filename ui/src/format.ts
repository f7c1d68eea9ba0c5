import type { Generation } from "./types";

// Numbers as people read them.

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

/** 75 → "1:15", 3725 → "1:02:05". */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return "—";
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${rest}` : `${m}:${rest}`;
}

export function fixed(n: number | null | undefined, digits = 2): string {
  return n === null || n === undefined || !Number.isFinite(n) ? "—" : n.toFixed(digits);
}

/** "2026-11-22T09:15:03Z" → local "2026-11-22 10:15". */
export function when(rfc3339: string): string {
  const d = new Date(rfc3339);
  if (Number.isNaN(d.getTime())) return rfc3339;
  const pad = (x: number) => String(x).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** "1 run", "3 runs". */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** The operating system named once, as `SystemInfo::os_label` names it in Rust (sdbench-telemetry):
 * "Debian GNU/Linux" with "Linux (Debian GNU/Linux 12)" → "Debian GNU/Linux 12". */
export function osLabel(name: string, version: string): string {
  const inner = /\(([^()]*)\)$/.exec(version)?.[1];
  if (inner !== undefined && name !== "" && inner.includes(name)) return inner;
  if (/^\p{L}/u.test(version)) return version;
  return `${name} ${version}`.trim();
}

/** A generation's guidance options, where it had any, as label and value: the Create screen's
 * details and the history's show the same lines. */
export function guidanceOptions(
  g: Pick<Generation, "cfg_truncation" | "cfg_normalization" | "true_cfg_scale" | "skip_layer_guidance">,
): [string, string][] {
  const lines: [string, string][] = [];
  if (g.cfg_truncation != null) lines.push(["CFG truncation", String(g.cfg_truncation)]);
  if (g.cfg_normalization != null) lines.push(["CFG normalization", String(g.cfg_normalization)]);
  if (g.true_cfg_scale != null) lines.push(["true CFG scale", String(g.true_cfg_scale)]);
  const skip = g.skip_layer_guidance;
  if (skip) lines.push(["skip-layer guidance", `blocks ${skip.layers.join(",")}, scale ${skip.scale}, from ${skip.start} to ${skip.stop} of the steps`]);
  return lines;
}
