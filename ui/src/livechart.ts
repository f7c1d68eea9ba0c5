// The live power and VRAM chart during a run: two lines over time, drawn as SVG. Small on purpose;
// the charts of finished runs come from the shell (plotters), as in the exported reports.

import type { LiveSample } from "./types";

const NS = "http://www.w3.org/2000/svg";
const WIDTH = 560;
const HEIGHT = 160;
const PAD = 34;

export interface Series { label: string; unit: string; points: [number, number][] }

/** Power (W) and VRAM (GiB) of the first source that reports each. */
export function series(samples: LiveSample[]): Series[] {
  const power = samples.filter((s) => s.powerW !== null);
  const vram = samples.filter((s) => s.vramUsedBytes !== null);
  const out: Series[] = [];
  if (power.length > 0) {
    const source = power[0].source;
    out.push({ label: "power", unit: "W", points: power.filter((s) => s.source === source).map((s) => [s.t, s.powerW as number]) });
  }
  if (vram.length > 0) {
    const source = vram[0].source;
    out.push({ label: "VRAM", unit: "GiB", points: vram.filter((s) => s.source === source).map((s) => [s.t, (s.vramUsedBytes as number) / 2 ** 30]) });
  }
  return out;
}

function el(tag: string, attrs: Record<string, string | number>): SVGElement {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** Draws `samples` into a fresh SVG; each series is scaled to its own range (labelled on the axis). */
export function drawLiveChart(samples: LiveSample[]): SVGSVGElement {
  const root = el("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "live-chart", role: "img" }) as SVGSVGElement;
  const all = series(samples);
  const title = el("title", {});
  title.textContent = all.length === 0 ? "No power or memory readings" : all.map((s) => s.label).join(" and ") + " over time";
  root.append(title);
  root.append(el("rect", { x: PAD, y: 8, width: WIDTH - 2 * PAD, height: HEIGHT - 30, class: "frame" }));
  if (all.length === 0) {
    const t = el("text", { x: WIDTH / 2, y: HEIGHT / 2, "text-anchor": "middle", class: "muted" });
    t.textContent = "No power or memory readings on this machine";
    root.append(t);
    return root;
  }
  const times = all.flatMap((s) => s.points.map((p) => p[0]));
  const t0 = Math.min(...times);
  const t1 = Math.max(...times, t0 + 1);
  all.forEach((s, i) => {
    const values = s.points.map((p) => p[1]);
    const top = Math.max(...values) * 1.1 || 1;
    const x = (t: number) => PAD + ((t - t0) / (t1 - t0)) * (WIDTH - 2 * PAD);
    const y = (v: number) => HEIGHT - 22 - (v / top) * (HEIGHT - 30);
    const d = s.points.map((p, j) => `${j === 0 ? "M" : "L"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    root.append(el("path", { d, class: `line line-${i}` }));
    const last = values[values.length - 1];
    const label = el("text", { x: i === 0 ? 4 : WIDTH - 4, y: 20, "text-anchor": i === 0 ? "start" : "end", class: `legend line-${i}` });
    label.textContent = `${s.label} ${last.toFixed(s.unit === "W" ? 0 : 2)} ${s.unit}`;
    root.append(label);
  });
  const axis = el("text", { x: WIDTH / 2, y: HEIGHT - 4, "text-anchor": "middle", class: "muted" });
  axis.textContent = `${(t1 - t0).toFixed(0)} s`;
  root.append(axis);
  return root;
}
