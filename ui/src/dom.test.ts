import { describe, expect, it } from "vitest";
import { fill, h } from "./dom";

describe("fill", () => {
  it("keeps the focus on an element that is drawn again", () => {
    const region = h("div", {});
    document.body.replaceChildren(region);
    const cancel = h("button", { id: "cancel" }, "Cancel");
    fill(region, h("p", {}, "step 1"), cancel);
    cancel.focus();
    fill(region, h("p", {}, "step 2"), cancel);
    expect(document.activeElement).toBe(cancel);
    expect(region.textContent).toBe("step 2Cancel");
    // An element that is not drawn again loses it, as before.
    fill(region, h("p", {}, "done"));
    expect(document.activeElement).not.toBe(cancel);
  });
});
