import { describe, expect, it } from "vitest";
import { osLabel } from "./format";

describe("osLabel", () => {
  it("names the system once, as the Rust side does", () => {
    expect(osLabel("Debian GNU/Linux", "Linux (Debian GNU/Linux 12)")).toBe("Debian GNU/Linux 12");
    expect(osLabel("Windows", "Windows 11 Pro")).toBe("Windows 11 Pro");
    expect(osLabel("Darwin", "macOS 15.1 Sequoia")).toBe("macOS 15.1 Sequoia");
    expect(osLabel("Debian GNU/Linux", "12")).toBe("Debian GNU/Linux 12");
    expect(osLabel("Linux", "")).toBe("Linux");
  });
});
