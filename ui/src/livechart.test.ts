import { describe, expect, it } from "vitest";
import { drawLiveChart, series } from "./livechart";

const sample = (t: number, powerW: number | null, vram: number | null, source = "nvml:0") => ({
  source, t, powerW, vramUsedBytes: vram, vramTotalBytes: null,
});

describe("live chart", () => {
  it("draws one line per measured quantity with its latest value", () => {
    const samples = [sample(0, 100, 2 ** 31), sample(1, 200, 2 ** 32), sample(1, 30, null, "rapl:package")];
    const s = series(samples);
    expect(s.map((x) => x.label)).toEqual(["power", "VRAM"]);
    expect(s[0].points).toEqual([[0, 100], [1, 200]]); // the first source only
    expect(s[1].points[1][1]).toBe(4);
    const svg = drawLiveChart(samples);
    expect(svg.querySelectorAll("path")).toHaveLength(2);
    expect(svg.textContent).toContain("power 200 W");
    expect(svg.textContent).toContain("VRAM 4.00 GiB");
  });

  it("says so when nothing is measured", () => {
    const svg = drawLiveChart([sample(0, null, null)]);
    expect(svg.querySelectorAll("path")).toHaveLength(0);
    expect(svg.textContent).toContain("No power or memory readings");
  });
});
