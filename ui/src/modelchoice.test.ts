import { describe, expect, it } from "vitest";
import { withFiles } from "./modelchoice";

describe("withFiles", () => {
  it("lists a model file's parts found beside it, none as nothing", () => {
    expect(withFiles([])).toBe("");
    expect(withFiles(["ae.safetensors"])).toBe(" · with ae.safetensors");
    expect(withFiles(["clip_l.safetensors", "clip_g.safetensors", "t5xxl_fp16.safetensors"]))
      .toBe(" · with clip_l.safetensors, clip_g.safetensors and t5xxl_fp16.safetensors");
  });
});
