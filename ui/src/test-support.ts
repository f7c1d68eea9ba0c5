// Test helpers: a mocked shell (IPC) whose commands the tests define, with channel messages
// delivered the way Tauri delivers them.

import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import type { JobEvent, RequestLimits } from "./types";
import { setLimits } from "./validate";

/** The limits the screens' tests run under (the app reports its own through `request_limits`). */
export const TEST_LIMITS: RequestLimits = { maxSide: 2048, sideMultiple: 8, maxSteps: 1000, maxBatch: 64, maxImages: 1000 };
setLimits(TEST_LIMITS);

export type Handler = (args: Record<string, unknown>) => unknown;

interface ChannelLike { id: number }

const nextIndex = new Map<number, number>();

/** Sends `events` to the channel passed as `onEvent`, in order, after the command returns
 * (numbered on from the channel's earlier messages, as Tauri numbers them). */
export function stream(args: Record<string, unknown>, events: JobEvent[]): void {
  const channel = args.onEvent as ChannelLike;
  const internals = (window as unknown as { __TAURI_INTERNALS__: { runCallback(id: number, data: unknown): void } }).__TAURI_INTERNALS__;
  setTimeout(() => {
    for (const message of events) {
      const index = nextIndex.get(channel.id) ?? 0;
      nextIndex.set(channel.id, index + 1);
      internals.runCallback(channel.id, { message, index });
    }
  }, 0);
}

/** Mocks the shell with `handlers`; an unknown command fails like the real shell's error. Returns the calls seen. */
export function mockShell(handlers: Record<string, Handler>): { cmd: string; args: Record<string, unknown> }[] {
  const calls: { cmd: string; args: Record<string, unknown> }[] = [];
  clearMocks();
  mockIPC((cmd, args) => {
    const a = (args ?? {}) as Record<string, unknown>;
    calls.push({ cmd, args: a });
    const handler = handlers[cmd];
    if (!handler) throw { kind: "internal", message: `unmocked command ${cmd}`, hint: "" };
    return handler(a);
  });
  return calls;
}

/** Lets pending promises and timers run. */
export async function settle(ms = 20): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}
