// A small element builder: h("button", { class: "primary", onclick }, "Run").

type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;
type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value as EventListener);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Replaces the children of `el`. */
export function fill(el: Element, ...children: (Child | Child[])[]): void {
  // A region redrawn with some of the same elements (the progress card's Cancel button, redrawn at
  // every step) keeps the keyboard focus on them; replacing the children would drop it.
  const focused = document.activeElement;
  const keep = focused instanceof HTMLElement && el.contains(focused) ? focused : null;
  el.replaceChildren();
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  if (keep && el.contains(keep)) keep.focus();
}

/** An SVG string from the shell (drawn by plotters) as an element. */
export function svg(markup: string): Element {
  const doc = new DOMParser().parseFromString(markup, "image/svg+xml");
  const root = doc.documentElement;
  root.setAttribute("role", "img");
  root.removeAttribute("width");
  root.removeAttribute("height");
  return document.importNode(root, true);
}
