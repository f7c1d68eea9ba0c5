import { describe, expect, it } from "vitest";
import { api, asUiError, runJob } from "./api";
import { mockShell, settle, stream } from "./test-support";
import type { JobEvent } from "./types";

describe("runJob", () => {
  it("passes progress on and resolves with the output", async () => {
    const calls = mockShell({
      start_generation: (args) => {
        stream(args, [
          { event: "step", index: 1, total: 1, step: 1, steps: 2, seconds: 0.1, warmup: false },
          { event: "finished", output: { generation: { id: "g1" } } },
        ]);
        return 7;
      },
    });
    const seen: JobEvent[] = [];
    const job = runJob<{ generation: { id: string } }>("start_generation", { request: { prompt: "x" } }, (e) => seen.push(e));
    expect(await job.id).toBe(7);
    expect((await job.done).generation.id).toBe("g1");
    expect(seen.map((e) => e.event)).toEqual(["step"]);
    expect(calls[0].args.request).toEqual({ prompt: "x" });
  });

  it("rejects with the shell's error, or cancelled, and cancels by id", async () => {
    const calls = mockShell({
      start_download: (args) => {
        stream(args, [{ event: "failed", error: { kind: "network", message: "cannot reach", hint: "check" } }]);
        return 3;
      },
      start_benchmark: (args) => {
        setTimeout(() => stream(args, [{ event: "cancelled" }]), 10);
        return 4;
      },
      cancel_job: () => true,
    });
    await expect(api.download(() => {}, "sd15-512-30").done).rejects.toMatchObject({ kind: "network", hint: "check" });
    const bench = api.benchmark({ workload: "sd15-512-30" }, () => {});
    await bench.cancel();
    await expect(bench.done).rejects.toMatchObject({ kind: "cancelled" });
    expect(calls.find((c) => c.cmd === "cancel_job")?.args).toEqual({ id: 4 });
  });

  it("rejects when the command itself is refused", async () => {
    mockShell({
      start_benchmark: () => {
        throw { kind: "busy", message: "A download is running", hint: "Wait" };
      },
    });
    await expect(api.benchmark({ workload: "sd15-512-30" }, () => {}).done).rejects.toMatchObject({ kind: "busy" });
    await settle();
  });

  it("turns anything thrown into a readable error", () => {
    expect(asUiError(new Error("boom"))).toMatchObject({ kind: "internal", message: "Error: boom" });
  });
});
