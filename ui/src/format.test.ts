import { describe, expect, it } from "vitest";
import { guidanceOptions, osLabel } from "./format";

describe("osLabel", () => {
  it("names the system once, as the Rust side does", () => {
    expect(osLabel("Debian GNU/Linux", "Linux (Debian GNU/Linux 12)")).toBe("Debian GNU/Linux 12");
    expect(osLabel("Windows", "Windows 11 Pro")).toBe("Windows 11 Pro");
    expect(osLabel("Darwin", "macOS 15.1 Sequoia")).toBe("macOS 15.1 Sequoia");
    expect(osLabel("Debian GNU/Linux", "12")).toBe("Debian GNU/Linux 12");
    expect(osLabel("Linux", "")).toBe("Linux");
  });
});

describe("guidanceOptions", () => {
  it("lists the options a generation had, and nothing for one without", () => {
    expect(guidanceOptions({})).toEqual([]);
    expect(guidanceOptions({ cfg_truncation: 0.3, true_cfg_scale: 4, skip_layer_guidance: { layers: [7, 8, 9], scale: 2.8, start: 0.01, stop: 0.2 } })).toEqual([
      ["CFG truncation", "0.3"],
      ["true CFG scale", "4"],
      ["skip-layer guidance", "blocks 7,8,9, scale 2.8, from 0.01 to 0.2 of the steps"],
    ]);
  });
});
