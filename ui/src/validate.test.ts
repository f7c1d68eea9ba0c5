import { afterEach, describe, expect, it } from "vitest";
import { TEST_LIMITS } from "./test-support";
import { checkSide, checkSteps, setLimits } from "./validate";

describe("form checks", () => {
  afterEach(() => setLimits(TEST_LIMITS));

  it("take their bounds from the app's limits", () => {
    expect(checkSide("Width", 2048)).toBeNull();
    expect(checkSteps(1000)).toBeNull();
    setLimits({ ...TEST_LIMITS, maxSide: 1024, sideMultiple: 64, maxSteps: 50 });
    expect(checkSide("Width", 2048)).toBe("Width must be a multiple of 64 from 64 to 1024.");
    expect(checkSide("Width", 520)).toBe("Width must be a multiple of 64 from 64 to 1024.");
    expect(checkSide("Width", 512)).toBeNull();
    expect(checkSteps(51)).toBe("Steps must be a whole number from 1 to 50.");
  });

  it("refuse emptied and fractional fields", () => {
    expect(checkSide("Height", Number.NaN)).toContain("multiple of 8");
    expect(checkSide("Height", 256.5)).toContain("multiple of 8");
    expect(checkSteps(Number.NaN)).toContain("whole number");
  });
});
