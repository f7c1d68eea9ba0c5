// End-to-end test of the desktop app: the real binary in a real window (run under Xvfb), driven
// through tauri-driver and WebKitWebDriver, with native windows answered through xdotool. It
// checks that a failed start is reported in a message box, downloads the tiny model from a
// loopback Hub, runs a quick benchmark, saves and submits its result, finds the run in History,
// generates an image, and cleans the cache, keeping a screenshot of each screen.
//
// Usage: node tests/e2e/run.mjs APP_BINARY TEST_SERVER_BINARY SCREENSHOT_DIR   (see scripts/e2e)

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Session } from "./webdriver.mjs";
import { decodePng, drawnShare } from "./png.mjs";
import { answerSaveDialog, focusWindow, startTestServer, until, xdotool } from "./native.mjs";

const [app, serverBinary, shotsArg] = process.argv.slice(2);
if (!app || !serverBinary || !shotsArg) {
  console.error("usage: node tests/e2e/run.mjs APP_BINARY TEST_SERVER_BINARY SCREENSHOT_DIR");
  process.exit(2);
}
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const shots = resolve(shotsArg);
mkdirSync(shots, { recursive: true });
// Ports of our own, so a leftover driver elsewhere cannot answer for this run.
const PORT = 20000 + Math.floor(Math.random() * 20000);
const NATIVE_PORT = PORT + 1;
const MODEL = "test-org/tiny-sd";

// The tiny model is served by a loopback Hub, which also takes submissions.
const server = await startTestServer(resolve(serverBinary), MODEL, join(root, "crates/diffusion/tests/fixtures/tiny-sd"));
process.on("exit", () => server.stop());

// A fresh data folder and an empty model cache.
const work = mkdtempSync(join(tmpdir(), "sdbench-e2e-"));
const data = join(work, "data");
mkdirSync(data, { recursive: true });
writeFileSync(join(data, "settings.json"), JSON.stringify({
  model: MODEL, backend: "auto", precision: "f32", submitEndpoint: `${server.url}/api/results`,
}));

const env = {
  ...process.env,
  SDBENCH_DATA_DIR: data,
  HF_HUB_CACHE: join(work, "hub"),
  HF_ENDPOINT: server.url,
  // GTK's file chooser keeps its settings in memory (no dconf service in a test display).
  GSETTINGS_BACKEND: "memory",
};
delete env.HF_HUB_OFFLINE;
const driver = spawn("tauri-driver", ["--port", String(PORT), "--native-port", String(NATIVE_PORT)], { env, stdio: ["ignore", "inherit", "inherit"] });
const stopDriver = () => driver.kill("SIGTERM");
process.on("exit", stopDriver);

/** Waits until tauri-driver accepts connections, then gives WebKitWebDriver behind it a moment.
 * Neither is sent a request early: WebKitWebDriver wedges on a connection it did not expect, and
 * then never answers the session request. */
