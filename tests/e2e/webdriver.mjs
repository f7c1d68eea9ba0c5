// A minimal W3C WebDriver client (fetch only): enough to drive the app through tauri-driver.

const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";

export class Session {
  constructor(base, id) {
    this.base = base;
    this.id = id;
  }

  static async start(base, capabilities) {
    const value = await call(base, "POST", "/session", { capabilities: { alwaysMatch: capabilities } });
    return new Session(base, value.sessionId);
  }

  cmd(method, path, body) {
    return call(this.base, method, `/session/${this.id}${path}`, body);
  }

  async find(css) {
    const value = await this.cmd("POST", "/element", { using: "css selector", value: css });
    return value[ELEMENT];
  }

  /** Waits until `css` matches a displayed element (and `test(text)` holds, when given). */
  async waitFor(css, { timeoutMs = 30000, test = null, what = css } = {}) {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    for (;;) {
      try {
        const id = await this.find(css);
        const shown = await this.cmd("GET", `/element/${id}/displayed`);
        last = await this.cmd("GET", `/element/${id}/text`);
        if (shown && (!test || test(last))) return id;
      } catch (e) {
        last = String(e.message ?? e);
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${last.slice(0, 400)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async click(css) {
    const id = await this.waitFor(css);
    await this.cmd("POST", `/element/${id}/click`, {});
  }

  async text(css) {
    return this.cmd("GET", `/element/${await this.find(css)}/text`);
  }

  /** Sets a form field's value as typing would, through the page's own events. */
  async setValue(css, value) {
    await this.waitFor(css);
    await this.execute(
      `const el = document.querySelector(arguments[0]);
       el.value = arguments[1];
       el.dispatchEvent(new Event("input", { bubbles: true }));
       el.dispatchEvent(new Event("change", { bubbles: true }));`,
      [css, String(value)],
    );
  }

  execute(script, args = []) {
    return this.cmd("POST", "/execute/sync", { script, args });
  }

  /** PNG bytes of the window. */
  async screenshot() {
    return Buffer.from(await this.cmd("GET", "/screenshot"), "base64");
  }

  async end() {
    await this.cmd("DELETE", "");
  }
}

async function call(base, method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json().catch(() => ({}));
  if (!response.ok) {
    const v = json.value ?? {};
    throw new Error(`${method} ${path}: ${v.error ?? response.status} ${v.message ?? ""}`);
  }
  return json.value;
}
