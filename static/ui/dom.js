// Small DOM helpers: build elements without innerHTML, so every string from the flock
// (answers, messages, names) is text, never markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "style" && typeof value === "object") Object.assign(el.style, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "text") el.textContent = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function replaceChildren(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export const $ = (selector, root = document) => root.querySelector(selector);
export const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.setAttribute("class", value);
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function uiConfig() {
  const node = document.getElementById("ui-config");
  try {
    return JSON.parse(node ? node.textContent : "{}") || {};
  } catch {
    return {};
  }
}

export function fmtTokens(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return "—";
  if (n >= 10000) return `${(n / 1000).toFixed(n >= 100000 ? 0 : 1)}k`;
  return n.toLocaleString("en-US");
}

export function fmtClock(seconds) {
  const s = Math.max(0, Math.round(seconds));
  const m = Math.floor(s / 60);
  return `${m}:${String(s % 60).padStart(2, "0")}`;
}

export function fmtTime(ts) {
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return "";
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** A moment in the owner's own time, from now: "in 8 min, at 9:41", "3 min ago, at 9:30",
 * "in 2 h 5 min, at 14:03"; more than a day away, with its date. */
export function whenWords(when) {
  const ms = typeof when === "number" ? when : Date.parse(when);
  if (!Number.isFinite(ms)) return "";
  const moment = new Date(ms);
  const mins = Math.round((ms - Date.now()) / 60000);
  const far = Math.abs(mins) >= 24 * 60;
  const at = far
    ? moment.toLocaleString([], { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" })
    : moment.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
  const span = (m) => (m >= 60 ? `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ""}` : `${m} min`);
  if (mins === 0) return `now, at ${at}`;
  if (far) return `${mins > 0 ? "on" : "since"} ${at}`;
  return mins > 0 ? `in ${span(mins)}, at ${at}` : `${span(-mins)} ago, at ${at}`;
}

export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/** The optional reason typed beside a one-click Reject (the server keeps at most 2,000
 * characters of it); `what` names what it would reject, for screen readers. */
export function reasonField(what, attrs = {}) {
  return h("input", {
    type: "text", class: "reason-input", maxlength: "2000", placeholder: "reason (optional)",
    "aria-label": `Reason for rejecting ${what} (optional)`, ...attrs,
  });
}

// Keep focus where the owner had it when a region is redrawn: the element carrying the
// same data-focus-key gets focus back.
export function keepFocus(root, redraw) {
  const active = document.activeElement;
  const key = active && root.contains(active) ? active.dataset.focusKey : undefined;
  const at = key ? [...root.querySelectorAll("[data-focus-key]")].indexOf(active) : -1;
  // A text box's caret too: a new box takes focus with its caret at the start, and what
  // the owner types next would land in front of the words already there.
  const caret = key && typeof active.selectionStart === "number" ? [active.selectionStart, active.selectionEnd] : null;
  redraw();
  if (!key) return;
  // A redraw may put a new element in the root's place (same id): look there.
  const now = (root.id && document.getElementById(root.id)) || root;
  const again = now.querySelector(`[data-focus-key="${CSS.escape(key)}"]`);
  if (again && !again.disabled) {
    again.focus({ preventScroll: true });
    if (caret && again !== active && typeof again.setSelectionRange === "function") again.setSelectionRange(...caret);
    return;
  }
  // The control is gone (its approval answered): the one now in its place takes the
  // focus, so the keyboard carries on down the list instead of falling to the page's top.
  const left = [...now.querySelectorAll("[data-focus-key]")].filter((el) => !el.disabled);
  const next = left[Math.min(at, left.length - 1)];
  if (next) next.focus({ preventScroll: true });
}
