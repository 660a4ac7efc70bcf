// Telling the owner things: inline form errors, toasts, and the polite screen-reader
// announcer. Errors are never swallowed: every caught ApiError ends up in one of these.

import { h } from "./dom.js";

export function showFormError(el, err) {
  if (!el) return toast(messageOf(err), "error");
  el.textContent = messageOf(err);
  el.hidden = false;
}

export function clearFormError(el) {
  if (!el) return;
  el.textContent = "";
  el.hidden = true;
}

export function messageOf(err) {
  if (!err) return "Something went wrong.";
  const status = err.status ? ` (${err.status})` : "";
  if (err.status === 429 && err.body && err.body.cooldown_s) {
    return `${err.message} — cooling down for ${err.body.cooldown_s} s.`;
  }
  return `${err.message || String(err)}${err.status >= 500 ? status : ""}`;
}

export function toast(text, tone = "info", { timeout = tone === "error" ? 9000 : 5000 } = {}) {
  const box = document.getElementById("toasts");
  if (!box) return;
  const close = h("button", { class: "toast-close", type: "button", "aria-label": "Dismiss" }, "×");
  const node = h("div", { class: `toast toast-${tone}`, role: tone === "error" ? "alert" : "status" },
    h("span", {}, text), close);
  close.addEventListener("click", () => node.remove());
  box.append(node);
  if (timeout) setTimeout(() => node.remove(), timeout);
  return node;
}

export function announce(text) {
  const el = document.getElementById("announcer");
  if (!el) return;
  el.textContent = "";
  // A fresh text node after a tick so repeated identical texts are still read.
  setTimeout(() => { el.textContent = text; }, 30);
}
