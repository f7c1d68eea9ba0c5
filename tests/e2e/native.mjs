// What WebDriver cannot reach: native windows (answered through xdotool on the X display) and the
// loopback Hub / submission server (crates/test-server's binary).

import { execFile, spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** Runs xdotool with `args`; resolves with its output. */
export function xdotool(args, timeoutMs = 60000) {
  return new Promise((resolve, reject) => {
    execFile("xdotool", args, { timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) reject(new Error(`xdotool ${args.join(" ")} failed: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
}

/** Waits for a visible window titled exactly `title`, gives it the keyboard, and returns its id. */
export async function focusWindow(title, timeoutMs = 60000) {
  const found = await xdotool(["search", "--sync", "--onlyvisible", "--name", `^${title}$`], timeoutMs);
  const id = found.trim().split("\n")[0];
  await xdotool(["windowfocus", "--sync", id]);
  return id;
}

/** Answers the native "Save File" dialog: types `path` as the file name and presses Return. */
export async function answerSaveDialog(path) {
  await focusWindow("Save File");
  await xdotool(["key", "--clearmodifiers", "ctrl+a"]);
  await xdotool(["type", "--delay", "10", path]);
  await xdotool(["key", "Return"]);
}

/** Starts the loopback server serving `folder` as Hub repository `repo` and taking submissions.
 * Resolves once it listens, with its URL and the bodies posted to it so far (a live array). */
export function startTestServer(binary, repo, folder) {
  const child = spawn(binary, [repo, folder], { stdio: ["pipe", "pipe", "inherit"] });
  const posted = [];
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`the test server stopped (exit ${code})`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.startsWith("url ")) resolve({ url: line.slice(4), posted, stop: () => child.stdin.end() });
      else if (line.startsWith("posted ")) posted.push(line.slice(7));
    });
  });
}

/** Resolves when `predicate()` holds; rejects after `timeoutMs`. */
export async function until(predicate, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
