import { afterEach, describe, expect, it } from "vitest";
import { TEST_LIMITS } from "./test-support";
import { boundFields, checkWhole, setLimits } from "./validate";

describe("form checks", () => {
  afterEach(() => setLimits(TEST_LIMITS));

  it("refuse only what cannot be sent: an emptied or fractional field", () => {
    expect(checkWhole("Height", Number.NaN)).toBe("Height must be a whole number.");
    expect(checkWhole("Height", 256.5)).toBe("Height must be a whole number.");
    // Range and multiple are the shell's rules, with the shell's message.
    expect(checkWhole("Width", 500)).toBeNull();
    expect(checkWhole("Steps", 0)).toBeNull();
  });

  it("bound the fields by the app's limits", () => {
    setLimits({ ...TEST_LIMITS, maxSide: 1024, sideMultiple: 64, maxSteps: 50 });
    const field = () => document.createElement("input");
    const fields = { steps: field(), width: field(), height: field() };
    boundFields(fields);
    expect([fields.steps.max, fields.width.max, fields.width.step, fields.height.min]).toEqual(["50", "1024", "64", "64"]);
  });
});