async function waitForDriver() {
  const open = (port) => new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => { socket.destroy(); resolve(true); });
    socket.on("error", () => resolve(false));
  });
  for (let i = 0; i < 200; i++) {
    if (await open(PORT)) {
      await new Promise((r) => setTimeout(r, 1500));
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("tauri-driver did not start");
}

const steps = [];
async function step(name, body) {
  const started = Date.now();
  await body();
  steps.push(`${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(`ok - ${name}`);
}

let session;
async function shot(name) {
  if (name !== "failure") {
    // A screen as a person opens it: at its top, without the earlier steps' passing notices
    // (a failure keeps both, for what went wrong).
    await session.execute(
      "document.querySelectorAll('.messages .message.info button').forEach((b) => b.click());" +
        "for (const e of [document.scrollingElement, ...document.querySelectorAll('*')]) if (e && e.scrollTop) e.scrollTop = 0;" +
        "return true",
    );
  }
  // WebKit screenshots the last painted frame: let the latest DOM change be painted first.
  await session.execute("return new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))");
  const png = await session.screenshot();
  writeFileSync(join(shots, `${name}.png`), png);
  // A screen that drew nothing (a blank or single-colour window) fails here, not in a reader's eyes:
  // every screen has text, fields and buttons on its background, well over 2% of its pixels.
  const share = drawnShare(decodePng(png));
  if (share < 0.02) throw new Error(`the ${name} screenshot is blank: ${(share * 100).toFixed(2)}% of its pixels drawn`);
}

/** A start that fails (its data folder cannot be made) is told in a message box, not only on a
 * terminal a double-clicked app does not have. */
async function startupFailureIsShown() {
  const blocker = join(work, "a-file");
  writeFileSync(blocker, "");
  const child = spawn(resolve(app), [], { env: { ...env, SDBENCH_DATA_DIR: join(blocker, "data") }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const exited = new Promise((r) => child.on("exit", (code) => r(code)));
  try {
    await focusWindow("SD Bench cannot start");
    await xdotool(["key", "Return"]);
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("still running"), 20000))]);
    if (code !== 1) throw new Error(`the app should exit with status 1 after the message, not ${code}`);
    if (!stderr.includes("a-file")) throw new Error(`the message should name the folder: ${stderr}`);
  } finally {
    child.kill("SIGKILL");
  }
}

try {
  await step("a failed start is told in a message box", startupFailureIsShown);

  await waitForDriver();
  session = await Session.start(`http://127.0.0.1:${PORT}`, {
    browserName: "wry",
    "tauri:options": { application: resolve(app) },
  });

  await step("the Benchmark screen offers the model and downloads it", async () => {
    await session.waitFor("#model-card", { test: (t) => t.includes(MODEL) && t.includes("not downloaded"), what: "the download offer" });
    await shot("1-benchmark-download");
    await session.click("#download-model");
    await session.waitFor(".messages", { test: (t) => t.includes("The model is downloaded"), what: "the download's end" });
    await session.waitFor("#model-card", { test: (t) => t.includes(MODEL) && !t.includes("not downloaded"), what: "the ready model" });
    await shot("1-benchmark");
  });

  await step("System: choose the CPU backend", async () => {
    await session.click("#tab-system");
    await session.waitFor("#system-backends", { test: (t) => t.includes("cpu"), timeoutMs: 60000 });
    await session.setValue("#settings-backend", "cpu");
    await session.click("#settings-save");
    await session.waitFor(".messages", { test: (t) => t.includes("Settings saved") });
    await session.click("#tab-benchmark");
  });

  await step("a quick benchmark runs and shows its result", async () => {
    await session.execute("document.querySelector('details').open = true");
    await session.setValue("#quick-steps", 2);
    await session.setValue("#quick-width", 32);
    await session.setValue("#quick-height", 24);
    await session.setValue("#quick-images", 2);
    await session.click("#run-quick");
    await session.waitFor("#bench-progress", { what: "the progress panel" });
    await shot("2-benchmark-running");
    await session.waitFor("#result-metrics", { timeoutMs: 600000, test: (t) => t.includes("images per minute"), what: "the result" });
    await session.waitFor("#chart-stages svg", { what: "the stage chart" });
    const validity = await session.text("#result-validity");
    if (!validity.includes("Valid run")) throw new Error(`unexpected validity: ${validity}`);
    await session.waitFor("#result-images img", { what: "the benchmark images" });
    await shot("3-benchmark-result");
  });

  await step("the result and its report are saved through the file dialog, and submitted", async () => {
    const saved = join(work, "result.json");
    await session.click("#save-result");
    await answerSaveDialog(saved);
    await session.waitFor(".messages", { test: (t) => t.includes("Saved"), what: "the saved message" });
    const result = JSON.parse(readFileSync(saved, "utf8"));
    if (!result.run_id) throw new Error("the saved result has no run id");

    const report = join(work, "report.html");
    await session.click("#export-report");
    await answerSaveDialog(report);
    await session.waitFor(".messages", { test: (t) => t.includes("Wrote"), what: "the report message" });
    const html = readFileSync(report, "utf8");
    if (!html.includes(result.run_id.slice(0, 8)) || !html.includes("<svg")) throw new Error("the report lacks the run or its charts");

    await session.click("#submit-result");
    await session.waitFor("dialog", { test: (t) => t.includes(server.url) && t.includes(result.run_id), what: "the payload to confirm" });
    await shot("3-benchmark-submit");
    await session.click("#dialog-confirm");
    await session.waitFor(".messages", { test: (t) => t.includes("Submitted (HTTP 201)"), what: "the submitted message" });
    await until(() => server.posted.some((body) => body.includes(result.run_id)), "the server to receive the result");
  });

  await step("the run is in History with its detail", async () => {
    await session.click("#tab-history");
    await session.waitFor("#history-rows", { test: (t) => t.includes("benchmark") && t.includes("cpu") });
    await session.click("#history-rows button[data-run]");
    await session.waitFor("#history-detail #result-score", { what: "the run's detail" });
    await shot("4-history");
  });

  await step("compare backends ranks the quick run on every usable backend", async () => {
    await session.click("#tab-benchmark");
    await session.execute("document.querySelector('#compare-quick').checked = true");
    await session.click("#compare-backends");
    await session.waitFor("#compare-table", { timeoutMs: 600000, test: (t) => t.includes("cpu") && t.includes("img/min"), what: "the comparison" });
    const fastest = await session.text("#compare-fastest");
    if (!fastest.startsWith("Fastest: ")) throw new Error(`unexpected fastest line: ${fastest}`);
    await session.waitFor("#compare-chart svg", { what: "the comparison chart" });
    await shot("4-compare-backends");
  });

  await step("Create generates an image", async () => {
    await session.click("#tab-create");
    await session.setValue("#create-prompt", "a lighthouse on a cliff at dawn");
    await session.setValue("#create-steps", 3);
    await session.setValue("#create-width", 32);
    await session.setValue("#create-height", 32);
    await session.click("#create-generate");
    await session.waitFor("#create-image", { timeoutMs: 300000, what: "the generated image" });
    const timing = await session.text("#create-timing");
    if (!timing.includes("it/s")) throw new Error(`no timing: ${timing}`);
    await session.waitFor("#create-strip .thumb");
    await shot("5-create");
    await session.click("#tab-history");
    await session.waitFor("#history-rows", { test: (t) => t.includes("a lighthouse on a cliff") });
  });

  await step("System: clean up the model cache", async () => {
    await session.click("#tab-system");
    await session.waitFor("#system-cache", { test: (t) => t.includes(MODEL) });
    await shot("6-system");
    await session.click("#cache-clean");
    await session.waitFor("dialog", { test: (t) => t.includes("Remove") });
    await session.click("#dialog-confirm");
    await session.waitFor(".messages", { test: (t) => t.includes("Freed") });
    await session.waitFor("#cache-empty");
    await shot("7-system-cleaned");
  });

  await session.end();
  console.log(`end-to-end: all steps passed\n  ${steps.join("\n  ")}\nscreenshots: ${shots}`);
} catch (e) {
  console.error(`end-to-end FAILED: ${e.message}`);
  if (session) await shot("failure").catch(() => {});
  process.exitCode = 1;
} finally {
  stopDriver();
  server.stop();
}
